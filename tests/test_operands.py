"""The loops' operand tuples (gelu_numba.targets.operands) and the binding
of a plain loop to one kernel (gelu_numba.targets.bound)."""

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from gelu_numba.targets.bound import bound
from gelu_numba.targets.operands import MOST, at, window

pytestmark = pytest.mark.unit


@njit
def _at(ops, i):
    return at(ops, i)


@njit
def _window(ops, start, stop):
    return window(ops, start, stop)


@pytest.mark.parametrize("count", range(1, MOST + 1))
def test_tuples_hold_each_operands_element_and_slice(count):
    ops = tuple(np.arange(10.0) + 100 * k for k in range(count))
    assert _at(ops, 3) == tuple(100.0 * k + 3 for k in range(count))
    assert at(ops, 3) == _at(ops, 3)
    for got in (_window(ops, 2, 5), window(ops, 2, 5)):
        assert len(got) == count
        for k, part in enumerate(got):
            assert part.tolist() == [100.0 * k + j for j in (2, 3, 4)]


def test_more_operands_than_a_loop_has_are_refused_by_name():
    ops = tuple(np.zeros(3) for _ in range(MOST + 1))
    with pytest.raises(TypingError, match=f"at: a tuple of 1 to {MOST} arrays"):
        _at(ops, 0)


def _scaled(x):
    return factor * x  # noqa: F821 (bound by the test)


def test_bound_copies_read_their_own_names_under_their_own_name():
    double = bound(_scaled, "double", factor=2.0)
    triple = bound(_scaled, "triple", factor=3.0)
    assert (double(5.0), triple(5.0)) == (10.0, 15.0)
    assert (double.__name__, triple.__qualname__) == ("double", "triple")
    assert njit(double)(1.5) == 3.0 and njit(triple)(1.5) == 4.5
    # the original is untouched
    assert "factor" not in _scaled.__globals__
