"""Correctly rounded float32 kernels: GELU, GELU', GELU'', Phi and phi,
and the fused backward ``dy * GELU'(x)``.

Method (Ziv's, as CORE-MATH's float32 functions)
------------------------------------------------
For a float32 input ``x`` and the exact value ``f(x)``:

1. **Fast path.**  The float32 kernels of
   :mod:`gelu_numba.kernels.normal32_cpu_f64`, the same operations, read
   tables two degrees higher (:data:`TABLES`,
   ``gelu_numba/tables/normal_cdf32_rounded.py``, the repository's ``python
   -m fitting.make_tables32_cpu_f64 --rounded``): a float64 ``y = f(x) (1 +
   d)`` with ``|d| < E`` (:data:`E`, the bound below).  GELU's leaves out
   the plain kernel's step at ``|x| < 2**-125`` (there ``x/2`` can be a
   float32 midpoint, which step 2 finds unsure).
2. **Rounding test** (:func:`bracket`, :func:`unsure`).  ``f(x)`` lies
   between ``lo`` and ``hi``, the products ``y (1 - E)`` and ``y (1 + E)``
   rounded to float64 (``E`` exceeds the bound below by more than their
   rounding), and rounding to nearest is monotonic: where ``lo`` and ``hi``
   round to the same float32, so do ``f(x)`` and ``y``, and that float32 is
   the result.  Float32 subnormals and overflow need no case of their own
   (the float64 products are normal, the conversion rounds on float32's own
   grid), except in the fused backward, whose result can be an exact
   subnormal (``dy`` times a GELU' of 1 or 1/2) that the bracket's
   conversions would flag as underflowing: there nonzero ``y`` below
   ``2**-126`` go on (:func:`bracket_exact`).  NaN is sure.  Two products,
   two conversions and a comparison; the loop stores the conversion of
   ``lo``.  About one input in ``2**17`` goes on.
3. **Accurate path.**  The float64 kernel of :mod:`gelu_numba.kernels.normal`
   on the same input, whose proven bound (0.5 + 2**-4 ulp of float64, the
   catalog's ``EXACT_BOUND``) puts ``y64`` within 0.5625 float64 ulp of
   ``f(x)``.  A float32 midpoint ``m`` between ``f(x)`` and ``y64`` would
   be a float64 number within 0.5625 ulp of ``y64``, hence ``y64`` itself:
   rounding ``y64`` to float32 is correct unless ``y64`` is a midpoint
   (:func:`is_midpoint32`).
4. **Midpoints.**  Where ``y64`` is a float32 midpoint, the exact value is
   on one side of it (``f(x)`` is transcendental for ``x != 0``, never a
   midpoint): the inputs where it lies below are listed
   (``gelu_numba/tables/rounding32.py``, the repository's ``python -m
   fitting.make_rounding32``, which runs the float64 kernel on all 2**32
   inputs and decides each midpoint with mpmath, or, for GELU at ``|x| <
   2**-125``, by its series ``x/2 + phi0 x**2 (1 + O(x**2))``), and every
   other one lies above: ``y64`` moves one float64 ulp towards the exact
   value (:func:`settled`).

Every return is a float64 whose rounding to float32 (the loop's store) is
the correctly rounded ``f(x)``.

Error bound of the fast path
----------------------------
Relative errors (the tables' header gives the first three, certified as
stored by the generator):

* ``R`` (degrees 7, 8) 2**-44.5, ``H`` (7, 8) 2**-46.0, ``exp(r)``
  (degree 9, ``|r| <= 0.347``) 2**-45.6;
* ``ln 2`` as one double: ``|k| 2**-55.4 <= 2**-47.2`` (``|k| <= 289`` for
  ``a <= 20``);
* the float64 evaluation: the rationals' coefficients make no cancellation
  for ``a >= 0`` (Horner's rounding errors below 2**-50 each for P and Q,
  2**-53 for the quotient), ``exp``'s Horner rule below 2**-51, then at
  most four products and one complement ``1 - q`` with ``q <= 1/2``
  (2**-53 each, and the complement at most doubles ``q``'s error).

Their sum is below ``D`` = 2**-43.3; :data:`E` = 2**-42 leaves a factor
2.5.  The fused backward adds the product by ``dy`` (2**-53).

The bracket holds: for ``y > 0``, ``f(x) = y/(1 + d) <= y (1 + D + 2
D**2)``, below ``y (1 + E) (1 - 2**-53)``, which the float64 product ``hi``
is not below (its rounding error is at most ``2**-53`` of it, the product
being a normal float64: every nonzero ``y`` is at least 2**-440 in
magnitude, ``dy = 2**-149`` times GELU' at ``-A32`` the least); and ``lo <=
f(x)`` alike.  For ``y < 0`` the two swap; ``y = 0`` and infinite ``y`` are
exact.

Proven, and how it is checked
-----------------------------
For ``gelu``, ``gelu_grad``, ``gelu_grad2``, ``ndtr`` and ``norm_pdf``
every one of the 2**32 inputs is correctly rounded: steps 2 and 3 by the
bounds above, step 4 by exhaustion.  The proof tier's
``tests/test_rounded32.py`` checks the assembled ufuncs on all 2**32 inputs
against the float64 kernel rounded to float32, deciding each of its
midpoints independently (mpmath, the series).

``gelu_backward(dy, x)`` has 2**64 input pairs, too many to list.  Its
float32 result is correctly rounded wherever the float64 kernel's value is
not a float32 midpoint (steps 1 to 3), and at the midpoints of two kinds:
``dy/2`` (``GELU'(x)`` rounds to 1/2 in float64 next to ``x = 0``, and the
exact value lies on the side of ``dy x``: ``GELU'(x) - 1/2`` has the sign of
``x``; at ``x = 0`` it is ``dy/2`` itself, rounded to even), and any
midpoint where ``dy`` is a power of two with a normal result (``dy`` times
the correctly rounded GELU', exactly: every ``x`` with ``dy = 1``
included).  At any other midpoint (about one pair in 2**29 at random) it is
that midpoint rounded to even, possibly one float32 ulp off: an error
below 0.5 + 2**-29 ulp.  The proof tier checks every ``x`` with ``dy = 1``,
and 2**32 random pairs, counting the midpoints met and deciding each with
mpmath.
"""

