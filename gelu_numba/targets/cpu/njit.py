"""``@njit`` callers: a public ufunc called from ``@njit`` code.

:func:`register` gives a :class:`~gelu_numba.targets.cpu.registry.Ufunc`
an ``@overload`` (Numba's public API): the implementation for the argument
types at hand follows the dtype rule of :mod:`gelu_numba.targets.dtypes`
(the loop NumPy would select).  There are two overloads:

* on scalars, the kernel of that precision, inlined into the caller at
  Numba's IR level (which takes no ``*args`` function), so that an
  ``@njit`` loop of scalar calls gets the kernel and vectorises;
* on arrays, the serial ufunc's own loops, compiled once and cached on
  disk with the ufunc (:mod:`gelu_numba.targets.cpu.loops`): its ufunc
  loop, which takes the operands' steps (zero for a broadcast one) as
  from NumPy, running its element loop, on the whole output or on each row
  of it.  The caller compiles no kernel, and gets the ufunc's bits.  Its
  code calls the two loops by symbols of their own (:func:`_symbols`),
  never by an address, so that a user's ``cache=True`` function stays
  valid in a later process: the symbols are published before such code is
  loaded (:func:`~gelu_numba.internals.numba_core.before_load`).

One body serves every arity: it takes the operands as one tuple, which the
small recursive overloads below (``_broadcast``, ``_loads``, ...) walk at compile
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
from gelu_numba.targets.cpu.loops import ITEMSIZE, load_accurate


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
        return cast(kernel(*_loads(args, cast)))
    return _arity(fn.nin, scalars)


def _array_impl(fn, loops, argtys):
    """``fn`` on arguments of which at least one is an array (else None):
    the serial ufunc's own loops on the operands broadcast together (an
    array of another dtype converted, a scalar a 0-d array), one call of
    its ufunc loop on the whole output where every operand is C-contiguous
    with the output's shape, else one a row of its last dimension (the
    ufunc loop takes any step, zero included, as it does from NumPy)."""
    arrays = [t for t in argtys if isinstance(t, types.Array)]
    if not arrays:
        return None
    char, cast = _loop(fn, argtys)
    _publish(loops, fn.name, char, fn.nin + 1)
    run = _ufunc_call(loops, fn.name, char, fn.nin + 1)
    count, ndim, size = fn.nin + 1, max(t.ndim for t in arrays), ITEMSIZE[char]
    nd = max(ndim, 1)     # (a 0-d output: one row of one element)
    at, row_steps, length, strides = scratch(count), scratch(count), scratch(1), scratch(count * nd)
    odometer = scratch(nd)

    @njit
    def arrays_(args):
        dims = np.empty(nd, np.intp)
        for d in range(nd):
            dims[d] = 1
        _broadcast(args, dims, nd)
        out = np.empty(numba_core.to_fixed_tuple(dims, ndim), cast)
        if out.size == 0:
            return out
        pointers, step = at(np.intp), strides(np.intp)
        steps, n = row_steps(np.intp), length(np.intp)
        # (the operands converted live until the loop has run: the output
        # is returned out of their tuple)
        ops = _operands(args + (out,), cast, pointers, step, 0, nd)
        whole = True     # every operand C-contiguous with the output's shape
        for k in range(count):
            expected = size
            for d in range(nd - 1, -1, -1):
                whole = whole and (dims[d] == 1 or step[k * nd + d] == expected)
                expected *= dims[d]
        for k in range(count):
            steps[k] = size if whole else step[k * nd + nd - 1]
        n[0] = out.size if whole else dims[nd - 1]
        index = odometer(np.intp)
        for d in range(nd):
            index[d] = 0
        for _ in range(out.size // n[0]):
            run(pointers, n, steps)
            # the next row: the index over the leading dimensions counts up
            # as an odometer, and the operands' addresses move with it
            d = nd - 2
            while d >= 0:
                index[d] += 1
                for k in range(count):
                    pointers[k] += step[k * nd + d]
                if index[d] < dims[d]:
                    break
                for k in range(count):
                    pointers[k] -= step[k * nd + d] * dims[d]
                index[d] = 0
                d -= 1
        return ops[-1]
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


def _symbols(name, char, count):
    """The symbols under which ``@njit`` callers call the ufunc loop of
    ``count`` operands of dtype ``char`` and the element loop of ``name``
    for it (:func:`_publish`); versioned by their C signatures (NumPy's
    inner loop, and ``void entry(intp n, intp *addresses)``), which are all
    that a caller's cached code knows of them."""
    dtype = dtypes.LOOP_DTYPES[char]
    return f"gelu_numba_v1_ufunc_loop_{count}_{dtype}", f"gelu_numba_v1_{name}_{dtype}_elements"


def _publish(loops, name, char, count):
    """Make the serial ufunc's loops of catalog function ``name`` of
    ``count`` operands for dtype ``char`` (``loops(name, char)``: the compiled
    :class:`~gelu_numba.targets.cpu.loops.Loop`, or ``KeyError``;
    :func:`gelu_numba.targets.cpu.registry.serial_loops`) resolvable under
    :func:`_symbols`, before code that calls them is linked.  Run while an
    ``@njit`` caller is typed, and again in a later process, before that
    caller (or any function that calls it) is loaded from Numba's cache
    (:func:`~gelu_numba.internals.numba_core.before_load`)."""
    try:
        loop = loops(name, char)
    except KeyError:
        raise RuntimeError(f"gelu_numba: @njit code calls the loops of {name!r}, which is not "
                           "in this process's catalog (a function added with "
                           "catalog.registered must be registered before cached code that "
                           "calls it loads)") from None
    outer, inner = _symbols(name, char, count)
    numba_core.publish_symbol(outer, loop.address)
    numba_core.publish_symbol(inner, loop.data)


