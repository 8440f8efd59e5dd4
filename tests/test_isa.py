"""The tests that assert what the instruction set compiles (marker
``isa``: instruction mixes, vector widths) pass under both x86 ISAs.

The suite runs them for the machine's own ISA; this test runs them again in
a fresh process with AVX2 forced (:data:`benchmarks.isa.ENVIRONMENTS`:
Numba compiles for Haswell without AVX-512, PyTorch and oneDNN are capped),
so that an assumption of one ISA fails here on an AVX-512 machine before it
rejects every change on an AVX2 one.  On an AVX2 machine the forced process
runs what the machine runs anyway.

The 2-byte loops, which convert float16 by the CPU's F16C instructions
where it has them, pass on a CPU without them too (the baseline x86-64).
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


#: Numba's target for an x86-64 CPU without F16C (the baseline ISA): no
#: conversion instruction between float32 and float16
BASELINE = {"NUMBA_CPU_NAME": "x86-64", "NUMBA_CPU_FEATURES": "+64bit,+sse,+sse2,+cx8,+fxsr,+mmx,+cmov"}


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="F16C is an x86-64 extension")
def test_the_2_byte_loops_pass_on_a_cpu_without_float16_conversions(tmp_path):
    # where the CPU has no F16C the float16 loops convert by integer code
    # (gelu_numba.kernels.half_rounding): the same tests, in a fresh process
    # compiling for the baseline ISA, with a cache of its own
    env = {**os.environ, **BASELINE, "NUMBA_CACHE_DIR": str(tmp_path)}
    probe = subprocess.run(
        [sys.executable, "-c", "from gelu_numba.internals import numba_core; "
                               "print(numba_core.converts_float16())"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert probe.stdout.strip() == "False", probe.stdout + probe.stderr
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         "--no-header", "tests/test_half_loops.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout.strip().splitlines()[-1], tail
