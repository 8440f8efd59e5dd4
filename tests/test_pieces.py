"""analysis.pieces: the piecewise-polynomial study of R behind the float32
fast path's rational function."""

import math

import mpmath
import pytest

from analysis import pieces

pytestmark = pytest.mark.tools


def test_r_is_half_the_scaled_complementary_error_function():
    # R(0) = 1/2; R(a) -> 1/(a sqrt(2 pi)) (1 - 1/a**2 + 3/a**4 ...) far out
    assert pieces.r_exact(0.0) == mpmath.mpf(1) / 2
    a = 40.0
    series = (1 - 1 / a**2 + 3 / a**4 - 15 / a**6) / (a * math.sqrt(2 * math.pi))
    assert abs(float(pieces.r_exact(a)) / series - 1) < 1e-9


def test_a_higher_degree_fits_the_first_piece_better():
    # on [0, 1), where R is hardest: each degree gains bits until the
    # doubles' floor, and degree 8 stays far from the fast path's 2**-44.5
    errors = [pieces.worst_error(0.5, 0.5, d) for d in (8, 10, 12)]
    assert errors[0] > -40 and errors[0] - errors[1] > 4 and errors[1] > errors[2]
    assert errors[2] < -43
