"""The lean float32-arithmetic kernels (gelu_numba.kernels.lean32), which
gelu_numba.gpu launches on GPUs with slow FP64:
what CUDA compiles of them, and that a CUDA kernel computes the bits of
their CPU compilation (which tests/test_gpu32.py holds to mpmath, and the
exhaustive sweep analysis/results/sweep_float32_lean32.json to the float64
reference on every input).

On a GPU when one is present, else under numba-cuda's simulator (device
code run as Python, on NumPy float32 scalars)."""

import numpy as np
import pytest
from compiled import json_of
from numba import cuda

from analysis.sweep_float32 import function_for
from gelu_numba import catalog

LEAN32 = [f.name for f in catalog.FUNCTIONS if f.lean32 is not None]

pytestmark = pytest.mark.gpu

_CODE = r"""
import json, sys
from analysis.gpu.sass import without_a_driver, _lean_ptx
without_a_driver()
from gelu_numba import catalog
from compiled import ptx_counts

# (global_loads: the table reads, and the element's own)
out = {name: ptx_counts(_lean_ptx(catalog.lookup(name), True),
                        ("local", "calls", "f64", "div", "global_loads", "fusable_f32"))
       for name in sys.argv[1:]}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def ptx_counts():
    return json_of(_CODE, *LEAN32)


@pytest.mark.parametrize("name", LEAN32)
def test_launched_kernel_is_float32_without_division_or_calls(ptx_counts, name):
    c = ptx_counts[name]
    assert c["f64"] == 0, c              # no float64 instruction at all
    assert c["div"] == 0, c              # no division, no reciprocal
    assert c["local"] == 0 and c["calls"] == 0, c
    # every product and sum explicitly rounded (mul.rn/add.rn): nothing fused
    assert c["fusable_f32"] == 0, c
    assert c["global_loads"] > 0, c      # the table row, from the argument


def _kernel(name):
    # one element per thread, the table after the inputs (analysis.gpu.sass
    # counts the same kernel)
    from analysis.gpu.sass import lean_kernel
    return cuda.jit(lean_kernel(name, False)[0])


def _assert_cpu_bits(name, args, got):
    """``got`` is the lean kernel's CPU compilation's bits on ``args`` (NaN
    for NaN)."""
    with np.errstate(all="ignore"):
        want = function_for(name, False, "lean32")(*args)
    assert np.array_equal(got.view(np.uint32)[~np.isnan(want)],
                          want.view(np.uint32)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["gelu", "gelu_backward"])
def test_the_shared_memory_variant_gives_the_cpu_compilations_bits(name):
    # the table copied into each block's shared memory, then the launched
    # loop (two blocks of 32 threads, so that the grid-stride loop's
    # unrolled part and its tail both run)
    from gelu_numba.targets.cuda import lean_shared
    rng = np.random.default_rng(8)
    x = np.concatenate([np.sqrt(np.arange(0, 401, 4.0) + rng.uniform(0, 1, 101)),
                        [0.0, 20.0, 25.0, np.inf, np.nan, 1e-40]]).astype(np.float32)
    x = np.concatenate([x, -x, rng.standard_normal(83).astype(np.float32)])
    args = (x,) if name == "gelu" else (rng.standard_normal(x.size).astype(np.float32), x)
    out = cuda.device_array(x.size, np.float32)
    lean_shared.kernel(name)[2, 32](*(cuda.to_device(a) for a in args),
                                    cuda.to_device(catalog.lookup(name).lean32[1]), out)
    if name == "gelu":
        # the launch analysis.gpu.throughput times (its table, its grid),
        # once: its simulator dry run leaves it out
        from analysis.gpu.throughput import _lean_shared_call
        timed = cuda.device_array(x.size, np.float32)
        _lean_shared_call(name, (cuda.to_device(x),), timed, 0)()
        assert np.array_equal(timed.copy_to_host().view(np.uint32),
                              out.copy_to_host().view(np.uint32))
    _assert_cpu_bits(name, args, out.copy_to_host())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", LEAN32)
def test_a_cuda_kernel_gives_the_cpu_compilations_bits(name):
    rng = np.random.default_rng(7)
    # every row of the table, both signs, the subnormal results' range,
    # the special values
    x = np.concatenate([np.sqrt(np.arange(0, 401, 1.0) + rng.uniform(0, 1, 401)),
                        rng.uniform(0, 1, 40), rng.uniform(12.5, 14.4, 40),
                        [0.0, 20.0, 25.0, np.inf, np.nan, 1e-40, 0.75179154]]).astype(np.float32)
    x = np.concatenate([x, -x])
    table = catalog.lookup(name).lean32[1]
    args = (x,) if name != "gelu_backward" else (
        (rng.choice([-1, 1], x.size) * 2.0 ** rng.uniform(-140, 127, x.size)).astype(np.float32),
        x)
    out = cuda.device_array(x.size, np.float32)
    _kernel(name)[(x.size + 127) // 128, 128](*(cuda.to_device(a) for a in args),
                                              cuda.to_device(table), out)
    _assert_cpu_bits(name, args, out.copy_to_host())
