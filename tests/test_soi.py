"""soi_map, the stochastic 0-I map: statistics, the SplitMix64 stream,
reproducibility, values, dtypes, out= and errors.

Expected values come from mathematics (mpmath's ``ncdf``) and from a
pure-Python SplitMix64 written here from the specification, never from the
package's own output.
"""

import math

import mpmath as mp
import numpy as np
import pytest

from gelu_numba.soi import soi_map

pytestmark = pytest.mark.unit

GAMMA = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
DTYPES = [np.float32, np.float64]
UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def splitmix64(seed, i):
    """The i-th output (0-based) of the SplitMix64 stream seeded with seed,
    in Python integers: state += gamma, then the finaliser."""
    z = (seed + (i + 1) * GAMMA) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def bits(a):
    a = np.asarray(a)
    return a.view(UINT[a.dtype])


def is_x_or_signed_zero(out, x):
    """out[i] is x[i] (bit for bit), or a zero with x[i]'s sign."""
    same = bits(out) == bits(x)
    zero = (out == 0) & (np.signbit(out) == np.signbit(x))
    return same | zero


# --------------------------------------------------------------- statistics

X_MC = [-4.0, -3.0, -2.0, -1.5, -1.0, -0.7518, -0.5, -0.1, 0.0, 1e-30, 0.1,
        0.5, 1.0, 1.5, 2.0, 3.0, 4.0]
N_MC = 2 ** 18


@pytest.mark.parametrize("dt", DTYPES)
def test_monte_carlo_mean_is_gelu_and_frequency_is_phi(dt):
    """N = 2**18 draws per x (each x repeated N times in one array).

    With p = Phi(x) (mpmath, at the x actually stored in dt), the number K
    of m = 1 is Binomial(N, p), the sample mean of x*m is x*K/N; both checks

        |mean - x*Phi(x)| <= 5 |x| sqrt(p(1-p)/N),   |K/N - p| <= 5 sqrt(p(1-p)/N)

    are 5-sigma bounds (false alarm 5.7e-7 each under the normal law).  For
    x != 0 the two are the same event up to rounding of the mean.  Exact
    binomial tails: 2.0e-5 at x = +-4 (N*p = 8.3, far from normal),
    9e-7 at x = +-3, <= 6e-7 elsewhere; summed over the 32 distinct events
    of both dtypes, a correct implementation fails for a random seed with
    probability 1.0e-4 (the seeds are fixed, so the test is deterministic).
    x = 0 gives 0 exactly (m is not observable there); x = 1e-30, where
    Phi(x) rounds to 1/2 in both precisions, checks the frequency there.
    """
    xs = np.array(X_MC, dt)
    x = np.repeat(xs, N_MC)
    out = soi_map(x, seed=20240611 if dt is np.float32 else 987654321)
    assert out.dtype == dt and out.shape == x.shape
    assert is_x_or_signed_zero(out, x).all()
    out = out.reshape(len(xs), N_MC)
    for k, xv in enumerate(xs):
        xm = mp.mpf(float(xv))
        p = mp.ncdf(xm)
        sd = math.sqrt(float(p * (1 - p)) / N_MC)
        mean = out[k].mean(dtype=np.float64)
        assert abs(mean - float(xm * p)) <= 5 * abs(float(xv)) * sd, (xv, mean)
        if xv == 0:
            assert np.all(bits(out[k]) == 0)  # all +0.0
            continue
        freq = np.count_nonzero(out[k]) / N_MC
        assert abs(freq - float(p)) <= 5 * sd, (xv, freq, float(p))


