"""Target factories: one scalar kernel in, one compiled callable out.

A kernel is a plain Python function of float scalars (``gelu_numba.kernels``).
:func:`cpu_ufunc` compiles it with Numba's ``@vectorize`` for the float32 and
float64 loops.  The result is a :class:`GeluUFunc`, a ``numba.DUFunc`` whose
``.ufunc`` is a real ``numpy.ufunc`` and which can be called from ``@njit``
code; the only thing it adds is a clear ``TypeError`` for input types that
no loop accepts.  :func:`parallel_ufunc` builds the multithreaded
equivalent (``target='parallel'``); the CUDA target adds its factory here.
"""

import importlib
import pickle
import sys
import threading

import numpy as np
from numba.core import errors
from numba.core import types as numba_types
from numba.np import numpy_support
from numba.core.compiler_lock import global_compiler_lock
from numba.np.ufunc import ufuncbuilder, wrappers
from numba.np.ufunc.dufunc import DUFunc
from numba.np.ufunc.parallel import ParallelUFuncBuilder

# Importing the primitives registers the CPU overloads of fma/pow2.
import gelu_numba.kernels.primitives  # noqa: F401

FLOAT_TYPES = ("float32", "float64")

# dtype characters that NumPy casts safely onto the float32 or float64 loop:
# bool, signed and unsigned integers, float16, float32, float64.
_ACCEPTED_CHARS = frozenset("?bBhHiIlLqQefd")
_ACCEPTED_TEXT = ("float32 or float64 (bool, integer and float16 inputs are "
                  "cast to them by NumPy's safe-casting rules)")


def signatures(nin):
    """The explicit loop signatures of an ``nin``-input kernel."""
    return [f"{t}({', '.join([t] * nin)})" for t in FLOAT_TYPES]


def _check_input(name, value):
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        return
    dtype = getattr(value, "dtype", None)
    if not isinstance(dtype, np.dtype):
        dtype = np.asarray(value).dtype
    if dtype.char not in _ACCEPTED_CHARS:
        raise TypeError(
            f"{name}() does not support inputs of dtype {dtype}; "
            f"accepted: {_ACCEPTED_TEXT}")


def _check_inputs(name, args, nin):
    for value in args[:nin]:
        _check_input(name, value)


def _loop_for(dtypes):
    """The loop NumPy selects for these input dtypes: ``"f"`` if all cast
    safely to float32, ``"d"`` if all cast to float64, else None."""
    for c, t in (("f", np.float32), ("d", np.float64)):
        if all(np.can_cast(d, t, "safe") for d in dtypes):
            return c
    return None


def _call_where(nin, call, args, kwargs):
    """``call(*args, **kwargs)``, with ``where=`` applied here."""
    where = kwargs.pop("where", True)
    if where is True:
        return call(*args, **kwargs)
    # Numba-built ufunc loops fail NumPy's masked iteration ("ARRAYMASK
    # ... no WRITEMASKED operands", numba 0.68 / NumPy 2.4), so where= is
    # applied here: evaluate, then copy the selected elements.
    out = kwargs.pop("out", None)
    if len(args) > nin:
        out, args = args[nin], args[:nin]
    if isinstance(out, tuple):
        (out,) = out
    result = call(*args, **kwargs)
    if out is None:
        out = np.empty_like(result)
    np.copyto(out, result, where=where, casting="same_kind")
    return out


#: the modules that publish ufuncs (pickles name them there)
_HOMES = ("gelu_numba.ufuncs", "gelu_numba.approximations", "gelu_numba.parallel")


def _published(module, name):
    """The ufunc ``module.name`` (what a pickle of one rebuilds)."""
    return getattr(importlib.import_module(module), name)


def _reduce_by_name(uf):
    # by reference, as NumPy pickles its own ufuncs: a Numba DUFunc pickles
    # its dispatcher, and the copy lacks the lazy loops' state; so Dask's
    # distributed scheduler and multiprocessing could not ship the ufuncs
    for module in _HOMES:
        home = sys.modules.get(module)
        if home is not None and getattr(home, uf.__name__, None) is uf:
            return _published, (module, uf.__name__)
    raise pickle.PicklingError(f"{uf!r} is not one of gelu_numba's published ufuncs")