import numpy as np
from numba import njit

from gelu_numba.kernels import normal, normal32_cpu_f64 as plain
from gelu_numba.kernels.normal32_cpu_f64 import LN2
from gelu_numba.kernels.primitives import inline, step_bits
from gelu_numba.kernels.primitives.intrinsics import out_of_line
from gelu_numba.kernels.primitives.bits32 import float32_bits, float64_bits
from gelu_numba.kernels.stamp import KERNELS
from gelu_numba.tables import normal_cdf32_rounded as tab, rounding32
from gelu_numba.tables.normal_cdf import INV_LN2

#: the fast path's tables, in :data:`gelu_numba.kernels.normal32_cpu_f64.TABLES`'s order
TABLES = (tab.EXP32, tab.R32_P, tab.R32_Q, tab.H32_P, tab.H32_Q, (INV_LN2, LN2))
#: the fast path's relative error bound (module docstring)
E = 2.0**-42
#: the 29 low bits of a float64 significand, which the float32 rounding
#: drops (they read 2**28 at a float32 midpoint)
MASK = np.uint64((1 << 29) - 1)
_MIDPOINT_BITS = np.uint64(1 << 28)
_LEAST_NORMAL32 = 2.0**-126
#: the bracket's factors, both exact in float64
_BELOW = 1.0 - E
_ABOVE = 1.0 + E
#: a float32 midpoint, whose bracket differs
_MIDPOINT = 1.0 + 2.0**-24
_MAGNITUDE = np.uint64(0x7FFF_FFFF_FFFF_FFFF)
_WRAP = np.uint64((1 << 63) - 1)
#: 2**-126, float32's least normal, as float64 bits, less one, wrapped
_SUBNORMAL_BOUND = np.int64(((1023 - 126) << 52) - 1 - (1 << 63))
#: float32's subnormal spacing, 2**-149, inverted
_SUBNORMAL_SCALE = 2.0**149


@inline
def bracket(y):
    """``(lo, hi)``: the float32 roundings of the float64 products ``y (1 -
    E)`` and ``y (1 + E)``, between which the exact value's lies (step
    2)."""
    return np.float32(y * _BELOW), np.float32(y * _ABOVE)


