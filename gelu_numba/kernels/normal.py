"""Scalar kernels: the normal CDF and density, GELU and its derivatives.

Method
------
Everything is reduced to ``a = |x|`` and three smooth, tabulated functions
(``gelu_numba/tables/normal_cdf.py``)::

    E(a) = exp(-a**2/2)                 (double-double, times 2**k)
    R(a) = Phi(-a) / E(a) = erfcx(a/sqrt 2)/2
    H(a) = (R(a) - a phi0) / (a - z0),  phi0 = 1/sqrt(2 pi),  z0 = -x0

so that, with ``Q = E R = Phi(-a)``::

    x < 0:  Phi(x) = Q,                 GELU(x) = x Q,
            GELU'(x) = E (a - z0) H
    x >= 0: Phi(x) = 1 - Q,             GELU(x) = x (1 - Q),
            GELU'(x) = 1 - E (a - z0) H
    phi(x) = phi0 E,   GELU''(x) = phi0 E (2 - a**2).

This avoids each trap of ``docs/numerics.md``: no ``1 + erf``
cancellation (Q is computed directly); the argument of the exponential is
``a**2/2`` carried exactly as ``p + pe`` (``two_prod``); ``exp`` reduces
``s = -a**2/2`` by ``k ln 2`` with a 135-bit ``ln 2`` and returns a
double-double; the zeros of GELU' (``x0``) and of GELU'' (``+-sqrt 2``) are
factors evaluated exactly (``a - z0`` and ``2 - a**2`` as double-doubles);
underflow is handled by keeping the mantissa and the power of two apart
until a single final scaling (:func:`scaled_mul`).

Error bound
-----------
``R``, ``H`` and ``exp`` are polynomials whose approximation error is below
2**-59 (certified on a grid by the generator); their evaluation, with the last
three Horner steps in double-double, adds less than about 2**-58; the factor
``a - z0`` is a double-double within 2**-104 relative of its exact value
however close a is to z0 (z0 is stored in three parts: with two, the part
left out is 2**-54.6 of ``a - z0`` at the double nearest x0, which cost the
fused backward up to 0.81 ulp there); the double-double products, the final
one by ``x`` or ``dy`` included, add 2**-100.  Each float64 result, the fused
``dy * GELU'(x)`` for every finite dy included, is therefore
``(1 + d) * exact`` with ``|d| < 2**-57`` before its single final rounding:
at most 0.5 + 2**-4 ulp, below 1 ulp everywhere; a subnormal result is
scaled once from the double-double (:func:`mul_tail_or_complement`,
:func:`scaled_mul`), so it too is rounded once.  Measured (the mpmath
table, ``python -m analysis.accuracy``): at most 0.511 ulp, the fused
backward included (``tests/test_backward_x0.py``: many dy at the doubles
next to x0, where ``a - z0`` needs z0 in three parts).  These kernels serve
the float64 loops; float32 loops use the cheaper
:mod:`gelu_numba.kernels.normal32`, and calling these on float32 values
gives at most 0.5 + 2**-28 float32 ulp.

Each kernel is a plain Python function of scalars, compiled by
``gelu_numba.targets`` into ufuncs (and device functions) for every target.
"""

import math

import numpy as np
from numba import njit

from gelu_numba.kernels.primitives import (
    SHIFTER, clamp_abs, dd_add, dd_mul, fast_two_sum, fma, is_finite,
    mul_tail_or_complement, nan_to_zero, poly_dd, restore_inf, scaled_mul,
    stand_in, two_prod, two_sum,
)
from gelu_numba.tables.normal_cdf import (
    A_MAX, EXP_HI, EXP_LO, H_HI, H_LO, INV_LN2, INV_STEP, LN2_1, LN2_2,
    LN2_3, PHI0_HI, PHI0_LO, R_HI, R_LO, STEP, Z0_HI, Z0_LO, Z0_LO2,
)

_INF = math.inf
_NAN = math.nan


@njit(inline="always")
def exp_neg_half_sq_dd(a):
    """``exp(-a**2/2) = (eh + el) * 2**k`` for ``0 <= a <= A_MAX``, with
    ``a**2`` carried exactly (``two_prod``).

    Relative error of ``eh + el`` below 2**-60 (``k`` is exact).
    """
    p, pe = two_prod(a, a)
    return exp_dd(-0.5 * p, -0.5 * pe)


@njit(inline="always")
def exp_dd(s, se):
    """``exp(s + se) = (eh + el) * 2**k`` for a dd ``s + se`` with
    ``-2800 < s <= 0.35`` (``|k| < 2**12`` keeps ``k LN2_1`` exact).

    Relative error of ``eh + el`` below 2**-60 (``k`` is exact).
    """
    kf = (s * INV_LN2 + SHIFTER) - SHIFTER
    # s - kf*LN2_1 is exact (Sterbenz); the rest is carried as a dd (rh, rl)
    r1 = s - kf * LN2_1
    rh, rl = two_sum(r1, -kf * LN2_2)
    rl = rl + (se - kf * LN2_3)
    eh, el = poly_dd(rh, EXP_HI, EXP_LO, 0)
    # exp(rh + rl) = exp(rh) (1 + rl) to within rl**2/2 < 2**-80
    el = fma(eh, rl, el)
    eh, el = fast_two_sum(eh, el)
    return eh, el, np.int64(kf)


