"""A ``numpy.ufunc`` from compiled loops, through NumPy's public C API.

NumPy has no Python call that makes a ufunc from machine-code loops, and
Numba's own builders (``numba.np.ufunc``) mark the output operand
``READWRITE | UPDATEIFCOPY | ALLOCATE`` in the ufunc's ``op_flags``, which
breaks NumPy's masked iteration: every ``where=`` call fails ("An iterator
operand was flagged as the ARRAYMASK, but no WRITEMASKED operands ...", numba
0.68, NumPy 2.4).  So the ufunc is made here with NumPy's
``PyUFunc_FromFuncAndData`` (entry 1 of the ``_UFUNC_API`` table, part of
NumPy's stable ABI), through :mod:`ctypes`.  The result is an ordinary
``numpy.ufunc``: NumPy does all of the dispatch (``__array_ufunc__``),
casting, broadcasting, ``out=``, ``where=``, ``casting=``, ``dtype=``,
``signature=``, buffering and floating-point error checking.
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

_API = ctypes.cast(_get_pointer(_umath._UFUNC_API, None),
                   ctypes.POINTER(ctypes.c_void_p))
if _API[0] != id(np.ufunc):  # entry 0 is &PyUFunc_Type
    raise ImportError("gelu_numba: NumPy's _UFUNC_API table is not laid out "
                      "as expected; this NumPy version is not supported")

# PyObject *PyUFunc_FromFuncAndData(PyUFuncGenericFunction *func, void **data,
#     char *types, int ntypes, int nin, int nout, int identity,
#     const char *name, const char *doc, int unused)
_from_func_and_data = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
    ctypes.c_char_p, ctypes.c_int)(_API[1])

_PYUFUNC_NONE = -1  # identity: none (reductions need an identity or items)

# NumPy keeps pointers to the loop, type and name arrays for the life of the
# ufunc; the package's ufuncs live as long as the process.
_KEEPALIVE = []


def make_ufunc(name, nin, loops):
    """A ``numpy.ufunc`` named ``name`` with ``nin`` inputs, one output and
    ``loops``: ``(dtype, cfunc)`` pairs in registration order (NumPy takes
    the first loop the inputs cast to safely), each a compiled C function
    ``void loop(char **args, npy_intp *dims, npy_intp *steps, void *data)``
    on ``nin`` inputs and one output of that dtype."""
    n = len(loops)
    functions = (ctypes.c_void_p * n)(*(cfunc.address for _, cfunc in loops))
    data = (ctypes.c_void_p * n)()
    types = (ctypes.c_char * (n * (nin + 1)))(
        *bytes(np.dtype(dt).num for dt, _ in loops for _ in range(nin + 1)))
    cname = name.encode()
    ufunc = _from_func_and_data(ctypes.addressof(functions), ctypes.addressof(data),
                                ctypes.addressof(types), n, nin, 1, _PYUFUNC_NONE,
                                cname, None, 0)
    _KEEPALIVE.append((functions, data, types, cname, loops))
    return ufunc
