"""``@njit`` callers: a public ufunc called from ``@njit`` code.

:func:`register` gives a :class:`~gelu_numba.targets.cpu.registry.Ufunc`
an ``@overload`` (Numba's public API): the implementation for the argument
types at hand follows the dtype rule of :mod:`gelu_numba.targets.dtypes`
(the loop NumPy would select), then runs the kernel of that precision on
scalars, or on arrays element by element.
"""

import inspect

import numpy as np
from numba import types
from numba.core.errors import NumbaNotImplementedError, TypingError
from numba.extending import overload

from gelu_numba.internals import numba_core
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import dtypes
from gelu_numba.targets.cpu.loops import NUMBA_TYPES, element_loop, element_signature

_NJIT_SCALAR = """
def impl({args}):
    return cast(kernel({casts}))
"""

# Arrays: same-shape C-contiguous operands run a flat loop (vectorised by
# LLVM), the ufunc's own element loop where every operand is an array of the
# loop's dtype (serial_loop: its ordinary blocks, compiled interleaved);
# anything else broadcasts and walks the indices.
_NJIT_ARRAY = """
def impl({args}):
    shape = np.broadcast_shapes({shapes})
    out = np.empty(shape, cast)
    if {flat_ok}:
        flat = out.reshape(out.size)
{flat_views}
{flat_loop}
        return out
{views}
    for idx in np.ndindex(shape):
        out[idx] = cast(kernel({loads}))
    return out
"""


def _njit_impl(fn, argtys):
    """The implementation of ``fn(*args)`` in ``@njit`` code for these Numba
    argument types: the loop NumPy would select (the dtype rule), then the
    kernel of that precision, element by element."""
    found = []
    for t in argtys:
        scalar = t.dtype if isinstance(t, types.Array) else t
        try:
            found.append(numba_core.as_dtype(scalar))
        except NumbaNotImplementedError:
            raise TypingError(str(dtypes.unsupported(fn.name, [np.dtype(object)]))) from None
    char = dtypes.loop_char(*found)
    if char is None:
        raise TypingError(str(dtypes.unsupported(fn.name, found)))
    names = list(fn.params)
    arrays = [n for n, t in zip(names, argtys) if isinstance(t, types.Array)]
    scope = {"np": np, "kernel": inline(fn.kernel(char)),
             "cast": dtypes.LOOP_DTYPES[char].type}
    if not arrays:
        source = _NJIT_SCALAR.format(args=", ".join(names),
                                     casts=", ".join(f"cast({n})" for n in names))
    else:
        contiguous = all(t.layout == "C" for t in argtys if isinstance(t, types.Array))
        pad = " " * 8
        if contiguous and len(arrays) == fn.nin and all(
                t.dtype == NUMBA_TYPES[char] for t in argtys):
            scope["serial"] = _njit_serial(fn, char, argtys)
            flat_loop = f"{pad}serial(({', '.join(f'{n}_' for n in names)}, flat))"
        else:
            flat_loop = (f"{pad}for i in range(out.size):\n{pad}    flat[i] = cast(kernel("
                         + ", ".join(f"cast({n}_[i])" if n in arrays else f"cast({n})"
                                     for n in names) + "))")
        source = _NJIT_ARRAY.format(
            args=", ".join(names),
            shapes=", ".join(f"{n}.shape" for n in arrays),
            # (reshape types only for C-layout arrays)
            flat_ok=" and ".join(f"{n}.shape == shape" for n in arrays) if contiguous else "False",
            flat_views="\n".join(f"{pad}{n}_ = {n}.reshape({n}.size)" if contiguous else
                                  f"{pad}{n}_ = {n}" for n in arrays),
            flat_loop=flat_loop,
            views="\n".join(f"    {n}_ = np.broadcast_to({n}, shape)" for n in arrays),
            loads=", ".join(f"cast({n}_[idx])" if n in arrays else f"cast({n})"
                            for n in names))
    exec(source, scope)
    return scope["impl"]


def _njit_serial(fn, char, argtys):
    """The ufunc's unit-stride element loop of ``fn`` for ``@njit`` callers
    with these (C-contiguous, loop-dtype) array types, compiled now
    (interleaved: :func:`~gelu_numba.targets.cpu.loops.element_loop`)."""
    loop = element_loop(fn, char, f"{fn.name}_{dtypes.LOOP_DTYPES[char]}_njit")
    flat = [t.copy(ndim=1, layout="C") for t in argtys]
    loop.compile(element_signature([*flat, types.Array(NUMBA_TYPES[char], 1, "C")]))
    return loop


def register(wrapper, fn):
    """Make ``wrapper`` callable from ``@njit`` code (scalars and arrays),
    with the kernel's parameter names."""
    params = ", ".join(inspect.signature(fn.k64).parameters)
    scope = {"_njit_impl": _njit_impl, "fn": fn}
    exec(f"def typing({params}):\n    return _njit_impl(fn, ({params},))\n", scope)
    overload(wrapper, inline="always")(scope["typing"])
    # the name may be first looked up while Numba types a caller (a module
    # __getattr__ runs then): load the new declaration into the context now
    numba_core.refresh_typing()
