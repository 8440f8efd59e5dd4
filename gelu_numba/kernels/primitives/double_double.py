"""Error-free transformations and double-double ("dd") arithmetic.

Every accurate kernel in this package evaluates its final few operations in
double-double arithmetic: a value is carried as an unevaluated sum ``hi + lo``
with ``|lo| <= ulp(hi)/2``, which gives about 106 significant bits.  The
building blocks are the classical error-free transformations:

* ``two_sum(a, b)``: ``s + e == a + b`` exactly (Knuth, TAOCP vol. 2, 4.2.2).
* ``fast_two_sum(a, b)``: the same when ``|a| >= |b|`` (Dekker 1971).
* ``two_prod(a, b)``: ``p + e == a * b`` exactly, with ``e = fma(a, b, -p)``.

They are exact only under round-to-nearest with no reassociation, so nothing
here may be compiled with ``fastmath``; their sums and products are
:func:`~gelu_numba.kernels.primitives.intrinsics.add_rn` and
:func:`~gelu_numba.kernels.primitives.intrinsics.mul_rn`, which NVVM does
not contract into FMAs.

On them are built the dd operations (:func:`dd_mul`, :func:`dd_mul_d`,
:func:`dd_add`, :func:`dd_div`, :func:`one_minus_dd`), the final product of
a kernel with its argument, rounded once over the whole range, subnormal
results included (:func:`scaled_mul`, :func:`unscale`,
:func:`mul_tail_or_complement`), and the treatment of arguments that keeps
the dd error terms free of spurious floating-point flags (:func:`clamp_abs`,
:func:`stand_in`, :func:`restore_inf`, :func:`is_finite`).
"""

import math

import numpy as np

from gelu_numba.kernels.primitives.intrinsics import (
    add_rn, fma, inline, mul_rn, pow2, split_exponent,
)


