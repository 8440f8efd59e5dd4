"""ONNX Runtime's GELUs, emulated in float32 (and, for its CUDA FastGelu, in
float16 arithmetic).

CPU, x86-64 (microsoft/onnxruntime v1.32.0, the wheel installed here)
--------------------------------------------------------------------
``Gelu`` (ONNX opset 20 and com.microsoft, approximate="none") is three
passes over each block of 4096 elements
(onnxruntime/core/providers/cpu/tensor/gelu.cc): ``v = x * float32(1/sqrt 2)``,
MLAS's ``MlasComputeErf`` in place, ``(0.5f * x) * (erf + 1)``.  MLAS's erf
(onnxruntime/core/mlas/lib/erf.cpp, constants ``MlasErfConstants``; the
AMD64 kernel is assembly with the same FMAs) is njuffa's faithfully rounded
erff, with its own exp, clamped at ``|v| <= 3.925`` (erf.cpp @ eeb91bb2;
3.725 in older revisions: 3.925 is what v1.32.0 computes, bit for bit):

* ``a = min(|v|, 3.925)``; ``|v| <= 0.921875``: ``fma(S(a*a), a, a)``, S of
  degree 5 in ``a*a`` by FMAs;
* else ``1 - exp(-fma(B(a), a, a))``, B of degree 6 in ``a``; the exp
  rounds ``r = fma(log2 e, w, 1.5*2^23) - 1.5*2^23``, reduces with a two-part
  ln 2 by FMAs, evaluates a degree-6 polynomial and scales by ``2^r``;
* the sign of ``v`` put back by OR.

So erf reaches exactly 1 before the clamp: GELU is exactly 0 from
x = -5.5 on (``1 + erf`` cancels before that) and ``x`` beyond +5.5.

``FastGelu`` (com.microsoft, contrib_ops/cpu/bert/fast_gelu.cc registers
``BiasGelu<float, true>`` of bias_gelu.cc, and ONNX
``Gelu`` approximate="tanh" in gelu.cc): ``t = x * (C*x*x + B)`` (no FMA:
the baseline x86-64 build does not contract) with ``B = 0.7978845608028654f``
and ``C = 0.035677408136300125f`` (= 0.044715 B), MLAS's tanh
(onnxruntime/core/mlas/lib/tanh.cpp: Eigen's old 13/6 rational with FMAs,
input clamped to [-9, 9]), then ``(0.5f * x) * (t + 1)``.

The CPU kernels are float32 only (no float16/bfloat16 kernel on x86); their
half rows are float32 rounded once, which is what a model with Cast nodes
around the op computes.  ONNX Runtime's inference build has no GELU
backward.

CUDA FastGelu (contrib_ops/cuda/bert/fast_gelu_impl.cu @ 00d77635c8ae, from
TensorRT's BERT plugin): ``cdf = a + a * tanh(x * (c*x*x + b)); y = x * cdf``
with a = 0.5, b, c as above, in the tensor's type: in float16 every product
and sum is a float16 operation and only tanh goes through float
(``__float2half(tanhf(__half2float(.)))``) (:func:`cuda_fastgelu_half`).  In
float32 nvcc contracts ``c*x*x + b`` and ``a + a*t`` into FMAs; CUDA's
tanhf is stood in for by the correctly rounded tanh.  The file read has no
bfloat16 launcher; the bfloat16 row applies the same template in bfloat16.
"""

import math

import numpy as np
from numba import vectorize

from gelu_numba.kernels.emulated.formats import to_format
from gelu_numba.kernels.primitives import inline, fma32, float32_bits, float32_from_bits, horner32

_f = np.float32
HALF = _f(0.5)
ONE = _f(1.0)
#: gelu.cc: static_cast<float>(M_SQRT1_2)
INV_SQRT2 = _f(0.70710678118654752440)