@pytest.mark.parametrize("dt", DTYPES)
def test_lag1_correlation(dt):
    """Consecutive m's at Phi(x) = 1/2 are uncorrelated.

    x = 1e-30 (float32) / 1e-300 (float64): Phi(x) = 1/2 + 4e-31 rounds to
    exactly 1/2, and, unlike x = 0, m is observable (out is x or +0).  Under
    independence the lag-1 sample correlation of n = 10**6 values has
    standard deviation 1/sqrt(n); the bound 5/sqrt(n) fails with
    probability 5.7e-7.  The frequency is checked at 5 sigma too.
    """
    n = 10 ** 6
    x = np.full(n, 1e-30 if dt is np.float32 else 1e-300, dt)
    m = (soi_map(x, seed=4242) != 0).astype(np.float64)
    assert abs(m.mean() - 0.5) <= 5 * 0.5 / math.sqrt(n)
    r = np.corrcoef(m[:-1], m[1:])[0, 1]
    assert abs(r) < 5 / math.sqrt(n)


# ----------------------------------------------------------- the RNG stream

def test_reference_generator_is_splitmix64():
    # Vigna's splitmix64.c seeded with 1234567 (the published first five
    # outputs, e.g. Rosetta Code "Pseudo-random numbers/Splitmix64")
    assert [splitmix64(1234567, i) for i in range(5)] == [
        6457827717110365317, 3203168211198807973, 9817491932198370423,
        4593380528125082431, 16408922859458223821]
    # the counter form equals the stateful stream
    state, stream = 99, []
    for _ in range(4):
        state = (state + GAMMA) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        stream.append(z ^ (z >> 31))
    assert stream == [splitmix64(99, i) for i in range(4)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("seed", [12345, 0, MASK])
def test_matches_python_reference(dt, seed):
    """Element i: u = (z_i >> 11) 2**-53 with z_i the i-th SplitMix64 output,
    m = (u < Phi(x_i)), Phi from mpmath.  Elements where u lies within the
    rounding error of the package's Phi (2**-22 in float32, 2**-50 in
    float64) could legitimately go either way and are skipped."""
    x = np.concatenate([np.linspace(-3, 3, 301), [-0.7518, 0.25, -8.0, 7.0]])
    x = x.astype(dt)
    out = soi_map(x, seed=seed)
    tol = mp.mpf(2) ** (-22 if dt is np.float32 else -50)
    checked = 0
    with mp.workdps(30):
        for i, xv in enumerate(x):
            u = mp.mpf(splitmix64(seed, i) >> 11) / 2 ** 53
            p = mp.ncdf(mp.mpf(float(xv)))
            if abs(u - p) < tol:
                continue
            expected = xv if u < p else np.copysign(dt(0), xv)
            assert bits(out[i]) == bits(np.asarray(expected, dt)), (i, xv)
            checked += 1
    assert checked >= len(x) - 2


def test_float32_input_uses_the_float32_phi():
    """The comparison is u < p with p the float32 Phi(x), not the float64 one.

    For each element i (seed 12345) take the smallest float32 x with
    Phi(x) > u_i, keeping those where Phi(x) rounds *down* to a float32
    p <= u_i (u_i in the lower half of its float32 rounding interval): the
    float32 Phi gives m = 0 there, a float64 Phi (> u_i by far more than its
    error) would give m = 1.  Margins exclude the cases the float32 kernel's
    bound (0.5 + 2**-7 ulp) could round either way.
    """
    seed, n = 12345, 400
    idx, xs = [], []
    with mp.workdps(40):
        for i in range(n):
            u = mp.mpf(splitmix64(seed, i) >> 11) / 2 ** 53
            if not 0.05 < u < 0.95:
                continue
            xv = np.float32(float(mp.sqrt(2) * mp.erfinv(2 * u - 1)))
            while mp.ncdf(mp.mpf(float(xv))) <= u:
                xv = np.nextafter(xv, np.float32(np.inf))
            while mp.ncdf(mp.mpf(float(np.nextafter(xv, np.float32(-np.inf))))) > u:
                xv = np.nextafter(xv, np.float32(-np.inf))
            p = mp.ncdf(mp.mpf(float(xv)))
            below = mp.mpf(float(np.float32(float(u))))  # a float32 near u
            if below > u:
                below = mp.mpf(float(np.nextafter(np.float32(below), np.float32(0))))
            half_ulp = (mp.mpf(float(np.nextafter(np.float32(below), np.float32(1))))
                        - below) / 2
            if p - u > mp.mpf(2) ** -45 and p < below + half_ulp * (1 - mp.mpf(2) ** -5):
                idx.append(i)
                xs.append(xv)
    assert len(idx) >= 20
    x = np.zeros(n, np.float32)
    x[idx] = xs
    out = soi_map(x, seed=seed)
    assert np.all(out[idx] == 0)  # float32 Phi <= u: m = 0
    out64 = soi_map(x.astype(np.float64), seed=seed)
    assert np.array_equal(out64[idx], x[idx].astype(np.float64))  # Phi > u: m = 1


# -------------------------------------------------------- reproducibility

@pytest.mark.parametrize("dt", DTYPES)
def test_same_seed_same_bits_different_seeds_differ(dt):
    x = np.random.default_rng(1).standard_normal(10_000).astype(dt)
    a = soi_map(x, seed=7)
    assert np.array_equal(bits(a), bits(soi_map(x, seed=7)))
    assert np.array_equal(bits(a), bits(soi_map(x, seed=np.uint64(7))))
    assert np.array_equal(bits(a), bits(soi_map(x, seed=np.int8(7))))
    assert not np.array_equal(bits(a), bits(soi_map(x, seed=8)))
    # the extreme seeds work (wrap-around) and differ
    assert not np.array_equal(bits(soi_map(x, seed=0)), bits(soi_map(x, seed=MASK)))
    # seed=None: a fresh seed each call
    b, c = soi_map(x), soi_map(x)
    assert is_x_or_signed_zero(b, x).all()
    assert not np.array_equal(bits(b), bits(c))


@pytest.mark.parametrize("dt", DTYPES)
def test_index_is_c_order_flat_index_of_the_given_array(dt):
    rng = np.random.default_rng(2)
    x2 = rng.standard_normal((37, 53)).astype(dt)
    r = soi_map(x2, seed=11)
    assert r.shape == x2.shape
    assert np.array_equal(bits(r), bits(soi_map(x2.ravel(), seed=11).reshape(x2.shape)))
    # layout does not matter, only the logical (C-order) index
    assert np.array_equal(bits(soi_map(np.asfortranarray(x2), seed=11)), bits(r))
    t = x2.T
    assert np.array_equal(bits(soi_map(t, seed=11)),
                          bits(soi_map(np.ascontiguousarray(t), seed=11)))
    # a strided view is indexed within itself
    v = x2[::3, 1::2]
    assert np.array_equal(bits(soi_map(v, seed=11)), bits(soi_map(v.copy(), seed=11)))


@pytest.mark.parametrize("dt", DTYPES)
def test_slices_restart_the_stream_shifted_seed_continues_it(dt):
    x = np.random.default_rng(3).standard_normal(5000).astype(dt)
    seed = 2 ** 64 - 5
    full = soi_map(x, seed=seed)
    k = 1234
    # the counter restarts at 0 in x[k:]...
    assert not np.array_equal(bits(soi_map(x[k:], seed=seed)), bits(full[k:]))
    # ...and seed + k*gamma continues the stream: chunking is reproducible
    shifted = (seed + k * GAMMA) % 2 ** 64
    assert np.array_equal(bits(soi_map(x[k:], seed=shifted)), bits(full[k:]))
    parts = [soi_map(x[a:a + 700], seed=(seed + a * GAMMA) % 2 ** 64)
             for a in range(0, x.size, 700)]
    assert np.array_equal(bits(np.concatenate(parts)), bits(full))


# ------------------------------------------------------------------ values

@pytest.mark.parametrize("dt", DTYPES)
def test_every_output_is_x_or_signed_zero(dt):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(100_000) * 5).astype(dt)
    x[:6] = [np.finfo(dt).max, -np.finfo(dt).max, np.finfo(dt).tiny,
             -np.finfo(dt).tiny, np.finfo(dt).smallest_subnormal,
             -np.finfo(dt).smallest_subnormal]
    out = soi_map(x, seed=5)
    assert out.dtype == dt
    assert is_x_or_signed_zero(out, x).all()
    # both outcomes occur where Phi is not near 0 or 1
    mid = np.abs(x) < 1
    assert np.any(out[mid] == 0) and np.any(out[mid & (x != 0)] != 0)


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(dt):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(dt).max,
                  -np.finfo(dt).max, -40.0, 40.0], dt)
    # Phi = 1 at +inf, max, 40 (rounded): kept; Phi = 0 at -inf, -max, -40
    # (Phi(-40) = 3.7e-350 underflows): a negative zero
    expected = np.array([np.nan, np.inf, -0.0, 0.0, -0.0, np.finfo(dt).max,
                         -0.0, -0.0, 40.0], dt)
    for seed in range(50):
        out = soi_map(x, seed=seed)
        assert np.isnan(out[0])
        assert np.array_equal(bits(out[1:]), bits(expected[1:])), seed
    assert np.isnan(soi_map(dt(np.nan), seed=1))
    assert bits(soi_map(dt(-np.inf), seed=1)) == bits(np.asarray(-0.0, dt))
    assert soi_map(dt(np.inf), seed=1) == np.inf


