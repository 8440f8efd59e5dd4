"""benchmarks.rounding: its two rounding tests classify float64 values the
way their definition says (a float32 midpoint within e |y| of y: unsure),
judged on values built exactly around midpoints, not on a kernel."""

import math

import numpy as np
import pytest
from numba import njit

from benchmarks import rounding

pytestmark = pytest.mark.tools


def _midpoints():
    # float32 values a in every binade kind, and the midpoint above each,
    # exact in float64 (25 significant bits)
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.uniform(1, 2, 200) * 2.0 ** rng.integers(-120, 120, 200),
                        [1.0, 2.0 ** -126, np.finfo(np.float32).max / 2]]).astype(np.float32)
    up = np.nextafter(a, np.float32(np.inf))
    m = (a.astype(np.float64) + up.astype(np.float64)) / 2
    return np.concatenate([m, -m])


@njit
def _classify(ys):
    out = np.empty((ys.size, 2), np.bool_)
    for i in range(ys.size):
        out[i, 0] = rounding.unsure_by_roundings(ys[i])
        out[i, 1] = rounding.unsure_by_bits(ys[i])
    return out


def test_values_near_a_midpoint_are_unsure_and_far_ones_sure():
    m = _midpoints()
    e = rounding.E
    # within e |y| of a midpoint: both tests must send the value to the fix-up
    for factor in (1.0, 1 + e / 2, 1 - e / 2, 1 + e / 4):
        assert _classify(m * factor).all(), factor
    # well beyond: the two roundings agree; the bits test, whose window is
    # e times the top of the binade, lets values 4 e away through
    for factor in (1 + 4 * e, 1 - 4 * e):
        got = _classify(m * factor)
        assert not got.any(), factor
    # a float32 value itself is as far from a midpoint as can be
    a = np.float32(m[:20]).astype(np.float64)
    assert not _classify(a).any()


def test_zero_and_infinities_are_sure_and_float32_subnormal_results_unsure():
    special = np.array([0.0, -0.0, math.inf, -math.inf])
    assert not _classify(special)[:, 1].any() and not _classify(special)[:, 0].any()
    # below 2**-126 the float32 spacing is fixed: the bits test does not know
    # it, and sends every such nonzero value to the fix-up
    tiny = np.array([2.0 ** -127, 3 * 2.0 ** -149, -2.0 ** -140])
    assert _classify(tiny)[:, 1].all()


def test_the_table_names_the_machine_and_every_loop():
    # (in a process of its own: the benchmark pins itself to one core)
    import subprocess
    import sys
    text = subprocess.run([sys.executable, "-m", "benchmarks.rounding", "--n", "4096",
                           "--rounds", "2"], capture_output=True, text=True, check=True,
                          timeout=600).stdout
    assert "ISA:" in text and "cores" in text
    for name in rounding.FUNCTIONS:
        for label in (*rounding.loops(name), "the ufunc (float32)"):
            assert f"| {name} | {label} |" in text
