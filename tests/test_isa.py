"""The tests that assert what the instruction set compiles (marker
``isa``: instruction mixes, vector widths) pass under both x86 ISAs.

The suite runs them for the machine's own ISA; this test runs them again in
a fresh process with AVX2 forced (:data:`benchmarks.isa.ENVIRONMENTS`:
Numba compiles for Haswell without AVX-512, PyTorch and oneDNN are capped),
so that an assumption of one ISA fails here on an AVX-512 machine before it
rejects every change on an AVX2 one.  On an AVX2 machine the forced process
runs what the machine runs anyway.
"""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import isa

pytestmark = pytest.mark.tools

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="AVX2 and AVX-512 are x86-64 ISAs")
def test_isa_dependent_tests_pass_with_avx2_forced():
    env = {**os.environ, **isa.ENVIRONMENTS["avx2"]}
    # the files that mark such tests (collecting the whole suite would take
    # longer than running them)
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")
                   if "mark.isa" in p.read_text() and p.name != Path(__file__).name)
    assert files
    run = subprocess.run(
        # (less the test that forces AVX2 itself: here it would be forced twice)
        [sys.executable, "-m", "pytest", "-q", "-m", "isa", "-k", "not reexecutes", "-n", "0",
         "-p", "no:cacheprovider", "--no-header", *files],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    last = run.stdout.strip().splitlines()[-1]
    assert " passed" in last and "failed" not in last and "error" not in last, tail
