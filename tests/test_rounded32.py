"""The correctly rounded float32 kernels (gelu_numba.kernels.rounded32).

The proof tier runs the float32 ufuncs on every one of the 2**32 inputs and
compares each result with the float64 kernel's value rounded to float32
(within 0.5625 float64 ulp of the exact value: its rounding is the exact
value's unless it is a float32 midpoint), deciding every midpoint with
mpmath or, for GELU below 2**-125, its series; the fused backward on every
x with dy = 1 and on 2**32 random pairs.  The unit tier checks the rounding
test against values built around midpoints, and the decided midpoints and
the values next to them against mpmath.
"""

import math

import mpmath
import numpy as np
import pytest
from numba import njit

import gelu_numba as g
from fitting import make_rounding32 as gen
from gelu_numba import catalog
from gelu_numba.kernels import rounded32
from gelu_numba.kernels.primitives import float32_bits, step_bits
from gelu_numba.tables import rounding32
from reference import mp as ref

ONE_ARGUMENT = gen.FUNCTIONS


def correctly_rounded(value):
    """The float32 nearest to the mpf or float ``value`` (ties to even)."""
    with mpmath.workprec(ref.BASE_PREC):
        v = mpmath.mpf(value)
        f = np.float32(float(v))            # within a float32 step
        best = None
        for c in (np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))):
            if not np.isfinite(c):
                continue
            d = abs(mpmath.mpf(float(c)) - v)
            key = (d, int(c.view(np.uint32)) & 1)
            if best is None or key < best[0]:
                best = (key, c)
        return best[1]


# ------------------------------------------------------------------ unit tier

@pytest.mark.unit
@pytest.mark.parametrize("binade", [-126, -60, -1, 0, 1, 40, 127])
def test_the_rounding_test_flags_every_value_near_a_midpoint(binade):
    # midpoints of float32 numbers in this binade, and values within the
    # fast path's proven bound of them (below E|y|) unsure; at 4E|y| and on
    # float32 numbers sure
    rng = np.random.default_rng(binade + 200)
    m = (1 + (rng.integers(0, 1 << 23, 64) + 0.5) * 2.0**-23) * 2.0**binade
    e = rounded32.E
    for y in np.concatenate([m, -m]):
        for near in (y, y * (1 + 0.9 * e), y * (1 - 0.9 * e), y * (1 + e / 2)):
            assert rounded32.unsure(near), near
        for far in (y * (1 + 4 * e), y * (1 - 4 * e), float(np.float32(y))):
            assert not rounded32.unsure(far), far
    for y in (0.0, -0.0, math.inf, -math.inf, 1.0, 3.0, math.nan):
        assert not rounded32.unsure(y)
    # float32 subnormal results, on their own grid: its midpoints, and
    # values within the bound of them, go on; its numbers, and a value an
    # eighth of its step from a midpoint, are sure.  The fused backward's
    # test sends every nonzero result below 2**-126 on.
    step = 2.0**-149
    for k in (1, 2, 5, 1 << 20, (1 << 23) - 1):
        for y in (k * step, -k * step):
            assert not rounded32.unsure(y), y
            assert rounded32.unsure_exact(y), y
            mid = y + math.copysign(step / 2, y)
            for near in (mid, mid * (1 + 0.9 * e), mid * (1 - 0.9 * e)):
                assert rounded32.unsure(near), near
            assert not rounded32.unsure(mid + step / 8), mid
    for y in (0.0, -0.0, 2.0**-126, -(2.0**-126), 1.0, math.inf, math.nan):
        assert not rounded32.unsure_exact(y), y


def _fast_path_inputs(seed):
    """float32 inputs over the range the fast path covers: uniform on
    [-20, 20], small magnitudes down to 2**-100, and next to the zeros of
    GELU' and GELU'' (the relative error holds there: each zero is an exact
    factor)."""
    rng = np.random.default_rng(seed)
    spread = rng.uniform(-20.0, 20.0, 160)
    small = rng.choice([-1.0, 1.0], 40) * 2.0 ** rng.uniform(-100, -1, 40)
    zeros = np.array([-0.7517915835, -math.sqrt(2.0), math.sqrt(2.0)])
    near = (zeros[:, None] * (1 + rng.uniform(-1e-5, 1e-5, (3, 8)))).ravel()
    return np.concatenate([spread, small, near]).astype(np.float32)


