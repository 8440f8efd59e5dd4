"""The approximations registry, the x F(x) family and gelu_general.

Expected values come from mpmath: each approximation's own formula
(``reference.approx``) for the implementation error, the exact
GELU for the approximation error, and the published figures of the tanh and
sigmoid forms (Hendrycks & Gimpel; docs/numerics.md).
"""

import importlib
import math

import mpmath as mp
import numpy as np
import pytest

import gelu_numba as g
from gelu_numba.approximations import APPROXIMATIONS
import reference
from gelu_numba import catalog
from reference import approx
from reference.mp import ulp_error

pytestmark = pytest.mark.unit

DTYPES = (np.float64, np.float32)
# the bound held on the implementation error (the kernels document ~1)
IMPL_BOUND = 2.0


def _points():
    rng = np.random.default_rng(20261122)
    return np.concatenate([
        rng.normal(0.0, 2.5, 70), rng.uniform(-30, 30, 30),
        -np.logspace(-6, 1.6, 25), np.logspace(-6, 1.6, 15),
        # next to the derivatives' zeros (-0.75 for the GELU forms,
        # -1.278 for the SiLU, -1 for the LaLU) and the Taylor edges
        rng.uniform(-0.9, -0.6, 20), rng.uniform(-1.45, -1.1, 10),
        np.array([-0.7524614220710163, -0.751154255441289, -1.2784645427610737,
                  -0.7517915385840646, -1.0, -0.5, 0.5, 1.0, 2.0, -2.0,
                  -1.0 - 2**-40, 1e-300, -1e-300, 5.5, -5.5, 3.0, -3.0]),
    ])


POINTS = _points()


def _formulas():
    """name -> (the published ufunc, its mpmath reference) of every
    one-input approximation and family record."""
    return {f.name: (getattr(importlib.import_module(f.modules[0]), f.name), reference.lookup(f))
            for group in ("approximation", "family") for f in catalog.group(group) if f.nin == 1}


FORMULAS = _formulas()


def _max_ulp(ufunc, formula, dtype, xs):
    x = xs.astype(dtype)
    y = ufunc(x)
    assert y.dtype == dtype
    worst, at = 0.0, None
    with mp.workdps(50):
        for xi, yi in zip(x, y):
            e = ulp_error(float(yi), formula(float(xi)), dtype)
            if e > worst:
                worst, at = e, xi
    return worst, at


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_implementation_error(name, dtype):
    ufunc, formula = FORMULAS[name]
    worst, at = _max_ulp(ufunc, formula, dtype, POINTS)
    assert worst <= IMPL_BOUND, f"{name} {dtype.__name__}: {worst:.3f} ulp at {at!r}"


def test_registry_records():
    assert {"tanh", "sigmoid", "as26"} <= set(APPROXIMATIONS)
    assert any(r.kind == "fit" for r in APPROXIMATIONS.values())
    for name, r in APPROXIMATIONS.items():
        assert r.name == name and r.description and r.source
        assert r.forward.__name__ == f"gelu_{name}"
        assert r.grad.__name__ == f"gelu_{name}_grad"
        assert 0 < r.max_abs_error < 0.1 and 0 < r.grad_max_abs_error < 0.2
    with pytest.raises(TypeError):
        APPROXIMATIONS["tanh"] = None  # read-only mapping


def test_known_figures():
    # Hendrycks & Gimpel's approximations: tanh 4.73e-4 near |x| = 2.70,
    # sigmoid 2.03e-2 near |x| = 2.27 (numerics.md)
    t, s = APPROXIMATIONS["tanh"], APPROXIMATIONS["sigmoid"]
    assert t.max_abs_error == pytest.approx(4.73e-4, rel=5e-3)
    assert abs(t.max_abs_error_at) == pytest.approx(2.70, abs=0.01)
    assert s.max_abs_error == pytest.approx(2.03e-2, rel=5e-3)
    assert abs(s.max_abs_error_at) == pytest.approx(2.27, abs=0.01)
    # A&S 7.1.26: |erf error| <= 1.5e-7, so |GELU error| <= 0.75e-7 |x|
    a = APPROXIMATIONS["as26"]
    assert a.max_abs_error <= 0.75e-7 * max(abs(a.max_abs_error_at), 1)


def _exact_gelu(x):
    with mp.workdps(40):
        return [float(approx.gelu(float(v))) for v in x]


@pytest.mark.parametrize("name", sorted(APPROXIMATIONS))
def test_max_abs_error_claim(name):
    """The stored maximum is attained (to 1e-3) and never exceeded on a
    dense grid (float64 evaluation; exact GELU from mpmath)."""
    r = APPROXIMATIONS[name]
    x = np.concatenate([np.linspace(-8, 8, 1601),
                        np.array([r.max_abs_error_at, -r.max_abs_error_at])])
    err = np.abs(r.forward(x) - np.array(_exact_gelu(x)))
    assert err.max() <= r.max_abs_error * (1 + 1e-6) + 1e-17
    assert err.max() >= r.max_abs_error * (1 - 1e-3)


