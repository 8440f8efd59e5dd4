"""The float64 fused backward ``gelu_backward(dy, x) = dy * GELU'(x)`` next to
x0, the zero of GELU', and at random x: below 0.75 ulp for every dy.

Exact values: ``G(x) = Phi(x) + x phi(x)`` in mpmath (``mp.dps = 60``, with x
the exact binary value; next to x0 the two terms cancel by at most 60 bits
here, so G keeps over 130 correct bits), stored as ``(g1 + g2 + g3) 2**eg``
with ``1 <= g1 < 2``.  The product with each dy is then formed with
error-free transformations on the mantissas (Dekker's product, Sterbenz's
exact difference), so that ``computed - dy G`` is known to about 2**-100
relative, far below what a 0.75-ulp test can see; a sample of pairs is
checked against a direct mpmath product as well.  ulp(v) is 2**(e - 52) for
``2**e <= |v| < 2**(e + 1)``, e clamped at -1022 (subnormal results are
measured in the subnormal spacing).
"""

import mpmath
import numpy as np
import pytest

import gelu_numba as g

pytestmark = pytest.mark.unit

X0 = -0.7517915246935645          # the double nearest x0 = -0.75179152469356445746...
N_DY = 2000
BOUND = 0.75


def _exact_grad(x):
    """(g1, g2, g3, eg) with GELU'(x) = (g1 + g2 + g3) 2**eg, 1 <= |g1| < 2."""
    with mpmath.workdps(60):
        xm = mpmath.mpf(x)
        v = mpmath.ncdf(xm) + xm * mpmath.npdf(xm)
        m, e = mpmath.frexp(v)            # 0.5 <= |m| < 1
        m = 2 * m
        g1 = float(m)
        g2 = float(m - g1)
        g3 = float(m - g1 - g2)
    return g1, g2, g3, int(e) - 1


def exact_grads(xs):
    return np.array([_exact_grad(float(x)) for x in xs]).T


def _split(a):
    """Veltkamp's split of a (|a| < 2**995): hi + lo == a, 26-bit halves."""
    c = 134217729.0 * a                   # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    """Dekker: p + e == a*b exactly (no FMA needed), for moderate a, b."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def ulp_errors(computed, dy, grads):
    """|computed - dy G| / ulp(dy G), elementwise (float64 arrays)."""
    g1, g2, g3, eg = grads
    my, ey = np.frexp(dy)                 # dy = my 2**ey, 0.5 <= |my| < 1
    E = ey + eg.astype(np.int64)
    # dy G = (ph + pl + t2 + t3) 2**E with |ph| in [0.5, 2)
    ph, pl = _two_prod(my, g1)
    t2 = my * g2
    t3 = my * g3
    rest = (pl + t2) + t3
    cs = np.ldexp(computed, -E)           # exact: cs is near ph (or 0)
    diff = ((cs - ph) - pl - t2) - t3     # cs - ph is exact (Sterbenz)
    # exponent of the exact value: that of ph, one less if ph is a power of
    # two and the exact value lies below it
    fp, ep = np.frexp(ph)
    below = (np.abs(fp) == 0.5) & (np.sign(rest) == -np.sign(ph)) & (rest != 0)
    ex = ep - 1 - below + E               # 2**ex <= |dy G| < 2**(ex + 1)
    ulp_exp = np.maximum(ex, -1022) - 52
    return np.abs(diff) / np.ldexp(1.0, ulp_exp - E)


def random_dy(rng, n):
    """Random signs, mantissas and exponents (a few results subnormal)."""
    m = rng.uniform(1.0, 2.0, n)
    e = rng.integers(-1000, 1000, n)
    dy = np.ldexp(m, e) * rng.choice([-1.0, 1.0], n)
    dy[0] = 1.0
    return dy


def _check(xs, dy_per_x, rng):
    grads = exact_grads(xs)
    n = dy_per_x
    x = np.repeat(xs, n)
    G = tuple(np.repeat(a, n) for a in grads)
    dy = np.concatenate([random_dy(rng, n) for _ in xs])
    c = g.gelu_backward(dy, x)
    err = ulp_errors(c, dy, G)
    i = int(np.argmax(err))
    return err, (float(dy[i]), float(x[i]), float(c[i]))


def test_error_measure_against_mpmath():
    # the error-free evaluation of dy G agrees with a direct mpmath product
    rng = np.random.default_rng(1)
    xs = np.concatenate([[X0], X0 + np.arange(-3, 4) * 2.0**-53, rng.uniform(-38.4, 9, 30)])
    dy = random_dy(rng, len(xs) * 10)
    x = np.repeat(xs, 10)
    c = g.gelu_backward(dy, x)
    fast = ulp_errors(c, dy, tuple(np.repeat(a, 10) for a in exact_grads(xs)))
    with mpmath.workdps(60):
        for k in range(len(x)):
            xm = mpmath.mpf(float(x[k]))
            exact = mpmath.mpf(float(dy[k])) * (mpmath.ncdf(xm) + xm * mpmath.npdf(xm))
            e = max(int(mpmath.floor(mpmath.log(abs(exact), 2))), -1022)
            slow = float(abs(mpmath.mpf(float(c[k])) - exact) / mpmath.ldexp(1, e - 52))
            assert abs(slow - fast[k]) < 1e-9, (x[k], dy[k], slow, fast[k])


def test_nearest_x0():
    # the double nearest x0, with many dy (2000 at this x alone)
    rng = np.random.default_rng(2)
    err, worst = _check(np.array([X0]), 20 * N_DY, rng)
    assert err.max() < BOUND, (err.max(), worst)


def test_next_to_x0():
    # every double within 2048 ulps of x0 (ulp = 2**-53 there), 2000 dy each
    # for the closest 64, 200 dy for the others
    rng = np.random.default_rng(3)
    steps = np.arange(-2048, 2049)
    near = np.abs(steps) <= 32
    xs = X0 + steps * 2.0**-53
    err1, worst1 = _check(xs[near], N_DY, rng)
    err2, worst2 = _check(xs[~near], N_DY // 10, rng)
    assert err1.max() < BOUND, (err1.max(), worst1)
    assert err2.max() < BOUND, (err2.max(), worst2)


def test_random_x():
    # a few hundred random x over the whole range where GELU' is not 0 or 1
    # in float64 (it underflows below about -38.6), 2000 dy each
    rng = np.random.default_rng(4)
    xs = np.concatenate([rng.uniform(-38.6, 9.0, 200), rng.uniform(-1.5, 0.0, 100)])
    err, worst = _check(xs, N_DY, rng)
    assert err.max() < BOUND, (err.max(), worst)


@pytest.mark.parametrize("x", [X0, -0.75, -1.0, 0.5, -37.9])
def test_dy_one(x):
    # dy = 1 is gelu_grad itself
    err = ulp_errors(g.gelu_backward(np.array([1.0]), np.array([x])), np.array([1.0]),
                     tuple(np.array([v]) for v in _exact_grad(x)))
    assert err[0] < BOUND
    assert g.gelu_backward(1.0, x) == g.gelu_grad(x)
