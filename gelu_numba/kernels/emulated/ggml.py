"""ggml's (llama.cpp's) GELUs on the CPU, emulated in float32.

Code paths (ggml-org/ggml @ d99724f2b141; llama.cpp vendors the same
src/ggml-cpu): ``GGML_GELU_FP16`` and ``GGML_GELU_QUICK_FP16`` are defined
unconditionally in ``src/ggml-cpu/vec.h``, so ``ggml_vec_gelu_f32`` (the
``GGML_OP_GELU`` of every float32 CPU graph: GPT-2, BERT, Gemma, ... in
llama.cpp) does not evaluate a formula:

* :func:`gelu`: ``x <= -10`` gives 0, ``x >= 10`` gives x, otherwise x is
  rounded to float16 (``GGML_CPU_FP32_TO_FP16``: F16C ``vcvtps2ph``, to
  nearest even) and its bit pattern indexes a 65,536-entry table built at
  start-up (``ggml_cpu_init``, src/ggml-cpu/ggml-cpu.c):
  ``table[i] = fp16(gelu_f32(fp32(half i)))``, ``gelu_f32(x) =
  0.5f*x*(1.0f + tanhf(SQRT_2_OVER_PI*x*(1.0f + GELU_COEF_A*x*x)))``.
  The output has float16 precision: every input in one float16 interval
  gets the same result.
* :func:`gelu_quick`: the same table lookup of ``x*(1.0f/(1.0f +
  expf(-1.702f*x)))``, without the clamps.
* :func:`gelu_erf` (``GGML_OP_GELU_ERF``): ``0.5f*x*(1.0f + erff(x*SQRT_2_INV))``
  evaluated in float32.

The tables are rebuilt here the way ggml builds them, with this machine's
glibc ``tanhf``, ``expf`` and ``erff`` (Numba's ``math`` functions on
float32 call them), as ggml linked against glibc does.  Whether the C
compiler contracts ``1.0f + GELU_COEF_A*x*x`` into an FMA depends on the
build flags; the table is built without contraction (ISO C semantics).

Half inputs: ggml's float16 GELU (``ggml_vec_gelu_f16``) reads the same
table directly, i.e. exactly what :func:`gelu` gives for float16 inputs
inside (-10, 10); bfloat16 tensors are converted to float32 first.
Source-only: ggml is not installable here.
"""

import math

import numpy as np
from numba import vectorize

from gelu_numba.kernels.primitives import inline

from gelu_numba.kernels.emulated.formats import float16_bits, round_float16

_f = np.float32
HALF = _f(0.5)
ONE = _f(1.0)
ZERO = _f(0.0)
#: src/ggml-cpu/vec.h
GELU_COEF_A = _f(0.044715)
GELU_QUICK_COEF = _f(-1.702)
SQRT_2_OVER_PI = _f(0.79788456080286535587989211986876)
SQRT_2_INV = _f(0.70710678118654752440084436210484)
#: ggml_vec_gelu_f32's clamps
CLAMP = _f(10.0)


@inline
def gelu_f32(x):
    """ggml_gelu_f32: the tanh form, glibc tanhf."""
    return HALF * x * (ONE + math.tanh(SQRT_2_OVER_PI * x * (ONE + GELU_COEF_A * x * x)))


@inline
def gelu_quick_f32(x):
    """ggml_gelu_quick_f32: ``x * (1/(1 + expf(-1.702 x)))``, glibc expf."""
    return x * (ONE / (ONE + math.exp(GELU_QUICK_COEF * x)))


@inline
def gelu_erf(x):
    """ggml_vec_gelu_erf_f32: ``0.5 x (1 + erff(x / sqrt 2))``, glibc erff."""
    return HALF * x * (ONE + math.erf(x * SQRT_2_INV))


def _table(formula):
    """``table[i] = fp16(formula(fp32(half i)))`` for all 65,536 patterns,
    stored as the float32 values of the float16 entries."""
    h = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    f = vectorize(["float32(float32)"])(lambda v: formula(v))
    with np.errstate(all="ignore"):
        return f(h.astype(np.float32)).astype(np.float16).astype(np.float32)


GELU_TABLE = _table(gelu_f32)
GELU_QUICK_TABLE = _table(gelu_quick_f32)


@inline
def _lookup(table, x):
    return table[float16_bits(round_float16(x))]


@inline
def gelu(x):
    """ggml_vec_gelu_f32 with GGML_GELU_FP16."""
    if x <= -CLAMP:
        return ZERO
    if x >= CLAMP:
        return x
    return _lookup(GELU_TABLE, x)


@inline
def gelu_quick(x):
    """ggml_vec_gelu_quick_f32 with GGML_GELU_QUICK_FP16."""
    return _lookup(GELU_QUICK_TABLE, x)


_SRC = ("ggml-org/ggml @ d99724f2b141fed9e1a9f402213506c081433465: src/ggml-cpu/vec.h "
        "(ggml_vec_gelu_f32, ggml_gelu_f32, constants), src/ggml-cpu/ggml-cpu.c (tables)")
_CHECKED = ("source only (ggml is not installable here); tables rebuilt with glibc's "
            "functions; tests check the table against the formula in float64 and the clamps")

ENTRIES = (
    dict(name="ggml_gelu", library="ggml / llama.cpp",
         runs="GGML_OP_GELU on the CPU (llama.cpp's GPT-2, BERT, Gemma, StarCoder, ... "
              "graphs), float32 and float16 tensors",
         formula="x <= -10: 0; x >= 10: x; else fp16 table of the tanh form at fp16(x)",
         source=_SRC, forward=gelu, grad=None, half=None, checked=_CHECKED),
    dict(name="ggml_gelu_quick", library="ggml / llama.cpp",
         runs="GGML_OP_GELU_QUICK on the CPU (CLIP vision towers in llama.cpp's mtmd)",
         formula="fp16 table of x/(1 + exp(-1.702 x)) at fp16(x), no clamp",
         source=_SRC, forward=gelu_quick, grad=None, half=None, checked=_CHECKED),
    dict(name="ggml_gelu_erf", library="ggml / llama.cpp",
         runs="GGML_OP_GELU_ERF on the CPU, float32",
         formula="0.5*x*(1 + erff(x*SQRT_2_INV)), glibc erff",
         source=_SRC, forward=gelu_erf, grad=None, half=None, checked=_CHECKED),
)