# ------------------------------------------------------- dtypes and shapes

@pytest.mark.parametrize("dt, out_dt", [
    (np.float32, np.float32), (np.float64, np.float64),
    (np.float16, np.float32), (np.bool_, np.float32),
    (np.int8, np.float32), (np.uint8, np.float32),
    (np.int16, np.float32), (np.uint16, np.float32),
    (np.int32, np.float64), (np.uint32, np.float64),
    (np.int64, np.float64), (np.uint64, np.float64),
])
def test_dtype_follows_numpy_safe_casting(dt, out_dt):
    # the package's rule (gelu_numba.targets._loop_for): the first of the
    # float32/float64 loops the input casts to safely
    x = np.arange(0, 6).astype(dt)
    keep = x.copy()
    out = soi_map(x, seed=3)
    assert out.dtype == out_dt
    assert np.array_equal(bits(out), bits(soi_map(x.astype(out_dt), seed=3)))
    assert np.array_equal(x, keep) and x.dtype == dt


def test_scalars_return_numpy_scalars():
    r = soi_map(1.5, seed=1)
    assert type(r) is np.float64 and r in (1.5, 0.0)
    assert type(soi_map(2, seed=1)) is np.float64
    assert type(soi_map(2 ** 70, seed=1)) is np.float64
    assert type(soi_map(True, seed=1)) is np.float32  # NumPy: bool -> float32
    assert type(soi_map(np.float32(0.5), seed=1)) is np.float32
    assert type(soi_map(np.float64(0.5), seed=1)) is np.float64
    assert type(soi_map(np.array(0.5, np.float32), seed=1)) is np.float32
    assert type(soi_map(np.int64(3), seed=1)) is np.float64
    # a scalar is element 0 of the stream
    assert soi_map(0.5, seed=9) == soi_map(np.array([0.5]), seed=9)[0]
    assert soi_map([0.5, -1.0], seed=9).shape == (2,)


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), (1,), (2, 3, 4), (5, 1, 7)])
@pytest.mark.parametrize("dt", DTYPES)
def test_shapes(shape, dt):
    x = np.linspace(-2, 2, math.prod(shape)).astype(dt).reshape(shape)
    out = soi_map(x, seed=1)
    assert type(out) is np.ndarray and out.shape == shape and out.dtype == dt
    assert is_x_or_signed_zero(out, x).all()