def test_targets_have_candidates():
    fits = [r for r in APPROXIMATIONS.values() if r.kind == "fit"]
    assert min(r.max_abs_error for r in fits) <= 1e-7
    assert any(r.max_abs_error <= 4.7e-4 for r in fits)


@pytest.mark.parametrize("name", sorted(APPROXIMATIONS))
def test_grad_formula_is_the_derivative(name):
    """The mpmath derivative formulas against mpmath's numerical derivative
    of the forward formula (checks the calculus behind every grad kernel)."""
    f, df = FORMULAS[f"gelu_{name}"][1], FORMULAS[f"gelu_{name}_grad"][1]
    with mp.workdps(40):
        for x in (-4.3, -2.1, -0.9, -0.3, 0.2, 0.8, 1.7, 3.9):
            assert abs(mp.diff(f, x) - df(x)) < mp.mpf(10)**-25


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_special_values(name):
    ufunc, _ = FORMULAS[name]
    for dtype in DTYPES:
        r = ufunc(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype))
        assert math.isnan(r[0])
        if name.endswith("_grad"):
            # at 0 the formula's own value (A&S's erf(0) is -1e-9, not 0)
            with mp.workdps(40):
                at0 = float(FORMULAS[name][1](0.0))
            assert r[1] == 1.0 and r[2] == 0.0
            assert r[3] == pytest.approx(at0, rel=1e-7) and r[4] == r[3]
        else:
            assert r[1] == np.inf and r[3] == 0.0
            minus_inf = -1 / np.pi if name == "x_cauchy" else 0.0
            assert r[2] == pytest.approx(minus_inf, rel=1e-7)


@pytest.mark.parametrize("name", sorted(n for n in APPROXIMATIONS
                                        if APPROXIMATIONS[n].kind == "fit"))
def test_fit_joins_the_clamp_smoothly(name):
    """T has a double zero at L: value and derivative are continuous there."""
    from gelu_numba.tables import approximations as tab
    L = tab.FITS_BY_NAME[name]["L"]
    r = APPROXIMATIONS[name]
    for side in (-1.0, 1.0):
        # within 1e-14 of L the value is relu(x) and the derivative 0 or 1
        # to O(1e-14): no jump
        x = side * np.array([L * (1 - 1e-14), L, L * (1 + 1e-14)])
        y, dy = r.forward(x), r.grad(x)
        assert np.ptp(y - np.maximum(x, 0)) < 1e-12
        assert np.ptp(dy) < 1e-12


@pytest.mark.parametrize("name", sorted(n for n in APPROXIMATIONS
                                        if APPROXIMATIONS[n].kind == "fit"))
def test_fit_has_no_derivative_jump_at_zero(name):
    """T(0) = 1/2 is imposed: the derivative is GELU'(0) = 1/2 from both
    sides (the unconstrained fits jumped by 2 |T(0) - 1/2|, 1.3e-2 for poly3)."""
    r = APPROXIMATIONS[name]
    d = r.grad(np.array([-1e-300, -0.0, 0.0, 1e-300]))
    assert np.all(np.abs(d - 0.5) < 1e-12), d


@pytest.mark.parametrize("name", sorted(n for n in APPROXIMATIONS
                                        if APPROXIMATIONS[n].kind == "fit"))
def test_fit_keeps_the_sign_of_gelu(name):
    """0 <= T <= ... : GELU(x) <= 0 for x < 0 and 0 <= GELU(x) <= x for
    x > 0, on a dense grid through the clamp (poly4, poly8 and poly10 used
    to turn positive just before it)."""
    r = APPROXIMATIONS[name]
    x = np.linspace(0, 8, 400_001)
    assert np.all(r.forward(-x) <= 0)
    y = r.forward(x)
    assert np.all((y >= 0) & (y <= x))


def test_rational_remez_levels_the_error():
    """exp on [0, 1] by a (2, 2) rational in relative error: the exchange
    ends levelled (error found = |E| to 1e-4), below Lawson's error, and
    |E| is a lower bound of the best error (de la Vallée Poussin), so the
    result is within 1e-4 of the minimax one."""
    from fitting import rational
    with mp.workdps(30):
        p, q = rational.lawson(mp.exp, mp.mpf(0), mp.mpf(1), 2, 2, nodes=120, iters=12)
        e_lawson = max(abs(rational.horner(p, x) / rational.horner(q, x) / mp.exp(x) - 1)
                       for x in mp.linspace(0, 1, 801))
        p2, q2, level, worst, ok = rational.remez(mp.exp, 0, 1, 2, 2, start=(p, q),
                                                  grid=400, dps=30)
        assert ok and abs(level) <= worst <= abs(level) * (1 + 1e-4)
        # Lawson's reweighted least squares, a different method, approaches
        # the same minimax error (2.7127e-6) from above
        assert worst <= e_lawson <= worst * (1 + 1e-3)