@njit(inline="always")
def tail_poly(a, hi, lo):
    """Evaluate the tabulated function (R or H) at ``0 <= a <= A_MAX``."""
    i = np.int64(a * INV_STEP)
    # expansion point of interval i (see the tables): t = a - m is exact
    m = STEP * i + (0.5 * STEP if i > 0 else 0.0)
    return poly_dd(a - m, hi, lo, i)


@njit(inline="always")
def upper_tail_dd(a):
    """``Q(a) = Phi(-a) = (qh + ql) * 2**k`` (mantissa relative error < 2**-57)."""
    eh, el, k = exp_neg_half_sq_dd(a)
    rh, rl = tail_poly(a, R_HI, R_LO)
    qh, ql = dd_mul(eh, el, rh, rl)
    return qh, ql, k


@njit(inline="always")
def grad_tail_dd(a):
    """``G(a) = E(a) (a - z0) H(a) = (gh + gl) * 2**k``: GELU'(-a), with its
    zero at ``a = z0`` as an exact factor.

    ``a - z0`` is a dd with relative error below 2**-104 however close a is
    to z0: ``a - Z0_HI`` is exact there (Sterbenz) and z0 is carried in
    three parts (with two, the 2**-109 left out would be 2**-53 of
    ``a - z0`` at the double nearest z0).
    """
    eh, el, k = exp_neg_half_sq_dd(a)
    hh, hl = tail_poly(a, H_HI, H_LO)
    dh, dl = two_sum(a, -Z0_HI)
    dh, dl = dd_add(dh, dl, -Z0_LO, -Z0_LO2)
    gh, gl = dd_mul(dh, dl, hh, hl)
    gh, gl = dd_mul(eh, el, gh, gl)
    return gh, gl, k


def ndtr(x):
    """Standard normal CDF Phi(x)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    qh, ql, k = upper_tail_dd(clamp_abs(xs, A_MAX))
    # Phi(-inf) = 0 exactly: a zero factor, not the tail at A_MAX
    r = mul_tail_or_complement(0.0 if xs == -_INF else 1.0, xs < 0.0, qh, ql, k)
    return r if xd == xd else xd


def norm_pdf(x):
    """Standard normal density phi(x)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    eh, el, k = exp_neg_half_sq_dd(clamp_abs(xs, A_MAX))
    mh, ml = dd_mul(eh, el, PHI0_HI, PHI0_LO)
    # phi(+-inf) = 0 exactly
    r = scaled_mul(1.0 if is_finite(xs) else 0.0, mh, ml, k)
    return r if xd == xd else xd


def gelu(x):
    """GELU(x) = x Phi(x)."""
    xd = np.float64(x)
    # finite stand-in for NaN and +-inf, fixed up at the end
    xs = stand_in(nan_to_zero(xd))
    qh, ql, k = upper_tail_dd(clamp_abs(xs, A_MAX))
    # below -A_MAX, |GELU(x)| < e**-1498 rounds to -0.0: the factor -0.0
    # gives it exactly (GELU(-inf) = -0.0 included)
    y = xs if xs > -A_MAX else -0.0
    r = mul_tail_or_complement(y, xs < 0.0, qh, ql, k)
    r = restore_inf(r, xs, xd)  # GELU(+inf) = +inf
    return r if xd == xd else xd


def gelu_grad(x):
    """GELU'(x) = Phi(x) + x phi(x)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    gh, gl, k = grad_tail_dd(clamp_abs(xs, A_MAX))
    # GELU'(-inf) = -0.0: a zero factor (G < 0 far out gives the sign)
    r = mul_tail_or_complement(0.0 if xs == -_INF else 1.0, xs < 0.0, gh, gl, k)
    return r if xd == xd else xd


def gelu_backward(dy, x):
    """Fused backward pass: dy * GELU'(x), rounded once."""
    dyd = np.float64(dy)
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    dy_finite = is_finite(dyd)
    dys = dyd if dy_finite else 1.0
    gh, gl, k = grad_tail_dd(clamp_abs(xs, A_MAX))
    neg = xs < 0.0
    # GELU'(-inf) is exactly -0: dy * -0.0 (G < 0 far out gives the sign)
    y = dys if xs != -_INF else math.copysign(0.0, dys)
    r = mul_tail_or_complement(y, neg, gh, gl, k)
    # infinite or NaN dy: the IEEE product with GELU'(x), whose sign (that of
    # the mantissa gh for x < 0, + for x >= 0) is all that matters; GELU' is
    # never 0 at a finite x.  A factor +-1, so that no lane overflows.
    r = r if dy_finite else dyd * (math.copysign(1.0, gh) if neg else 1.0)
    # and inf * GELU'(-inf) = inf * 0 = NaN
    r = r if dy_finite or xd != -_INF else _NAN
    return r if xd == xd else xd


def gelu_grad2(x):
    """GELU''(x) = phi(x) (2 - x**2)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = clamp_abs(xs, A_MAX)
    eh, el, k = exp_neg_half_sq_dd(a)
    p, pe = two_prod(a, a)
    # 2 - a**2 = (2 - p) - pe exactly: its zero at sqrt 2 costs nothing
    wh, wl = two_sum(2.0, -p)
    wh, wl = fast_two_sum(wh, wl - pe)
    mh, ml = dd_mul(eh, el, wh, wl)
    mh, ml = dd_mul(mh, ml, PHI0_HI, PHI0_LO)
    # GELU''(+-inf) = -0.0: a zero factor (2 - a**2 < 0 gives the sign)
    r = scaled_mul(1.0 if is_finite(xs) else 0.0, mh, ml, k)
    return r if xd == xd else xd
