"""gelu_numba.torch: the exact GELU for PyTorch, a drop-in for ``nn.GELU``.

Swapping is one line::

    import gelu_numba.torch as gt
    model = nn.Sequential(nn.Linear(64, 128), gt.GELU(), nn.Linear(128, 10))
    # was nn.GELU(); gt.GELU(approximate="tanh") for nn.GELU(approximate="tanh")

and ``gt.gelu(x)`` replaces ``torch.nn.functional.gelu(x)``.  Both are
backed by the PyTorch custom operators ``torch.ops.gelu_numba.gelu`` and
``torch.ops.gelu_numba.derivative`` (:mod:`gelu_numba.targets.torch`),
so autograd (backward and double backward, forward mode: ``jvp``,
``jacfwd``, ``hessian``; batched backward), ``torch.compile`` (also with
``fullgraph=True``: the operator is one opaque node), ``torch.vmap`` and
``torch.func.grad`` work, on tensors of any shape (0-d included) and
strides.  In eager mode on plain tensors the same formulas run without the
custom-op dispatcher (its Python dispatch is the larger part of a small
call): the gelu-numba repository's ``python -m benchmarks.targets`` times
a forward + backward against ``nn.GELU`` (``benchmarks/results/``).
Wherever a tool watches the operators a call dispatches (any
``TorchDispatchMode``: ``make_fx``, ``torch.func.linearize``, logging and
FLOP-counting modes, selective checkpointing; tensor subclasses) the call
goes through the operators, so the tool sees and replays them.
:func:`gelu` and :func:`gelu_backward` take part in ``__torch_function__``
(``torch.fx.symbolic_trace`` records them as leaves) and script with
``torch.jit.script``.  Quantized tensors: the GELU of the dequantized
values, quantized with the input's parameters; nested tensors (jagged and
strided): the GELU of their values, forward and backward.
:func:`register_transformers` names the GELUs for Hugging Face
``transformers`` configs.

Devices
    CPU: the package's NumPy ufuncs on zero-copy views of the tensors (the
    result is written into the output tensor's storage), single-threaded
    (not :mod:`gelu_numba.parallel`: Numba's omp pool keeps spinning after
    a parallel call and slows PyTorch's own operators in the process).
    CUDA: the :mod:`gelu_numba.gpu` kernels on PyTorch's current stream
    (needs ``numba-cuda``).  meta: shapes, dtypes and strides only, as
    ``nn.GELU`` (models built under ``torch.device("meta")``).  Other
    devices (MPS, ...) raise a ``RuntimeError``.

Dtypes and accuracy (``approximate="none"``; errors against mpmath)
    ==================  ==============================================
    float64, float32    CPU: the ufunc's bits (its stated bound and
                        measured maximum are in ``help(gelu_numba.gelu)``);
                        CUDA: the GPU kernel's (float32: the CPU's
                        kernel on half-rate-FP64 GPUs, else float32
                        arithmetic with its own bound:
                        ``help(gelu_numba.gpu)``)
    float16, bfloat16   CPU: one pass, bits in and out, correctly rounded
                        at every finite input, forward and backward (every
                        pair dy, x); CUDA: through the float32 kernel and
                        one rounding (the few inputs within float32
                        precision of a half-way point misround: the
                        gelu-numba repository's
                        ``analysis/results/exhaustive/half.md`` counts them)
    ==================  ==============================================

    On the CPU the half results are correctly rounded (method and proof:
    :mod:`gelu_numba.kernels.half_rounding`; PyTorch's own CPU ``F.gelu`` is not).
    Through float32 (CUDA), a misrounded half result is the neighbour of
    the correctly rounded one: the float32 result is within one float32
    ulp of the exact value, which is 2^-13 of a float16 ulp and 2^-16 of a
    bfloat16 one, so the rounding to half goes wrong only for exact values
    that close to a half-way point.
    Backward is the fused ``gelu_backward`` (dy * GELU'(x), one rounding in
    float32/float64); double backward uses ``gelu_grad2`` (dy * GELU''(x)
    as two roundings).  Integer, bool and complex tensors raise the
    ``NotImplementedError`` that ``torch.nn.functional.gelu`` raises.

Approximations
    ``approximate="tanh"`` is PyTorch's tanh formula, evaluated to below
    1 ulp of that formula (PyTorch's own float32 kernel collapses to 0 below
    x = -9 and loses relative accuracy before); the other names of
    :data:`gelu_numba.approximations.APPROXIMATIONS` (``"sigmoid"``,
    ``"poly6"``, ``"rat44"``, ...) select those, and so does the key of an
    approximation added with :func:`gelu_numba.catalog.registered` while
    it is registered.  Their backward is dy * f'(x) (two roundings).
    Every approximation has every higher derivative: torch's autograd of
    its formula in float64, rounded once.

Export and TorchScript
    ``torch.onnx.export`` (legacy and ``dynamo=True``) writes ONNX's own
    ``Gelu`` for ``approximate`` "none" and "tanh": an ONNX runtime computes
    its GELU, not this package's kernel.  The other approximations export
    as the subgraph of their formula, evaluated in float64 and cast back
    once.  :func:`gelu_backward` has no ONNX operator and raises.  An
    ``ExportedProgram`` (``torch.export.export(model, ...)``) holds the
    operator itself: export it with
    ``custom_translation_table=onnx_translation_table()`` ("none" and
    "tanh"; the others raise, naming the module export).
    ``torch.jit.script`` and ``torch.jit.trace`` record the operator
    ``gelu_numba::gelu``; a saved model loads where this module is
    imported first.

Importing this module imports torch and registers the ``gelu_numba``
operator namespace with it; nothing else in the package imports torch.
"""

