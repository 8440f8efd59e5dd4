"""The GPU device functions compile to PTX for an H100 (cc 9.0), without a
GPU: numba-cuda's NVVM (the ``numba-cuda[cu12]`` wheels of the test extra)
compiles them, so a kernel that the CUDA simulator runs as Python but that
NVVM cannot type or compile fails here, in CI, not on the first GPU.

Each compiled device function is checked for what makes a GPU kernel slow:
local memory (spilled arrays, a tuple indexed at run time), calls (a
function NVVM did not inline) and memory reads (coefficient tables).  One function of each kernel family, both
dtypes, and every function of the normal-CDF family, whose float32 kernels
must hold no FP64 instruction and no product or sum that ptxas could
fuse.  Runs in a subprocess: the test process runs numba-cuda's simulator
(tests/conftest.py), which has no compiler.
"""

import pytest
from compiled import json_of

from gelu_numba import catalog
from gelu_numba.tables import normal_cdf

pytestmark = pytest.mark.gpu

# gelu: the exact kernels; the others as in test_api.FAMILIES (poly14 and the
# Taylor forms: the generated straight-line polynomials)
FUNCTIONS = ["gelu", "gelu_backward", "norm_pdf", "silu_grad", "x_cauchy_grad",
             "gelu_tanh_grad", "gelu_sigmoid_grad", "gelu_as26_grad", "gelu_poly14",
             "gelu_rat66_grad", "ndtr", "gelu_grad", "gelu_grad2"]
#: the functions whose float32 GPU kernel computes in float32
#: (gelu_numba.kernels.gpu32)
FLOAT32_ARITHMETIC = {"gelu", "gelu_backward", "norm_pdf", "ndtr", "gelu_grad", "gelu_grad2"}
#: the float64 kernels that evaluate a two-piece polynomial: R (Phi's tail)
#: or H (GELU''s)
TWO_PIECE = {"gelu": normal_cdf.R_PIECES, "ndtr": normal_cdf.R_PIECES,
             "gelu_grad": normal_cdf.H_PIECES, "gelu_backward": normal_cdf.H_PIECES}
#: the exact functions: their float64 device function holds the general and
#: the ordinary form (gelu_numba.targets.cuda.device.float64_kernel), each with
#: exp's polynomial, and R's or H's where they have one (the ordinary form
#: its first piece alone)
EXACT = set(catalog.names("exact"))
#: coefficients (hi and lo parts) of a piece of exp's, R's and H's polynomials
_SIZE = {k: len(p[0][0]) + len(p[0][1]) for k, p in (
    ("exp", normal_cdf.EXP_PIECES), ("R", normal_cdf.R_PIECES), ("H", normal_cdf.H_PIECES))}

_CODE = r"""
import json, sys
from numba import cuda, float32, float64
from analysis.gpu.sass import without_a_driver
without_a_driver()
from gelu_numba.gpu import device
from compiled import ptx_counts
from gelu_numba import catalog

out = {}
for name in sys.argv[1:]:
    dev = getattr(device, name)
    nin = dev.py_func.__code__.co_argcount
    for ty in (float32, float64):
        ptx, _ = cuda.compile_ptx(dev.py_func, (ty,) * nin, device=True, cc=(9, 0))
        # (loads: coefficient tables, constant or global memory, per element)
        out[f"{name} {ty}"] = ptx_counts(ptx, ("local", "loads", "const_loads", "votes",
                                               "calls", "fma_f64", "fma_f32", "f64",
                                               "fusable_f32"))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def ptx_counts():
    return json_of(_CODE, *FUNCTIONS)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_device_function_compiles_without_local_memory_or_calls(ptx_counts, name):
    for dtype in ("float32", "float64"):
        c = ptx_counts[f"{name} {dtype}"]
        assert c["local"] == 0, (name, dtype, c)
        assert c["calls"] == 0, (name, dtype, c)
        # coefficients are immediates, but for the double-double
        # polynomials of the float64 kernels (exp's, R's, H's): one
        # constant-memory load per coefficient, at an index that takes at
        # most two values in a warp (primitives.poly_dd_table_source:
        # literals would cost two moves each, for both pieces, and the
        # select); no other table read per element, which serialises across
        # a warp whose elements need different rows
        assert c["loads"] == c["const_loads"], (name, dtype, c)
        if dtype == "float32":
            assert c["loads"] == 0, (name, dtype, c)
        elif name in EXACT:
            # general: exp, and one load a coefficient at a base chosen by
            # the piece; ordinary: exp and the first piece
            tail = None
            if name in TWO_PIECE:
                tail = "R" if TWO_PIECE[name] is normal_cdf.R_PIECES else "H"
            want = 2 * _SIZE["exp"] + (2 * _SIZE[tail] if tail else 0)
            assert c["loads"] == want, (name, dtype, c)
            # one warp vote chooses the form
            assert c["votes"] == 1, (name, dtype, c)
        else:
            # the other families' float64 kernels: exp's polynomial where
            # they call it, whole tables only
            assert c["loads"] % _SIZE["exp"] == 0, (name, dtype, c)
        if dtype == "float32" and name in FLOAT32_ARITHMETIC:
            # no FP64 instruction at all (most GPUs run FP64 at 1/32 to 1/64
            # of FP32), and nothing ptxas could contract into an FMA: the
            # GPU computes the bits that the CPU sweep of these kernels
            # judged (analysis.sweep_float32 --kernels gpu32)
            assert c["f64"] == 0, (name, dtype, c)
            assert c["fusable_f32"] == 0, (name, dtype, c)
            assert c["fma_f32"] >= 5, (name, dtype, c)
        else:
            # the kernels' arithmetic is there: FMAs in float64 (the other
            # float32 kernels compute in float64)
            assert c["fma_f64"] >= 5, (name, dtype, c)
