"""MLX's GELUs (``mlx.nn.gelu``, ``gelu_approx``, ``gelu_fast_approx``),
emulated in float32 and, op by op, in float16/bfloat16.

Source: ml-explore/mlx @ 846d176227a0 (python/mlx/nn/layers/activations.py,
mlx/backend/cpu/simd/{math.h,base_simd.h}, mlx/backend/cpu/unary_ops.h,
mlx/backend/metal/kernels/{erf.h,expm1f.h}).  MLX does not run here (no
Apple silicon, no Linux wheel in the registry we can reach): every entry is
checked against its source only.

The three functions are Python expressions (``mx.compile``-d, shapeless):

* ``gelu``: ``x * (1 + erf(x / sqrt(2))) / 2``;
* ``gelu_approx``: ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))``;
* ``gelu_fast_approx``: ``x * sigmoid(1.702 * x)``.

Python floats are weakly typed, so every constant and every intermediate
has the input's dtype: a float16 or bfloat16 model rounds after each
operation (:func:`_half`), as Hugging Face's eager PyTorch forms do.

CPU (the Linux build and ``mx.cpu`` on a Mac; scalar ``Simd<T, 1>`` ops):

* ``erf`` is PyTorch's at::vec A&S 7.1.26 port: ``t = 1/fma(0.3275911, |v|, 1)``,
  an FMA Horner chain, ``fma(-exp(-v*v) * t, r, 1)``, sign by a select on
  ``v > 0`` (so ``1 + erf`` cancels, as in PyTorch), with MLX's own ``exp``:
  ``2**floor(x log2 e + 0.5)`` by bits times a degree-6 Cephes polynomial in
  the remainder, 0 below -88 (and for the exponent -127, whose bits are 0);
* ``tanh`` and ``x**3`` are ``std::tanh``/``std::pow``: glibc's tanhf and powf
  on Linux, which Numba's math.tanh/math.pow on float32 call;
* ``sigmoid(v) = y if v < 0 else 1 - y`` with ``y = 1/(1 + exp(|v|))``,
  MLX's exp.

Metal (``mlx_gelu_metal``; the default device on Apple silicon): ``erf`` is
Norbert Juffa's faithfully rounded erff (two FMA polynomials split at
0.927734375, the large branch through his expm1f), both copied from MLX's
kernels.  MLX's copy of expm1f reduces the argument with the high part of
ln 2 only (``f = fma(j, -6.93145752e-1f, a)``; Juffa's original follows it
with ``fma(j, -1.42860677e-6f, f)``), so for ``j != 0`` expm1f is off by
``|j| * 1.4e-6`` absolute (34 ulps near a = -0.35) and erf by up to 13 ulps
near |v| = 0.95 instead of the bound its comment states, 0.995 ulp (found here;
tested in the gelu-numba repository's tests/test_production.py).  The
division by sqrt(2) and by 2 are taken as correctly rounded (Metal's safe
math mode).  ``gelu_approx``/``gelu_fast_approx`` on Metal call Apple's
closed ``metal::precise::tanh``/``metal::exp`` and are not separate
entries.
"""

import math

import numpy as np
from numba import vectorize

from gelu_numba.kernels.emulated.formats import to_format
from gelu_numba.kernels.primitives import inline, fma32, float32_bits, float32_from_bits, horner32

_f = np.float32
HALF = _f(0.5)
ONE = _f(1.0)
TWO = _f(2.0)
THREE = _f(3.0)
#: math.sqrt(2), math.sqrt(2/pi), 0.044715, 1.702 as float32 (weak Python scalars)
SQRT2 = _f(math.sqrt(2.0))
SQRT_2_OVER_PI = _f(math.sqrt(2.0 / math.pi))
KAPPA = _f(0.044715)
QUICK = _f(1.702)

# mlx/backend/cpu/simd/math.h: exp (Cephes via fastermath) and erf (A&S 7.1.26)
EXP_LOG2E = _f(1.442695)
EXP_POLY = (_f(1.535336188319500e-4), _f(1.339887440266574e-3), _f(9.618437357674640e-3),
            _f(5.550332471162809e-2), _f(2.402264791363012e-1), _f(6.931472028550421e-1),
            _f(1.0))
EXP_LIMIT = _f(88.0)
AS_P = _f(0.3275911)
AS_A = (_f(1.061405429), _f(-1.453152027), _f(1.421413741), _f(-0.284496736), _f(0.254829592))