@pytest.mark.unit
@pytest.mark.parametrize("name", ONE_ARGUMENT + ("gelu_backward",))
def test_the_fast_path_is_within_its_bound(name):
    # the bound E the rounding test assumes (the module docstring's sum of
    # the tables' errors and of the float64 evaluation), against mpmath;
    # the fused backward adds its product by dy (2**-53)
    fast = getattr(rounded32, f"{name}_fast")
    x = _fast_path_inputs(len(name))
    dy = np.random.default_rng(7).standard_normal(x.size).astype(np.float32)
    bound = rounded32.E + (2.0**-53 if name == "gelu_backward" else 0.0)
    worst = 0.0
    for xi, di in zip(x, dy):
        if name == "gelu_backward":
            y, exact = fast(di, xi), ref.gelu_backward(float(di), float(xi))
        else:
            y, exact = fast(xi), getattr(ref, name)(float(xi))
        with mpmath.workprec(ref.BASE_PREC):
            worst = max(worst, float(abs(mpmath.mpf(float(y)) / exact - 1)))
    assert worst < bound, (name, math.log2(worst))


@pytest.mark.unit
def test_midpoints_are_recognised():
    assert rounded32.is_midpoint32(1 + 2.0**-24)
    assert rounded32.is_midpoint32(-(1.5 + 2.0**-24))
    assert rounded32.is_midpoint32(3 * 2.0**-150)            # subnormal grid
    assert rounded32.is_midpoint32(float(np.finfo(np.float32).max) + 2.0**103)
    for y in (1.0, 1 + 2.0**-23, 1 + 2.0**-24 + 2.0**-52, 2.0**-149, 2.0**-150 * 4, 0.0,
              math.inf, math.nan):
        assert not rounded32.is_midpoint32(y), y


@pytest.mark.unit
@pytest.mark.parametrize("name", ONE_ARGUMENT)
def test_the_decided_midpoints_and_their_neighbours_against_mpmath(name):
    # every listed input, the other side's neighbours, and a few inputs whose
    # float64 value is a midpoint found nearby: the ufunc against mpmath
    listed = getattr(rounding32, name.upper())
    xs = listed.view(np.float32)
    around = np.concatenate([xs, np.nextafter(xs, np.float32(np.inf)),
                             np.nextafter(xs, np.float32(-np.inf))])
    if name == "gelu":                     # the series' midpoints: x/2 below 2**-125
        around = np.concatenate([around, np.float32([3 * 2.0**-149, -5 * 2.0**-149,
                                                     (2**23 - 1) * 2.0**-149])])
    got = getattr(g, name)(around)
    for x, y in zip(around, got):
        want = correctly_rounded(getattr(ref, name)(float(x)))
        assert y.view(np.uint32) == want.view(np.uint32), (name, x, y, want)


@pytest.mark.unit
def test_the_fused_backward_at_gelu_grads_decided_midpoints_with_power_of_two_dy():
    # the accurate path's branch for dy a power of two: dy times GELU'
    # correctly rounded, at the inputs whose GELU' midpoints were decided
    xs = rounding32.GELU_GRAD.view(np.float32)
    xs = np.concatenate([xs, np.nextafter(xs, np.float32(np.inf))])
    for dy in (1.0, -2.0, 0.25, 2.0**20):
        got = g.gelu_backward(np.full_like(xs, dy), xs)
        for x, y in zip(xs, got):
            want = correctly_rounded(ref.gelu_backward(dy, float(x)))
            assert y.view(np.uint32) == want.view(np.uint32), (dy, x, y, want)


@pytest.mark.unit
@pytest.mark.parametrize("name", catalog.names("exact"))
def test_blocks_with_unsure_elements_give_the_kernels_bits_in_every_layout(name):
    # a block holding one unsure element is recomputed element by element;
    # in place, strided and reversed runs give the scalar kernel's bits
    fn = catalog.lookup(name)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(1000) * 4).astype(np.float32)
    x[::97] = np.float32(-14.0)               # subnormal results: unsure
    args = (x,) if fn.nin == 1 else ((rng.standard_normal(1000) * 2).astype(np.float32), x)
    kernel = fn.kernel("f")
    want = np.float32([kernel(*(a[i] for a in args)) for i in range(x.size)])
    f = getattr(g, name)
    assert np.array_equal(f(*args).view(np.uint32), want.view(np.uint32))
    assert np.array_equal(f(*(a[::-1] for a in args)).view(np.uint32), want[::-1].view(np.uint32))
    assert np.array_equal(f(*(a[::3] for a in args)).view(np.uint32), want[::3].view(np.uint32))
    inplace = [a.copy() for a in args]
    f(*inplace, out=inplace[-1])
    assert np.array_equal(inplace[-1].view(np.uint32), want.view(np.uint32))


# ----------------------------------------------------------------- proof tier