@pytest.mark.parametrize("dt", DTYPES)
def test_input_not_mutated_and_non_contiguous(dt):
    big = np.linspace(-4, 4, 2001).astype(dt)
    keep = big.copy()
    v = big[::-3]
    r = soi_map(v, seed=17)
    assert np.array_equal(bits(big), bits(keep))
    assert np.array_equal(bits(r), bits(soi_map(v.copy(), seed=17)))
    assert is_x_or_signed_zero(r, v).all()


# --------------------------------------------------------------------- out=

@pytest.mark.parametrize("dt", DTYPES)
def test_out(dt):
    x = np.random.default_rng(6).standard_normal((40, 25)).astype(dt)
    expected = soi_map(x, seed=8)
    out = np.empty_like(x)
    assert soi_map(x, seed=8, out=out) is out
    assert np.array_equal(bits(out), bits(expected))
    # non-contiguous out
    buf = np.full((40, 50), 7, dt)
    o2 = buf[:, ::2]
    assert soi_map(x, seed=8, out=o2) is o2
    assert np.array_equal(bits(o2), bits(expected))
    assert np.all(buf[:, 1::2] == 7)
    # Fortran-ordered out
    o3 = np.empty_like(x, order="F")
    soi_map(x, seed=8, out=o3)
    assert np.array_equal(bits(o3), bits(expected))
    # 0-d out: the array is returned
    o4 = np.empty((), dt)
    assert soi_map(np.asarray(0.5, dt), seed=8, out=o4) is o4


