"""Hugging Face transformers' named GELUs (src/transformers/activations.py),
emulated as PyTorch evaluates them.

These are PyTorch expressions run op by op, each op rounding to the
tensor's dtype: in float32 that is float32 arithmetic (with torch.tanh's and
torch.sigmoid's own implementations), in bfloat16/float16 models every
intermediate is rounded to half precision, which is where the variants that
"differ only in rounding" (transformers#21344) really differ.

* ``gelu_new`` (NewGELUActivation; GPT-2, GPT-J, ...) and ``gelu_accurate``
  (AccurateGELUActivation, the same ops with the constant precomputed):
  ``0.5 * x * (1.0 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3.0))))``,
  ``pow(x, 3.0)`` as ``x * x * x``: :func:`gelu_new`.
* ``gelu_fast`` (FastGELUActivation):
  ``0.5 * x * (1.0 + tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))``:
  :func:`gelu_fast`.
* ``quick_gelu`` (QuickGELUActivation; CLIP): ``x * sigmoid(1.702 * x)``,
  ``torch.sigmoid`` = ``1 / (1 + exp(-x))`` with SLEEF's expf:
  :func:`quick_gelu` (bit-identical to torch 2.13).
* ``gelu`` and ``gelu_pytorch_tanh`` are ``F.gelu`` (exact, tanh): the
  PyTorch entries (``pytorch_cpu_vec_erf``, ``onednn``, ``pytorch_cpu_vec_tanh``).

Stand-in: ``torch.tanh`` of a contiguous float32 CPU tensor (almost always
the correctly rounded tanh on [-20, 20]) is the correctly rounded tanh
here.  Half paths (``half``): every op computed in float32 on
the half operands and rounded to the format, as PyTorch's eager CPU kernels
do for bfloat16 and float16 (checked against torch 2.13).
"""

import math

import numpy as np
from numba import vectorize

from gelu_numba.kernels.primitives import inline

from gelu_numba.kernels.emulated.formats import to_format
from gelu_numba.kernels.emulated.pytorch import sleef_expf_u10

_f = np.float32
HALF = _f(0.5)
ONE = _f(1.0)
#: math.sqrt(2.0 / math.pi) as torch casts the Python scalar for a float32 op
SQRT_2_OVER_PI = _f(math.sqrt(2.0 / math.pi))
KAPPA = _f(0.044715)
#: FastGELU's literal
FAST_C = _f(0.7978845608)
QUICK = _f(1.702)


@inline
def _tanh(v):
    # stand-in for torch.tanh on float32: the correctly rounded tanh
    return _f(math.tanh(np.float64(v)))


@inline
def gelu_new(x):
    """NewGELUActivation in float32."""
    inner = SQRT_2_OVER_PI * (x + KAPPA * (x * x * x))
    return (HALF * x) * (ONE + _tanh(inner))


@inline
def gelu_fast(x):
    """FastGELUActivation in float32."""
    return (HALF * x) * (ONE + _tanh(x * FAST_C * (ONE + KAPPA * x * x)))


@inline
def quick_gelu(x):
    """QuickGELUActivation in float32 (torch.sigmoid = 1/(1 + SLEEF exp(-x)))."""
    return x * _sigmoid(QUICK * x)


def _ops(fmt):
    r = (lambda a: to_format(a, fmt))
    return r


def gelu_new_half(x, fmt):
    """NewGELUActivation on a ``fmt`` tensor: every op rounded to ``fmt``."""
    r = _ops(fmt)
    with np.errstate(all="ignore"):
        cube = r(r(x * x) * x)
        inner = r(SQRT_2_OVER_PI * r(x + r(KAPPA * cube)))
        t = r(np.tanh(inner.astype(np.float64)).astype(np.float32))
        return r(r(HALF * x) * r(ONE + t))


def gelu_fast_half(x, fmt):
    """FastGELUActivation on a ``fmt`` tensor: every op rounded to ``fmt``."""
    r = _ops(fmt)
    with np.errstate(all="ignore"):
        a = r(r(x * FAST_C) * r(ONE + r(r(KAPPA * x) * x)))
        t = r(np.tanh(a.astype(np.float64)).astype(np.float32))
        return r(r(HALF * x) * r(ONE + t))


@inline
def _sigmoid(v):
    return ONE / (ONE + sleef_expf_u10(-v))


_SIGMOID = None


def quick_gelu_half(x, fmt):
    """QuickGELUActivation on a ``fmt`` tensor: every op rounded to ``fmt``."""
    global _SIGMOID
    if _SIGMOID is None:
        _SIGMOID = vectorize(["float32(float32)"])(lambda v: _sigmoid(v))
    r = _ops(fmt)
    with np.errstate(all="ignore"):
        return r(x * r(_SIGMOID(r(QUICK * x))))


_SRC = ("huggingface/transformers v4.57: src/transformers/activations.py "
        "(NewGELUActivation, FastGELUActivation, QuickGELUActivation, AccurateGELUActivation)")

ENTRIES = (
    dict(name="huggingface_gelu_new", library="Hugging Face transformers",
         runs="hidden_act='gelu_new' (GPT-2, GPT-J, CodeGen, ...) and 'gelu_accurate' "
              "in eager PyTorch",
         formula="0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3))), op by op in the dtype",
         source=_SRC, forward=gelu_new, grad=None, half=gelu_new_half,
         checked="torch 2.13.0 evaluating the same expression on 400,000 inputs on [-12, 12]: "
                 "float32 99.84 % bit-identical, max |difference| 4.8e-7 (tanh stand-in); "
                 "bfloat16 100 %, float16 99.94 % identical"),
    dict(name="huggingface_gelu_fast", library="Hugging Face transformers",
         runs="hidden_act='gelu_fast' in eager PyTorch",
         formula="0.5*x*(1 + tanh(x*0.7978845608*(1 + 0.044715*x*x))), op by op",
         source=_SRC, forward=gelu_fast, grad=None, half=gelu_fast_half,
         checked="torch 2.13.0 evaluating the same expression on 400,000 inputs on [-12, 12]: "
                 "float32 99.84 % bit-identical, max |difference| 4.8e-7 (tanh stand-in); "
                 "bfloat16 and float16 100 % identical"),
    dict(name="huggingface_quick_gelu", library="Hugging Face transformers",
         runs="hidden_act='quick_gelu' (CLIP, OpenCLIP) in eager PyTorch",
         formula="x*sigmoid(1.702*x)",
         source=_SRC, forward=quick_gelu, grad=None, half=quick_gelu_half,
         checked="torch 2.13.0 evaluating the same expression: bit-identical in float32, "
                 "bfloat16 and float16 (400,000 inputs on [-12, 12])"),
)
