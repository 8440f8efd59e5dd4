"""Proof that the 2-byte backward ``dy * GELU'(x)`` (gelu_numba.gelu_backward
on float16, gelu_numba.half.gelu_backward_bfloat16) is correctly rounded at
every pair of finite inputs: 2**32 pairs per format.

The loop computes ``p = dy * g`` in float64, g the float64 GELU' (below
0.5 + 2**-4 float64 ulp, moved one ulp towards the exact value where it is
1/2: kernels.half_rounding.grad_off_half), and rounds p once.  So
``|p - dy GELU'(x)| < |p| 2**-50.9``, and the rounding is correct wherever
both ends of ``p (1 -+ 2**-50)`` round to the same value (rounding is
monotone; the ends are computed as ``p (1 -+ 2**-50)`` in float64, within
2**-53 of themselves).  For |x| <= 2**-20, where the exact product lies
next to the possible tie dy/2 on a known side, the rounding is compared
with the exact product's instead.
Checked here for every pair with x != 0 (at x = +-0, g = 1/2
and p = dy/2 are exact) and dy > 0 (the sign of dy only flips the result's),
with the loop's own table and rounding."""

import numpy as np
import pytest
from numba import njit

from gelu_numba.kernels import half_rounding as kernels
from gelu_numba.targets import half_tables
from gelu_numba.targets.cpu import half_loops as half

pytestmark = pytest.mark.proof

SLACK = 2.0**-50


def _counter(round_):
    @njit
    def count(dy_values, grads, x_values):
        bad = 0
        first = -1
        for i in range(grads.size):
            g = grads[i]
            # |x| <= 2**-20: 0 < (GELU'(x) - 1/2) / x <= 2 phi(0) < 1, so the
            # exact product is within 2**-19 (relative) of dy/2, on the side
            # of x (dy > 0); dy/2 has at most 11 significant bits, so it is a
            # tie of the format or at least 2**-12 from one: the correct
            # result is that of dy/2 moved 2**-40 towards that side
            near = abs(x_values[i]) <= 2.0**-20
            side = 2.0**-40 if x_values[i] > 0.0 else -(2.0**-40)
            for j in range(dy_values.size):
                p = dy_values[j] * g
                if near:
                    wrong = round_(p) != round_(dy_values[j] * 0.5 * (1.0 + side))
                else:
                    # (products, not p -+ e: the ends keep p's sign at p = 0)
                    wrong = round_(p * (1.0 - SLACK)) != round_(p * (1.0 + SLACK))
                if wrong:
                    bad += 1
                    if first < 0:
                        first = i
        return bad, first
    return count


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_backward_correctly_rounded_at_every_pair(fmt):
    values = half_tables.format_values(fmt)
    grads = half.table("gelu_backward", fmt)
    finite = np.isfinite(values)
    x_ok = finite & (values != 0)
    dy = values[finite & (values > 0)]
    _, round_ = kernels.FORMATS[fmt]
    bad, first = _counter(round_)(dy, grads[x_ok], values[x_ok])
    assert bad == 0, (f"{bad} pairs within 2**-50 of a tie, e.g. at x = "
                      f"{values[x_ok][first]!r}")