@inline
def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly."""
    s = add_rn(a, b)
    bb = add_rn(s, -a)
    e = add_rn(add_rn(a, -add_rn(s, -bb)), add_rn(b, -bb))
    return s, e


@inline
def fast_two_sum(a, b):
    """``(s, e)`` with ``s + e == a + b`` exactly, assuming ``|a| >= |b|``."""
    s = add_rn(a, b)
    e = add_rn(b, -add_rn(s, -a))
    return s, e


@inline
def two_prod(a, b):
    """``(p, e)`` with ``p = fl(a*b)`` and ``p + e == a*b`` exactly."""
    p = mul_rn(a, b)
    return p, fma(a, b, -p)


@inline
def dd_mul(ah, al, bh, bl):
    """Product of two dd numbers; relative error below 2**-102."""
    p, e = two_prod(ah, bh)
    e = e + (ah * bl + al * bh)
    return fast_two_sum(p, e)


@inline
def dd_mul_d(ah, al, b):
    """Product of a dd number and a double; relative error below 2**-104."""
    p, e = two_prod(ah, b)
    e = fma(al, b, e)
    return fast_two_sum(p, e)


@inline
def one_minus_dd(qh, ql):
    """``1 - (qh + ql)`` as a dd number, for ``|qh| <= 1``."""
    s, e = two_sum(1.0, -qh)
    return fast_two_sum(s, e - ql)


@inline
def dd_add(ah, al, bh, bl):
    """Sum of two dd numbers; relative error below 2**-102 unless they cancel
    (then the absolute error is below 2**-104 times the larger)."""
    s, e = two_sum(ah, bh)
    return fast_two_sum(s, e + (al + bl))


@inline
def dd_div(ah, al, bh, bl):
    """Quotient of two dd numbers (``bh != 0``); relative error below 2**-100."""
    q = ah / bh
    p, pe = two_prod(q, bh)
    r = (((ah - p) - pe) + al) - q * bl
    return fast_two_sum(q, r / bh)


# the smallest normal double; below it a multiplier is first scaled up by
# 2**64 (exactly), so that split_exponent sees a normal number
SMALLEST_NORMAL = 2.0**-1022
_SUB_SCALE = 2.0**64
_SUB_SHIFT = 64


@inline
def normalised(v):
    """``(m, e)`` with ``v == m * 2**e`` and ``1 <= |m| < 2`` for any finite
    non-zero v, subnormal ones included; ``(v, 0)`` for ``v = +-0``."""
    sub = abs(v) < SMALLEST_NORMAL
    m, e = split_exponent(v * (_SUB_SCALE if sub else 1.0))
    return m, e - (_SUB_SHIFT if sub else 0)


@inline
def scaled_mul(y, mh, ml, k, normal=False):
    """``y * (mh + ml) * 2**k`` rounded once, for any finite y.

    ``mh + ml`` is a dd number with ``2**-120 <= |mh| <= 2**20`` (or 0) and
    ``k <= 1`` an integer.  The product is formed from the significand of y,
    ``m = y 2**-e`` with ``1 <= |m| < 2``, so that every intermediate is a
    normal double of moderate size whatever y and k are: its error terms
    are exact, and no flag is raised that the result does not justify (no
    underflow in the error terms next to the subnormal range, no overflow
    unless the result overflows).  ``m (mh + ml) = p + pe`` to within
    2**-104 relative.

    The power of two is applied last, exactly.  A result in the subnormal
    range is rounded once, on the subnormal grid: adding ``b = +-2**-1022``
    (scaled like p) to ``p`` puts the sum in a binade whose spacing is that
    grid, the rounding error of that sum and ``pe`` are added back before
    the one rounding, and ``b`` is taken off again exactly.  Every result,
    subnormal ones included, is therefore the correctly rounded value of
    ``y (mh + ml) 2**k (1 + d)`` with ``|d| < 2**-104``; a subnormal result
    raises no underflow flag (the final scaling is exact).

    ``normal`` (a constant): the caller knows the result to be a normal
    double, far from both ends (``2**-960`` to ``2**960``).  Then ``b`` is
    0 and the two-step scaling is one exact product, so those steps are
    left out: the same bits, the same flags.
    """
    m, e = normalised(y)
    kk = k + e
    p = mul_rn(m, mh)
    pe = fma(m, mh, -p) + m * ml
    if normal:
        # b = 0: two_sum(0, p) = (p, 0), and p + 0 + pe differs from
        # p + pe only in the sign of a zero, which copysign sets as below
        return math.copysign(add_rn(p, pe), p) * pow2(kk)
    # 2**-1022 scaled like p (clamped: beyond 2**200 it only makes the
    # result 0, and below the smallest normal it is never used)
    bmag = pow2(max(min(-1022 - kk, 200), -1022))
    b = math.copysign(bmag, p) if abs(p) < bmag else 0.0
    s, t = two_sum(b, p)
    # s - b is exact (Sterbenz); a zero keeps the sign of the product
    w = math.copysign(add_rn(s, add_rn(t, pe)) - b, p)
    # 2**kk in two exact steps (w * 2**k1 is normal or the result is 0)
    k1 = min(max(kk, -900), 1000)
    return (w * pow2(k1)) * pow2(max(kk - k1, -1022))


# below this, unscale() replaces the scale 2**k of a value used beside 1
_UNSCALE_MIN = -300


@inline
def unscale(h, l, k):
    """``(h + l) * 2**k`` as a dd, for use beside 1 only (``1 +- that``).

    Below ``2**-300`` the value is taken as ``(h + l) * 2**-300``: beside 1
    either is far below the last bit of a dd (2**-106), so the sum rounds to
    the same result, and the low part stays clear of the subnormal range,
    where its product would raise the underflow flag for nothing.
    """
    f = pow2(max(k, _UNSCALE_MIN))
    return h * f, l * f


@inline
def mul_tail_or_complement(y, lower, h, l, k, ordinary=False):
    """``y * F``, rounded once, for a CDF-like F known by its lower tail
    ``T = (h + l) * 2**k``: ``F = T`` if ``lower``, else ``F = 1 - T``.

    One :func:`scaled_mul` of the chosen dd, so the unused form costs no
    product and raises no flag (a tail that underflows beside 1 is never
    scaled).  ``y = 1`` gives F itself, ``y = +-0`` a signed zero (the exact
    value at an infinite x where F or x F tends to 0).  ``ordinary`` (a
    constant): the result is known normal (:func:`scaled_mul`'s ``normal``).
    """
    uh, ul = unscale(h, l, k)
    ph, pl = one_minus_dd(uh, ul)
    mh = h if lower else ph
    ml = l if lower else pl
    kk = k if lower else np.int64(0)
    return scaled_mul(y, mh, ml, kk, ordinary)


# Arguments below TINY_ARG are replaced by 0 (see clamp_abs).
TINY_ARG = 2.0**-200


@inline
def clamp_abs(x, hi, lo=TINY_ARG):
    """``|x|`` clamped to ``[0, hi]``, and 0 for ``|x| < lo`` (x not NaN).

    The upper clamp keeps table indices and exponents in range (every
    function here is constant, 0 or x beyond its ``hi``).  The lower one is
    for the flags: below ``lo = 2**-200`` each smooth function of ``|x|``
    here equals its value at 0 to within 2**-200 relative, far below any
    rounding, while the double-double error terms of products of such an
    argument (``a*a`` in ``exp(-a**2/2)``, the low parts of a polynomial in
    ``a``) would be subnormal and raise the underflow flag for a result like
    0.5.  The x that multiplies such a function is never flushed.  Kernels
    of float32 values pass ``lo = 0`` (their arguments are at least 2**-149
    and their products stay normal in float64): the test then folds away.
    """
    a = abs(x)
    a = a if a < hi else hi
    return 0.0 if a < lo else a


@inline
def is_finite(x):
    """Quiet test (no ordered compare on NaN) that x is finite."""
    return x == x and x != math.inf and x != -math.inf


# finite stand-in for an infinite x: beyond 2**100 every form x F(x) here is
# 0 or x, and the dd products of x stay finite.  It must be finite in float32
# too (LLVM may round both arms of a select to float32 before selecting).
BIG = 2.0**100


@inline
def stand_in(x):
    """x, or +-2**100 for +-inf: products with it raise no invalid flag."""
    return x if abs(x) < BIG else math.copysign(BIG, x)


@inline
def restore_inf(r, xs, xd):
    """Undo :func:`stand_in` for the forms ``x F(x)`` with F(-inf) = 0,
    F(inf) = 1: +inf for +inf, -0.0 for -inf.  (The sign test reads xs,
    which is never NaN: an ordered comparison of NaN raises "invalid".)"""
    return r if abs(xs) < BIG else (xd if xs > 0.0 else -0.0)
