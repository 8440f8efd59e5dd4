"""Tuples of a loop's operands: the loops are written once for any number of
operands (a tuple ``ops``) and pass their elements on as tuples
(:func:`at`); an element loop's C entry point makes its operands from
their addresses (:func:`views`).

Numba builds no tuple in a loop, so each helper has one body per length,
one to four (three inputs and the output).  The Python form of :func:`at`
runs where the loops run uncompiled.
"""

from numba import carray, njit, types
from numba.core.errors import TypingError
from numba.extending import overload

#: the most operands a loop has: three inputs and the output
MOST = 4


def at(ops, i):
    """``(ops[0][i], ops[1][i], ...)``."""
    return tuple(a[i] for a in ops)


def overlaps(ops, out):
    """How array ``out`` shares memory with the arrays of ``ops``: 0 not at
    all, 1 only as the same elements (``out=x``), 2 otherwise (NumPy's
    ``accumulate`` hands a loop its output one element back as an input)."""
    return max(_overlap(a, out) for a in ops)


def _overlap(a, b):
    """0, 1 or 2 (:func:`overlaps`) for contiguous 1-D arrays ``a`` and ``b``."""
    pa, pb = a.ctypes.data, b.ctypes.data
    meet = a.size > 0 and b.size > 0 and pa < pb + b.nbytes and pb < pa + a.nbytes
    return 0 if not meet else 1 if pa == pb and a.nbytes == b.nbytes else 2


def views(addresses, n, ty, count):
    """``(carray(addresses[0], n), ...)``: the ``count`` operands of an
    element loop's C entry point, at the integer addresses
    ``addresses[0]``, ..., as arrays of ``n`` elements of ``ty`` (compiled
    code only; ``count`` a constant)."""
    raise NotImplementedError("views: compiled code only")


_AT = (lambda ops, i: (ops[0][i],),
       lambda ops, i: (ops[0][i], ops[1][i]),
       lambda ops, i: (ops[0][i], ops[1][i], ops[2][i]),
       lambda ops, i: (ops[0][i], ops[1][i], ops[2][i], ops[3][i]))


_OVERLAPS = (lambda ops, out: _overlap_jit(ops[0], out),
             lambda ops, out: max(_overlap_jit(ops[0], out), _overlap_jit(ops[1], out)),
             lambda ops, out: max(_overlap_jit(ops[0], out), _overlap_jit(ops[1], out),
                                  _overlap_jit(ops[2], out)),
             lambda ops, out: max(_overlap_jit(ops[0], out), _overlap_jit(ops[1], out),
                                  _overlap_jit(ops[2], out), _overlap_jit(ops[3], out)))


def _chosen(name, ops, bodies):
    if not isinstance(ops, types.BaseTuple) or not 1 <= len(ops) <= MOST:
        raise TypingError(f"{name}: a tuple of 1 to {MOST} arrays, not {ops}")
    return bodies[len(ops) - 1]


@overload(at, inline="always")
def _at(ops, i):
    return _chosen("at", ops, _AT)


_overlap_jit = njit(inline="always")(_overlap)


@overload(overlaps, inline="always")
def _overlaps(ops, out):
    return _chosen("overlaps", ops, _OVERLAPS)


@overload(views, inline="always")
def _views(addresses, n, ty, count):
    if not isinstance(count, types.IntegerLiteral) or not 1 <= count.literal_value <= MOST:
        raise TypingError(f"views: a constant count of 1 to {MOST} operands, not {count}")
    # (imported here: the CPU target's package imports this module)
    from gelu_numba.targets.cpu.intrinsics import pointer as at_address
    return (
        lambda addresses, n, ty, count: (carray(at_address(addresses[0], ty), n),),
        lambda addresses, n, ty, count: (carray(at_address(addresses[0], ty), n),
                                         carray(at_address(addresses[1], ty), n)),
        lambda addresses, n, ty, count: (carray(at_address(addresses[0], ty), n),
                                         carray(at_address(addresses[1], ty), n),
                                         carray(at_address(addresses[2], ty), n)),
        lambda addresses, n, ty, count: (carray(at_address(addresses[0], ty), n),
                                         carray(at_address(addresses[1], ty), n),
                                         carray(at_address(addresses[2], ty), n),
                                         carray(at_address(addresses[3], ty), n)),
    )[count.literal_value - 1]
