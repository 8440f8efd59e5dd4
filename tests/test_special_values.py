"""Special values, limits and exact identities (expected values from mathematics)."""

import math

import numpy as np
import pytest

import gelu_numba as g
from gelu_numba import catalog

pytestmark = pytest.mark.unit

DTYPES = [np.float32, np.float64]
INF, NAN = np.inf, np.nan


def bits_equal(a, b):
    """Same value and same sign of zero (NaN equals NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.all((a == b) & (np.signbit(a) == np.signbit(b))
                       | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name, x, expected", [
    ("gelu", INF, INF), ("gelu", -INF, -0.0), ("gelu", 0.0, 0.0),
    ("gelu", -0.0, -0.0), ("gelu", NAN, NAN),
    ("gelu_grad", INF, 1.0), ("gelu_grad", -INF, 0.0), ("gelu_grad", 0.0, 0.5),
    ("gelu_grad", NAN, NAN),
    ("gelu_grad2", INF, 0.0), ("gelu_grad2", -INF, 0.0), ("gelu_grad2", NAN, NAN),
    ("ndtr", INF, 1.0), ("ndtr", -INF, 0.0), ("ndtr", 0.0, 0.5),
    ("ndtr", -0.0, 0.5), ("ndtr", NAN, NAN),
    ("norm_pdf", INF, 0.0), ("norm_pdf", -INF, 0.0), ("norm_pdf", NAN, NAN),
])
def test_special_values(name, x, expected, dt):
    out = getattr(g, name)(np.array([x], dtype=dt))
    assert out.dtype == dt
    if name == "gelu":  # the signed zeros are part of the spec for gelu
        assert bits_equal(out[0], dt(expected)), out
    else:
        assert (out[0] == expected) or (math.isnan(expected) and np.isnan(out[0]))


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values_raise_no_warning(dt):
    x = np.array([INF, -INF, NAN, 0.0, -0.0], dtype=dt)
    # underflow is left at its default (ignored): it is real in intermediates
    with np.errstate(invalid="raise", over="raise", divide="raise"):
        for name in (f.name for f in catalog.group("exact") if f.nin == 1):
            getattr(g, name)(x)
        g.gelu_backward(dt(1.0), x)
        g.gelu_backward(x, dt(1.0))


@pytest.mark.parametrize("dt", DTYPES)
def test_pdf_at_zero(dt):
    # phi(0) = 1/sqrt(2 pi), correctly rounded in each format
    assert g.norm_pdf(dt(0.0)) == dt(1 / math.sqrt(2 * math.pi))


@pytest.mark.parametrize("dt", DTYPES)
def test_grad2_at_zero(dt):
    # GELU''(0) = 2 phi(0) = sqrt(2/pi)
    assert g.gelu_grad2(dt(0.0)) == dt(math.sqrt(2 / math.pi))


@pytest.mark.parametrize("dt", DTYPES)
def test_backward_specials(dt):
    bw = g.gelu_backward
    one = dt(1.0)
    assert bw(dt(INF), dt(0.0)) == INF
    assert bw(dt(-INF), dt(1.0)) == -INF
    assert bw(dt(INF), dt(-1.0)) == -INF     # GELU'(-1) < 0
    assert np.isnan(bw(dt(INF), dt(-INF)))   # inf * GELU'(-inf) = inf * 0
    assert np.isnan(bw(dt(NAN), dt(1.0)))
    assert np.isnan(bw(one, dt(NAN)))
    assert bw(dt(2.0), dt(INF)) == 2.0
    assert bw(dt(3.0), dt(0.0)) == 1.5       # GELU'(0) = 1/2
    assert bw(dt(0.0), dt(-1.0)) == 0.0


def test_backward_where_grad_underflows():
    # GELU'(-40) ~ -40 phi(40) ~ -7e-347 underflows, yet 1e300 * GELU'(-40)
    # is a normal double: the fused kernel keeps the scale internal.
    import mpmath as mp
    with mp.workprec(200):
        x = mp.mpf(-40)
        exact = mp.mpf(1e300) * (mp.ncdf(x) + x * mp.npdf(x))
    got = g.gelu_backward(1e300, -40.0)
    assert got != 0.0
    assert abs(got - float(exact)) <= np.spacing(abs(float(exact)))


@pytest.mark.parametrize("dt", DTYPES)
def test_tiny_and_subnormal_inputs(dt):
    # GELU(x) = x/2 + x**2 phi(0) + ...: for subnormal x the result is x/2
    # within an ulp, with the sign of x.
    tiny = np.finfo(dt).smallest_subnormal
    for x in (tiny, -tiny, dt(2) * tiny, np.finfo(dt).tiny, -np.finfo(dt).tiny):
        out = g.gelu(dt(x))
        assert np.signbit(out) == np.signbit(x)
        assert abs(out - dt(x) / dt(2)) <= tiny
        assert g.ndtr(dt(x)) == dt(0.5)
        assert g.gelu_grad(dt(x)) == dt(0.5)


@pytest.mark.parametrize("dt", DTYPES)
def test_large_positive(dt):
    big = np.array([40.0, 1e4, 1e30, np.finfo(dt).max], dtype=dt)
    assert np.array_equal(g.gelu(big), big)           # Phi rounds to 1
    assert np.all(g.gelu_grad(big) == 1.0)
    assert np.all(g.ndtr(big) == 1.0)
    assert np.all(g.norm_pdf(big) == 0.0)


@pytest.mark.parametrize("dt, xs", [
    (np.float64, [-38.5, -38.55, -38.58, -38.6, -39.0]),
    (np.float32, [-14.3, -14.35, -14.4, -14.45, -15.0])])
def test_underflow_to_signed_zero(dt, xs):
    # GELU rounds to -0.0 exactly where |x Phi(x)| is below half the smallest
    # subnormal (mpmath decides), and is a negative subnormal just above.
    import mpmath as mp
    half_tiny = mp.mpf(float(np.finfo(dt).smallest_subnormal)) / 2
    for x in xs:
        x = float(dt(x))
        with mp.workprec(200):
            exact = mp.mpf(x) * mp.ncdf(x)
        out = g.gelu(dt(x))
        if abs(exact) < half_tiny:
            assert bits_equal(out, dt(-0.0)), (x, out)
        else:
            assert out < 0.0, (x, out)
