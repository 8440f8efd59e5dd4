"""gelu_numba.half.gelu_half32: the float32-arithmetic GELU fitted for
float16 and bfloat16 outputs.  Expected values: the correctly rounded half
results in tests/data/half_reference.npz (mpmath), the package's float64
gelu (checked against mpmath in test_accuracy), mathematics."""

import pickle

import mpmath as mp
import numpy as np
import pytest

import gelu_numba
from gelu_numba.half import gelu_half32

pytestmark = pytest.mark.unit


def _near_tie(x, fmt):
    """|GELU(x) - nearest midpoint of two ``fmt`` values| / |GELU(x)|, in mpmath."""
    from gelu_numba.kernels.emulated.formats import to_format
    with mp.workdps(60):
        g = mp.mpf(float(x)) * mp.ncdf(mp.mpf(float(x)))
        lo = float(to_format(np.float32([float(g)]), fmt)[0])
        step = float(np.spacing(np.float16(lo))) if fmt == "float16" else \
            2.0 ** (np.floor(np.log2(max(abs(lo), 2.0**-126))) - 7)
        ties = [mp.mpf(lo) + k * mp.mpf(step) / 2 for k in (-1, 1)]
        return float(min(abs(g - t) for t in ties) / abs(g))


def test_half_formats_at_the_float32_floor():
    """Rounded once to float16 / bfloat16, the results are wrong on as few
    inputs as the correctly rounded float32 GELU's (3 and 128 of the finite
    inputs), and each miss is an input whose GELU lies within float32
    precision of a tie of the format (which no float32 result resolves)."""
    from analysis.exhaustive import half_table
    ours, exact = half_table(["half32", "gelu"])
    assert (exact["float16_gelu_wrong"], exact["bfloat16_gelu_wrong"]) == (3, 128)
    for fmt in ("float16", "bfloat16"):
        assert ours[f"{fmt}_gelu_wrong"] == exact[f"{fmt}_gelu_wrong"], fmt
        for x in ours[f"{fmt}_gelu_first_wrong"]:
            assert _near_tie(x, fmt) < 2.0**-23, (fmt, x)


def test_float32_relative_error():
    """About 5e-7 relative on the normal range, down to the tail: a sample
    of 2**22 float32 bit patterns of |x| < 16 against the float64 gelu."""
    k = np.arange(0, 2**32, 2**10 + 1, dtype=np.uint64).astype(np.uint32)
    x = k.view(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) < 16)]
    ref = gelu_numba.gelu(x.astype(np.float64))
    y = gelu_half32(x).astype(np.float64)
    normal = np.abs(ref) >= 2.0**-126
    rel = np.abs(y[normal] - ref[normal]) / np.abs(ref[normal])
    assert rel.max() < 4.6e-7          # exhaustive: 4.5e-7
    # subnormal results: within a few float32 subnormal steps (2**-149)
    assert np.max(np.abs(y[~normal] - ref[~normal])) <= 4 * 2.0**-149


def test_tail_fit_within_its_certified_error():
    """t P(t) against erfcx(a/sqrt 2)/2 in mpmath, at points off the
    certification grid, coefficients as stored."""
    from gelu_numba.tables import half_fit as t
    with mp.workdps(30):
        for a in np.linspace(0.013, 15.97, 97):
            a = mp.mpf(float(a))
            tt = 1 / (1 + mp.mpf(t.P) * a)
            fit = tt * sum(mp.mpf(c) * tt**j for j, c in enumerate(t.COEFFS))
            exact = mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2
            assert abs(fit / exact - 1) <= t.MAX_REL_ERROR * (1 + 1e-6)
    assert t.MAX_REL_ERROR < 1e-7


def test_special_values_without_fp_warnings():
    x = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 16.0, -16.0, 3.4e38, -3.4e38,
                    1e-45, -1e-45])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for n in (1, 64):     # the scalar and the vectorised loop
            y = gelu_half32(np.repeat(x, n))[::n]
            assert np.isnan(y[0])
            assert list(y[1:5]) == [np.inf, 0.0, 0.0, 0.0]
            assert np.signbit(y[2]) and np.signbit(y[4]) and not np.signbit(y[3])
            assert y[5] == 16.0 and y[6] == 0 and y[7] == np.float32(3.4e38) and y[8] == 0
            # GELU(x) = x/2 (1 + O(x)) for tiny x: 1e-45 is 2**-149, half of it a tie
            assert y[9] in (0.0, np.float32(1e-45)) and y[10] in (0.0, -np.float32(1e-45))


def test_dtypes_inputs_and_pickling():
    with pytest.raises(TypeError, match="for float64 use gelu_numba.gelu"):
        gelu_half32(np.float64([1.0]))
    h = np.float16([-3.0, -0.5, 0.5, 2.0])
    before = h.copy()
    y = gelu_half32(h)
    assert y.dtype == np.float32 and np.array_equal(h, before)
    assert np.allclose(y, gelu_numba.gelu(h.astype(np.float64)), rtol=1e-6)
    assert pickle.loads(pickle.dumps(gelu_half32)) is gelu_half32
    assert pickle.loads(pickle.dumps(gelu_half32.ufunc)) is gelu_half32.ufunc
