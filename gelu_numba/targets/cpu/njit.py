"""``@njit`` callers: a public ufunc called from ``@njit`` code.

:func:`register` gives a :class:`~gelu_numba.targets.cpu.registry.Ufunc`
an ``@overload`` (Numba's public API): the implementation for the argument
types at hand follows the dtype rule of :mod:`gelu_numba.targets.dtypes`
(the loop NumPy would select).  There are two overloads:

* on scalars, the kernel of that precision, inlined into the caller at
  Numba's IR level (which takes no ``*args`` function), so that an
  ``@njit`` loop of scalar calls gets the kernel and vectorises;
* on arrays, the serial ufunc's own element loop, compiled once and cached
  on disk with the ufunc (:mod:`gelu_numba.targets.cpu.loops`), on the
  operands broadcast, cast and made contiguous where they are not already:
  the caller compiles no kernel, and gets the ufunc's bits.  The caller's
  code calls the loop by a symbol of its own (:func:`_entry_symbol`),
  never by an address, so that a user's ``cache=True`` function stays
  valid in a later process: the symbol is published before such code is
  loaded (:func:`~gelu_numba.internals.numba_core.before_load`).

One body serves every arity: it takes the operands as one tuple, which the
small recursive overloads below (``_shape``, ``_loads``, ...) walk at compile
time, one operand at a time.  Each overload has one form per arity
(:func:`_arity`: there are three), whose parameters are positional (as the
ufuncs' inputs are).
"""

import functools

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.errors import NumbaNotImplementedError, TypingError
from numba.extending import intrinsic, overload

from gelu_numba.internals import numba_core
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import dtypes
from gelu_numba.targets.cpu.intrinsics import scratch
from gelu_numba.targets.cpu.loops import NUMBA_TYPES, load_accurate


def _loop(fn, argtys):
    """``(char, cast)`` for these Numba argument types: the loop NumPy
    would select (the dtype rule) and its scalar type."""
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
    return char, dtypes.LOOP_DTYPES[char].type


def _scalar_impl(fn, argtys):
    """``fn`` on scalar arguments (None where one is an array)."""
    if any(isinstance(t, types.Array) for t in argtys):
        return None
    char, cast = _loop(fn, argtys)
    load_accurate(fn, char)
    kernel = inline(fn.kernel(char))

    @njit(inline="always")
    def scalars(args):
        return cast(kernel(*_loads(args, 0, cast)))
    return _arity(fn.nin, scalars)


def _array_impl(fn, elements, argtys):
    """``fn`` on arguments of which at least one is an array (else None):
    the serial ufunc's element loop, on the operands broadcast to the
    output's shape and cast to the loop's dtype, contiguous (a copy of
    those that are not already so: arrays of the loop's dtype with the
    output's shape and C order are passed as they are)."""
    if not any(isinstance(t, types.Array) for t in argtys):
        return None
    char, cast = _loop(fn, argtys)
    _publish(elements, fn.name, char)
    call, here = _entry_call(elements, fn.name, char), scratch(fn.nin + 1)

    @njit
    def arrays_(args):
        out, ops = _prepare(args, cast)
        addresses = here(np.intp)
        _store_addresses(ops + (out,), addresses, 0)
        call(out.size, addresses)
        return out
    return _arity(fn.nin, arrays_)


# (the same for every function: cached on disk, so that NumPy's broadcasting
# in Numba, seconds of compilation, is compiled once per operand types)
@njit(cache=True)
def _prepare(args, cast):
    """The output (uninitialised, C order) and the operands as
    :func:`_contiguous` makes them."""
    shape = _shape(args)
    return np.empty(shape, cast), _contiguous(args, shape, cast)


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


def _entry_symbol(name, char):
    """The symbol under which ``@njit`` callers call the element loop of
    ``name`` for dtype ``char`` (:func:`_publish`); versioned by its C
    signature (``void entry(intp n, intp *addresses)``), which is all
    that a caller's cached code knows of it."""
    return f"gelu_numba_v1_{name}_{dtypes.LOOP_DTYPES[char]}_elements"


