"""gelu_half32: a GELU in float32 arithmetic for float16 and bfloat16 outputs.

What it is for.  Frameworks compute half-precision GELU in float32 and
round once.  That has a floor: even the correctly rounded float32 GELU,
rounded to the format, misses <<half_floor>> of the finite float16 and
bfloat16 inputs (a double rounding on a tie, see
``analysis/results/exhaustive/half.md`` in the gelu-numba repository).  This
kernel is the cheapest we found that stays at or next to that floor:
measured over every finite input (the repository's ``python -m
analysis.exhaustive``), its float32 result rounded once misses
<<half32_float16>> float16 inputs and <<half32_bfloat16>> bfloat16 inputs.
In float32 it is not a correctly rounded GELU: over all 2^32 inputs, max
<<half32_max_ulp>> ulp (x = <<half32_worst_x>>), <<half32_max_rel>> relative on the
normal range, <<half32_correctly_rounded>> correctly rounded, no inf/NaN where GELU
is finite, and relatively right (1e-6) down to x = <<half32_rel_1e6_below>>,
where results turn subnormal (the repository's
``analysis/results/exhaustive/float32.md``; figures from
:mod:`gelu_numba.figures`).

Method (float32 throughout, FMA), for ``a = |x| < A = 16``:

* ``Phi(-a) = exp(-a^2/2) t P(t)``, ``t = 1/(1 + p a)``: Hastings's form
  (Abramowitz & Stegun 7.1.26), refitted in relative error over the whole
  tail (``gelu_numba/tables/half_fit.py``, the repository's ``python -m
  fitting.make_half``: degree 8, certified 6.5e-8 with the float32
  coefficients);
* ``a^2 = h + l`` exactly (``l = fma(a, a, -h)``): ``exp(-a^2/2) = exp(-h/2)
  (1 - l/2)``, because ``h``'s rounding alone would cost ``a^2 2^-25``
  relative (5e-6 at a = 13);
* ``exp(w)``, ``w = -h/2 >= -104``: ``k = round(w/ln 2)``, ``r = w - k ln 2``
  (Cody-Waite, two FMAs, ``|r| <= 0.347``), Taylor polynomial of degree 7
  (truncation below 6e-9 relative), times ``2^k`` in two exact halves so
  that only the last product rounds when the result is subnormal;
* ``m = x Phi(-a)`` formed as ``(((x t P(t)) (1 - l/2)) e^r 2^k1) 2^k2``;
  GELU = ``m`` for ``x < 0`` and ``x - m`` for ``x >= 0`` (``Phi(-a) <= 1/2``:
  no cancellation);
* ``|x| >= 16``: ``x`` (x > 0) or ``-0`` (every float32 GELU has underflowed);
  NaN propagates; GELU(-0) = -0.

No table lookup and no libm call: the loop vectorises.
"""

from gelu_numba.figures import fill as _fill

__doc__ = _fill(__doc__)


import numpy as np

from gelu_numba.kernels.primitives import inline, float32_bits, float32_from_bits, fma32, horner32
from gelu_numba.tables import half_fit

_f = np.float32
ONE = _f(1.0)
HALF = _f(0.5)
P = _f(half_fit.P)
A = _f(half_fit.A)
A_BITS = np.float32(A).view(np.uint32)
#: P(t), highest power first (Horner)
COEFFS = tuple(_f(c) for c in reversed(half_fit.COEFFS))
#: 1/ln 2, and ln 2 split so that k * LN2_HI is exact for |k| < 2^8
#: (LN2_HI = 0x3f317200: 16 significant bits; LN2_LO = ln 2 - LN2_HI)
INV_LN2 = _f(1.44269504)
LN2_HI = _f(0.693145752)
LN2_LO = _f(1.42860677e-6)
#: 1/7!, ..., 1/2!, 1, 1 (Taylor coefficients of exp, highest first)
EXP_TAYLOR = (_f(1 / 5040), _f(1 / 720), _f(1 / 120), _f(1 / 24), _f(1 / 6), HALF, ONE, ONE)
#: exp's argument floor: 2^-150 and below round to 0 anyway
W_MIN = _f(-104.0)


@inline
def _pow2(k):
    return float32_from_bits(np.uint32((k + np.int32(127)) << np.int32(23)))


@inline
def gelu_half32(x):
    """GELU(x) in float32 arithmetic, for rounding to float16/bfloat16."""
    # the vectorised loop evaluates both sides of every branch, and NumPy
    # turns FP flags into warnings: |x| is clamped to A on the bits (an
    # integer min: NaN and inf become A, and no float compare sees a NaN, on
    # which MINPS/MAXPS and ordered compares raise invalid), the sign is
    # put back by bits, and the branches test bits
    bits = float32_bits(x)
    b = bits & np.uint32(0x7FFFFFFF)
    sign = bits & np.uint32(0x80000000)
    a = float32_from_bits(min(b, A_BITS))
    xc = float32_from_bits(min(b, A_BITS) | sign)
    t = ONE / fma32(P, a, ONE)
    h = a * a
    l = fma32(a, a, -h)
    w = max(-HALF * h, W_MIN)
    kf = _f(np.floor(fma32(w, INV_LN2, HALF)))
    r = fma32(kf, -LN2_HI, w)
    r = fma32(kf, -LN2_LO, r)
    k = np.int32(kf)
    k1 = k >> np.int32(1)
    m = (xc * (t * horner32(COEFFS, t))) * fma32(-HALF, l, ONE)
    m = ((m * horner32(EXP_TAYLOR, r)) * _pow2(k1)) * _pow2(k - k1)
    if b > np.uint32(0x7F800000):          # NaN
        return x
    if b >= A_BITS:
        return x if sign == 0 else _f(-0.0)
    # x <= 0: m keeps the sign of zero, GELU(-0) = -0
    return m if (sign != 0 or b == 0) else x - m
