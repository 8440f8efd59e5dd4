"""Tuples of a loop's operands: the loops are written once for any number of
operands (``*ops``) and pass their elements and slices on as tuples.

Numba builds no tuple in a loop, so each helper has one body per length,
one to four (three inputs and the output).  The Python forms run where the
loops run uncompiled.
"""

from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

#: the most operands a loop has: three inputs and the output
MOST = 4


def at(ops, i):
    """``(ops[0][i], ops[1][i], ...)``."""
    return tuple(a[i] for a in ops)


def window(ops, start, stop):
    """``(ops[0][start:stop], ops[1][start:stop], ...)``."""
    return tuple(a[start:stop] for a in ops)


_AT = (lambda ops, i: (ops[0][i],),
       lambda ops, i: (ops[0][i], ops[1][i]),
       lambda ops, i: (ops[0][i], ops[1][i], ops[2][i]),
       lambda ops, i: (ops[0][i], ops[1][i], ops[2][i], ops[3][i]))

_WINDOW = (lambda ops, start, stop: (ops[0][start:stop],),
           lambda ops, start, stop: (ops[0][start:stop], ops[1][start:stop]),
           lambda ops, start, stop: (ops[0][start:stop], ops[1][start:stop],
                                     ops[2][start:stop]),
           lambda ops, start, stop: (ops[0][start:stop], ops[1][start:stop],
                                     ops[2][start:stop], ops[3][start:stop]))


def _chosen(name, ops, bodies):
    if not isinstance(ops, types.BaseTuple) or not 1 <= len(ops) <= MOST:
        raise TypingError(f"{name}: a tuple of 1 to {MOST} arrays, not {ops}")
    return bodies[len(ops) - 1]


@overload(at, inline="always")
def _at(ops, i):
    return _chosen("at", ops, _AT)


@overload(window, inline="always")
def _window(ops, start, stop):
    return _chosen("window", ops, _WINDOW)
