"""JAX's GELU on the CPU (XLA), emulated in float32.

Code paths (JAX 0.10.2, jaxlib's XLA CPU backend; ``jax.nn.gelu``)
------------------------------------------------------------------
* ``jax.nn.gelu(x)`` (the default, ``approximate=True``) under ``jax.jit``:
  ``x * (0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))))``
  (jax/_src/nn/functions.py), ``x**3`` as ``x*x*x``, fused by XLA into one
  loop whose ``x + 0.044715 * x**3`` LLVM contracts into an FMA, with
  XLA's tanh intrinsic (xla/codegen/intrinsic/tanh.cc: Eigen's rational
  13/6 in FMAs, clamp at +-7.99881172180175781 for FMA targets, ``x``
  itself below 0.0004): :func:`jax_tanh`.
* ``jax.nn.gelu(x, approximate=False)`` under ``jax.jit``:
  ``0.5 * x * erfc(-x * sqrt(0.5))`` with ``erfc`` from StableHLO's
  ``chlo.erfc`` decomposition (stablehlo/transforms/ChloLegalizeToStablehlo.cpp,
  Cephes-based: ``1 - x T(x**2)`` below 1, ``exp(-x**2) / |x| P(1/x**2)``
  (``R`` from 2 on) above, ``2 - erfc(|x|)`` for x < 0, 0 below
  ``-x**2 = -88.72``), its ``exp`` XLA's own float32 polynomial
  (:func:`xla_exp`): :func:`jax_exact`.  The only production exact GELU
  here that keeps its negative tail.
* XLA's CPU code runs with denormals flushed to zero (inputs and results):
  so do both emulations, which is why JAX's GELU is 0 below x = -13.1
  where float32 could still represent it.

Sources read: jax-ml/jax @ 01c36571d74f jax/_src/nn/functions.py;
openxla/xla xla/codegen/intrinsic/tanh.cc; openxla/stablehlo @ 3c9301c116f9
stablehlo/transforms/ChloLegalizeToStablehlo.cpp (erfc f32).

XLA's float32 ``exp`` was read from the optimised LLVM IR that jax 0.10.2
compiles for ``jax.jit(jnp.exp)`` on the CPU (``XLA_FLAGS=--xla_dump_to``,
the ``ir-with-opt.ll`` file): Cephes' ``expf`` (clamp to [-87.8, 88.8],
n = floor(x log2 e + 1/2) clamped to [-127, 127], x - n ln 2 in two parts,
a degree-5 polynomial, times 2**n), each multiply-add pair contracted into
an FMA by LLVM's backend (XLA allows FP contraction).  Neither emulation
has a stand-in: both are bit-identical to jax 0.10.2.  The backward is
JAX's autodiff of these expressions, not a formula of JAX's own, so no
backward is emulated.
"""

import math

import numpy as np

from gelu_numba.kernels.primitives import inline, fma32, horner32

_f = np.float32
ONE = _f(1.0)
TWO = _f(2.0)
HALF = _f(0.5)
ZERO = _f(0.0)
#: the smallest normal float32: XLA CPU flushes what is below to zero
TINY_NORMAL = _f(1.1754943508222875e-38)

#: np.sqrt(2/np.pi).astype(float32) and 0.044715 (jax/_src/nn/functions.py)
SQRT_2_OVER_PI = _f(0.7978845608028654)
KAPPA = _f(0.044715)
#: np.sqrt(0.5).astype(float32)
SQRT_HALF = _f(0.7071067811865476)

# XLA tanh intrinsic (Eigen's generic_fast_tanh_float): odd numerator
# alpha_1..alpha_13 and even denominator beta_0..beta_6
TANH_A1 = _f(4.89352455891786e-03)
TANH_A3 = _f(6.37261928875436e-04)
TANH_A5 = _f(1.48572235717979e-05)
TANH_A7 = _f(5.12229709037114e-08)
TANH_A9 = _f(-8.60467152213735e-11)
TANH_A11 = _f(2.00018790482477e-13)
TANH_A13 = _f(-2.76076847742355e-16)
TANH_B0 = _f(4.89352518554385e-03)
TANH_B2 = _f(2.26843463243900e-03)
TANH_B4 = _f(1.18534705686654e-04)
TANH_B6 = _f(1.19825839466702e-06)
#: tanh of |x| beyond this rounds to 1 in the rational (the FMA variant's clamp)
TANH_CLAMP = _f(7.99881172180175781)
#: below this |x|, tanh(x) = x to float32 precision
TANH_SMALL = _f(0.0004)

# chlo.erfc, float32 (Cephes erfcf): T for |x| < 1 (1 - x T(x**2)),
# P for 1 <= |x| < 2 and R from 2 on (exp(-x**2)/|x| P(1/x**2)), highest first
ERFC_T = (7.853861353153693E-5, -8.010193625184903E-4, 5.188327685732524E-3,
          -2.685381193529856E-2, 1.128358514861418E-1, -3.761262582423300E-1,
          1.128379165726710E+0)
ERFC_P = (2.326819970068386E-2, -1.387039388740657E-1, 3.687424674597105E-1,
          -5.824733027278666E-1, 6.210004621745983E-1, -4.944515323274145E-1,
          3.404879937665872E-1, -2.741127028184656E-1, 5.638259427386472E-1)
ERFC_R = (-1.047766399936249E+1, 1.297719955372516E+1, -7.495518717768503E+0,
          2.921019019210786E+0, -1.015265279202700E+0, 4.218463358204948E-1,
          -2.820767439740514E-1, 5.641895067754075E-1)
