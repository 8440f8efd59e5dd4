"""The ufuncs of :mod:`gelu_numba`, multithreaded (Numba ``target='parallel'``).

Same functions, signatures, documentation and results (bit for bit) as the
single-threaded ones; the elements are split among Numba's threads
(``numba.set_num_threads`` / ``NUMBA_NUM_THREADS``).  Worth it from about
10**5 elements; below that the thread start-up dominates (see the README's
benchmark table).  Importing this module compiles or loads its own loops.
"""

from gelu_numba.catalog import ENTRIES
from gelu_numba.targets import parallel_ufunc

_ufuncs = {e.name: parallel_ufunc(e.kernel, e.nin, e.doc) for e in ENTRIES}

gelu = _ufuncs["gelu"]
gelu_grad = _ufuncs["gelu_grad"]
gelu_grad2 = _ufuncs["gelu_grad2"]
gelu_backward = _ufuncs["gelu_backward"]
ndtr = _ufuncs["ndtr"]
norm_pdf = _ufuncs["norm_pdf"]

__all__ = sorted(_ufuncs)