@functools.cache
def _ufunc_call(loops, name, char, count):
    """An intrinsic ``run(pointers, n, steps)``: the serial ufunc loop of
    ``count`` operands of dtype ``char`` on the operands at ``pointers``
    (addresses, the output last), ``n[0]`` elements, ``steps`` bytes apart,
    running the element loop of ``name``: both called by their symbols,
    which the caller's code publishes (:func:`_publish`) before it is
    loaded from the cache."""
    outer, inner = _symbols(name, char, count)
    reload = functools.partial(_publish, loops, name, char, count)

    @intrinsic
    def run(typingctx, pointers, n, steps):
        def codegen(context, builder, sig, args):
            numba_core.before_load(context, reload)
            intp = context.get_value_type(types.intp)
            byte = ir.IntType(8).as_pointer()
            entry = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [intp, intp.as_pointer()]), inner)
            loop = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [
                    byte.as_pointer(), intp.as_pointer(), intp.as_pointer(), byte]), outer)
            builder.call(loop, [builder.bitcast(args[0], byte.as_pointer()), args[1], args[2],
                                builder.bitcast(entry, byte)])
            return context.get_dummy_value()

        return types.void(pointers, n, steps), codegen

    return run


# Compile-time walks over the operand tuple: the head operand, array or
# scalar, then the rest (``ops[1:]``), down to the empty tuple.

def _broadcast(ops, dims, nd):
    """Fold the array operands' shapes into ``dims`` (``nd`` of them, ones
    to start with, aligned right), as NumPy broadcasts them.  (Written out,
    not Numba's ``np.broadcast_shapes`` and ``np.broadcast_to``: those
    compile for seconds in every caller, and the ufunc loop needs only the
    steps, :func:`_operands`.)"""


def _operands(ops, cast, base, step, k, nd):
    """The operands as arrays of dtype ``cast`` (arrays of it as they are,
    others converted, of their own shape; scalars as 0-d arrays), each
    one's address written into ``base[k]``, ..., and its byte steps along
    the ``nd`` dimensions of the output into ``step[k * nd]``, ... (zero
    along a dimension it is broadcast over)."""


def _loads(ops, cast):
    """The scalar operands' values, cast."""


def _is_array(ops):
    return isinstance(ops[0], types.Array)


@overload(_broadcast)
def _broadcast_ol(ops, dims, nd):
    if len(ops) == 0:
        return lambda ops, dims, nd: None
    if not _is_array(ops):
        return lambda ops, dims, nd: _broadcast(ops[1:], dims, nd)

    def fold(ops, dims, nd):
        a = ops[0]
        for d in range(a.ndim):
            k, s = nd - a.ndim + d, a.shape[d]
            if dims[k] == 1:
                dims[k] = s
            elif s != 1 and s != dims[k]:
                raise ValueError("operands could not be broadcast together")
        _broadcast(ops[1:], dims, nd)
    return fold


@overload(_operands)
def _operands_ol(ops, cast, base, step, k, nd):
    if len(ops) == 0:
        return lambda ops, cast, base, step, k, nd: ()
    if not _is_array(ops):
        @njit(inline="always")
        def convert(ops, cast):
            value = np.empty((), cast)
            value[()] = cast(ops[0])
            return value
    elif ops[0].dtype == cast.instance_type:
        @njit(inline="always")
        def convert(ops, cast):
            return ops[0]
    else:
        @njit(inline="always")
        def convert(ops, cast):
            return ops[0].astype(cast)

    def operands(ops, cast, base, step, k, nd):
        a = convert(ops, cast)
        base[k] = a.ctypes.data
        for d in range(nd):
            step[k * nd + d] = 0
        for d in range(a.ndim):
            if a.shape[d] != 1:
                step[k * nd + nd - a.ndim + d] = a.strides[d]
        return (a,) + _operands(ops[1:], cast, base, step, k + 1, nd)
    return operands


@overload(_loads)
def _loads_ol(ops, cast):
    if len(ops) == 0:
        return lambda ops, cast: ()
    return lambda ops, cast: (cast(ops[0]),) + _loads(ops[1:], cast)


def register(wrapper, fn, loops):
    """Make ``wrapper`` callable from ``@njit`` code (scalars and arrays);
    ``loops(name, char)``: the serial ufunc's compiled loops of catalog
    function ``name`` for dtype ``char``, a module-level function (it is
    pickled into the cache entries of ``@njit`` callers, by reference)."""
    overload(wrapper, inline="always")(_arity(fn.nin, lambda args: _scalar_impl(fn, args)))
    overload(wrapper)(_arity(fn.nin, lambda args: _array_impl(fn, loops, args)))
    # the name may be first looked up while Numba types a caller (a module
    # __getattr__ runs then): load the new declaration into the context now
    numba_core.refresh_typing()