T32 = tuple(_f(c) for c in ERFC_T)
P32 = tuple(_f(c) for c in ERFC_P)
R32 = tuple(_f(c) for c in ERFC_R)
#: below this -x**2 the exponential underflows: erfc = 0
ERFC_ZMIN = _f(-88.72283905206835)

# XLA's float32 exp (Cephes expf), the constants as XLA's IR writes them
# (hex float32 bits): log2(e); ln 2 = EXP_C1 - EXP_C2 in two parts, EXP_C1
# with 9 significant bits so that n EXP_C1 is exact; the polynomial of
# exp(r) - 1 - r = r**2 (1/2 + r P(r)), highest degree first
EXP_LOG2E = np.uint32(0x3FB8AA3B).view(np.float32)
EXP_C1 = np.uint32(0x3F318000).view(np.float32)     # 0.693359375
EXP_C2 = np.uint32(0xB95E8083).view(np.float32)     # -2.12194440e-4
EXP_P = tuple(np.uint32(b).view(np.float32)
              for b in (0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1, 0x3E2AAAAA))
EXP_LO, EXP_HI = _f(-87.8), _f(88.8)
EXP_N_MAX = _f(127.0)


@inline
def _ftz(v):
    # flush a subnormal to a zero of its sign (XLA CPU's FTZ/DAZ mode)
    return math.copysign(ZERO, v) if abs(v) < TINY_NORMAL else v


@inline
def xla_tanh(a):
    """XLA's float32 tanh intrinsic (FMA build)."""
    x = min(max(a, -TANH_CLAMP), TANH_CLAMP)
    x2 = x * x
    p = fma32(x2, TANH_A13, TANH_A11)
    p = fma32(x2, p, TANH_A9)
    p = fma32(x2, p, TANH_A7)
    p = fma32(x2, p, TANH_A5)
    p = fma32(x2, p, TANH_A3)
    p = fma32(x2, p, TANH_A1)
    p = x * p
    q = fma32(x2, TANH_B6, TANH_B4)
    q = fma32(x2, q, TANH_B2)
    q = fma32(x2, q, TANH_B0)
    return a if abs(a) < TANH_SMALL else p / q


@inline
def jax_tanh(x):
    """``jax.nn.gelu(x)`` under jit on the CPU."""
    x = _ftz(x)
    x3 = x * x * x
    inner = SQRT_2_OVER_PI * fma32(KAPPA, x3, x)
    return _ftz(x * (HALF * (ONE + xla_tanh(inner))))


@inline
def xla_exp(x):
    """XLA's float32 exp on the CPU (FMA build), before XLA's flush of a
    subnormal result (the caller flushes)."""
    x = min(max(x, EXP_LO), EXP_HI)
    n = math.floor(fma32(x, EXP_LOG2E, HALF))
    n = min(max(n, -EXP_N_MAX), EXP_N_MAX)
    r = fma32(-EXP_C2, n, fma32(-EXP_C1, n, x))
    p = horner32((*EXP_P, HALF), r)
    y = fma32(p, r * r, r) + ONE
    return y * _f(math.ldexp(1.0, int(n)))


@inline
def chlo_erfc(x):
    """StableHLO's float32 erfc decomposition, flushed as XLA CPU runs it."""
    a = abs(x)
    if a < ONE:
        # chlo writes mul + add; XLA contracts each pair into an FMA
        return fma32(-x, horner32(T32, x * x), ONE)
    z = -x * x
    q = ONE / a
    y = ONE / (x * x)      # (as XLA's IR has it: not q * q)
    p = horner32(P32, y) if a < TWO else horner32(R32, y)
    e = _ftz(xla_exp(z))
    r = _ftz(e * q * p)
    if z < ERFC_ZMIN:
        r = ZERO
    return TWO - r if x < ZERO else r


@inline
def jax_exact(x):
    """``jax.nn.gelu(x, approximate=False)`` under jit on the CPU."""
    x = _ftz(x)
    return _ftz(HALF * x * chlo_erfc(-x * SQRT_HALF))


_SRC = ("jax-ml/jax @ 01c36571d74f: jax/_src/nn/functions.py; openxla/xla: "
        "xla/codegen/intrinsic/tanh.cc; openxla/stablehlo @ 3c9301c116f9: "
        "stablehlo/transforms/ChloLegalizeToStablehlo.cpp; XLA's float32 exp: the "
        "optimised LLVM IR of jax.jit(jnp.exp), jax 0.10.2")

ENTRIES = (
    dict(name="jax_tanh", library="JAX/XLA",
         runs="jax.nn.gelu(x) (approximate=True is JAX's default) under jax.jit on CPU, "
              "float32; Flax's nn.gelu; bfloat16/float16 are computed in float32 by XLA",
         formula="x*(0.5*(1 + tanh(sqrt(2/pi)*fma(0.044715, x*x*x, x)))), XLA's rational tanh",
         source=_SRC, forward=jax_tanh, grad=None, half=None,
         checked="jax 0.10.2 (CPU, jit): bit-identical on 1,000,000 inputs on [-10, 10] and "
                 "200,000 random bit patterns (denormals flushed as XLA does); the same "
                 "expression eagerly (no jit, no fusion, no FMA) differs on 2 %"),
    dict(name="jax_exact", library="JAX/XLA",
         runs="jax.nn.gelu(x, approximate=False) under jax.jit on CPU, float32",
         formula="0.5*x*erfc(-x*sqrt(0.5)), erfc = StableHLO's Cephes decomposition",
         source=_SRC, forward=jax_exact, grad=None, half=None,
         checked="jax 0.10.2 (CPU, jit): bit-identical on 1,000,000 inputs on [-14, 10] and "
                 "200,000 random bit patterns (denormals flushed as XLA does)"),
)
