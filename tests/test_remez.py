"""The Remez exchange against results known from the mathematics."""

import warnings

import mpmath as mp
import pytest

from fitting.remez import MinimaxFit, certify, max_abs, remez

pytestmark = pytest.mark.proof


def monomials(n):
    return [(lambda a, j=j: a**j) for j in range(n)]


def horner(coeffs, x):
    acc = mp.mpf(0)
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc


def chebyshev_t(n):
    """Ascending integer coefficients of T_n."""
    t0, t1 = [1], [0, 1]
    if n == 0:
        return t0
    for _ in range(n - 1):
        t2 = [0] + [2 * c for c in t1]
        for j, c in enumerate(t0):
            t2[j] -= c
        t0, t1 = t1, t2
    return t1


def weighted_errors(fit, F, basis, weight=None):
    """The weighted error of the fit at its reference points."""
    out = []
    for x in fit.reference:
        e = mp.fsum(c * phi(x) for c, phi in zip(fit.coeffs, basis)) - F(x)
        out.append(e if weight is None else weight(x) * e)
    return out


def assert_equioscillates(errs, level, rel=1e-8):
    assert abs(level) > 0
    for i, e in enumerate(errs):
        assert abs(abs(e) - abs(level)) <= rel * abs(level)
        assert e * errs[0] > 0 if i % 2 == 0 else e * errs[0] < 0


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("start", ["chebyshev", "equispaced"])
def test_best_approximation_of_power_is_chebyshev(n, start):
    # The best degree-n approximation of x**(n+1) on [-1, 1] is
    # x**(n+1) - 2**-n T_{n+1}(x), with error 2**-n.
    ref = None if start == "chebyshev" else [-1 + mp.mpf(2 * i) / (n + 1) for i in range(n + 2)]
    fit = remez(lambda x: x**(n + 1), monomials(n + 1), -1, 1, reference=ref, tol=1e-12)
    assert isinstance(fit, MinimaxFit) and fit.converged
    coeffs, error, reference, iterations = fit
    assert len(reference) == n + 2 and iterations >= 1
    exact = mp.mpf(2) ** -n
    assert abs(error - exact) < 1e-12 * exact
    assert abs(abs(fit.level) - exact) < 1e-12 * exact
    t = chebyshev_t(n + 1)
    want = [-exact * t[j] for j in range(n + 1)]
    for c, w in zip(coeffs, want):
        assert abs(c - w) < 1e-10


@pytest.mark.parametrize("F", [mp.exp, abs], ids=["exp", "abs"])
def test_equioscillation_and_beats_chebyshev_interpolant(F):
    n = 4
    basis = monomials(n + 1)
    fit = remez(F, basis, -1, 1, tol=1e-10)
    assert fit.converged and len(fit.reference) == n + 2
    assert_equioscillates(weighted_errors(fit, F, basis), fit.level)
    # de la Vallee Poussin: level <= best error <= error found
    assert abs(fit.level) <= fit.error <= abs(fit.level) * (1 + 1e-10)
    # the error found is the error of the coefficients
    assert abs(certify(F, basis, fit.coeffs, -1, 1)[0] - fit.error) < 1e-12 * fit.error
    # interpolation at the n+1 Chebyshev nodes is no better
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / (n + 1)) for k in range(n + 1)]
    interp = mp.lu_solve(mp.matrix([[x**j for j in range(n + 1)] for x in nodes]),
                         mp.matrix([F(x) for x in nodes]))
    cheb_err, _ = max_abs(lambda x: horner(list(interp), x) - F(x), -1, 1)
    assert fit.error <= cheb_err
    if F is mp.exp:
        # best degree-4 error of exp on [-1, 1] (about 2**-4 / 5! * cosh-ish)
        assert 5.4e-4 < fit.error < 5.5e-4


def test_weighted_with_dead_end_point():
    # basis a * a**j all vanish at a = 0 with F: the weighted error is 0 there
    # whatever the coefficients; the reference must lie in (0, 3].
    F = lambda a: a * mp.exp(-a)  # noqa: E731
    w = lambda a: 1 / (1 + a)  # noqa: E731
    basis = [(lambda a, j=j: a * a**j) for j in range(5)]
    fit = remez(F, basis, 0, 3, weight=w)
    assert fit.converged
    assert abs(fit.level) > 1e-6
    assert len(fit.reference) == 6 and fit.reference[0] > 0
    assert_equioscillates(weighted_errors(fit, F, basis, w), fit.level)
    assert abs(fit.level) <= fit.error <= abs(fit.level) * (1 + 1e-6)
    e0 = w(mp.mpf(0)) * (mp.fsum(c * phi(mp.mpf(0)) for c, phi in zip(fit.coeffs, basis))
                         - F(mp.mpf(0)))
    assert e0 == 0


def test_max_abs_known_maxima():
    v, x = max_abs(mp.sin, 0, 3)
    assert abs(v - 1) < 1e-15 and abs(x - mp.pi / 2) < 1e-8
    v, x = max_abs(lambda t: t * mp.exp(-t), 0, 10)
    assert abs(v - 1 / mp.e) < 1e-15 * v and abs(x - 1) < 1e-8
    # negative extremum, float-valued function
    v, x = max_abs(lambda t: -float(t * mp.exp(-t)), 0, 10)
    assert abs(v - 1 / mp.e) < 1e-15
    # a peak narrower than a few grid spacings, off the grid
    c = mp.mpf("0.123456789")
    v, x = max_abs(lambda t: mp.exp(-((t - c) / mp.mpf("1e-3"))**2), 0, 1)
    assert abs(v - 1) < 1e-12 and abs(x - c) < 1e-7
    # maximum at an end point
    v, x = max_abs(mp.exp, -1, 2)
    assert abs(v - mp.exp(2)) < 1e-14 and x == 2


def test_certify_rounded_coefficients():
    F = mp.exp
    basis = monomials(8)
    fit = remez(F, basis, 0, 1, tol=1e-9)
    doubles = [float(c) for c in fit.coeffs]
    err, loc = certify(F, basis, doubles, 0, 1)
    # no coefficients beat the level; rounding to doubles costs little here
    assert err >= abs(fit.level)
    assert err <= fit.error * (1 + 1e-6)
    assert 0 <= loc <= 1


def test_no_convergence_warns_and_returns_best():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = remez(mp.exp, monomials(6), -1, 1, iters=1, tol=1e-15,
                    reference=[mp.mpf(k) / 7 - mp.mpf(1) / 2 for k in range(7)])
    assert not fit.converged and fit.iterations == 1
    assert any(issubclass(w.category, RuntimeWarning) for w in caught)
    assert fit.error >= abs(fit.level)


def test_precision_is_local():
    before = mp.mp.dps
    remez(mp.exp, monomials(3), -1, 1, dps=60)
    max_abs(mp.sin, 0, 1, dps=25)
    assert mp.mp.dps == before
