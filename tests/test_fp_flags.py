"""No spurious floating-point exception flags.

NumPy reads the CPU's floating-point status flags after every ufunc loop,
so under ``np.errstate(all='raise')`` a flag raised anywhere inside a kernel
(even in the unused arm of a branch-free select) is a FloatingPointError.
A flag is allowed only where the exact result justifies it, as for NumPy's
own ufuncs:

* underflow: the inputs are not NaN, the exact value is non-zero and the
  result is subnormal or zero (``|result| <= tiny``: an exact value below
  the smallest normal number may round up to it);
* overflow: the inputs are finite and the result is infinite (only
  ``gelu_backward`` with a huge dy);
* invalid: the result is NaN and no input is NaN (``gelu_backward(inf,
  -inf)``, ``gelu_general`` with ``sigma < 0``, ...);
* divide-by-zero: never.

Every function is evaluated on a grid covering the real line: a log-spaced
grid of both signs from the smallest subnormal to the largest finite value,
every power of two with its neighbours, a dense linear grid over
``[-40, 40]`` (float64) or ``[-16, 16]`` (float32), the kernels' boundaries
with their neighbours, ``+-0``, ``+-inf`` and NaN.  The points are grouped
by the flags they may raise and each group is evaluated with only those
flags ignored; a failure names the offending inputs.
"""

import numpy as np
import pytest

import gelu_numba as g
import gelu_numba.parallel as gp
from gelu_numba.approximations import APPROXIMATIONS
from gelu_numba.tables.approximations import FITS_BY_NAME
from gelu_numba.tables.normal_cdf import A_MAX, C_T
from gelu_numba.tables.normal_cdf32_cpu_f64 import A32
from gelu_numba import catalog

pytestmark = pytest.mark.unit

DTYPES = [np.float64, np.float32]
X0 = -0.7517915246935645

EXACT = list(tuple(f.name for f in catalog.group("exact") if f.nin == 1))
FAMILY = [f.name for f in catalog.group("family") if f.nin == 1]
# functions x F(x): the exact value is zero only at x = 0 (and their limit at
# -inf is exact)
PRODUCTS = {"gelu", "silu", "x_cauchy", "lalu"}


def _boundaries():
    """Points where the kernels switch formula or clamp, and the
    functions' special points."""
    pts = [A_MAX, A32, 0.5 * 110, 26.0, 880.0, 1400.0, 1500.0, 200.0 / 1.702,
           2.0**60, 2.0**100, 2.0**1000, 2.0**-200, 2.0**-125, 2.0**-1022,
           2.0**-1074, 2.0**-149, 2.0**-126, 0.75179152469356446, 2.0**0.5,
           1.0, 1.2784645427610737, 37.5194, 37.6159, 38.4854, 38.5801,
           12.9500, 13.1462, 14.1702, 14.3561, 36.5, 6.3e-145]
    # the float64 kernels' pieces meet at a = 4; v = 0 (where Estrin's
    # powers of v would underflow) at a = 4/3 and a = 12
    pts += [C_T, 4.0 / 3.0, 12.0]
    pts += [float(f["L"]) for f in FITS_BY_NAME.values()]
    return pts


def grid(dt):
    """The test points in dtype ``dt``, sorted, NaN last."""
    fi = np.finfo(dt)
    lo, hi = (-1074, 1024) if dt == np.float64 else (-149, 128)
    e = np.linspace(lo, hi - 1e-6, 100_000 if dt == np.float64 else 50_000)
    logs = np.exp2(e)
    pow2 = np.exp2(np.arange(lo, hi, dtype=np.float64))
    special = np.array(_boundaries(), dtype=np.float64)
    special = special[special < float(fi.max)]
    mags = np.concatenate([logs, pow2, special]).astype(dt)
    mags = np.concatenate([mags, np.nextafter(mags, dt(0)), np.nextafter(mags, dt(np.inf))])
    mags = mags[np.isfinite(mags) & (mags > 0)]
    L = 40.0 if dt == np.float64 else 16.0
    lin = np.linspace(-L, L, 100_001).astype(dt)
    extra = np.array([0.0, -0.0, np.inf, -np.inf, fi.max, -fi.max, X0], dtype=dt)
    x = np.unique(np.concatenate([mags, -mags, lin, extra]))
    # np.unique keeps one zero: put both back, and NaN
    return np.concatenate([x[x != 0], np.array([0.0, -0.0, np.nan], dtype=dt)])