# mlx/backend/metal/kernels/erf.h (njuffa erff) and expm1f.h (njuffa expm1f)
ERF_SPLIT = _f(0.927734375)
ERF_SMALL = (_f(-5.96761703e-4), _f(4.99119423e-3), _f(-2.67681349e-2), _f(1.12819925e-1),
             _f(-3.76125336e-1), _f(1.28379166e-1))
EXPM1_POLY = (_f(1.97350979e-4), _f(1.39309070e-3), _f(8.33343994e-3), _f(4.16668020e-2),
              _f(1.66666716e-1), _f(4.99999970e-1))
MAGIC = _f(12582912.0)          # 1.5 * 2^23: adding and subtracting it rounds to an integer
LN2_HI = _f(-6.93145752e-1)


@inline
def mlx_exp(x):
    """MLX's CPU exp (simd::exp)."""
    if x != x:
        return x
    if x > EXP_LIMIT:
        return _f(np.inf)
    if x < -EXP_LIMIT:
        return _f(0.0)
    y = x * EXP_LOG2E
    ipart = _f(math.floor(y + HALF))
    fpart = y - ipart
    # (int(ipart) + 127) << 23 read as a float: 0.0 for ipart = -127
    scale = float32_from_bits(np.uint32((np.int32(ipart) + np.int32(127)) << np.int32(23)))
    return scale * horner32(EXP_POLY, fpart)


@inline
def mlx_erf_cpu(v):
    """MLX's CPU erf (simd::erf, the at::vec A&S port with MLX's exp)."""
    t = ONE / fma32(AS_P, abs(v), ONE)
    r = horner32(AS_A, t)
    e = -mlx_exp((-v) * v)
    res = fma32(e * t, r, ONE)
    return res if v > 0 else -res


@inline
def mlx_sigmoid_cpu(v):
    y = ONE / (ONE + mlx_exp(abs(v)))
    return y if v < 0 else ONE - y


@inline
def _expm1f(a):
    # expm1f_scaled_unchecked(a, 1) and expm1f (Metal kernels, njuffa)
    j = fma32(_f(1.442695), a, MAGIC) - MAGIC
    i = np.int32(j)
    f = fma32(j, LN2_HI, a)
    s = f * f
    if a == 0:
        s = a
    r = horner32(EXPM1_POLY, f)
    u = f + HALF if j == ONE else f
    v = fma32(r, s, u)
    s = HALF
    t = _f(math.ldexp(s, i))
    y = t - s
    x = (t - y) - s
    r = fma32(v, t, x) + y
    r = r + r
    if j == 0:
        r = v
    if j == ONE:
        r = v + v
    if abs(a - ONE) > _f(88.0):
        # pow(2, a) (sic: 2**a, not e**a) then 2**a * 2**a - 1; for the
        # arguments erf passes (a < -87) both round to -1
        p = _f(2.0 ** np.float64(a))
        r = fma32(p, p, -ONE)
    return r


@inline
def mlx_erf_metal(a):
    """MLX's Metal erf (njuffa's faithfully rounded erff)."""
    t = abs(a)
    s = a * a
    if t > ERF_SPLIT:
        r = fma32(_f(-1.72853470e-5), t, _f(3.83197126e-4))
        u = fma32(_f(-3.88396438e-3), t, _f(2.42546219e-2))
        r = fma32(r, s, u)
        r = fma32(r, t, _f(-1.06777877e-1))
        r = fma32(r, t, _f(-6.34846687e-1))
        r = fma32(r, t, _f(-1.28717512e-1))
        r = fma32(r, t, -t)
        r = -_expm1f(r)
        return float32_from_bits((float32_bits(r) & np.uint32(0x7FFFFFFF))
                                 | (float32_bits(a) & np.uint32(0x80000000)))
    return fma32(horner32(ERF_SMALL, s), a, a)


@inline
def gelu_cpu(x):
    """mlx.nn.gelu on the CPU: x * (1 + erf(x / sqrt2)) / 2."""
    return (x * (ONE + mlx_erf_cpu(x / SQRT2))) / TWO


@inline
def gelu_metal(x):
    """mlx.nn.gelu on Metal (njuffa erf)."""
    return (x * (ONE + mlx_erf_metal(x / SQRT2))) / TWO


@inline
def gelu_approx_cpu(x):
    """mlx.nn.gelu_approx on the CPU (glibc tanhf and powf)."""
    inner = SQRT_2_OVER_PI * (x + KAPPA * math.pow(x, THREE))
    return (HALF * x) * (ONE + math.tanh(inner))


