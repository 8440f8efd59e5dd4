"""The benchmark suite is not run by the tests, but it must collect, and its
report script must render pytest-benchmark's JSON."""

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.report import render

pytestmark = pytest.mark.tools

ROOT = Path(__file__).resolve().parents[1]


def test_benchmarks_collect():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "benchmarks"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "test_throughput[gelu-float32-1e+07-gelu_numba]" in proc.stdout


def test_report_renders():
    bench = {"extra_info": {"function": "gelu", "dtype": "float32", "n": 1000,
                            "impl": "gelu_numba"}, "stats": {"median": 1e-6}}
    peer = {"extra_info": {"function": "gelu", "dtype": "float32", "n": 1000,
                           "impl": "torch"}, "stats": {"median": 4e-6}}
    text = render({"benchmarks": [bench, peer], "machine_info": {}})
    assert "| gelu_numba | 1 |" in text          # 1000 / 1e-6 s = 1 G/s
    assert "| torch | 0.25 (4x) |" in text


def test_target_ratios_cycle_through_distinct_inputs_that_stay_in_cache():
    # benchmarks.targets times back-to-back calls on several input sets in
    # turn: on one array again and again, a kernel with data-dependent
    # branches would be timed on a branch predictor that learnt the array
    import numpy as np

    from benchmarks.targets import ROTATION_BYTES, cycling, input_sets
    for n, dtype in ((10**3, np.float64), (10**4, np.float32), (10**5, np.float64)):
        sets = input_sets("gelu_backward", dtype, n)
        assert sets[0][1].dtype == dtype and sets[0][1].size == n
        assert len(sets) == 1 or len(sets) * n * np.dtype(dtype).itemsize <= ROTATION_BYTES
        assert len({s[1].tobytes() for s in sets}) == len(sets)   # distinct
    assert len(input_sets("gelu", np.float64, 10**3)) >= 128
    seen = []
    f = cycling([lambda k=k: seen.append(k) for k in range(3)])
    for _ in range(7):
        f()
    assert seen == [0, 1, 2, 0, 1, 2, 0]
