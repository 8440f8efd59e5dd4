"""Tests of the references: mpmath (``mp``), float64 (``f64``), the table, the sweep.

The float64 reference is judged against mpmath on ~3000 fresh float32
points (every region, including the float32 values nearest ``X0`` and
``+-sqrt(2)`` and the tail to -15) and on every float32 row of the committed
table: relative error < 1e-12 where the exact value is a normal float32,
absolute error < 1e-12 * 2**-126 (about 1e-5 of the float32 subnormal
spacing) where it is smaller.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from reference import f64, mp

pytestmark = pytest.mark.proof

TABLE = Path(__file__).resolve().parent / "data" / "reference_table.npz"
F32_TINY = 2.0**-126
REL_TOL = 1e-12
X0 = float(mp.X0)
SQRT2 = math.sqrt(2.0)


def _rel(a, b):
    """|a/b - 1| for mpf/float/decimal-string arguments, at 400 bits."""
    with mpmath.workprec(400):
        a = a if isinstance(a, mpmath.mpf) else mpmath.mpf(a)
        b = b if isinstance(b, mpmath.mpf) else mpmath.mpf(b)
        return abs((a - b) / b)


# ------------------------------------------------------------ (a) mp identities


def test_ndtr_at_zero_is_half():
    assert mp.ndtr(0.0) == mpmath.mpf(1) / 2
    assert mp.gelu(0.0) == 0
    assert mp.gelu_grad(0.0) == mpmath.mpf(1) / 2
    with mpmath.workprec(300):
        assert abs(mp.gelu_grad2(0.0) - 2 / mpmath.sqrt(2 * mpmath.pi)) < mpmath.mpf(2) ** -290


@pytest.mark.parametrize("x", [1e-300, 0.3, 0.7517915246935645, 1.0, 2.5, 6.0, 15.0, 37.0, 40.0])
def test_gelu_odd_part_is_x(x):
    # Phi(x) + Phi(-x) = 1 gives GELU(x) - GELU(-x) = x.
    with mpmath.workprec(600):
        d = mp.gelu(x) - mp.gelu(-x)
        assert abs(d - x) <= abs(mpmath.mpf(x)) * mpmath.mpf(2) ** -250


@pytest.mark.parametrize("x", [-30.0, -8.0, -2.0, -0.5, 0.25, 1.5, 4.0])
def test_against_mpmath_builtins_and_derivatives(x):
    with mpmath.workprec(300):
        assert _rel(mp.ndtr(x), mpmath.ncdf(x)) < 2.0**-250
        assert _rel(mp.norm_pdf(x), mpmath.npdf(x)) < 2.0**-250
    # Derivatives by numerical differentiation at high precision.
    with mpmath.workprec(500):
        dg = mpmath.diff(lambda t: t * mpmath.ncdf(t), mpmath.mpf(x))
        d2g = mpmath.diff(lambda t: t * mpmath.ncdf(t), mpmath.mpf(x), 2)
    assert _rel(mp.gelu_grad(x), dg) < 1e-60
    assert _rel(mp.gelu_grad2(x), d2g) < 1e-60


def test_known_constants_at_x0():
    with mpmath.workprec(300):
        x0 = mpmath.findroot(lambda t: mpmath.ncdf(t) + t * mpmath.npdf(t), mpmath.mpf(-0.75))
        assert abs(x0 - mpmath.mpf(mp.X0)) < 1e-29
        gmin = x0 * mpmath.ncdf(x0)
        assert abs(gmin - mpmath.mpf(mp.GELU_X0)) < 1e-29
    # At the nearest double, GELU differs from its minimum only at second order.
    assert _rel(mp.gelu(X0), mp.GELU_X0) < 1e-29


def test_gelu_grad_zero_resolved_at_nearest_double():
    g = mp.gelu_grad(X0)
    with mpmath.workprec(300):
        dx = mpmath.mpf(X0) - mpmath.mpf("-0.75179152469356445745790494677952403966447115342345")
        expected = mpmath.mpf("0.431493992314046919786507169629") * dx
        assert abs(mpmath.mpf(mp.X0) - mpmath.mpf(X0)) < 2.0**-55  # half an ulp
    assert abs(g) < 1e-17 and g != 0
    # First-order Taylor term: the relative gap is ~ c2/c1 * dx ~ 1e-17.
    assert _rel(g, expected) < 1e-15
    # Adaptive precision: a much higher base precision changes nothing visible.
    old = mp.BASE_PREC
    try:
        mp.BASE_PREC = 1000
        g_hi = mp.gelu_grad(X0)
    finally:
        mp.BASE_PREC = old
    assert _rel(g, g_hi) < 2.0**-250
    # Same near the float32 nearest to X0.
    x = float(np.float32(X0))
    mp.BASE_PREC = 1000
    try:
        g32_hi = mp.gelu_grad(x)
    finally:
        mp.BASE_PREC = old
    assert _rel(mp.gelu_grad(x), g32_hi) < 2.0**-250


@pytest.mark.parametrize("s", [1.0, -1.0])
def test_gelu_grad2_zero_at_sqrt2(s):
    x = s * SQRT2
    v = mp.gelu_grad2(x)
    with mpmath.workprec(400):
        expected = mpmath.npdf(x) * (2 - mpmath.mpf(x) ** 2)
    assert abs(v) < 1e-16 and v != 0
    assert _rel(v, expected) < 2.0**-250
    assert mp.to_dd(v)[0] < 0  # sqrt(2) rounded up: 2 - x**2 < 0


def test_special_values():
    inf, nan = math.inf, math.nan
    assert mp.gelu(-inf) == 0 and math.copysign(1, mp.gelu(-inf)) < 0
    assert mp.gelu(inf) == inf
    assert mp.gelu_grad(inf) == 1 and mp.gelu_grad(-inf) == 0
    assert mp.ndtr(inf) == 1 and mp.ndtr(-inf) == 0
    assert mp.norm_pdf(inf) == 0 and mp.gelu_grad2(-inf) == 0
    for f in (mp.ndtr, mp.norm_pdf, mp.gelu, mp.gelu_grad, mp.gelu_grad2):
        assert math.isnan(f(nan))
    assert math.isnan(mp.gelu_backward(nan, 1.0))
    assert math.isnan(mp.gelu_backward(inf, -inf))
    assert mp.gelu_backward(-inf, 1.0) == -inf


@pytest.mark.parametrize("x", [-1e300, -1e30, -5e9, 5e9, 1e30, 1e300, 1.7976931348623157e308])
def test_huge_arguments(x):
    vals = mp.evaluate_all(x, 2.0)
    if x > 0:
        assert mp.to_dd(vals["ndtr"]) == (1.0, 0.0)
        assert mp.to_dd(vals["gelu"]) == (x, 0.0)
        assert mp.to_dd(vals["gelu_grad"]) == (1.0, 0.0)
    else:
        assert 0 < vals["ndtr"] < mpmath.mpf(2) ** -10000
        assert mp.to_dd(vals["gelu"])[0] == 0.0
    # The Mills-ratio branch and erfc agree where both apply.
    with mpmath.workprec(400):
        assert _rel(mp.ndtr(-4.2e9), mpmath.erfc(mpmath.mpf(4.2e9) / mpmath.sqrt(2)) / 2) < 2.0**-250


def test_evaluate_all_matches_individual_functions():
    for x, dy in [(-3.25, 0.5), (X0, 1.0), (-37.7, -2.0), (SQRT2, 3.0), (1e-310, 1.0)]:
        vals = mp.evaluate_all(x, dy)
        assert vals["ndtr"] == mp.ndtr(x)
        assert vals["norm_pdf"] == mp.norm_pdf(x)
        assert vals["gelu"] == mp.gelu(x)
        assert vals["gelu_grad"] == mp.gelu_grad(x)
        assert vals["gelu_grad2"] == mp.gelu_grad2(x)
        assert vals["gelu_backward"] == mp.gelu_backward(dy, x)


def test_to_double_rounds_once_including_subnormals():
    rng = np.random.default_rng(5)
    cases = []
    for e in list(range(-1140, -1000, 3)) + [-60, 0, 50, 1000]:
        for _ in range(5):
            man = int(rng.integers(1, 2**62)) * 2**40 + int(rng.integers(0, 2**40))
            cases.append((man, e - 100))
    # Exact ties: 1.5 and 2.5 subnormal steps, half the smallest subnormal.
    cases += [(3, -1075), (5, -1075), (1, -1075), (1, -1076), (2**53 + 1, -53)]
    for man, exp in cases:
        with mpmath.workprec(256):
            v = mpmath.mpf(man) * mpmath.mpf(2) ** exp  # exact: man < 2**103
        expected = float(Fraction(man) * Fraction(2) ** exp)
        got = mp.to_double(v)
        assert got == expected, (man, exp)
        assert mp.to_double(-v) == -expected
    assert math.copysign(1.0, mp.to_double(-mpmath.ldexp(1, -1200))) < 0
    assert mp.to_double(mpmath.ldexp(1, 1024)) == math.inf


def test_to_dd_reconstructs():
    with mpmath.workprec(300):
        v = mpmath.pi / 7
        hi, lo = mp.to_dd(v)
        assert hi == float(mpmath.mpf(hi)) and abs(lo) <= math.ulp(hi) / 2
        assert abs((mpmath.mpf(hi) + lo - v) / v) < 2.0**-104
    assert mp.to_dd(1.5) == (1.5, 0.0)


def test_ulp_error_scalar():
    assert mp.ulp_error(1.0 + 2.0**-52, mpmath.mpf(1), np.float64) == 1.0
    with mpmath.workprec(200):
        one_plus = mpmath.mpf(1) + mpmath.ldexp(1, -53)
        one_minus = mpmath.mpf(1) - mpmath.ldexp(1, -54)
    assert mp.ulp_error(1.0, one_plus, np.float64) == 0.5
    # The ulp is that of the exact value's binade (below 1 here) ...
    assert mp.ulp_error(1.0, one_minus, np.float64) == 0.5
    # ... whereas ulp_error_dd takes it from hi, as documented.
    assert mp.ulp_error_dd(1.0, 1.0, -(2.0**-54), np.float64) == 0.25
    assert mp.ulp_error(1.0 + 2.0**-23, mpmath.mpf(1), np.float32) == 1.0
    assert mp.ulp_error(3 * 5e-324, mpmath.mpf(5e-324), np.float64) == 2.0
    assert mp.ulp_error(2.0**-149, mpmath.mpf(0), np.float32) == 1.0
    assert mp.ulp_error(2.0**-140 + 2.0**-150, mpmath.ldexp(1, -140), np.float32) == 0.5
    assert mp.ulp_error(math.nan, math.nan, np.float32) == 0.0
    assert mp.ulp_error(math.inf, math.inf, np.float32) == 0.0
    assert mp.ulp_error(math.inf, mpmath.mpf(1), np.float32) == math.inf
    assert mp.ulp_error(1.0, math.nan, np.float32) == math.inf
    # the half formats (gelu_numba.torch's float16 and bfloat16 results)
    assert mp.ulp_error(1.0 + 2.0**-10, mpmath.mpf(1), np.float16) == 1.0
    assert mp.ulp_error(2.0**-24, mpmath.mpf(0), np.float16) == 1.0  # subnormal spacing
    assert mp.ulp_error(1.0 + 2.0**-7, mpmath.mpf(1), "bfloat16") == 1.0
    assert mp.ulp_error(2.0**-133, mpmath.mpf(0), "bfloat16") == 1.0
    for unsupported in (np.int32, np.complex64, "float8"):
        with pytest.raises(ValueError, match="float64, float32, float16 or 'bfloat16'"):
            mp.ulp_error(1.0, 1.0, unsupported)


# --------------------------------------------------------- (d) ulp_error_dd


@pytest.mark.parametrize(
    "computed, hi, lo, dtype, expected",
    [
        (1.0 + 2.0**-52, 1.0, 0.0, np.float64, 1.0),
        (1.0, 1.0, 2.0**-53, np.float64, 0.5),
        (1.5, 1.5, -(2.0**-54), np.float64, 0.25),
        (-(1.0 + 2.0**-52), -1.0, 0.0, np.float64, 1.0),
        (2.0, 2.0 - 2.0**-52, 0.0, np.float64, 1.0),  # ulp taken from hi (below 2)
        (1.0 + 2.0**-23, 1.0, 0.0, np.float32, 1.0),
        (1.0 + 2.0**-23, 1.0, 0.0, np.float64, 2.0**29),
        (1.0, 1.0, 2.0**-25, np.float32, 0.25),
        (3 * 5e-324, 5e-324, 0.0, np.float64, 2.0),
        (5e-324, 0.0, 0.0, np.float64, 1.0),
        (2.0**-149, 0.0, 0.0, np.float32, 1.0),
        (2.0**-140 + 2.0**-149, 2.0**-140, 0.0, np.float32, 1.0),  # float32 subnormal spacing
        (2.0**-130, 2.0**-130, 2.0**-150, np.float32, 0.5),
        (2.0**-126 + 2.0**-149, 2.0**-126, 0.0, np.float32, 1.0),  # smallest normal
        (2.0**-125 + 2.0**-148, 2.0**-125, 0.0, np.float32, 1.0),
        (2.0**-1000 * (1 + 2.0**-52), 2.0**-1000, 0.0, np.float64, 1.0),
        (2.0**-1000, 2.0**-1000, 0.0, np.float32, 0.0),
        (2.0**-1000 + 2.0**-160, 2.0**-1000, 0.0, np.float32, 2.0**-11),
    ],
)
def test_ulp_error_dd_hand_cases(computed, hi, lo, dtype, expected):
    got = mp.ulp_error_dd(np.array([computed]), np.array([hi]), np.array([lo]), dtype)
    assert got.dtype == np.float64 and got.shape == (1,)
    assert got[0] == expected
    # The scalar version agrees.
    with mpmath.workprec(2000):
        exact = mpmath.mpf(hi) + lo
    assert mp.ulp_error(computed, exact, dtype) == pytest.approx(expected, rel=1e-15)


def test_ulp_error_dd_specials_and_float32_input():
    inf, nan = np.inf, np.nan
    c = np.array([nan, inf, -inf, inf, nan, 1.0, inf, 0.0], dtype=np.float64)
    h = np.array([nan, inf, -inf, -inf, 1.0, nan, 1.0, 0.0])
    lo = np.zeros_like(h)
    got = mp.ulp_error_dd(c, h, lo, np.float32)
    np.testing.assert_array_equal(got, [0, 0, 0, inf, inf, inf, inf, 0])
    c32 = np.float32([1.0, np.nextafter(np.float32(1), np.float32(2))])
    got = mp.ulp_error_dd(c32, np.array([1.0, 1.0]), np.zeros(2), np.float32)
    np.testing.assert_array_equal(got, [0.0, 1.0])
    with pytest.raises(ValueError):
        mp.ulp_error_dd(c32, c32, c32, np.int32)


# ------------------------------------------------------ (b) f64 vs mpmath


def _f32(v):
    return np.asarray(v, dtype=np.float64).astype(np.float32).astype(np.float64)


def _f32_neighbours(c, n):
    mid = np.float32(c)
    pts = [mid]
    up = down = mid
    for _ in range(n):
        up = np.nextafter(up, np.float32(np.inf))
        down = np.nextafter(down, np.float32(-np.inf))
        pts += [up, down]
    return np.array(pts, dtype=np.float64)


def _float32_points():
    rng = np.random.default_rng(12345)
    pts = [
        rng.uniform(-5, 5, 900),
        rng.uniform(-15, -5, 650),
        -np.geomspace(5, 15, 150),
        rng.uniform(-16, -15, 20),
        np.geomspace(5, 1e3, 100),
        rng.uniform(5, 12, 60),
        np.array([1e4, 1e10, 1e30, 3.4028234663852886e38, -1e4, -1e30, -3.4028234663852886e38]),
        np.geomspace(2.0**-149, 1e-2, 120),
        -np.geomspace(2.0**-149, 1e-2, 120),
        np.array([0.0, 2.0**-149, 2.0**-126, 2.0**-126 - 2.0**-149]),
        # Around the switch between the Taylor expansion and the direct formula.
        X0 + rng.uniform(-f64.X0_RADIUS - 0.05, f64.X0_RADIUS + 0.05, 150),
        X0 + np.array([-1, 1]) * f64.X0_RADIUS,
    ]
    for c in (X0, SQRT2, -SQRT2):
        pts.append(_f32_neighbours(c, 24))
        for k in range(2, 24):
            for side in (-1.0, 1.0):
                pts.append(c * (1 + side * 2.0**-k * (1 + rng.random(2))))
    # float32 underflow thresholds (Phi, GELU, phi, GELU', GELU'').
    for t in (-12.95, -13.1462, -13.3419, -13.1467, 13.1467, -13.5364, 13.5364,
              -14.1702, -14.3561, -14.5413, -14.3564, 14.3564, -14.7257, 14.7257):
        pts.append(_f32_neighbours(t, 6))
        pts.append(t * (1 + rng.uniform(-1e-3, 1e-3, 10)))
    x = np.unique(_f32(np.concatenate([np.ravel(p) for p in pts])))
    dy = _f32(rng.uniform(-3, 3, x.size))
    return x, dy


@pytest.fixture(scope="module")
def float32_exact():
    x, dy = _float32_points()
    rows = []
    for xi, di in zip(x.tolist(), dy.tolist()):
        vals = mp.evaluate_all(xi, di)
        rows.append([c for name in mp.FUNCTIONS for c in mp.to_dd(vals[name])])
    vals = np.array(rows)
    exact = {name: (vals[:, 2 * i], vals[:, 2 * i + 1]) for i, name in enumerate(mp.FUNCTIONS)}
    return x, dy, exact


def _f64_value(name, x, dy):
    if name == "gelu_backward":
        return f64.gelu_backward(dy, x)
    return getattr(f64, name)(x)


def _f64_errors(name, x, dy, hi, lo):
    """(max relative error on normal-float32 results, max abs error / 2**-126 elsewhere)."""
    v = _f64_value(name, x, dy)
    err = np.abs((v - hi) - lo)
    normal = np.abs(hi) >= F32_TINY
    rel = err[normal] / np.abs(hi[normal])
    return (rel.max() if rel.size else 0.0), (err[~normal].max() / F32_TINY if (~normal).any() else 0.0)


def test_float32_point_set_covers_regions(float32_exact):
    x, _, _ = float32_exact
    assert 2500 <= x.size <= 4000
    assert x.min() <= -15 and x.max() > 1e38
    assert np.float32(X0) in x and np.float32(SQRT2) in x and np.float32(-SQRT2) in x
    assert np.all(x.astype(np.float32) == x)


@pytest.mark.parametrize("name", mp.FUNCTIONS)
def test_f64_agrees_with_mpmath_on_float32_points(float32_exact, name):
    x, dy, exact = float32_exact
    hi, lo = exact[name]
    rel, sub = _f64_errors(name, x, dy, hi, lo)
    assert rel < REL_TOL, f"{name}: max relative error {rel:.3g}"
    assert sub < REL_TOL, f"{name}: max absolute error {sub:.3g} * 2**-126"


@pytest.mark.parametrize("name", mp.FUNCTIONS)
def test_f64_agrees_with_table_float32_rows(table, name):
    f = table["is_f32"]
    x, dy = table["x"][f], table["dy"][f]
    rel, sub = _f64_errors(name, x, dy, table[f"{name}_hi"][f], table[f"{name}_lo"][f])
    assert rel < REL_TOL and sub < REL_TOL, (name, rel, sub)


def test_f64_taylor_coefficients_reproducible():
    hi, lo, coeffs = f64.x0_taylor_coefficients(len(f64.X0_COEFFS))
    assert (hi, lo) == (f64.X0_HI, f64.X0_LO)
    assert coeffs == f64.X0_COEFFS


def test_f64_special_values_and_shapes():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
    assert np.isnan(f64.gelu(x)[0]) and f64.gelu(x)[1] == np.inf
    assert f64.gelu(x)[2] == 0 and np.signbit(f64.gelu(x)[2])
    np.testing.assert_array_equal(f64.gelu_grad(x)[1:], [1.0, 0.0, 0.5, 0.5])
    np.testing.assert_array_equal(f64.ndtr(x)[1:], [1.0, 0.0, 0.5, 0.5])
    np.testing.assert_array_equal(f64.gelu_grad2(x)[1:3], [0.0, 0.0])
    assert np.all(np.isnan([f(x)[0] for f in (f64.ndtr, f64.norm_pdf, f64.gelu_grad, f64.gelu_grad2)]))
    assert np.isnan(f64.gelu_backward(np.inf, -np.inf))
    assert f64.gelu(np.float32(1.0)).shape == () and f64.gelu_grad(-0.75).shape == ()
    assert f64.gelu_grad(np.zeros((2, 3), np.float32)).shape == (2, 3)
    assert f64.gelu_backward(np.ones(3), 1.0).shape == (3,)


# ------------------------------------------------------------- (c) the table


@pytest.fixture(scope="module")
def table():
    if not TABLE.exists():
        pytest.fail(f"{TABLE} missing: run python -m reference.make_table")
    with np.load(TABLE) as d:
        return {k: d[k] for k in d.files}


def test_table_layout(table):
    n = table["x"].size
    assert 15000 <= n <= 25000
    for name in mp.FUNCTIONS:
        for part in ("hi", "lo"):
            a = table[f"{name}_{part}"]
            assert a.dtype == np.float64 and a.shape == (n,)
    assert table["x"].dtype == np.float64 and table["dy"].dtype == np.float64
    assert table["is_f32"].dtype == bool
    assert np.all(np.isfinite(table["x"]))
    f = table["is_f32"]
    assert np.all(table["x"][f].astype(np.float32) == table["x"][f])
    assert np.all(table["dy"][f].astype(np.float32) == table["dy"][f])
    assert np.all(np.abs(table["dy"]) <= 3) and np.any(table["dy"] == 1.0)
    prov = str(table["provenance"])
    assert table["provenance"].shape == () and "mpmath" in prov and "make_table" in prov
    for c in (X0, SQRT2, -SQRT2):
        assert c in table["x"][~f] and float(np.float32(c)) in table["x"][f]
    assert table["x"].min() < -38.6 and 5e-324 in table["x"] and table["x"].max() > 1e300
    assert TABLE.stat().st_size < 3e6


def test_table_matches_fresh_mpmath(table):
    rng = np.random.default_rng(777)
    rows = rng.choice(table["x"].size, 50, replace=False)
    # Make sure the hardest rows are in the subset too.
    rows = np.concatenate([rows, np.flatnonzero(np.isin(table["x"], [X0, SQRT2]))])
    fns = {
        "ndtr": mp.ndtr, "norm_pdf": mp.norm_pdf, "gelu": mp.gelu,
        "gelu_grad": mp.gelu_grad, "gelu_grad2": mp.gelu_grad2,
    }
    for i in rows:
        x, dy = float(table["x"][i]), float(table["dy"][i])
        for name in mp.FUNCTIONS:
            v = mp.gelu_backward(dy, x) if name == "gelu_backward" else fns[name](x)
            hi, lo = mp.to_dd(v)
            assert table[f"{name}_hi"][i] == hi, (name, x)
            assert abs(table[f"{name}_lo"][i] - lo) <= abs(hi) * 2.0**-100, (name, x)


# ---------------------------------------------------------------- the sweep


def test_sweep_self_test_machinery():
    from analysis import sweep_float32 as sw

    for name in ("gelu", "gelu_backward"):
        r = sw.sweep(name, stride=2**16 + 1, chunk=2**12, progress=False, self_test=True)
        assert r["checked"] + r["nan_inputs"] == sw.n_inputs(2**16 + 1)
        assert r["max_ulp"] <= 0.5 and r["correctly_rounded"] == r["checked"]
        assert r["special_mismatches"] == 0 and r["nan_inputs_bad_output"] == 0
        assert r["nan_inputs"] > 0


def test_sweep_detects_errors():
    from analysis import sweep_float32 as sw

    def off_by_one(x):
        r = f64.gelu_grad(x).astype(np.float32)
        return np.nextafter(r, np.float32(np.inf))

    r = sw.sweep("gelu_grad", stride=2**20 + 7, chunk=2**10, progress=False, func=off_by_one)
    # Up to 2.5 ulp where the rounding crossed a power of two.
    assert 0.5 < r["max_ulp"] <= 2.5 and r["correctly_rounded"] < r["checked"]
    # nextafter(inf) stays inf but nextafter(nan) is nan: no special mismatches.
    assert r["worst_input_hex"].startswith("0x")


def test_dy_for_bits_range():
    from analysis import sweep_float32 as sw

    dy = sw.dy_for_bits(np.arange(0, 2**32, 65537, dtype=np.uint64).astype(np.uint32))
    a = np.abs(dy)
    assert dy.dtype == np.float32 and a.min() >= 0.25 and a.max() < 4
    assert 0.4 < np.mean(dy < 0) < 0.6


@pytest.mark.parametrize(
    "argv", [["--stride", "0"], ["--stride", "x"], ["--functions", "relu"], ["--chunk", "2**40"],
             ["--workers", "-1"], ["--bogus"]],
)
def test_sweep_cli_rejects_bad_arguments(argv, capsys):
    from analysis import sweep_float32 as sw

    with pytest.raises(SystemExit) as exc:
        sw.main(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err
