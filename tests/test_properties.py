"""Property-based tests (hypothesis) of what mathematics guarantees."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gelu_numba as g

pytestmark = pytest.mark.unit

# GELU's minimum: GELU(x0) = -0.169971207479903661693868470982...; the
# float64 just below it is a rigorous lower bound for any faithful result.
GELU_MIN = {np.float64: np.nextafter(-0.16997120747990366, -1.0),
            np.float32: np.nextafter(np.float32(-0.16997121), np.float32(-1.0))}
X0 = -0.75179152469356445

finite64 = st.floats(allow_nan=False, allow_infinity=False)
finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)
moderate = st.floats(-60, 60, allow_nan=False)


@settings(max_examples=500, deadline=None)
@given(finite64)
def test_odd_part_is_identity(x):
    # GELU(x) - GELU(-x) = x (Phi(x) + Phi(-x) = 1): each term is within 1 ulp
    # of its exact value, and both are at most |x| in magnitude.
    d = g.gelu(x) - g.gelu(-x)
    with np.errstate(over="ignore"):  # spacing of the largest double
        tol = 3 * np.spacing(abs(x)) + 5e-324
    if np.isfinite(d):
        assert abs(d - x) <= tol


@settings(max_examples=500, deadline=None)
@given(st.one_of(finite64, finite32.map(np.float32)))
def test_bounds(x):
    y = g.gelu(x)
    assert y <= max(x, 0)
    assert y >= GELU_MIN[type(y) if isinstance(y, np.float32) else np.float64]
    p = g.ndtr(x)
    assert 0.0 <= p <= 1.0
    assert 0.0 <= g.norm_pdf(x) <= 0.3989422804014328


@settings(max_examples=500, deadline=None)
@given(st.floats(X0, 1e6), st.floats(X0, 1e6))
def test_monotone_right_of_minimum(a, b):
    lo, hi = min(a, b), max(a, b)
    # exact GELU is increasing on [x0, inf); each result is within 1 ulp, so
    # the computed values can invert by at most 2 ulp of the larger one
    assert g.gelu(lo) <= g.gelu(hi) + 2 * np.spacing(abs(g.gelu(hi)))


@settings(max_examples=300, deadline=None)
@given(moderate)
def test_derivative_relations(x):
    # GELU'(x) = Phi(x) + x phi(x) and the float32 loop agrees with the
    # float64 one to within one float32 rounding
    lhs = g.gelu_grad(x)
    rhs = g.ndtr(x) + x * g.norm_pdf(x)
    # (a subnormal phi(x) carries an absolute error of half its spacing,
    # which x multiplies)
    tol = 4 * np.spacing(max(abs(g.ndtr(x)), abs(x * g.norm_pdf(x))))
    assert abs(lhs - rhs) <= tol + (1 + abs(x)) * 5e-324
    x32 = np.float32(x)
    for name in ("gelu", "gelu_grad", "gelu_grad2", "ndtr"):
        f = getattr(g, name)
        ref = f(np.float64(x32))
        assert abs(float(f(x32)) - ref) <= np.spacing(np.float32(abs(ref))) + 1.5e-45


@settings(max_examples=300, deadline=None)
@given(moderate, st.floats(-1e6, 1e6, allow_nan=False))
def test_backward_is_scaled_grad(x, dy):
    # dy * GELU'(x) rounded once vs. GELU'(x) rounded then multiplied: at
    # most 1.5 ulp apart (unless the product underflows)
    fused = g.gelu_backward(dy, x)
    plain = dy * g.gelu_grad(x)
    if abs(plain) > 1e-290:
        assert abs(fused - plain) <= 2 * np.spacing(abs(plain))
