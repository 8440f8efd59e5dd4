"""analysis.exhaustive: the statistics of one pass, the sweep's bookkeeping
and the half-precision table, checked against values known exactly."""

import math

import numpy as np
import pytest

from analysis import exhaustive as ex
from gelu_numba import catalog

pytestmark = pytest.mark.proof

TH = np.asarray(ex.THRESHOLDS)


def stats(x, y, ref):
    s = ex.empty_stats()
    ex.chunk_stats(np.asarray(x, np.float32), np.asarray(y, np.float32),
                   np.asarray(ref, np.float64), TH, s)
    return ex.row("t", "fwd", s)


def test_ulp_and_rounding_counts():
    # ref = 1 + 2**-25 (a quarter ulp above 1): y = 1 is correctly rounded, 0.25 ulp off;
    # y = 1 + 2**-23 is 0.75 ulp off; y = 1 + 2**-22 is 1.75 ulp off
    ref = [1 + 2.0**-25] * 3
    y = [1.0, 1 + 2.0**-23, 1 + 2.0**-22]
    r = stats([0.5, 1.5, 2.5], y, ref)
    assert r["checked"] == 3
    assert r["correctly_rounded"] == 1
    assert r["over_1ulp"] == 1
    assert r["max_ulp"] == pytest.approx(1.75, rel=1e-12)
    assert r["worst_ulp_x"] == 2.5


def test_subnormal_ulp_and_specials():
    tiny = 2.0**-149
    r = stats([-20.0, 3.0, 4.0, np.nan], [3 * tiny, np.inf, np.nan, 0.0],
              [tiny, 3.0, 4.0, 0.0])
    assert r["checked"] == 3                 # the NaN input is skipped
    assert r["special_mismatches"] == 2      # inf and NaN for finite references
    assert r["special_x"] == 3.0             # the smaller |x| of the two
    assert r["over_1ulp"] == 3              # the two, and 2 ulps at x = -20
    assert r["max_ulp"] == pytest.approx(2.0)  # 3 tiny against tiny: the finite ones


def test_relative_error_and_tail_reach():
    x = np.float32([-8.0, -4.0, -2.0, -1.0, 1.0, 2.0, 300.0])
    ref = np.float64([1e-15, 1e-4, 0.5, 0.25, 1.0, 2.0, 300.0])
    y = np.float32([0.0, 1.00001e-4, 0.5, 0.25, 1.0, 2.0, 301.0])
    r = stats(x, y, ref)
    # x = -8: relative error 1 (fails every threshold); x = -4: 1e-5 (fails 1e-6 only)
    assert r["rel_0.1_fails_below"] == -8.0
    assert r["rel_0.001_fails_below"] == -8.0
    assert r["rel_1e-06_fails_below"] == -4.0
    # x = 300: relative error 1/300 fails 1e-3 and 1e-6 but not 1e-1
    assert r["rel_0.1_fails_above"] is None
    assert r["rel_0.001_fails_above"] == 300.0
    assert r["max_abs_10"] == pytest.approx(abs(np.float64(np.float32(1.00001e-4)) - 1e-4))
    assert r["worst_abs_x"] == -4.0       # |x| = 300 is outside the abs range
    assert r["max_rel_normal"] == pytest.approx(1.0)


def test_special_at_infinity_is_named():
    r = stats([-np.inf, 2.0], [np.nan, 1.0], [-0.0, 1.0])
    assert r["special_mismatches"] == 1 and r["special_x"] == -np.inf
    assert r["max_ulp"] == 0.0


def test_merge_is_the_stats_of_the_union():
    rng = np.random.default_rng(5)
    x = rng.normal(0, 4, 2000).astype(np.float32)
    x[[5, 900]] = -np.inf, 1e38
    ref = x.astype(np.float64) * 0.5
    y = (ref * (1 + rng.normal(0, 1e-6, 2000))).astype(np.float32)
    y[[5, 900]] = np.nan, np.inf
    whole, a, b = ex.empty_stats(), ex.empty_stats(), ex.empty_stats()
    ex.chunk_stats(x, y, ref, TH, whole)
    ex.chunk_stats(x[:700], y[:700], ref[:700], TH, a)
    ex.chunk_stats(x[700:], y[700:], ref[700:], TH, b)
    np.testing.assert_array_equal(ex.merge(a, b), whole)


