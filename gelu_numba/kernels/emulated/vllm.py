"""vLLM's CUDA GELU kernels (csrc/activation_kernels.cu), emulated on the CPU.

vLLM serves models whose config names ``gelu_new``, ``gelu_fast`` or
``quick_gelu`` with its own kernels (``torch.ops._C.gelu_new`` etc.); its
``gelu_and_mul``/``gelu_tanh_and_mul`` compute PyTorch's CUDA formulas in
float and round once (the ``pytorch_cuda_*`` entries).  The three element-wise
kernels differ from Hugging Face's expressions in where they round:

* ``gelu_new_kernel<T>``: ``x3 = float(x*x*x)`` with the two products in
  ``T``; ``t = T(tanhf(T(0.79788456f * float(x + T(0.044715f * x3)))))``;
  ``T(0.5) * x * (T(1) + t)`` in ``T``;
* ``gelu_fast_kernel<T>``: ``t = T(tanhf(T(f*0.79788456f) * (T(1) + T(0.044715f*f)*x)))``,
  then the same last line;
* ``gelu_quick_kernel<T>``: ``T(f / (1 + expf(-1.702f*f)))``: float,
  rounded once.

``T`` arithmetic (c10::Half, c10::BFloat16) is a float operation rounded to
``T``: each ``*`` and ``+`` between ``T`` values rounds (:func:`gelu_new_half`,
:func:`gelu_fast_half`).  In float32 nvcc contracts ``x + 0.044715f*x3`` and
``1 + (0.044715f*f)*x`` into FMAs.  CUDA's tanhf and expf are stood in for by
the correctly rounded functions.  Checked against the source only (no GPU).
"""

import math

import numpy as np
from numba import vectorize

from gelu_numba.kernels.emulated.formats import to_format
from gelu_numba.kernels.primitives import inline, fma32

_f = np.float32
HALF = _f(0.5)
ONE = _f(1.0)
#: the kernels' float literals
BETA = _f(0.79788456)
KAPPA = _f(0.044715)
QUICK = _f(-1.702)


@inline
def _cr_tanh(v):
    # stand-in for CUDA's tanhf
    return _f(math.tanh(np.float64(v)))


@inline
def _cr_exp(v):
    # stand-in for CUDA's expf
    return _f(math.exp(np.float64(v)))


@inline
def gelu_new(x):
    """gelu_new_kernel<float>."""
    x3 = x * x * x
    t = _cr_tanh(BETA * fma32(KAPPA, x3, x))
    return (HALF * x) * (ONE + t)


@inline
def gelu_fast(x):
    """gelu_fast_kernel<float>."""
    t = _cr_tanh((x * BETA) * fma32(KAPPA * x, x, ONE))
    return (HALF * x) * (ONE + t)


@inline
def gelu_quick(x):
    """gelu_quick_kernel<float> (also T: float arithmetic, rounded once)."""
    return x / (ONE + _cr_exp(QUICK * x))


_TANH = None


def _tanh(a):
    global _TANH
    if _TANH is None:
        _TANH = vectorize(["float32(float32)"])(lambda v: _cr_tanh(v))
    return _TANH(a)


def gelu_new_half(x, fmt):
    """gelu_new_kernel<T> on ``fmt`` values ``x``: T products round."""
    r = (lambda a: to_format(np.asarray(a, dtype=np.float32), fmt))
    with np.errstate(all="ignore"):
        x3 = r(r(x * x) * x)
        inner = r(BETA * r(x + r(KAPPA * x3)))
        t = r(_tanh(inner))
        return r(r(r(HALF) * x) * r(ONE + t))


def gelu_fast_half(x, fmt):
    """gelu_fast_kernel<T> on ``fmt`` values ``x``."""
    r = (lambda a: to_format(np.asarray(a, dtype=np.float32), fmt))
    with np.errstate(all="ignore"):
        arg = r(r(x * BETA) * r(ONE + r(r(KAPPA * x) * x)))
        t = r(_tanh(arg))
        return r(r(r(HALF) * x) * r(ONE + t))


_SRC = "vllm-project/vllm @ 00ccbd42dc1f40412cc711c5737cc4be0e7a8145: csrc/activation_kernels.cu"
_CHECKED = ("source only (CUDA; no GPU here): tanhf/expf stood in for by the correctly "
            "rounded functions; tests check the half paths against numpy's float16 "
            "arithmetic and the float32 forms against the tanh form")

ENTRIES = (
    dict(name="vllm_gelu_new", library="vLLM",
         runs="vLLM serving models with hidden_act 'gelu_new' (GPT-2, GPT-J, ...): "
              "torch.ops._C.gelu_new on CUDA, in the model's dtype",
         formula="0.5*x*(1 + tanh(0.79788456*(x + 0.044715*x^3))), x^3 and the last line "
                 "in the model's dtype, the middle in float",
         source=_SRC, forward=gelu_new, grad=None, half=gelu_new_half, checked=_CHECKED),
    dict(name="vllm_gelu_fast", library="vLLM",
         runs="vLLM with hidden_act 'gelu_fast': torch.ops._C.gelu_fast on CUDA",
         formula="0.5*x*(1 + tanh(0.79788456*x*(1 + 0.044715*x*x))), mixed dtype and float",
         source=_SRC, forward=gelu_fast, grad=None, half=gelu_fast_half, checked=_CHECKED),
    dict(name="vllm_gelu_quick", library="vLLM",
         runs="vLLM with hidden_act 'quick_gelu': torch.ops._C.gelu_quick on CUDA",
         formula="x/(1 + exp(-1.702*x)) in float, rounded once",
         source=_SRC, forward=gelu_quick, grad=None, half=None, checked=_CHECKED),
)
