"""Throughput of each function x dtype x size x implementation."""

import numpy as np
import pytest

from benchmarks.peers import FUNCTIONS, implementations, inputs

SIZES = [1_000, 100_000, 10_000_000]
DTYPES = ["float32", "float64"]

CASES = [(name, dtype, n, label)
         for name in FUNCTIONS for dtype in DTYPES for n in SIZES
         for label in implementations(name)]


@pytest.mark.parametrize("name,dtype,n,label", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]:.0e}-{c[3]}" for c in CASES])
def test_throughput(benchmark, name, dtype, n, label):
    arrays = inputs(name, np.dtype(dtype), n)
    f = implementations(name)[label](*arrays)
    f()  # warm-up (compilation, first page faults of the allocator)
    benchmark.group = f"{name} {dtype} n={n:.0e}"
    benchmark.extra_info.update(function=name, dtype=dtype, n=n, impl=label)
    rounds = max(5, min(200, 20_000_000 // n))
    benchmark.pedantic(f, rounds=rounds, warmup_rounds=1)