def test_sweep_of_the_exact_gelu_holds_its_bound():
    # odd stride: every exponent and significand pattern class is sampled
    st = ex.sweep(["gelu"], stride=2**16 + 1, workers=1, progress=False)
    fwd = ex.row("gelu", "fwd", st[("gelu", "fwd")])
    nan_patterns = sum(1 for k in range(-(-2**32 // (2**16 + 1)))
                       if (k * (2**16 + 1)) & 0x7FFFFFFF > 0x7F800000)
    assert fwd["checked"] == -(-2**32 // (2**16 + 1)) - nan_patterns
    # (the stated bound, plus the float64 reference's own error: 0.5625
    # float64 ulp, below 2**-28 float32 ulp)
    assert fwd["max_ulp"] <= catalog.lookup("gelu").bound[0] + 2**-28 and fwd["over_1ulp"] == 0
    assert fwd["special_mismatches"] == 0


def test_half_table_misses_only_near_ties():
    """Every float16/bfloat16 input where the exact gelu, computed in float32
    and rounded once, misses the correctly rounded value has an exact value
    within float32 rounding of a tie of the format (double rounding), and
    the inputs listed are among them."""
    (r,) = ex.half_table(["gelu"])
    ref = ex._half_reference()
    for fmt, p in (("float16", 11), ("bfloat16", 8)):
        assert r[f"{fmt}_gelu_inputs"] == ref[f"{fmt}_bits"].size
        for x in r[f"{fmt}_gelu_first_wrong"]:
            i = int(np.flatnonzero(ex._cr_values(ref[f"{fmt}_bits"], fmt) == np.float32(x))[0])
            v = float(ref[f"{fmt}_gelu_hi"][i])
            e = max(math.frexp(abs(v))[1] - 1, -14 if fmt == "float16" else -126)
            q = 2.0 ** (e - p + 1)                    # the format's spacing at v
            frac = abs(v) / q - math.floor(abs(v) / q)
            assert abs(frac - 0.5) * q <= 2.0 ** -24 * abs(v) + 2.0**-150


def test_half_answer_picks_the_fastest_at_the_floor():
    from analysis.approximations import half_answer
    exact = {"float16_wrong": 3, "bfloat16_wrong": 128}
    rows = [{"name": "slow", "gelems_f32": 0.5, "float16_wrong": 3, "bfloat16_wrong": 200},
            {"name": "fast", "gelems_f32": 2.0, "float16_wrong": 3, "bfloat16_wrong": 300},
            {"name": "fastest", "gelems_f32": 3.0, "float16_wrong": 40, "bfloat16_wrong": 150}]
    ans = half_answer(rows, exact)
    assert ans["float16"][0]["name"] == "fast" and ans["float16"][1] == 3
    # nobody at the bfloat16 floor: the fewest wrong
    assert ans["bfloat16"][0]["name"] == "fastest"


def test_update_merges_rows_into_a_saved_run(tmp_path):
    import json
    from analysis.exhaustive import merged
    meta = {"command": "first", "stride": 1, "seconds": 10.0}
    rows = [{"name": "b", "part": "fwd", "v": 1}, {"name": "a", "part": "fwd", "v": "-inf"}]
    (tmp_path / "t.json").write_text(json.dumps({"meta": meta, "rows": rows}))
    new, m = merged(tmp_path, "t", [{"name": "b", "part": "fwd", "v": 2},
                                    {"name": "c", "part": "fwd", "v": 2}],
                    dict(meta, command="second", seconds=5.0), ["a", "b", "c"])
    # the saved rows come back as numbers (the JSON holds "-inf" as a string)
    assert [(r["name"], r["v"]) for r in new] == [("a", -math.inf), ("b", 2), ("c", 2)]
    assert m["command"] == "first, then second" and m["seconds"] == 15.0
    with pytest.raises(SystemExit, match="stride"):
        merged(tmp_path, "t", [], dict(meta, stride=3), ["a"])