@pytest.mark.parametrize("dt", DTYPES)
def test_in_place_and_overlap(dt):
    x = np.random.default_rng(7).standard_normal(3001).astype(dt)
    expected = soi_map(x, seed=9)
    y = x.copy()
    assert soi_map(y, seed=9, out=y) is y
    assert np.array_equal(bits(y), bits(expected))
    # in place on a strided view: the other elements are untouched
    z = np.repeat(x, 2)
    v = z[::2]
    soi_map(v, seed=9, out=v)
    assert np.array_equal(bits(v), bits(expected))
    assert np.array_equal(bits(z[1::2]), bits(x))
    # out overlapping the input shifted by one element
    w = x.copy()
    soi_map(w[:-1], seed=9, out=w[1:])
    assert np.array_equal(bits(w[1:]), bits(soi_map(x[:-1], seed=9)))
    # reversed view of itself
    w = x.copy()
    soi_map(w, seed=9, out=w[::-1])
    assert np.array_equal(bits(w[::-1]), bits(expected))


@pytest.mark.parametrize("bad, exc, match", [
    ([0.0] * 4, TypeError, "numpy.ndarray"),
    ((np.empty(4),), TypeError, "numpy.ndarray"),
    (np.empty(4, np.float32), TypeError, "dtype float64"),
    (np.empty(4, np.int64), TypeError, "dtype float64"),
    (np.empty(5), ValueError, r"shape \(4,\)"),
    (np.empty((4, 1)), ValueError, r"shape \(4,\)"),
])
def test_bad_out(bad, exc, match):
    with pytest.raises(exc, match=match):
        soi_map(np.zeros(4), seed=1, out=bad)


def test_bad_out_dtype_for_float32_and_read_only():
    with pytest.raises(TypeError, match="dtype float32"):
        soi_map(np.zeros(3, np.float32), seed=1, out=np.empty(3))
    with pytest.raises(TypeError, match="dtype float64"):
        soi_map(np.zeros(3, np.int32), seed=1, out=np.empty(3, np.float32))
    ro = np.empty(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        soi_map(np.zeros(3), seed=1, out=ro)


@pytest.mark.parametrize("bad", [
    np.array([1 + 2j]), 1j, np.array(["a"]), "a",
    np.array([1.0, None], dtype=object), np.array([1.0], dtype=np.longdouble),
])
def test_bad_input_names_supported_dtypes(bad):
    with pytest.raises(TypeError, match="float32 or float64"):
        soi_map(bad, seed=1)


@pytest.mark.parametrize("seed, exc", [
    (True, TypeError), (np.True_, TypeError), (1.0, TypeError),
    (np.float64(1.0), TypeError), ("1", TypeError), (-1, ValueError),
    (2 ** 64, ValueError), (np.int64(-3), ValueError),
])
def test_bad_seed(seed, exc):
    with pytest.raises(exc, match=r"seed .*2\*\*64"):
        soi_map(np.zeros(3), seed=seed)