@njit
def _compare(dy, x, y64, got, hits, series):
    """Count float32 results that are not ``y64`` rounded, away from its
    midpoints, whose indices go to ``hits``: ``(wrong, first wrong index,
    midpoints left, midpoints judged here)``.
    Two kinds of midpoint are judged here by mathematics, ``y64`` moved one
    float64 ulp towards the exact value, rounded: with ``series``, GELU's
    at ``|x| < 2**-125``, where ``y64 = x/2`` and the exact value ``x/2 +
    phi0 x**2 (1 + O(x**2))`` is above; and the fused backward's ``y64 =
    dy/2`` (``dy`` not None), where ``dy GELU'(x) - dy/2`` has the sign of
    ``dy x`` (``GELU'(x) - 1/2 = Phi(x) - 1/2 + x phi(x)``)."""
    wrong = count = judged = 0
    first = -1
    for i in range(y64.size):
        y = y64[i]
        if y != y:
            if got[i] == got[i]:
                wrong += 1
                first = i if first < 0 else first
            continue
        midpoint = gen.is_midpoint(y)
        direction = 0
        if midpoint and series and abs(x[i]) < 2.0**-125:
            direction = 1
        if dy is not None:
            if midpoint and y == 0.5 * np.float64(dy[i]) and x[i] != 0:
                direction = 1 if (dy[i] > 0) == (x[i] > 0) else -1
        if midpoint and direction == 0:
            if count < hits.size:
                hits[count] = i
            count += 1
            continue
        judged += direction != 0
        step = 0 if direction == 0 else (direction if y > 0 else -direction)
        want = np.float32(step_bits(y, step) if step != 0 else y)
        if float32_bits(want) != float32_bits(got[i]):
            wrong += 1
            first = i if first < 0 else first
    return wrong, first, count, judged


def _step(y, below):
    """The midpoint y64 moved one float64 ulp towards the exact value."""
    return np.nextafter(y, -math.inf if below else math.inf)


@pytest.mark.proof
@pytest.mark.parametrize("name", ONE_ARGUMENT)
def test_every_float32_input_is_correctly_rounded(name):
    import gelu_numba.parallel as par

    f32 = getattr(par, name)
    got = np.empty(gen.CHUNK, np.float32)
    hits = np.empty(1 << 16, np.int64)
    midpoints = series = 0
    for start, x, y64 in gen.chunks(name):
        with np.errstate(all="ignore"):
            f32(x.astype(np.float32), out=got)
        wrong, first, count, judged = _compare(None, x, y64, got, hits, name == "gelu")
        assert wrong == 0, (name, f"{wrong} misrounded, first at bits 0x{start + first:08X}")
        assert count <= hits.size
        for i in hits[:count]:
            xv = np.float32(x[i])
            want = np.float32(_step(y64[i], gen.exact_below(name, xv, y64[i])))
            assert got[i].view(np.uint32) == want.view(np.uint32), (name, xv)
        midpoints += count
        series += judged
    print(f"{name}: midpoints of the float64 kernel: {midpoints} decided by mpmath, "
          f"{series} by the series")


def _backward_pairs(chunk, seed):
    rng = np.random.default_rng(seed)
    # uniform bit patterns: every sign, binade, subnormals, zeros,
    # infinities and NaNs
    return (rng.integers(0, 1 << 32, chunk, dtype=np.uint64).astype(np.uint32).view(np.float32),
            rng.integers(0, 1 << 32, chunk, dtype=np.uint64).astype(np.uint32).view(np.float32))


@pytest.mark.proof
@pytest.mark.parametrize("pairs", ["dy = 1, every x", "2**32 random pairs"])
def test_the_fused_backward_is_correctly_rounded(pairs):
    import gelu_numba.parallel as par

    chunk = gen.CHUNK
    got = np.empty(chunk, np.float32)
    y64 = np.empty(chunk)
    hits = np.empty(1 << 16, np.int64)
    met = misrounded_midpoints = halves = 0
    for k, start in enumerate(range(0, 1 << 32, chunk)):
        if pairs.startswith("dy = 1"):
            x = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
            dy = np.ones(chunk, np.float32)
        else:
            dy, x = _backward_pairs(chunk, k)
        with np.errstate(all="ignore"):
            par.gelu_backward(dy, x, out=got)
            par.gelu_backward(dy.astype(np.float64), x.astype(np.float64), out=y64)
        wrong, first, count, judged = _compare(dy, x, y64, got, hits, False)
        assert wrong == 0, (pairs, dy[first], x[first])
        for i in hits[:count]:
            exact = ref.gelu_backward(float(dy[i]), float(x[i]))
            want = correctly_rounded(exact)
            if pairs.startswith("dy = 1"):
                # every x with dy = 1: correctly rounded
                assert got[i].view(np.uint32) == want.view(np.uint32), (dy[i], x[i])
            elif got[i].view(np.uint32) != want.view(np.uint32):
                # the stated exception: the midpoint rounded to even
                assert got[i] == np.float32(y64[i]), (dy[i], x[i])
                misrounded_midpoints += 1
        met += count
        halves += judged
    print(f"{pairs}: midpoints met: {halves} at dy/2, {met} others decided by mpmath, "
          f"{misrounded_midpoints} of them rounded to even off by an ulp")
