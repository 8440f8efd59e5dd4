"""The CPU ufuncs: each catalog function's ``numpy.ufunc``, built once, and
its public wrapper.

Ufuncs
    :func:`ufunc` registers the float32 loop, then the float64 loop (NumPy
    takes the first one the inputs cast to safely: this order *is* the dtype
    rule of :mod:`gelu_numba.targets.dtypes`) in a real ``numpy.ufunc``
    (:mod:`gelu_numba.targets.cpu.numpy_api`), each compiled (or loaded from
    the cache) on the first call for its dtype, and wraps it in :class:`Ufunc`,
    which adds two things and changes nothing else: the ``TypeError`` for
    inputs with no loop names the accepted dtypes, and ``@njit`` code can
    call it (:func:`gelu_numba.targets.cpu.njit.register`).  Every argument,
    keyword and method goes to the ``numpy.ufunc`` as given, so NumPy
    dispatches duck arrays (``__array_ufunc__``: Dask, xarray, CuPy,
    subclasses) and applies ``where=``, ``casting=``, ``dtype=``,
    ``signature=``, ``out=``, its warnings and its floating-point error
    state exactly as for ``np.exp``.  The functions with 2-byte loops have
    a float16 loop before the two, a lookup in tables made from their own
    float64 loops (:func:`half_loop`).

Pickling
    A :class:`Ufunc` pickles by reference, as ``module.name`` of its public
    module; its ``numpy.ufunc`` (which is what ``__array_ufunc__``
    implementations such as Dask receive and ship to workers) as
    ``gelu_numba.targets.cpu.<name>`` (the package's ``__getattr__``,
    :meth:`Registry.attribute`).
"""

import functools
import threading

import numpy as np

from gelu_numba import catalog
from gelu_numba.targets import dtypes, half_tables
from gelu_numba.targets.cpu import numpy_api
from gelu_numba.targets.cpu import loops
from gelu_numba.targets.cpu.njit import register

#: the loops of a ufunc, in registration order (float32 first: the dtype
#: rule of gelu_numba.targets.dtypes); the functions of
#: gelu_numba.targets.cpu.half_loops have a float16 loop before them
_CHARS = "fd"
_HALF_CHARS = "efd"
_HALF_DTYPE = np.dtype(np.float16)
#: numpy_api's list of failed compilations (the same list, mutated in
#: place): tested after each call, as a global name for speed
_FAILED = numpy_api.FAILED


class Ufunc:
    """A NumPy ufunc of gelu_numba: the ``numpy.ufunc`` :attr:`ufunc` with
    a clear ``TypeError`` for unsupported dtypes, callable from ``@njit``.

    Calls and the methods ``reduce``, ``accumulate``, ``reduceat``,
    ``outer``, ``at`` and ``resolve_dtypes`` are the ``numpy.ufunc``'s own;
    so are ``nin``, ``nout``, ``nargs``, ``types``, ``ntypes``,
    ``identity`` and ``signature``.
    """

    #: what the TypeError for inputs without a loop names as accepted
    accepted = dtypes.ACCEPTED

    def __init__(self, raw, name, module, doc, accepted=None):
        self.ufunc = raw
        self.__name__ = self.__qualname__ = name
        self.__module__ = module
        self.__doc__ = doc
        if accepted is not None:
            self.accepted = accepted

    def _explained(self, error, args):
        # NumPy's legacy type resolver (the one of ufuncs made from C
        # loops) raises a plain TypeError when no loop takes the inputs;
        # casting errors (casting='no', a bad out= dtype) and errors of
        # duck arrays stay as they are
        if not str(error).startswith(f"ufunc '{self.__name__}' not supported for the input types"):
            return error
        return dtypes.unsupported(self.__name__, [_dtype_of(a) for a in args[:self.ufunc.nin]],
                                  self.accepted)

    def __call__(self, *args, **kwargs):
        try:
            result = self.ufunc(*args, **kwargs)  # (direct: the per-call cost)
        except TypeError as error:
            self._reraise(error, args)
        if _FAILED:
            numpy_api.raise_failure()
        return result

    def _reraise(self, error, args):
        explained = self._explained(error, args)
        if explained is error:
            raise error
        raise explained from error

    def _method(name):
        def method(self, *args, **kwargs):
            try:
                result = getattr(self.ufunc, name)(*args, **kwargs)
            except TypeError as error:
                self._reraise(error, args)
            if _FAILED:
                numpy_api.raise_failure()
            return result
        method.__name__ = name
        method.__doc__ = f"``numpy.ufunc.{name}`` of :attr:`ufunc`."
        return method

    reduce = _method("reduce")
    accumulate = _method("accumulate")
    reduceat = _method("reduceat")
    outer = _method("outer")
    at = _method("at")
    del _method

    def __getattr__(self, name):
        if name.startswith("__"):  # (pickle probes a bare instance)
            raise AttributeError(name)
        return getattr(self.ufunc, name)

    def __reduce__(self):
        return self.__name__

    def __repr__(self):
        return f"<ufunc '{self.__name__}' ({self.__module__})>"