class GeluUFunc(DUFunc):
    """A Numba DUFunc with the float32/float64 loops of one kernel.

    Behaves as a NumPy ufunc (broadcasting, ``out=``, ``where=``,
    ``.reduce`` and friends for binary ones); ``.ufunc`` is the underlying
    ``numpy.ufunc``.  Unsupported dtypes raise ``TypeError`` naming the
    accepted ones.

    Each loop is built on first use (the kernel comes from Numba's cache,
    but linking it into the vectorised loop is an LLVM compilation: with the
    cache load, about 0.15 s per loop, which ``import gelu_numba`` should not
    pay twelve times).
    A float32 call builds the float32 loop only; anything else builds both
    (in that order, which NumPy's loop selection needs); so do ``.ufunc``,
    ``.types``, the ufunc methods and ``@njit`` typing.
    """

    def __reduce__(self):
        return _reduce_by_name(self)

    def _init_lazy(self, nin):
        self._nin_ = nin
        self._raw = _DUFUNC_UFUNC.__get__(self)  # loops are added to it later
        self._built = ""
        self._loop_libraries = {}
        self._pending = {"f": signatures(nin)[0], "d": signatures(nin)[1]}

    def _ensure(self, chars):
        # (DUFunc.__init__ reads .ufunc before _init_lazy has run)
        if not getattr(self, "_pending", None):
            return
        # NumPy takes the first registered loop that the inputs cast to
        # safely, so the float32 loop must be registered before float64's
        chars = "fd" if "d" in chars else "f"
        with _BUILD_LOCK:
            for c in chars:
                sig = self._pending.pop(c, None)
                if sig is not None:
                    _build_loop(self, sig)
                    self._built += c

    def _ensure_all(self):
        self._ensure("fd")

    def _loop_char(self, args):
        try:
            # Python scalars are weak here, as in NumPy's own loop selection
            rt = np.result_type(*args[:self._nin_])
        except TypeError:
            return "fd"
        return _loop_for([rt]) or "fd"

    @property
    def ufunc(self):
        self._ensure_all()
        return _DUFUNC_UFUNC.__get__(self)

    @property
    def types(self):
        return self.ufunc.types

    @property
    def ntypes(self):
        return self.ufunc.ntypes

    @property
    def nin(self):
        return _DUFUNC_UFUNC.__get__(self).nin

    def __call__(self, *args, **kwargs):
        # Fast path: exact ndarrays of accepted dtypes, loops built, at most
        # out=.  It calls the numpy.ufunc itself, skipping DUFunc.__call__'s
        # Python-level __array_ufunc__ scan (which cannot apply to exact
        # ndarrays): a third of the per-call overhead on small arrays.
        if len(args) == self._nin_ and (not kwargs or kwargs.keys() == _OUT_ONLY):
            need = "f"
            for a in args:
                if type(a) is not np.ndarray:
                    break
                c = a.dtype.char
                if c != "f":
                    if c not in _ACCEPTED_CHARS:
                        break
                    need = "d"
            else:
                if need in self._built:
                    return self._raw(*args, **kwargs)
        _check_inputs(self.__name__, args, self._nin_)
        if self._pending:
            self._ensure(self._loop_char(args))
        return _call_where(self._nin_, super().__call__, args, kwargs)

    # Numba's own compilation paths (a call or @njit typing with argument
    # types that have no loop yet) are redirected to the float32/float64
    # loop that NumPy's casting rules select, so no other loop (int64, say)
    # is ever compiled.
    def _char_of_types(self, ewise_types):
        try:
            dts = [numpy_support.as_dtype(t) for t in ewise_types[:self._nin_]]
        except errors.NumbaNotImplementedError:
            return None
        return _loop_for(dts)

    def find_ewise_function(self, ewise_types):
        c = self._char_of_types(ewise_types)
        if c is None:
            return None, None
        self._ensure(c)
        want = (numba_types.float32 if c == "f" else numba_types.float64,) * self._nin_
        for sig, cres in self._dispatcher.overloads.items():
            if sig.args == want:
                return sig, cres
        return None, None

    def _compile_for_argtys(self, argtys, return_type=None):
        sig, cres = self.find_ewise_function(tuple(argtys))
        if cres is None:
            raise TypeError(f"{self.__name__}() does not support argument types "
                            f"{argtys}; accepted: {_ACCEPTED_TEXT}")
        return cres



def _with_all_loops(method):
    def wrapper(self, *args, **kwargs):
        self._ensure_all()
        return getattr(super(GeluUFunc, self), method)(*args, **kwargs)

    wrapper.__name__ = method
    return wrapper


# the ufunc methods other than a call build both loops first
for _method in ("reduce", "accumulate", "reduceat", "outer", "at"):
    setattr(GeluUFunc, _method, _with_all_loops(_method))