# MlasErfConstants (erf.cpp @ eeb91bb2)
ERF_UPPER_ABS_RANGE = _f(3.925)
ERF_SPLIT = _f(0.921875)
#: ErfSMALL_P0 .. P4, P5_Minus_One: erf(a) = a + a * S(a^2) on [0, 0.921875]
ERF_SMALL = (_f(-5.99104969e-4), _f(4.99339588e-3), _f(-2.67667342e-2), _f(1.12818025e-1),
             _f(-3.76124859e-1), _f(1.28379151e-1))
#: ErfBIG_P0 .. P5, P6_Minus_One: erf(a) = 1 - exp(-(a + a * B(a)))
ERF_BIG = (_f(1.72948930e-5), _f(-3.83208680e-4), _f(3.88393435e-3), _f(-2.42545605e-2),
           _f(1.06777847e-1), _f(6.34846687e-1), _f(1.28717512e-1))
EXP_LOWER_RANGE = _f(-88.3762626647949)
EXP_LOG2_RECIPROCAL = _f(1.44269504088896341)
EXP_LOG2_HI = _f(-6.93145752e-1)
EXP_LOG2_LO = _f(-1.42860677e-6)
#: Exp_P0 .. P6
EXP_POLY = (_f(1.38319808e-3), _f(8.37550033e-3), _f(4.16689515e-2), _f(1.66664466e-1),
            _f(4.99999851e-1), _f(1.0), _f(1.0))
#: 1.5 * 2^23: adding and subtracting it rounds to an integer
EXP_C = _f(1.25829120e+7)

# MlasTanhConstants (tanh.cpp): Eigen's float tanh before 2023
TANH_RANGE = _f(9.0)
TANH_ALPHA = (_f(-2.76076847742355e-16), _f(2.00018790482477e-13), _f(-8.60467152213735e-11),
              _f(5.12229709037114e-08), _f(1.48572235717979e-05), _f(6.37261928875436e-04),
              _f(4.89352455891786e-03))
TANH_BETA = (_f(1.19825839466702e-06), _f(1.18534705686654e-04), _f(2.26843463243900e-03),
             _f(4.89352518554385e-03))

#: FastGelu's B = sqrt(2/pi) and C = 0.044715 * sqrt(2/pi), as float32
FAST_B = _f(0.7978845608028654)
FAST_C = _f(0.035677408136300125)


@inline
def mlas_erf(v):
    """MlasComputeErf for one float32 (the AMD64 kernel's arithmetic)."""
    a = min(ERF_UPPER_ABS_RANGE, abs(v))
    if a > ERF_SPLIT:
        w = max(EXP_LOWER_RANGE, -fma32(horner32(ERF_BIG, a), a, a))
        r = fma32(EXP_LOG2_RECIPROCAL, w, EXP_C) - EXP_C
        fx = fma32(r, EXP_LOG2_HI, w)
        fx = fma32(r, EXP_LOG2_LO, fx)
        # 2^r by its bits (MlasPowerOf2Float32x4): r is in [-23, 0] here
        two_r = float32_from_bits(np.uint32(np.int32(r) + np.int32(127)) << np.uint32(23))
        e = ONE - horner32(EXP_POLY, fx) * two_r
    else:
        e = fma32(horner32(ERF_SMALL, a * a), a, a)
    return float32_from_bits(float32_bits(e) | (float32_bits(v) & np.uint32(0x80000000)))


@inline
def mlas_tanh(v):
    """MlasComputeTanh for one float32 (the AMD64 kernel's arithmetic)."""
    v = min(TANH_RANGE, max(-TANH_RANGE, v))
    v2 = v * v
    p = horner32(TANH_ALPHA, v2) * v
    return p / horner32(TANH_BETA, v2)


@inline
def cpu_gelu(x):
    """Gelu (approximate="none") on the CPU."""
    return (HALF * x) * (mlas_erf(x * INV_SQRT2) + ONE)


