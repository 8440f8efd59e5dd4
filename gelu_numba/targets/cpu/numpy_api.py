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

Loops compiled on first use
    :class:`LazyLoops` registers, in place of each machine-code loop, a
    stub (a :mod:`ctypes` callback) that compiles the loop on the ufunc's
    first call for that dtype, writes its address and its data into the
    ufunc's tables (NumPy reads them at each call: later calls go straight
    to the compiled loop) and runs it.  A ``gelu(x)`` on float32 compiles the
    float32 loop alone.  A loop that fails to compile cannot raise through
    NumPy's C loop: its outputs are NaN, a ``RuntimeWarning`` says why, and
    :func:`raise_failure` (which the package's ufuncs call after each call)
    raises the error.
"""

import ctypes
import threading
import warnings

import numpy as np

from gelu_numba.internals.numpy_ufunc import API as _API
from gelu_numba.targets import fp_env

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


# void loop(char **args, npy_intp *dims, npy_intp *steps, void *data)
_LOOP = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p),
                         ctypes.POINTER(ctypes.c_ssize_t), ctypes.POINTER(ctypes.c_ssize_t),
                         ctypes.c_void_p)
#: a loop's output type -> (ctypes type, the NaN its failure writes); uint16
#: loops are bfloat16 bit patterns (gelu_numba.targets.cpu.half_loops)
_NAN = {np.dtype(np.float32): (ctypes.c_float, float("nan")),
        np.dtype(np.float64): (ctypes.c_double, float("nan")),
        np.dtype(np.float16): (ctypes.c_uint16, 0x7E00),
        np.dtype(np.uint16): (ctypes.c_uint16, 0x7FC0)}

#: (thread ident, error) of the loops that failed to compile and are not
#: yet raised by :func:`raise_failure` (empty but for failures: callers test
#: it before calling that, which costs a call)
FAILED = []


class LazyLoops:
    """The loops of one ufunc, ``(dtype, build)`` pairs in registration
    order, each ``build()`` (returning a compiled loop: its ``address``,
    and the ``data`` NumPy passes it) called once, on the first call of
    the ufunc for that dtype or on :meth:`compile`, in the default
    floating-point environment (:mod:`gelu_numba.targets.fp_env`: the
    caller's flush-to-zero or rounding mode never reaches a loop or a table
    kept for the process); :attr:`ufunc` is the ``numpy.ufunc``."""

    def __init__(self, name, nin, loops):
        self.name, self.nin = name, nin
        self.dtypes = [np.dtype(dt) for dt, _ in loops]
        self._build = [build for _, build in loops]
        self.compiled = [None] * len(loops)
        self._lock = threading.RLock()
        self._stubs = [_LOOP(self._stub(i)) for i in range(len(loops))]
        self.ufunc, self._functions, self._data = _from_loops(
            name, nin, self.dtypes, [ctypes.cast(s, ctypes.c_void_p).value for s in self._stubs])
        _KEEPALIVE.append(self)  # its stubs and loops, for as long as the ufunc

    def compile(self, i):
        """The compiled loop ``i``, compiled now if it was not."""
        with self._lock:
            if self.compiled[i] is None:
                with fp_env.default_environment():
                    loop = self._build[i]()
                self._data[i] = loop.data
                self._functions[i] = loop.address
                self.compiled[i] = loop
            return self.compiled[i]

    def _stub(self, i):
        def stub(args, dims, steps, data):
            try:
                loop = self.compile(i)
            except BaseException as error:  # noqa: BLE001 (nothing may leave a C loop)
                self._fail(i, error, args, dims, steps)
                return
            _LOOP(loop.address)(args, dims, steps, loop.data)
        return stub

    def _fail(self, i, error, args, dims, steps):
        value, nan = _NAN[self.dtypes[i]]
        base, step = args[self.nin], steps[self.nin]
        for k in range(dims[0]):
            value.from_address(base + k * step).value = nan
        FAILED.append((threading.get_ident(), error))
        warnings.warn(f"gelu_numba: the {self.dtypes[i]} loop of {self.name} failed to "
                      f"compile ({error!r}); its outputs are NaN", RuntimeWarning,
                      stacklevel=2)


def raise_failure():
    """Raise the error of a loop that failed to compile during this
    thread's last ufunc call, if one did."""
    if FAILED:
        me = threading.get_ident()
        mine = [e for t, e in FAILED if t == me]
        FAILED[:] = [(t, e) for t, e in FAILED if t != me]
        if mine:
            raise RuntimeError("gelu_numba: a loop failed to compile; "
                               "its outputs were NaN") from mine[0]


def _from_loops(name, nin, dtypes, addresses):
    n = len(addresses)
    functions = (ctypes.c_void_p * n)(*addresses)
    data = (ctypes.c_void_p * n)()
    types = (ctypes.c_char * (n * (nin + 1)))(
        *bytes(dt.num for dt in dtypes for _ in range(nin + 1)))
    cname = name.encode()
    ufunc = _from_func_and_data(ctypes.addressof(functions), ctypes.addressof(data),
                                ctypes.addressof(types), n, nin, 1, _PYUFUNC_NONE,
                                cname, None, 0)
    _KEEPALIVE.append((functions, data, types, cname))
    return ufunc, functions, data
