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