@inline
def bracket_exact(y):
    """:func:`bracket`, but a pair that differs for a nonzero ``y`` below
    2**-126 in magnitude: the test of a function whose result can be an
    exact float32 subnormal (``dy`` times a GELU' of 1 or 1/2), where the
    bracket's inexact conversions would raise an underflow flag that the
    exact result does not (the accurate path's float64 value converts
    exactly)."""
    # integer comparisons (a float one would raise the invalid flag on a
    # NaN y, as AVX compares with signalling predicates): |bits| + 2**63 -
    # 1 wraps to below _SUBNORMAL_BOUND exactly for 0 < |y| < 2**-126
    tiny = np.int64((float64_bits(y) & _MAGNITUDE) + _WRAP) < _SUBNORMAL_BOUND
    return bracket(_MIDPOINT if tiny else y)


@inline
def differ(lo, hi):
    """Whether the bracket's ends round apart: the rounding is unsure
    (never for NaN, whose result is NaN either way)."""
    # ordered: one comparison (AVX-512 vcmpps with NEQ_OQ), false for NaN
    return (lo < hi) | (hi < lo)


@inline
def unsure(y):
    """Whether the float32 rounding of the fast path's ``y`` may differ
    from that of the exact value (step 2)."""
    return differ(*bracket(y))


@inline
def unsure_exact(y):
    """:func:`unsure` with :func:`bracket_exact`."""
    return differ(*bracket_exact(y))


@inline
def is_midpoint32(y):
    """Whether the float64 ``y`` is a float32 midpoint: half way between
    two neighbouring float32 numbers (or between the largest and 2**128)."""
    if abs(y) >= _LEAST_NORMAL32:
        return (float64_bits(y) & MASK) == _MIDPOINT_BITS
    z = abs(y) * _SUBNORMAL_SCALE        # exact: a power of two, no underflow
    return z - np.floor(z) == 0.5


