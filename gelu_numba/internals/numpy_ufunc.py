"""NumPy's ufunc C API table, for :mod:`gelu_numba.targets.cpu.numpy_api`.

Used: ``numpy._core._multiarray_umath._UFUNC_API``, the capsule holding
NumPy's ufunc C API table (``PyUFunc_FromFuncAndData`` is entry 1).  Why:
NumPy has no Python call that makes a ``numpy.ufunc`` from machine-code
loops, and Numba's own builders break masked iteration (``where=``).  The
table itself is NumPy's stable ABI; only the module holding the capsule is
private (``numpy.core`` before NumPy 2).  If it moves: a compiled extension
calling ``PyUFunc_FromFuncAndData`` from C, or Numba's ufunc builder once it
supports ``where=``.  Probed at import: entry 0 must be ``&PyUFunc_Type``.
"""

import ctypes

import numpy as np

try:  # NumPy 2
    from numpy._core import _multiarray_umath as _umath
except ImportError:  # pragma: no cover - NumPy 1.x
    from numpy.core import _multiarray_umath as _umath

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

#: NumPy's ufunc C API table, as pointers
API = ctypes.cast(_get_pointer(_umath._UFUNC_API, None), ctypes.POINTER(ctypes.c_void_p))


def probe():
    """Raise ``ImportError`` unless the table is laid out as expected."""
    if API[0] != id(np.ufunc):  # entry 0 is &PyUFunc_Type
        raise ImportError("gelu_numba: NumPy's _UFUNC_API table is not laid out "
                          f"as expected; NumPy {np.__version__} is not supported")


probe()
