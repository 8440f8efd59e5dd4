"""ONNX export of the GELU.

``torch.onnx.export`` of a model (legacy and ``dynamo=True``) records
:func:`onnx_gelu`: ONNX's own ``Gelu`` for ``approximate`` "none" and
"tanh", the subgraph of the formula for the other approximations.  An
``ExportedProgram`` holds ``gelu_numba::gelu`` itself: its translation
(:func:`onnx_translation_table`) needs onnxscript.  The derivatives have no
ONNX form.
"""

import torch

from gelu_numba.targets.torch.formulas import composite


#: ``approximate`` values that ONNX's ``Gelu`` operator computes (opset 20;
#: earlier opsets get PyTorch's Erf or Tanh subgraph)
ONNX_APPROXIMATE = ("none", "tanh")


def onnx_gelu(x, approximate):
    """What ``torch.onnx.export`` records for f(x).

    "none" and "tanh": ``F.gelu``, which both exporters write as ONNX's
    ``Gelu`` (or its formula before opset 20); an ONNX runtime then computes
    its own GELU, not this package's kernel (its accuracy is the runtime's:
    see the production study's ONNX Runtime rows).  Every other
    approximation: the subgraph of its formula
    (:func:`~gelu_numba.targets.torch.formulas.composite`: Where, Clip,
    Mul, Div, Exp, Sigmoid ...) evaluated in float64 and cast
    back to x's dtype once, so that a float32 or half model computes the
    formula rounded once, within an ulp of this package's kernel (float64
    models: within a few float64 ulps of the formula, the plain float64
    evaluation; the kernel's is double-double)."""
    if approximate in ONNX_APPROXIMATE:
        return torch.nn.functional.gelu(x, approximate=approximate)
    return composite(approximate)(x.double()).to(x.dtype)


def _onnx_gelu_node(x, approximate: str = "none"):
    """The onnxscript translation of ``gelu_numba::gelu`` (for
    :func:`onnx_translation_table`): ONNX's ``Gelu`` (opset 20)."""
    from onnxscript import opset20 as op
    if approximate not in ONNX_APPROXIMATE:
        raise RuntimeError(
            f"gelu_numba.torch: approximate={approximate!r} has no ONNX operator, and an "
            "exported program holds gelu_numba::gelu itself, not its formula: export the "
            "nn.Module (torch.onnx.export(model, args, dynamo=True)), which writes the "
            "formula's subgraph")
    return op.Gelu(x, approximate=approximate)


def onnx_translation_table():
    """``custom_translation_table`` for ``torch.onnx.export`` of a
    ``torch.export.ExportedProgram`` that holds ``gelu_numba::gelu``
    (exporting the module itself needs none).  Needs onnxscript."""
    return {torch.ops.gelu_numba.gelu.default: _onnx_gelu_node}