_BUILD_LOCK = threading.RLock()
_OUT_ONLY = {"out"}
# the C-level slot holding the numpy.ufunc, shadowed by GeluUFunc.ufunc
_DUFUNC_UFUNC = next(c.__dict__["ufunc"] for c in DUFunc.__mro__
                     if "ufunc" in c.__dict__)


def _inline_into_loop(cres):
    """Mark the compiled kernel ``alwaysinline`` where the loop links it.

    Numba declares the kernel ``alwaysinline`` only in the wrapper module;
    the definition it links in (also when loaded from the cache) carries no
    such attribute, so LLVM's cost model keeps any kernel larger than a few
    dozen instructions as a call inside the element loop, and a call blocks
    the loop vectorizer.  Setting the attribute on the definition that gets
    linked makes the unit-stride loop vectorise (checked with
    ``NUMBA_DUMP_ASSEMBLY=1``: packed ``zmm`` FMAs, no call in the loop).
    """
    module = cres.library._get_module_for_linking()
    module.get_function(cres.fndesc.llvm_func_name).add_function_attribute(
        "alwaysinline")


def _build_loop(uf, sig):
    """Compile one loop of ``uf`` with the kernel inlined into it (mirrors
    ``DUFunc._compile_for_argtys`` of numba 0.68)."""
    cres, argtys, return_type = ufuncbuilder._compile_element_wise_function(
        uf._dispatcher, uf.targetoptions, sig)
    _inline_into_loop(cres)
    actual_sig = ufuncbuilder._finalize_ufunc_signature(cres, argtys, return_type)
    # = ufuncbuilder._build_element_wise_ufunc_wrapper, keeping the library
    # (its assembly is what loop_assembly() shows)
    with global_compiler_lock:
        info = wrappers.build_ufunc_wrapper(
            cres.library, cres.target_context, cres.fndesc.llvm_func_name,
            actual_sig, cres.objectmode, cres)
        ptr = info.library.get_pointer_to_function(info.name)
    dtypenums = [np.dtype(str(a)).num for a in actual_sig.args]
    dtypenums.append(np.dtype(str(actual_sig.return_type)).num)
    uf._add_loop(int(ptr), dtypenums)
    uf._loop_libraries[str(actual_sig.return_type)] = info.library
    uf._keepalive.append((ptr, cres.library, cres.environment))
    uf._lower_me.libs.append(cres.library)


def loop_assembly(uf, dtype):
    """The machine code of ``uf``'s ``dtype`` loop (``"float32"`` or
    ``"float64"``), to check that it is vectorised (look for packed
    ``vfmadd...pd`` on ``ymm``/``zmm`` registers and no ``call``)."""
    uf._ensure("f" if str(dtype) == "float32" else "fd")
    return uf._loop_libraries[str(dtype)].get_asm_str()


def cpu_ufunc(kernel, nin, doc, cache=True):
    """Compile ``kernel`` into a single-threaded CPU :class:`GeluUFunc`."""
    uf = GeluUFunc(kernel, cache=cache)
    uf._init_lazy(nin)
    uf.__doc__ = doc
    return uf


class ParallelGeluUFunc:
    """A multithreaded NumPy ufunc (Numba ``target='parallel'``) with the
    dtype check and ``where=`` handling of :class:`GeluUFunc`.

    Each thread runs the same vectorised loop as the single-threaded ufunc
    on its share of the elements, so results are bit-identical.  ``.ufunc``
    is the underlying ``numpy.ufunc``; other attributes are forwarded to it.
    Not callable from ``@njit`` code (use the single-threaded ufunc there,
    inside your own ``prange``).
    """

    def __init__(self, ufunc, doc):
        self.ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        nin = self.ufunc.nin
        _check_inputs(self.__name__, args, nin)
        return _call_where(nin, self.ufunc, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):       # (no ufunc for pickle's lookups on a bare copy)
            raise AttributeError(name)
        return getattr(self.ufunc, name)

    def __reduce__(self):
        return _reduce_by_name(self)

    def __repr__(self):
        return f"<gelu_numba.parallel.{self.__name__}>"


def parallel_ufunc(kernel, nin, doc, cache=True):
    """Compile ``kernel`` into a multithreaded :class:`ParallelGeluUFunc`."""
    builder = ParallelUFuncBuilder(kernel, cache=cache,
                                   targetoptions={"nopython": True})
    for sig in signatures(nin):
        _inline_into_loop(builder.add(sig))
    return ParallelGeluUFunc(builder.build_ufunc(), doc)