@inline
def gelu_fast_approx_cpu(x):
    """mlx.nn.gelu_fast_approx on the CPU: x * sigmoid(1.702 x)."""
    return x * mlx_sigmoid_cpu(QUICK * x)


# ------------------------------------------------ half precision, op by op

_UNARY = {}


def _op(kernel):
    """A float32 ufunc of one of this module's scalar kernels (cached)."""
    u = _UNARY.get(kernel)
    if u is None:
        u = _UNARY[kernel] = vectorize(["float32(float32)"])(kernel.py_func)
    return u


@inline
def _pow3(x):
    return math.pow(x, THREE)


@inline
def _tanh(x):
    return math.tanh(x)


def _rounder(fmt):
    return lambda a: to_format(np.asarray(a, dtype=np.float32), fmt)


def gelu_half(x, fmt, erf):
    r = _rounder(fmt)
    with np.errstate(all="ignore"):
        e = r(_op(erf)(r(x / r(SQRT2))))
        return r(r(x * r(ONE + e)) / TWO)


def gelu_cpu_half(x, fmt):
    """mlx.nn.gelu on a ``fmt`` array (CPU): each op rounded to ``fmt``."""
    return gelu_half(x, fmt, mlx_erf_cpu)


def gelu_metal_half(x, fmt):
    """mlx.nn.gelu on a ``fmt`` array (Metal): each op rounded to ``fmt``."""
    return gelu_half(x, fmt, mlx_erf_metal)


def gelu_approx_cpu_half(x, fmt):
    r = _rounder(fmt)
    with np.errstate(all="ignore"):
        cube = r(_op(_pow3)(x))
        inner = r(r(SQRT_2_OVER_PI) * r(x + r(r(KAPPA) * cube)))
        return r(r(HALF * x) * r(ONE + r(_op(_tanh)(inner))))


def gelu_fast_approx_cpu_half(x, fmt):
    r = _rounder(fmt)
    with np.errstate(all="ignore"):
        return r(x * r(_op(mlx_sigmoid_cpu)(r(r(QUICK) * x))))


_SRC = "ml-explore/mlx @ 846d176227a0ac13d2667e58d2bb68b322109ab0: python/mlx/nn/layers/activations.py, "
_CHECKED = ("source only (MLX does not run here); tests check its erf/exp/sigmoid against "
            "their documented bounds and the half paths against numpy's float16 arithmetic")

ENTRIES = (
    dict(name="mlx_gelu_cpu", library="MLX",
         runs="mlx.nn.gelu / nn.GELU() on the CPU (Linux builds, mx.cpu on a Mac), in the "
              "array's dtype",
         formula="x*(1 + erf(x/sqrt2))/2, erf = A&S 7.1.26 with MLX's Cephes exp",
         source=_SRC + "mlx/backend/cpu/simd/math.h (exp, erf)",
         forward=gelu_cpu, grad=None, half=gelu_cpu_half, checked=_CHECKED),
    dict(name="mlx_gelu_metal", library="MLX",
         runs="mlx.nn.gelu / nn.GELU() on Apple-silicon GPUs (MLX's default device), in the "
              "array's dtype",
         formula="x*(1 + erf(x/sqrt2))/2, erf = njuffa's faithfully rounded erff",
         source=_SRC + "mlx/backend/metal/kernels/erf.h, expm1f.h",
         forward=gelu_metal, grad=None, half=gelu_metal_half,
         checked=_CHECKED + "; the divisions taken as correctly rounded"),
    dict(name="mlx_gelu_approx_cpu", library="MLX",
         runs="mlx.nn.gelu_approx / nn.GELU(approx='precise' or 'tanh') on the CPU",
         formula="0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3))), std::tanh and std::pow",
         source=_SRC + "mlx/backend/cpu/simd/base_simd.h (tanh, pow)",
         forward=gelu_approx_cpu, grad=None, half=gelu_approx_cpu_half, checked=_CHECKED),
    dict(name="mlx_gelu_fast_approx_cpu", library="MLX",
         runs="mlx.nn.gelu_fast_approx / nn.GELU(approx='fast') on the CPU",
         formula="x*sigmoid(1.702*x), sigmoid = 1/(1 + exp(|v|)) or 1 minus it, MLX's exp",
         source=_SRC + "mlx/backend/cpu/unary_ops.h (Sigmoid), simd/math.h (exp)",
         forward=gelu_fast_approx_cpu, grad=None, half=gelu_fast_approx_cpu_half,
         checked=_CHECKED),
)
