"""The GELUs that production libraries compute, emulated.

``PRODUCTION`` maps a name to an :class:`Emulation`: a library's GELU (and
its own backward, where it has one) reproduced in float32 with the
library's constants, evaluation order, fused multiply-adds, clamps and
tables (:mod:`gelu_numba.kernels.emulated`, one module per library), as a
float32 NumPy ufunc.  Each record says who runs it, the formula, the source
read (repository, path, commit or version) and what the emulation was
checked against: the library itself where it is installable here (PyTorch
CPU and, through it, oneDNN; JAX; ONNX Runtime; the gelu-numba repository's
``tests/test_production.py``), else its source (ggml, XNNPACK, MLX, vLLM,
the CUDA kernels).

These are not accurate GELUs; they are the ones people run.  Their errors
against the exact GELU over all 2**32 float32 inputs, and in float16 and
bfloat16, are in the repository's ``analysis/results/exhaustive``
(``python -m analysis.exhaustive``).

Example::

    >>> from gelu_numba.production import PRODUCTION
    >>> e = PRODUCTION["onednn_gelu_erf_avx512"]
    >>> e.runs                      # doctest: +SKIP
    'torch.nn.functional.gelu(x) on contiguous float32 CPU tensors on x86 ...'
    >>> e.forward(np.float32([-5.6, -1.0, 2.0]))   # doctest: +SKIP
"""

import importlib
import sys
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from gelu_numba.kernels.emulated.formats import to_format
from gelu_numba.targets import publish as _publish

#: the library modules of gelu_numba.kernels.emulated, in table order
LIBRARIES = ("pytorch", "onednn", "xla", "xnnpack", "ggml", "onnxruntime", "mlx", "huggingface", "vllm")


@dataclass(frozen=True)
class Emulation:
    """One production GELU, emulated in float32.

    Attributes
    ----------
    name : str
        Registry key, ``<library>_<variant>``; also the forward ufunc's
        name (the backward's is ``name + "_grad"``).
    library, runs : str
        The library, and the call and conditions that reach this code path.
    formula : str
        One line.
    source : str
        Repository @ commit or version: path.
    checked : str
        What the emulation was checked against.
    kernel, grad_kernel : function
        float32 scalar kernels (:mod:`gelu_numba.kernels.emulated`);
        ``grad_kernel`` is the library's own backward at ``dy = 1``, or None.
    half : function or None
        The library's float16/bfloat16 arithmetic where it is not "compute
        in float32, round once"; see :meth:`half_forward`.
    """

    name: str
    library: str
    runs: str
    formula: str
    source: str
    checked: str
    kernel: object
    grad_kernel: object
    half: object

    @property
    def forward(self):
        """The emulation as a float32 ufunc."""
        return ufunc(self.name)

    @property
    def grad(self):
        """The library's backward at ``dy = 1`` as a float32 ufunc, or None."""
        return None if self.grad_kernel is None else ufunc(self.name + "_grad")

    def half_forward(self, x, fmt):
        """The library's result for ``fmt`` (``"float16"`` or
        ``"bfloat16"``) inputs ``x`` (a float32 array of ``fmt`` values), as
        float32 values of ``fmt``: its own half arithmetic where it has one,
        else the float32 emulation rounded once."""
        x = np.asarray(x, dtype=np.float32)
        if not np.array_equal(to_format(x, fmt), x, equal_nan=True):
            raise ValueError(f"half_forward: x holds values that are not {fmt}")
        if self.half is not None:
            return np.asarray(self.half(x, fmt), dtype=np.float32)
        return to_format(self.forward(x), fmt)


def _records():
    out = {}
    for lib in LIBRARIES:
        module = importlib.import_module(f"gelu_numba.kernels.emulated.{lib}")
        for e in module.ENTRIES:
            rec = Emulation(e["name"], e["library"], e["runs"], e["formula"], e["source"],
                            e["checked"], e["forward"], e.get("grad"), e.get("half"))
            if rec.name in out:
                raise RuntimeError(f"two emulations named {rec.name!r}")
            out[rec.name] = rec
    return out


#: name -> Emulation
PRODUCTION = MappingProxyType(_records())

def _doc(rec, grad):
    what = "backward at dy = 1 (dGELU/dx as the library computes it)" if grad else "GELU"
    return (f"{rec.library}'s {what}, emulated in float32.\n\n"
            f"Who runs it: {rec.runs}\nFormula: {rec.formula}\nSource: {rec.source}\n"
            f"Checked: {rec.checked}\n\nfloat32 only: float64 input raises TypeError.\n")


def _build(name):
    from gelu_numba.targets.cpu import emulated
    base, grad = (name[:-5], True) if name.endswith("_grad") and name not in PRODUCTION else (name, False)
    rec = PRODUCTION[base]
    kernel = rec.grad_kernel if grad else rec.kernel
    return emulated.ufunc(name, kernel, 1, __name__, _doc(rec, grad), ufunc)


#: the ufunc names: every entry's forward, and ``<name>_grad`` where the
#: library has a backward of its own
_NAMES = tuple(n for name, rec in PRODUCTION.items()
               for n in ((name, f"{name}_grad") if rec.grad_kernel is not None else (name,)))

__getattr__, __dir__, _names = _publish.module(__name__, names=_NAMES, build=_build)


def ufunc(name):
    """The ufunc ``name`` (an entry's forward) or ``name_grad`` (its
    backward), also the module attribute ``gelu_numba.production.<name>``;
    ``KeyError`` if there is none."""
    if name not in _NAMES:
        raise KeyError(name)
    return getattr(sys.modules[__name__], name)


__all__ = ["PRODUCTION", "Emulation", "LIBRARIES", "ufunc", *_names]