def _dtype_of(value):
    if isinstance(value, (bool, int, float, complex)):
        return value
    dtype = getattr(value, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else np.asarray(value).dtype


class Registry:
    """The ``numpy.ufunc`` of each catalog function for one target, built
    once (thread-safe), each loop compiled from ``make_loop(fn, char)`` on
    its first call (:class:`~gelu_numba.targets.cpu.numpy_api.LazyLoops`) or by
    :meth:`compile`; pickles find them as attributes of module ``home``
    (whose ``__getattr__`` calls :meth:`get`)."""

    def __init__(self, home, make_loop, half=False):
        self.home = home
        self.make_loop = make_loop
        self.half = half  # whether the functions of cpu.half_loops get float16 loops
        self._lock = threading.RLock()
        self._built = {}

    def _loops(self, fn):
        # by name, for the record it was built from: a name registered
        # again for another record gets loops of its own
        with self._lock:
            built, lazy = self._built.get(fn.name, (None, None))
            if built is not fn:
                lazy = numpy_api.LazyLoops(fn.name, fn.nin, [
                    (_HALF_DTYPE if c == "e" else dtypes.LOOP_DTYPES[c],
                     functools.partial(self.make_loop, fn, c))
                    for c in self._chars(fn)])
                lazy.ufunc.__module__ = self.home
                self._built[fn.name] = fn, lazy
            return lazy

    def _chars(self, fn):
        return _HALF_CHARS if self.half and fn.half else _CHARS

    def get(self, fn):
        """The ``numpy.ufunc`` of ``fn`` (no loop compiled yet)."""
        return self._loops(fn).ufunc

    def compile(self, fn, char):
        """The compiled ``char`` loop of ``fn``, compiled (or loaded from
        Numba's cache) now if it was not."""
        return self._loops(fn).compile(self._chars(fn).index(char))

    def attribute(self, name):
        """Module ``__getattr__`` of ``home``: the ufunc of catalog ``name``."""
        try:
            fn = catalog.lookup(name)
        except KeyError:
            raise AttributeError(f"module {self.home!r} has no attribute {name!r}") from None
        return self.get(fn)

    def public(self, fn, module, doc):
        """The public :class:`Ufunc` of ``fn``, published in ``module``;
        ``doc`` gets the ufunc's Parameters and Returns (its loops')."""
        doc += _interface(fn, "e" in self._chars(fn))
        wrapper = Ufunc(self.get(fn), fn.name, module, doc)
        register(wrapper, fn, serial_loops)
        return wrapper


def _interface(fn, half):
    """The ufunc's parameters and return value, NumPy-style (after the
    catalog's mathematics and accuracy); ``half``: it has a float16 loop."""
    names = ", ".join(fn.params)
    inputs = "Real inputs, broadcast together" if fn.nin > 1 else "Real input"
    f16 = "float16 (correctly rounded), " if half else ""
    f16_out = "float16 for float16, bool and 8-bit integer inputs, " if half else ""
    return f"""

    Parameters
    ----------
    {names} : array_like or scalar
        {inputs}: {f16}float32 or float64 (other real dtypes by NumPy's
        safe casting, :mod:`gelu_numba.targets.dtypes`).
    out, where, casting, order, dtype, subok
        As for every NumPy ufunc.

    Returns
    -------
    ndarray or scalar
        The result in the dtype of the loop that ran: {f16_out}float32
        for float32 inputs, float64 for float64 and wider integer inputs.
"""


def loop(fn, char, cache=True):
    """The ``@cfunc`` loop of catalog function ``fn`` for dtype ``char``
    (``"f"`` or ``"d"``: :func:`~gelu_numba.targets.cpu.loops.float_loop`,
    cached on disk; ``"e"``: float16, :func:`half_loop`)."""
    if char == "e":
        return half_loop(fn.name, "float16", fn.nin)
    return loops.float_loop(fn, char, cache and catalog.listed(fn))


def serial_loops(name, char):
    """The :class:`~gelu_numba.targets.cpu.loops.Loop` of catalog function
    ``name`` for dtype ``char`` (``"f"`` or ``"d"``), the serial ufunc's,
    compiled or loaded from the cache: what ``@njit`` callers call on
    arrays (:mod:`gelu_numba.targets.cpu.njit`); ``KeyError`` if the
    catalog has no ``name``."""
    return REGISTRY.compile(catalog.lookup(name), char)


def half_loop(name, fmt, nin):
    """The NumPy inner loop of ``name`` on the bits of the 2-byte format
    ``fmt``: a lookup in the tables of :mod:`gelu_numba.targets.half_tables`,
    made from the float64 loops of :data:`REGISTRY` (a fused backward's in
    its two steps, :func:`~gelu_numba.targets.half_tables.stages`)."""
    return loops.bits_loop(half_tables.kernel(name, fmt, REGISTRY.get), nin, f"{name}_{fmt}",
                           staged=half_tables.stages(name, fmt, REGISTRY.get))


# home: the package, whose __getattr__ finds the ufuncs (pickles name
# gelu_numba.targets.cpu.<name>)
REGISTRY = Registry("gelu_numba.targets.cpu", loop, half=True)