_GRIDS = {}


def cached_grid(dt):
    if dt not in _GRIDS:
        _GRIDS[dt] = grid(dt)
    return _GRIDS[dt]


def _fmt(args, i):
    vals = [repr(float(a[i])) for a in args]
    return vals[0] if len(vals) == 1 else "(" + ", ".join(vals) + ")"


def _raises(f, args, idx, flags):
    """The FloatingPointError message of f on the points idx, or None.

    The points are repeated to a multiple of 256, so that all of them run
    through the loop's SIMD body: its scalar remainder may branch where the
    vector body selects, and so miss a flag raised by the unused arm of a
    select.
    """
    idx = np.resize(idx, -(-len(idx) // 256) * 256)
    try:
        with np.errstate(**flags):
            f(*[a[idx] for a in args])
    except FloatingPointError as e:
        return str(e)
    return None


def _first_offender(f, args, idx, flags):
    """An index in idx whose evaluation alone raises (bisection)."""
    while len(idx) > 1:
        half = len(idx) // 2
        left = idx[:half]
        idx = left if _raises(f, args, left, flags) else idx[half:]
    return idx[0]


def check_flags(f, args, dt, nonzero_exact):
    """Evaluate f on args (1-d arrays of dtype dt) and report every group of
    points that raises a flag its exact results do not justify.

    ``nonzero_exact``: boolean array, True where the exact value is a
    non-zero number (where a zero or subnormal result may raise underflow).
    """
    args = [np.ascontiguousarray(a) for a in np.broadcast_arrays(*args)]
    with np.errstate(all="ignore"):
        r = f(*args)
    assert r.dtype == dt
    any_nan = np.zeros(r.shape, bool)
    finite = np.ones(r.shape, bool)
    for a in args:
        any_nan |= np.isnan(a)
        finite &= np.isfinite(a)
    # |result| = tiny included: an exact value just below the smallest
    # normal number may round up to it (the flag is then raised, rightly)
    tiny = np.finfo(dt).tiny
    under = (np.abs(r) <= tiny) & nonzero_exact & ~any_nan
    over = np.isinf(r) & finite
    invalid = np.isnan(r) & ~any_nan
    problems = []
    for u in (False, True):
        for o in (False, True):
            for v in (False, True):
                idx = np.nonzero((under == u) & (over == o) & (invalid == v))[0]
                if len(idx) == 0:
                    continue
                flags = dict(divide="raise", under="ignore" if u else "raise",
                             over="ignore" if o else "raise",
                             invalid="ignore" if v else "raise")
                if _raises(f, args, idx, flags) is None:
                    continue
                # name one offender in each failing chunk of the group
                chunks = np.array_split(idx, min(32, len(idx)))
                bad = [c for c in chunks if _raises(f, args, c, flags)]
                for c in bad:
                    i = _first_offender(f, args, c, flags)
                    msg = _raises(f, args, np.array([i]), flags)
                    problems.append(f"{_fmt(args, i)} -> {float(r[i])!r}: {msg}")
    if problems:
        pytest.fail(f"{getattr(f, '__name__', f)} {np.dtype(dt).name}: spurious flags "
                    f"at (one input per failing stretch of the grid):\n  "
                    + "\n  ".join(problems), pytrace=False)


# ------------------------------------------------------------------ tests

@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", EXACT + FAMILY)
def test_exact_and_family(name, dt):
    x = cached_grid(dt)
    nonzero = np.isfinite(x)
    if name in PRODUCTS:
        nonzero &= x != 0
    check_flags(getattr(g, name), [x], dt, nonzero)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", catalog.names("exact"))
def test_parallel(name, dt):
    x = cached_grid(dt)
    f = getattr(gp, name)
    if name == "gelu_backward":
        args = [dt(-3.0), x]
    else:
        args = [x]
    nonzero = np.isfinite(x) & ((x != 0) if name == "gelu" else True)
    check_flags(f, args, dt, nonzero)


def _dy_values(dt):
    fi = np.finfo(dt)
    sub = float(fi.smallest_subnormal)
    tiny = float(fi.tiny)
    big = float(fi.max)
    return np.array([1.0, -1.0, 0.5, -3.0, 7.25, 1e-3, tiny, -tiny, 3 * sub, sub,
                     -sub, 2.0**-40 * tiny, 1.5 * tiny, big, -big, big / 8,
                     0.0, -0.0, np.inf, -np.inf, np.nan], dtype=dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_backward_dy_grid(dt):
    # a few dy against every x
    x = cached_grid(dt)
    dy = _dy_values(dt)[:, None]
    dy, xx = (a.ravel() for a in np.broadcast_arrays(dy, x[None, :]))
    nonzero = np.isfinite(dy) & (dy != 0) & np.isfinite(xx)
    check_flags(g.gelu_backward, [dy, xx], dt, nonzero)


@pytest.mark.parametrize("dt", DTYPES)
def test_backward_x_grid(dt):
    # every dy against a few x (huge dy overflows where dy * GELU'(x) does)
    dy = cached_grid(dt)
    xs = np.array([X0, -0.75, 0.0, -0.0, 1e-300, -1e-300, 1e-30, 1.0, -1.0, 3.0, -5.0,
                   -12.0, -20.0, -37.0, -37.6, -38.2, -38.7, 40.0, 1e10, -1e10,
                   np.inf, -np.inf, np.nan], dtype=dt)
    dy, xx = (a.ravel() for a in np.broadcast_arrays(dy[None, :], xs[:, None]))
    nonzero = np.isfinite(dy) & (dy != 0) & np.isfinite(xx)
    check_flags(g.gelu_backward, [dy, xx], dt, nonzero)


GENERAL_PARAMS = [(0.0, 1.0), (1.5, 0.5), (-2.0, 3.0), (0.0, 1e-3), (0.0, 1e-300),
                  (3.0, 1e300), (0.0, 0.0), (1.0, 0.0), (0.0, np.inf), (np.inf, 1.0),
                  (-np.inf, 1.0), (0.0, -1.0), (np.nan, 1.0), (0.0, np.nan)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mu, sigma", GENERAL_PARAMS)
def test_gelu_general(mu, sigma, dt):
    x = cached_grid(dt)
    with np.errstate(over="ignore"):    # 1e300 is inf in float32
        mu, sigma = dt(mu), dt(sigma)
    # exact zero: x = 0, x < mu with sigma = 0 (the step), mu = +inf
    nonzero = (np.isfinite(x) & (x != 0) & np.isfinite(mu)
               & ((sigma > 0) | ((sigma == 0) & (x >= mu))))
    check_flags(g.gelu_general, [x, mu, sigma], dt, nonzero)


def _approx_cases():
    for name in APPROXIMATIONS:
        for part in ("forward", "grad"):
            yield name, part


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name, part", list(_approx_cases()))
def test_approximations(name, part, dt):
    x = cached_grid(dt)
    nonzero = np.isfinite(x)
    if part == "forward":
        nonzero &= x != 0
    if name in FITS_BY_NAME:
        # T(a) = 0 for a >= L: x T(|x|) and its derivative are exactly 0
        nonzero &= x.astype(np.float64) > -float(FITS_BY_NAME[name]["L"])
    check_flags(getattr(APPROXIMATIONS[name], part), [x], dt, nonzero)
