"""``@njit`` callers: a public ufunc called from ``@njit`` code.

:func:`register` gives a :class:`~gelu_numba.targets.cpu.registry.Ufunc`
an ``@overload`` (Numba's public API): the implementation for the argument
types at hand follows the dtype rule of :mod:`gelu_numba.targets.dtypes`
(the loop NumPy would select), then runs the kernel of that precision on
scalars, or on arrays element by element.

One body serves every arity: it takes the operands as one tuple, which the
small recursive overloads below (``_shape``, ``_loads``, ...) walk at compile
time, one operand at a time.  Each overload has one form per arity
(:func:`_arity`: there are three), whose parameters are positional (as the
ufuncs' inputs are).  There are two overloads: on scalars the implementation
is inlined into the caller at Numba's IR level (which takes no ``*args``
function), so that an ``@njit`` loop of scalar calls gets the kernel and
vectorises; on arrays it is a function of its own (it has its own loops, and
inlining them would only make every caller compile them again).
"""

import functools

import numpy as np
from numba import njit, types
from numba.core.errors import NumbaNotImplementedError, TypingError
from numba.extending import overload

from gelu_numba.internals import numba_core
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import dtypes
from gelu_numba.targets.cpu.loops import (NUMBA_TYPES, element_loop, element_signature,
                                          load_accurate)


def _kernel(fn, argtys):
    """``(char, kernel, cast)`` for these Numba argument types: the loop
    NumPy would select (the dtype rule), its kernel and its scalar type."""
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
    load_accurate(fn, char)
    return char, inline(fn.kernel(char)), dtypes.LOOP_DTYPES[char].type


def _scalar_impl(fn, argtys):
    """``fn`` on scalar arguments (None where one is an array)."""
    if any(isinstance(t, types.Array) for t in argtys):
        return None
    _, kernel, cast = _kernel(fn, argtys)

    @njit(inline="always")
    def scalars(args):
        return cast(kernel(*_loads(args, 0, cast)))
    return _arity(fn.nin, scalars)


def _array_impl(fn, argtys):
    """``fn`` on arguments of which at least one is an array (else None),
    element by element."""
    arrays = [t for t in argtys if isinstance(t, types.Array)]
    if not arrays:
        return None
    char, kernel, cast = _kernel(fn, argtys)
    # Same-shape C-contiguous operands run a flat loop (vectorised by LLVM):
    # the ufunc's own element loop where every operand is an array of the
    # loop's dtype, else the kernel element by element.  Anything else
    # broadcasts and walks the indices.
    if all(t.layout == "C" for t in arrays):
        if len(arrays) == fn.nin and all(t.dtype == NUMBA_TYPES[char] for t in arrays):
            flat = _serial_flat(_njit_serial(fn, char, argtys))
        else:
            flat = _element_flat(kernel, cast)
    else:
        flat = _never_flat

    @njit
    def arrays_(args):
        shape = _shape(args)
        out = np.empty(shape, cast)
        if not flat(args, shape, out):
            views = _views(args, shape)
            for idx in np.ndindex(shape):
                out[idx] = cast(kernel(*_loads(views, idx, cast)))
        return out
    return _arity(fn.nin, arrays_)


def _arity(nin, body):
    """``body`` (a function of the operand tuple) as a function of ``nin``
    positional operands: the overload's typing function, or its
    implementation."""
    if nin == 1:
        return lambda a: body((a,))
    if nin == 2:
        return lambda a, b: body((a, b))
    if nin == 3:
        return lambda a, b, c: body((a, b, c))
    raise ValueError(f"@njit callers take 1 to 3 operands (got {nin})")


def _njit_serial(fn, char, argtys):
    """The ufunc's unit-stride element loop of ``fn`` for ``@njit`` callers
    with these (C-contiguous, loop-dtype) array types, compiled now for
    their 1-D forms (interleaved:
    :func:`~gelu_numba.targets.cpu.loops.element_loop`); one dispatcher per
    function and dtype, so that every caller in the process shares it."""
    loop = _njit_loop(fn, char)
    flat = [t.copy(ndim=1, layout="C") for t in argtys]
    loop.compile(element_signature([*flat, types.Array(NUMBA_TYPES[char], 1, "C")]))
    return loop