import torch
from torch import nn
from torch.overrides import handle_torch_function, has_torch_function, has_torch_function_unary

from gelu_numba.targets.torch import (APPROXIMATE, apply_derivative, apply_gelu,
                                      check_approximate, check_tensor, onnx_translation_table)


__all__ = ["gelu", "GELU", "gelu_backward", "APPROXIMATE", "onnx_translation_table",
           "register_transformers"]


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GELU(x) = x Phi(x) of a tensor, or an approximation of it.

    Parameters
    ----------
    input : torch.Tensor
        float16, bfloat16, float32 or float64, on the CPU or a CUDA device;
        any shape (0-d included) and strides, dense or nested; or a
        quantized tensor (the GELU of its dequantized values, quantized
        with its own parameters).  Never modified.
    approximate : str
        ``"none"`` (the exact GELU, default), ``"tanh"`` (PyTorch's tanh
        form) or another name of :data:`APPROXIMATE`.

    Returns
    -------
    torch.Tensor
        Same shape, dtype, device (and strides, for dense inputs) as
        ``input``; differentiable any number of times.

    Raises
    ------
    TypeError
        for a non-tensor, or an ``approximate`` that is not a string.
    NotImplementedError
        for a dtype without a kernel (integer, bool, complex) or a sparse
        layout (a ``RuntimeError``, as ``torch.nn.functional.gelu``
        raises).
    RuntimeError
        for an unknown ``approximate``, or a device other than CPU and
        CUDA.

    Notes
    -----
    Accuracy: see the module's table; on CPU the result is the ufunc's
    (``gelu_numba.gelu`` for ``"none"``) bit for bit.
    """
    if torch.jit.is_scripting():
        # TorchScript compiles this branch alone: the operator, by name
        return torch.ops.gelu_numba.gelu(input, approximate)
    if has_torch_function_unary(input):
        # torch.fx proxies, TorchFunctionModes, __torch_function__ subclasses
        return handle_torch_function(gelu, (input,), input, approximate=approximate)
    check_tensor("gelu_numba.torch.gelu", input, quantized=True)
    check_approximate(approximate)
    return apply_gelu(input, approximate)


class GELU(nn.GELU):
    """``torch.nn.GELU`` with the exact GELU of :mod:`gelu_numba`.

    Same signature and behaviour as ``torch.nn.GELU(approximate="none")``;
    ``approximate`` also takes the names of
    :data:`gelu_numba.approximations.APPROXIMATIONS`.  See :func:`gelu`.
    A subclass of ``nn.GELU``, so that code finding GELU layers by type
    finds it; it has no parameters or buffers (an empty ``state_dict``).
    """

    def __init__(self, approximate: str = "none") -> None:
        # nn.GELU.__init__ accepts "none" and "tanh" only
        nn.Module.__init__(self)
        self.approximate = check_approximate(approximate)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


def gelu_backward(grad_output: torch.Tensor, input: torch.Tensor,
                  approximate: str = "none") -> torch.Tensor:
    """grad_output * GELU'(input): the backward pass as one fused call
    (PyTorch's ``torch.ops.aten.gelu_backward`` with this package's
    accuracy).  Same dtypes and devices as :func:`gelu` (quantized tensors
    excepted); ``grad_output`` and ``input`` of one shape, dtype and
    device."""
    if torch.jit.is_scripting():
        return torch.ops.gelu_numba.derivative(grad_output, input, approximate, 1)
    if has_torch_function((grad_output, input)):
        return handle_torch_function(gelu_backward, (grad_output, input), grad_output,
                                     input, approximate=approximate)
    check_tensor("gelu_numba.torch.gelu_backward", input)
    check_tensor("gelu_numba.torch.gelu_backward", grad_output)
    check_approximate(approximate)
    return apply_derivative(grad_output, input, approximate, 1)


#: the activation names :func:`register_transformers` registers: the exact
#: GELU, then one per approximation
TRANSFORMERS_NAMES = {"gelu_numba": "none",
                      **{f"gelu_numba_{a}": a for a in APPROXIMATE if a != "none"}}


def register_transformers():
    """Register this package's GELUs as Hugging Face ``transformers``
    activation names, so that a model's config can name them and
    ``save_pretrained`` / ``from_pretrained`` keep them.

    Registers ``"gelu_numba"`` (the exact GELU, :class:`GELU`) and
    ``"gelu_numba_<approximate>"`` for every other name of
    :data:`APPROXIMATE` (``"gelu_numba_tanh"``, ...) in
    ``transformers.activations.ACT2FN``, the table every model reads its
    activation from.  Idempotent.  Needs ``transformers``.

    Returns
    -------
    tuple of str
        The registered names.

    Notes
    -----
    A config names its activation in a model-specific field (BERT, RoBERTa,
    ViT: ``hidden_act``; GPT-2: ``activation_function``); set it to
    ``"gelu_numba"`` when building or loading::

        gt.register_transformers()
        model = BertModel.from_pretrained(path, hidden_act="gelu_numba")
        model.save_pretrained(out)        # config.json: "hidden_act": "gelu_numba"

    The registration lives in the process: a process that loads such a
    model without calling this first stops with ``KeyError: 'gelu_numba'``
    (from ``ACT2FN``); it never falls back to another GELU.
    """
    from transformers import activations

    for name, approximate in TRANSFORMERS_NAMES.items():
        activations.ACT2FN[name] = (GELU, {"approximate": approximate})
    return tuple(TRANSFORMERS_NAMES)