@inline
def settled(y, x, below):
    """The accurate path's ``y`` (a float64 within 0.5625 ulp of the exact
    value) for float32 ``x``, moved one float64 ulp towards the exact value
    where it is a float32 midpoint: down for the inputs listed in ``below``
    (their bit patterns, ascending), up for every other (step 4)."""
    if not is_midpoint32(y):
        return y
    key = np.uint32(float32_bits(x))
    lo, hi = 0, below.size
    while lo < hi:
        mid = (lo + hi) // 2
        if below[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    down = lo < below.size and below[lo] == key
    # step_bits moves the magnitude: up is away from zero for y > 0
    return step_bits(y, (-1 if y > 0.0 else 1) if down else (1 if y > 0.0 else -1))


# The accurate paths: functions of their own (out_of_line), called from
# the kernels below on the rare unsure element, so that a loop of the
# kernels stays free of them (a branch to a call, not a select over both
# paths).  Each is cached on disk, keyed by the kernels' source stamp
# (gelu_numba.kernels.stamp), so that code compiled later in any process
# (a user's @njit function calling gelu, a loop not yet cached) loads it
# instead of compiling the float64 kernel again: most of a float32
# function's compile.

# (forceinline=False: Numba passes a caller's forceinline on to what it
# calls, and the kernels are compiled with it, JIT_OPTIONS)
_accurate = njit(error_model="numpy", inline="never", forceinline=False, cache=True)
# the float64 kernels, compiled as kernels are
_ndtr64, _norm_pdf64, _gelu64, _gelu_grad64, _gelu_grad2_64, _gelu_backward64 = (
    inline(normal.ndtr), inline(normal.norm_pdf), inline(normal.gelu), inline(normal.gelu_grad),
    inline(normal.gelu_grad2), inline(normal.gelu_backward))


def _accurate_paths(stamp):
    """The six accurate paths, closed over ``stamp`` (their cache key)."""

    @_accurate
    def ndtr_accurate(x):
        stamp  # noqa: B018 (the cache key)
        out_of_line()
        return settled(_ndtr64(np.float64(x)), x, rounding32.NDTR)

    @_accurate
    def norm_pdf_accurate(x):
        stamp  # noqa: B018
        out_of_line()
        return settled(_norm_pdf64(np.float64(x)), x, rounding32.NORM_PDF)

    @_accurate
    def gelu_accurate(x):
        stamp  # noqa: B018
        out_of_line()
        return settled(_gelu64(np.float64(x)), x, rounding32.GELU)

    @_accurate
    def gelu_grad_accurate(x):
        stamp  # noqa: B018
        out_of_line()
        return settled(_gelu_grad64(np.float64(x)), x, rounding32.GELU_GRAD)

    @_accurate
    def gelu_grad2_accurate(x):
        stamp  # noqa: B018
        out_of_line()
        return settled(_gelu_grad2_64(np.float64(x)), x, rounding32.GELU_GRAD2)

    @_accurate
    def gelu_backward_accurate(dy, x):
        stamp  # noqa: B018
        out_of_line()
        d, xd = np.float64(dy), np.float64(x)
        y = _gelu_backward64(d, xd)
        if not is_midpoint32(y):
            return y
        # y = dy/2 (GELU'(x) rounds to 1/2 next to x = 0): the exact value
        # dy/2 + dy (GELU'(x) - 1/2) lies on the side of dy x, since GELU'(x)
        # - 1/2 = Phi(x) - 1/2 + x phi(x) has the sign of x (at x = 0, dy/2
        # itself, rounded to even by the store)
        if y == 0.5 * d and xd != 0.0:
            up = (d > 0.0) == (xd > 0.0)
            return step_bits(y, (1 if y > 0.0 else -1) if up else (-1 if y > 0.0 else 1))
        # dy a power of two (its float32 significand bits 0) and a normal
        # result: dy times GELU' correctly rounded is the answer, exactly;
        # any other midpoint stays, and the store rounds it to even (module
        # docstring).  GELU' as gelu_grad_accurate has it: for a finite x
        # (y is a midpoint, so x is finite) the float64 backward with dy = 1
        # runs the float64 gelu_grad kernel's operations on the same values
        # (normal._gelu_backward, normal._gelu_grad), and the kernel
        # compiled for the line above serves this call too
        if abs(y) >= _LEAST_NORMAL32 and (float32_bits(dy) & np.uint32(0x7FFFFF)) == 0:
            return d * settled(_gelu_backward64(1.0, xd), x, rounding32.GELU_GRAD)
        return y

    return (ndtr_accurate, norm_pdf_accurate, gelu_accurate, gelu_grad_accurate,
            gelu_grad2_accurate, gelu_backward_accurate)


(ndtr_accurate, norm_pdf_accurate, gelu_accurate, gelu_grad_accurate, gelu_grad2_accurate,
 gelu_backward_accurate) = _accurate_paths(KERNELS)
#: the accurate paths, which are cached on disk
ACCURATE = (ndtr_accurate, norm_pdf_accurate, gelu_accurate, gelu_grad_accurate,
            gelu_grad2_accurate, gelu_backward_accurate)


# The fast paths (step 1), the plain kernels on the tables above: what the
# loops run on a block whose every element the test finds sure.

@inline
def ndtr_fast(x):
    return plain.ndtr_t(x, TABLES)


@inline
def norm_pdf_fast(x):
    return plain.norm_pdf_t(x, TABLES)


@inline
def gelu_fast(x):
    # without GELU's step at |x| < 2**-125: the test finds those unsure
    return plain.gelu_above_tiny_t(x, TABLES)


@inline
def gelu_grad_fast(x):
    return plain.gelu_grad_t(x, TABLES)


@inline
def gelu_grad2_fast(x):
    return plain.gelu_grad2_t(x, TABLES)


@inline
def gelu_backward_fast(dy, x):
    return plain.gelu_backward_t(dy, x, TABLES)


# The kernels: the fast path, and the accurate one where it is unsure.

def ndtr(x):
    """Standard normal CDF Phi(x), correctly rounded to float32."""
    y = ndtr_fast(x)
    return ndtr_accurate(x) if unsure(y) else y


def norm_pdf(x):
    """Standard normal density phi(x), correctly rounded to float32."""
    y = norm_pdf_fast(x)
    return norm_pdf_accurate(x) if unsure(y) else y


def gelu(x):
    """GELU(x) = x Phi(x), correctly rounded to float32."""
    y = gelu_fast(x)
    return gelu_accurate(x) if unsure(y) else y


def gelu_grad(x):
    """GELU'(x) = Phi(x) + x phi(x), correctly rounded to float32."""
    y = gelu_grad_fast(x)
    return gelu_grad_accurate(x) if unsure(y) else y


def gelu_grad2(x):
    """GELU''(x) = phi(x) (2 - x**2), correctly rounded to float32."""
    y = gelu_grad2_fast(x)
    return gelu_grad2_accurate(x) if unsure(y) else y


def gelu_backward(dy, x):
    """Fused backward pass ``dy * GELU'(x)``, rounded once to float32."""
    y = gelu_backward_fast(dy, x)
    return gelu_backward_accurate(dy, x) if unsure_exact(y) else y