@functools.cache
def _njit_loop(fn, char):
    return element_loop(fn, char, f"{fn.name}_{dtypes.LOOP_DTYPES[char]}_njit")


# The flat paths: each returns whether it computed ``out`` (the operands
# have the output's shape), leaving the broadcast walk otherwise.

def _serial_flat(serial):
    @njit
    def flat(args, shape, out):
        if not _same_shape(args, shape):
            return False
        serial(_flat_views(args) + (out.reshape(out.size),))
        return True
    return flat


def _element_flat(kernel, cast):
    @njit
    def flat(args, shape, out):
        if not _same_shape(args, shape):
            return False
        ops = _flat_views(args)
        out_ = out.reshape(out.size)
        for i in range(out.size):
            out_[i] = cast(kernel(*_loads(ops, i, cast)))
        return True
    return flat


@njit
def _never_flat(args, shape, out):
    return False


# Compile-time walks over the operand tuple: the head operand, array or
# scalar, then the rest (``ops[1:]``), down to the empty tuple.

def _shape(ops):
    """The broadcast shape of the array operands."""


def _same_shape(ops, shape):
    """Whether every array operand has ``shape``."""


def _flat_views(ops):
    """Arrays as 1-D views (C-contiguous operands), scalars as they are."""


def _views(ops, shape):
    """Arrays broadcast to ``shape``, scalars as they are."""


def _loads(ops, index, cast):
    """Each operand's element at ``index`` (a scalar's value), cast."""


def _is_array(ops):
    return isinstance(ops[0], types.Array)


@overload(_shape)
def _shape_ol(ops):
    if len(ops) == 0:
        return lambda ops: ()
    if _is_array(ops):
        return lambda ops: np.broadcast_shapes(ops[0].shape, _shape(ops[1:]))
    return lambda ops: _shape(ops[1:])


@overload(_same_shape)
def _same_shape_ol(ops, shape):
    if len(ops) == 0:
        return lambda ops, shape: True
    if _is_array(ops):
        return lambda ops, shape: ops[0].shape == shape and _same_shape(ops[1:], shape)
    return lambda ops, shape: _same_shape(ops[1:], shape)


@overload(_flat_views)
def _flat_views_ol(ops):
    if len(ops) == 0:
        return lambda ops: ()
    if _is_array(ops):
        return lambda ops: (ops[0].reshape(ops[0].size),) + _flat_views(ops[1:])
    return lambda ops: (ops[0],) + _flat_views(ops[1:])


@overload(_views)
def _views_ol(ops, shape):
    if len(ops) == 0:
        return lambda ops, shape: ()
    if _is_array(ops):
        return lambda ops, shape: (np.broadcast_to(ops[0], shape),) + _views(ops[1:], shape)
    return lambda ops, shape: (ops[0],) + _views(ops[1:], shape)


@overload(_loads)
def _loads_ol(ops, index, cast):
    if len(ops) == 0:
        return lambda ops, index, cast: ()
    if _is_array(ops):
        return lambda ops, index, cast: (cast(ops[0][index]),) + _loads(ops[1:], index, cast)
    return lambda ops, index, cast: (cast(ops[0]),) + _loads(ops[1:], index, cast)


def register(wrapper, fn):
    """Make ``wrapper`` callable from ``@njit`` code (scalars and arrays)."""
    overload(wrapper, inline="always")(_arity(fn.nin, lambda args: _scalar_impl(fn, args)))
    overload(wrapper)(_arity(fn.nin, lambda args: _array_impl(fn, args)))
    # the name may be first looked up while Numba types a caller (a module
    # __getattr__ runs then): load the new declaration into the context now
    numba_core.refresh_typing()