def _publish(elements, name, char):
    """Make the element loop of catalog function ``name`` for dtype
    ``char`` resolvable under :func:`_entry_symbol`, before code that calls
    it is linked: its address is ``elements(name, char)`` (the serial
    ufunc's loop, compiled or loaded from the cache:
    :func:`gelu_numba.targets.cpu.registry.element_loop`).  Run while an
    ``@njit`` caller is typed, and again in a later process, before that
    caller (or any function that calls it) is loaded from Numba's cache
    (:func:`~gelu_numba.internals.numba_core.before_load`)."""
    try:
        address = elements(name, char)
    except KeyError:
        raise RuntimeError(f"gelu_numba: @njit code calls the element loop of {name!r}, which "
                           "is not in this process's catalog (a function added with "
                           "catalog.registered must be registered before cached code that "
                           "calls it loads)") from None
    numba_core.publish_symbol(_entry_symbol(name, char), address)


@functools.cache
def _entry_call(elements, name, char):
    """An intrinsic ``call(n, addresses)``: a call of the element loop of
    ``name`` for dtype ``char`` by its symbol, which the caller's code
    publishes (:func:`_publish`) before it is loaded from the cache."""
    symbol = _entry_symbol(name, char)
    reload = functools.partial(_publish, elements, name, char)

    @intrinsic
    def call(typingctx, n, addresses):
        def codegen(context, builder, sig, args):
            numba_core.before_load(context, reload)
            intp = context.get_value_type(types.intp)
            fnty = ir.FunctionType(ir.VoidType(), [intp, intp.as_pointer()])
            builder.call(cgutils.get_or_insert_function(builder.module, fnty, symbol), args)
            return context.get_dummy_value()

        return types.void(n, addresses), codegen

    return call


# Compile-time walks over the operand tuple: the head operand, array or
# scalar, then the rest (``ops[1:]``), down to the empty tuple.

def _shape(ops):
    """The broadcast shape of the array operands."""


def _contiguous(ops, shape, cast):
    """Each operand broadcast to ``shape``, of dtype ``cast``, C-contiguous
    (an array that already is one is passed as it is)."""


def _loads(ops, index, cast):
    """Each operand's element at ``index`` (a scalar's value), cast."""


def _store_addresses(ops, addresses, k):
    """The data addresses of array operands into ``addresses[k]``, ...
    (every operand an array)."""


def _is_array(ops):
    return isinstance(ops[0], types.Array)


@overload(_shape)
def _shape_ol(ops):
    if len(ops) == 0:
        return lambda ops: ()
    if _is_array(ops):
        return lambda ops: np.broadcast_shapes(ops[0].shape, _shape(ops[1:]))
    return lambda ops: _shape(ops[1:])


@overload(_contiguous)
def _contiguous_ol(ops, shape, cast):
    if len(ops) == 0:
        return lambda ops, shape, cast: ()
    if not _is_array(ops):
        return lambda ops, shape, cast: ((np.full(shape, cast(ops[0])),)
                                         + _contiguous(ops[1:], shape, cast))
    if ops[0].dtype == cast.instance_type:
        return lambda ops, shape, cast: ((np.ascontiguousarray(np.broadcast_to(ops[0], shape)),)
                                         + _contiguous(ops[1:], shape, cast))
    return lambda ops, shape, cast: ((np.broadcast_to(ops[0], shape).astype(cast),)
                                     + _contiguous(ops[1:], shape, cast))


@overload(_loads)
def _loads_ol(ops, index, cast):
    if len(ops) == 0:
        return lambda ops, index, cast: ()
    if _is_array(ops):
        return lambda ops, index, cast: (cast(ops[0][index]),) + _loads(ops[1:], index, cast)
    return lambda ops, index, cast: (cast(ops[0]),) + _loads(ops[1:], index, cast)


@overload(_store_addresses)
def _store_addresses_ol(ops, addresses, k):
    if len(ops) == 0:
        return lambda ops, addresses, k: None

    def store(ops, addresses, k):
        addresses[k] = ops[0].ctypes.data
        _store_addresses(ops[1:], addresses, k + 1)
    return store


def register(wrapper, fn, elements):
    """Make ``wrapper`` callable from ``@njit`` code (scalars and arrays);
    ``elements(name, char)``: the address of the element loop of catalog
    function ``name`` for dtype ``char``, a module-level function (it is
    pickled into the cache entries of ``@njit`` callers, by reference)."""
    overload(wrapper, inline="always")(_arity(fn.nin, lambda args: _scalar_impl(fn, args)))
    overload(wrapper)(_arity(fn.nin, lambda args: _array_impl(fn, elements, args)))
    # the name may be first looked up while Numba types a caller (a module
    # __getattr__ runs then): load the new declaration into the context now
    numba_core.refresh_typing()