@inline
def cpu_fastgelu(x):
    """FastGelu, and Gelu approximate="tanh", on the CPU."""
    return (HALF * x) * (mlas_tanh(x * (FAST_C * x * x + FAST_B)) + ONE)


@inline
def _cr_tanh(v):
    # stand-in for CUDA's tanhf: the correctly rounded float32 tanh
    return _f(math.tanh(np.float64(v)))


@inline
def cuda_fastgelu(x):
    """FastGelu's CUDA kernel in float32 (nvcc's contractions)."""
    t = _cr_tanh(x * fma32(FAST_C * x, x, FAST_B))
    return x * fma32(HALF, t, HALF)


_TANH = None


def cuda_fastgelu_half(x, fmt):
    """FastGelu's CUDA kernel on a ``fmt`` tensor: each operation rounded to
    ``fmt``, tanh in float32 and rounded."""
    global _TANH
    if _TANH is None:
        _TANH = vectorize(["float32(float32)"])(lambda v: _cr_tanh(v))
    r = (lambda a: to_format(a, fmt))
    a, b, c = r(HALF), r(FAST_B), r(FAST_C)
    with np.errstate(all="ignore"):
        inner = r(x * r(r(r(c * x) * x) + b))
        t = r(_TANH(inner))
        return r(x * r(a + r(a * t)))


_CPU_SRC = ("microsoft/onnxruntime v1.32.0: onnxruntime/core/providers/cpu/tensor/gelu.cc, "
            "contrib_ops/cpu/bert/fast_gelu.cc and bias_gelu.cc, core/mlas/lib/erf.cpp (@ eeb91bb2), "
            "core/mlas/lib/tanh.cpp")

ENTRIES = (
    dict(name="onnxruntime_cpu_gelu", library="ONNX Runtime",
         runs="ONNX Gelu (opset 20, approximate='none'), com.microsoft Gelu and BiasGelu on "
              "the CPU execution provider (float32; also what torch.onnx exports of "
              "nn.GELU() run there)",
         formula="(0.5*x)*(erf(x/sqrt2) + 1), MLAS erf: njuffa's erff with its own exp, "
                 "|v| clamped at 3.925; exactly 0 below x = -5.5",
         source=_CPU_SRC, forward=cpu_gelu, grad=None, half=None,
         checked="onnxruntime 1.32.0 (CPUExecutionProvider, one thread): bit-identical on "
                 "3,000,000 inputs on [-12, 12] and N(0, 9), blocks and remainders"),
    dict(name="onnxruntime_cpu_fastgelu", library="ONNX Runtime",
         runs="com.microsoft FastGelu and ONNX Gelu (opset 20, approximate='tanh') on the "
              "CPU execution provider (float32; BERT-family models after ORT's fusion)",
         formula="(0.5*x)*(tanh(x*(C*x*x + B)) + 1), MLAS tanh: Eigen's 13/6 rational on "
                 "[-9, 9]",
         source=_CPU_SRC, forward=cpu_fastgelu, grad=None, half=None,
         checked="onnxruntime 1.32.0 (CPUExecutionProvider, one thread): bit-identical on "
                 "3,000,000 inputs, both ops"),
    dict(name="onnxruntime_cuda_fastgelu", library="ONNX Runtime",
         runs="com.microsoft FastGelu on the CUDA execution provider; float16 models do "
              "the arithmetic in float16",
         formula="x*(0.5 + 0.5*tanh(x*(C*x*x + B))), in the tensor's type",
         source="microsoft/onnxruntime @ 00d77635c8ae: "
                "onnxruntime/contrib_ops/cuda/bert/fast_gelu_impl.cu",
         forward=cuda_fastgelu, grad=None, half=cuda_fastgelu_half,
         checked="source only (no GPU here); tanhf stood in for by the correctly rounded "
                 "tanh; nvcc may also contract the float16 products into HFMA, which the "
                 "float16 row does not do"),
)
