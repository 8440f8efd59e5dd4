"""The float32 kernels of 16-byte loads and stores
(gelu_numba.targets.cuda.vector_io, codegen.VEC4_LOOP), which
gelu_numba.gpu launches where every float32 operand is 16-byte aligned:
the bits of each float32 arithmetic's CPU compilation, and in the PTX and
SASS one vector load per input and trip, all of its bytes in flight.

The bits on a GPU when one is present, else under numba-cuda's simulator;
the PTX and SASS compiled for sm_90 without a GPU."""

import numpy as np
import pytest
from compiled import json_of
from numba import cuda

from analysis.sweep_float32 import function_for
from gelu_numba import catalog
from gelu_numba.targets import cuda as target

pytestmark = pytest.mark.gpu

#: variant -> (GpuFunction.variant's forced choice, the CPU compilation of
#: the same operations, as analysis.sweep_float32 names it)
VARIANTS = {"fp64": ({"fp64": True}, "cpu"),
            "lean32": ({"fp64": False}, "lean32"),
            "gpu32": ({"fp64": False, "lean32": False}, "gpu32")}
#: the functions with both float32 kernels (a lean one too)
NAMES = [f.name for f in catalog.FUNCTIONS if f.lean32 is not None]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", NAMES)
def test_16_byte_loads_give_the_cpu_compilations_bits(name, variant):
    choice, cpu = VARIANTS[variant]
    gf = target.gpu_function(name)
    assert gf.variant("f", **choice) == variant
    rng = np.random.default_rng(3)
    # 4 * 37 + 3 elements: the vector loop, then a tail of three; both
    # signs, the tails, the special values
    x = np.concatenate([rng.standard_normal(120) * 3, [0.0, -0.0, 6.5, -9.5, 13.9, -14.2],
                        [np.inf, -np.inf, np.nan, 1e-40, -0.75179154]]).astype(np.float32)
    x = np.concatenate([x, -x[:20]])
    assert x.size % 4 == 3
    args = (x,) if gf.nin == 1 else (
        (rng.choice([-1, 1], x.size) * 2.0 ** rng.uniform(-60, 60, x.size)).astype(np.float32),
        x)
    layout = target.flat_layout(gf.nin)
    out = cuda.device_array(x.size, np.float32)
    # two blocks of eight threads: some threads take two trips, some none
    gf.kernel("f", layout, vec4=True, **choice)[2, 8](
        *(cuda.to_device(a) for a in args), *gf.fixed_arguments("f", layout, **choice).values(),
        out)
    got = out.copy_to_host()
    with np.errstate(all="ignore"):
        want = function_for(name, False, cpu)(*args)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got.view(np.uint32)[~np.isnan(want)],
                          want.view(np.uint32)[~np.isnan(want)])


def test_16_byte_loads_take_float32_contiguous_operands_only():
    gf = target.gpu_function("gelu")
    with pytest.raises(ValueError, match="float32 loop on contiguous operands"):
        gf.kernel("d", target.flat_layout(1), vec4=True)
    with pytest.raises(ValueError, match="float32 loop on contiguous operands"):
        gf.kernel("f", (False, 2, (2,), (True,)), vec4=True)


_CODE = r"""
import json, sys
from numba import float32, float64
from analysis.gpu import sass as gpu_sass
gpu_sass.without_a_driver()
from gelu_numba import catalog

out = {}
for name in sys.argv[1:]:
    record = catalog.lookup(name)
    for variant, ptx in (("fp64", gpu_sass._flat_kernel_ptx(record, float32, True, vec4=True)),
                         ("lean32", gpu_sass._lean_ptx(record, True, vec4=True))):
        sass, regs = gpu_sass._sass(ptx)
        body = gpu_sass.loop_body(sass)
        out[f"{name} {variant}"] = {
            "ld_v4": ptx.count("ld.global.v4.f32"), "st_v4": ptx.count("st.global.v4.f32"),
            "ld_128": sum(op.startswith("LDG.E.128") for op, _ in body),
            "st_128": sum(op.startswith("STG.E.128") for op, _ in body),
            "in_flight": gpu_sass.bytes_in_flight(body)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def compiled():
    return json_of(_CODE, "gelu", "gelu_backward")


@pytest.mark.parametrize("name, nin", [("gelu", 1), ("gelu_backward", 2)])
@pytest.mark.parametrize("variant", ["fp64", "lean32"])
def test_one_vector_load_per_input_and_trip_all_in_flight(compiled, name, nin, variant):
    c = compiled[f"{name} {variant}"]
    # the loop's: one 16-byte load per input and one 16-byte store
    assert c["ld_v4"] == nin and c["st_v4"] == 1, c
    assert c["ld_128"] == nin and c["st_128"] == 1, c
    # at least one whole vector in flight before its first use: four times
    # the one 4-byte load ptxas leaves ahead in the loop of 4-byte loads
    assert c["in_flight"] >= 16, c
