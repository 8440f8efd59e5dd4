"""The single-threaded CPU ufuncs, generated from :mod:`gelu_numba.catalog`."""

from gelu_numba.catalog import ENTRIES, FAMILY_ENTRIES
from gelu_numba.targets import cpu_ufunc

_ufuncs = {e.name: cpu_ufunc(e.kernel, e.nin, e.doc)
           for e in ENTRIES + FAMILY_ENTRIES}

gelu = _ufuncs["gelu"]
gelu_grad = _ufuncs["gelu_grad"]
gelu_grad2 = _ufuncs["gelu_grad2"]
gelu_backward = _ufuncs["gelu_backward"]
ndtr = _ufuncs["ndtr"]
norm_pdf = _ufuncs["norm_pdf"]
gelu_general = _ufuncs["gelu_general"]
silu = _ufuncs["silu"]
silu_grad = _ufuncs["silu_grad"]
x_cauchy = _ufuncs["x_cauchy"]
x_cauchy_grad = _ufuncs["x_cauchy_grad"]
lalu = _ufuncs["lalu"]
lalu_grad = _ufuncs["lalu_grad"]

__all__ = sorted(_ufuncs)
