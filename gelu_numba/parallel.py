"""The exact functions of :mod:`gelu_numba` as multithreaded ufuncs.

Same functions, signatures, documentation and results (bit for bit) as the
single-threaded ones: ``gelu``, ``gelu_grad``, ``gelu_grad2``,
``gelu_backward``, ``ndtr``, ``norm_pdf``.  Unit-stride runs of at least
65,536 float32 or 16,384 float64 elements (four blocks:
:data:`gelu_numba.targets.cpu.parallel.THRESHOLD`) are split among Numba's
threads (``numba.set_num_threads``,
``NUMBA_NUM_THREADS``); anything shorter runs on the calling thread, as the
serial ufunc.  Importing this module changes no global state (it does not
choose Numba's threading layer).  See :mod:`gelu_numba.targets.cpu.parallel`.
"""

from gelu_numba.targets import publish as _publish

__getattr__, __dir__, __all__ = _publish.module(__name__)
