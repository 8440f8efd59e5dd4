"""The loops' operand tuples (gelu_numba.targets.cpu.operands) and the binding
of a plain loop to one kernel (gelu_numba.targets.cpu.bound)."""

import numpy as np
import pytest
from numba import njit, types
from numba.core.errors import TypingError

from gelu_numba.targets.cpu.bound import bound
from gelu_numba.targets.cpu.intrinsics import scratch
from gelu_numba.targets.cpu.operands import MOST, at, views

pytestmark = pytest.mark.unit


@njit
def _at(ops, i):
    return at(ops, i)


@pytest.mark.parametrize("count", range(1, MOST + 1))
def test_tuples_hold_each_operands_element(count):
    ops = tuple(np.arange(10.0) + 100 * k for k in range(count))
    assert _at(ops, 3) == tuple(100.0 * k + 3 for k in range(count))
    assert at(ops, 3) == _at(ops, 3)


def test_more_operands_than_a_loop_has_are_refused_by_name():
    ops = tuple(np.zeros(3) for _ in range(MOST + 1))
    with pytest.raises(TypingError, match=f"at: a tuple of 1 to {MOST} arrays"):
        _at(ops, 0)


_HERE, _INTP, _F64 = scratch(MOST), types.intp, types.float64


def _total(a0, a1, a2, a3, n):
    # the addresses in a stack block, as the ufunc loop hands them to an
    # element loop; views of n float64 each, summed operand by operand
    here = _HERE(_INTP)
    here[0], here[1], here[2], here[3] = a0, a1, a2, a3
    return [v.sum() for v in views(here, n, _F64, count)]  # noqa: F821 (bound)


def _views_of(count):
    return njit(bound(_total, f"total_{count}", count=count))


@pytest.mark.parametrize("count", range(1, MOST + 1))
def test_views_are_the_operands_at_their_addresses(count):
    ops = [np.arange(6.0) * (k + 1) for k in range(MOST)]
    sums = _views_of(count)(*(a.ctypes.data for a in ops), 4)
    # 0 + 1 + 2 + 3 = 6 times each operand's factor, the first count only
    assert sums == [6.0 * (k + 1) for k in range(count)]


def test_views_take_a_constant_count_of_at_most_four():
    with pytest.raises(TypingError, match=f"a constant count of 1 to {MOST} operands"):
        _views_of(MOST + 1)(0, 0, 0, 0, 1)


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
