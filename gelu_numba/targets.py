"""Target factories: one scalar kernel in, one compiled callable out.

A kernel is a plain Python function of float scalars (``gelu_numba.kernels``).
:func:`cpu_ufunc` compiles it with Numba's ``@vectorize`` for the float32 and
float64 loops.  The result is a :class:`GeluUFunc`, a ``numba.DUFunc`` whose
``.ufunc`` is a real ``numpy.ufunc`` and which can be called from ``@njit``
code; the only thing it adds is a clear ``TypeError`` for input types that
no loop accepts.  :func:`parallel_ufunc` builds the multithreaded
equivalent (``target='parallel'``); the CUDA target adds its factory here.
"""

import numpy as np
from numba.np.ufunc import ufuncbuilder
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


def _checked_call(uf, call, args, kwargs):
    """``call(*args, **kwargs)`` after the dtype check, with ``where=``
    applied here."""
    for value in args[:uf.nin]:
        _check_input(uf.__name__, value)
    where = kwargs.pop("where", True)
    if where is True:
        return call(*args, **kwargs)
    # Numba-built ufunc loops fail NumPy's masked iteration ("ARRAYMASK
    # ... no WRITEMASKED operands", numba 0.68 / NumPy 2.4), so where= is
    # applied here: evaluate, then copy the selected elements.
    out = kwargs.pop("out", None)
    if len(args) > uf.nin:
        out, args = args[uf.nin], args[:uf.nin]
    if isinstance(out, tuple):
        (out,) = out
    result = call(*args, **kwargs)
    if out is None:
        out = np.empty_like(result)
    np.copyto(out, result, where=where, casting="same_kind")
    return out


class GeluUFunc(DUFunc):
    """A Numba DUFunc with the float32/float64 loops of one kernel.

    Behaves as a NumPy ufunc (broadcasting, ``out=``, ``where=``,
    ``.reduce`` and friends for binary ones); ``.ufunc`` is the underlying
    ``numpy.ufunc``.  Unsupported dtypes raise ``TypeError`` naming the
    accepted ones.
    """

    def __call__(self, *args, **kwargs):
        return _checked_call(self, super().__call__, args, kwargs)


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
    dtypenums, ptr, env = ufuncbuilder._build_element_wise_ufunc_wrapper(
        cres, actual_sig)
    uf._add_loop(int(ptr), dtypenums)
    uf._keepalive.append((ptr, cres.library, env))
    uf._lower_me.libs.append(cres.library)


def cpu_ufunc(kernel, nin, doc, cache=True):
    """Compile ``kernel`` into a single-threaded CPU :class:`GeluUFunc`."""
    uf = GeluUFunc(kernel, cache=cache)
    for sig in signatures(nin):
        _build_loop(uf, sig)
    uf.disable_compile()
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
        return _checked_call(self, self.ufunc, args, kwargs)

    def __getattr__(self, name):
        return getattr(self.ufunc, name)

    def __repr__(self):
        return f"<gelu_numba.parallel.{self.__name__}>"


def parallel_ufunc(kernel, nin, doc, cache=True):
    """Compile ``kernel`` into a multithreaded :class:`ParallelGeluUFunc`."""
    builder = ParallelUFuncBuilder(kernel, cache=cache,
                                   targetoptions={"nopython": True})
    for sig in signatures(nin):
        _inline_into_loop(builder.add(sig))
    return ParallelGeluUFunc(builder.build_ufunc(), doc)
