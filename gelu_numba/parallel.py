"""The ufuncs of :mod:`gelu_numba`, multithreaded (Numba ``target='parallel'``).

Same functions, signatures, documentation and results (bit for bit) as the
single-threaded ones; the elements are split among Numba's threads
(``numba.set_num_threads`` / ``NUMBA_NUM_THREADS``).  Worth it from about
10**6 elements; below that the thread launch (50-100 us) dominates (see the README's
benchmark table).  Importing this module compiles or loads its own loops.

Threading layer: Numba's ``omp`` (and ``tbb``) back-ends run a parallel
ufunc by calling its loop once per element, which forfeits SIMD and costs a
call each: measured 7.5 times slower than one thread on 2**24 float32
elements.  The ``workqueue`` back-end hands each thread one contiguous block
(1.7-1.9 times faster than one thread on two cores).  Importing this module
therefore selects ``workqueue`` when the choice is still open (no layer
launched yet and ``NUMBA_THREADING_LAYER`` not set), and warns otherwise.
``workqueue`` does not support concurrent parallel calls from several Python
threads.
"""

import warnings

from numba import config, threading_layer
from numba.np.ufunc import parallel as _numba_parallel

from gelu_numba.catalog import ENTRIES
from gelu_numba.targets import parallel_ufunc

def _layer():
    if _numba_parallel._is_initialized:
        return threading_layer()
    return str(config.THREADING_LAYER)


if not _numba_parallel._is_initialized and str(config.THREADING_LAYER) == "default":
    config.THREADING_LAYER = "workqueue"
elif _layer() != "workqueue":
    warnings.warn(
        "gelu_numba.parallel runs fast only on Numba's 'workqueue' threading "
        f"layer (the current choice is {_layer()!r}; 'omp' and "
        "'tbb' call the loop once per element); set NUMBA_THREADING_LAYER="
        "workqueue before the first parallel call", RuntimeWarning, stacklevel=2)

_ufuncs = {e.name: parallel_ufunc(e.kernel, e.nin, e.doc) for e in ENTRIES}

gelu = _ufuncs["gelu"]
gelu_grad = _ufuncs["gelu_grad"]
gelu_grad2 = _ufuncs["gelu_grad2"]
gelu_backward = _ufuncs["gelu_backward"]
ndtr = _ufuncs["ndtr"]
norm_pdf = _ufuncs["norm_pdf"]

__all__ = sorted(_ufuncs)