# ------------------------------------------------------------ gelu_general

def test_general_matches_mpmath():
    rng = np.random.default_rng(7)
    x = rng.normal(0, 4, 200)
    mu = rng.normal(0, 2, 200)
    sigma = np.exp(rng.normal(0, 1.5, 200))
    for dtype in DTYPES:
        xs, ms, ss = (v.astype(dtype) for v in (x, mu, sigma))
        y = g.gelu_general(xs, ms, ss)
        assert y.dtype == dtype
        with mp.workdps(60):
            worst = max(ulp_error(float(yi), approx.gelu_general(float(a), float(b), float(c)), dtype)
                        for yi, a, b, c in zip(y, xs, ms, ss))
        assert worst <= 1.0, worst


def test_general_deep_tail():
    # z = -30 exactly representable only as a dd: x - mu = -30 sigma
    x = np.array([1.0, 3.0, -2.0])
    mu = x + 30 * 0.1
    with mp.workdps(60):
        for xi, mi in zip(x, mu):
            y = g.gelu_general(xi, mi, 0.1)
            assert ulp_error(float(y), approx.gelu_general(xi, mi, 0.1)) <= 1.0


def test_general_is_gelu_at_mu0_sigma1():
    x = np.linspace(-12, 12, 4001)
    with mp.workdps(40):
        for xi in x[::40]:
            assert ulp_error(float(g.gelu_general(xi, 0.0, 1.0)), approx.gelu(xi)) <= 1.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_general_sigma_to_zero_is_relu(dtype):
    x = np.array([-3.0, -0.5, -1e-3, 0.0, 1e-3, 0.5, 3.0], dtype)
    relu = np.maximum(x, 0)
    # the limit is approached: |x Phi(x/sigma) - relu(x)| <= |x| Phi(-|x|/sigma)
    for sigma in (1e-1, 1e-2, 1e-4):
        y = g.gelu_general(x, dtype(0), dtype(sigma))
        bound = np.abs(x) * np.array([float(mp.ncdf(-abs(float(v)) / sigma)) for v in x])
        half_ulp = 0.5 * np.spacing(np.abs(x))
        assert np.all(np.abs(y - relu) <= bound * 1.01 + half_ulp)
    # and sigma = 0 is the limit itself (x/2 at x = mu)
    y0 = g.gelu_general(x, dtype(0), dtype(0))
    assert np.array_equal(y0, relu)
    assert g.gelu_general(dtype(2), dtype(2), dtype(0)) == 1.0
    assert g.gelu_general(dtype(1), dtype(2), dtype(0)) == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_general_special_values(dtype):
    f = g.gelu_general
    nan, inf = np.nan, np.inf
    cases = [
        ((1.0, 0.0, -1.0), nan), ((nan, 0.0, 1.0), nan), ((1.0, nan, 1.0), nan),
        ((1.0, 0.0, nan), nan), ((inf, 0.0, 1.0), inf), ((-inf, 0.0, 1.0), 0.0),
        ((inf, inf, 1.0), nan), ((1.0, inf, 1.0), 0.0), ((1.0, -inf, 1.0), 1.0),
        ((3.0, 1.0, inf), 1.5), ((inf, 0.0, inf), nan), ((-inf, 0.0, 0.0), 0.0),
    ]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for args, want in cases:
            got = f(*(np.array([v], dtype) for v in args))[0]
            if math.isnan(want):
                assert math.isnan(got), args
            else:
                assert got == want, (args, got)


# ------------------------------------------------------------------ family

def test_family_identities():
    x = np.linspace(-20, 20, 2001)
    with np.errstate(over="ignore"):
        sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(g.silu(x), x * sig, rtol=1e-15, atol=1e-300)
    # LaLU' has its zero exactly at -1; SiLU' at -1.27846454276107...
    assert g.lalu_grad(-1.0) == 0.0
    assert abs(g.silu_grad(-1.2784645427610737)) < 1e-16
    # x_cauchy saturates at -1/pi like the ELU at -alpha
    assert g.x_cauchy(-1e20) == pytest.approx(-1 / np.pi, rel=1e-15)
    assert np.all(g.x_cauchy_grad(np.linspace(-1e3, 1e3, 10001)) > 0)


def test_no_floating_point_warnings():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 5e-324])
    x32 = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-45], np.float32)
    # (underflow is expected: subnormal results)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for name, (ufunc, _) in FORMULAS.items():
            ufunc(x)
            ufunc(x32)
        g.gelu_general(x, 0.0, 1.0)
