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

This avoids each trap of ``../shared/docs/numerics.md``: no ``1 + erf``
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
three Horner steps in double-double, adds less than about 2**-58; the
double-double products add 2**-100.  Each float64 result is therefore
``(1 + d) * exact`` with ``|d| < 2**-57`` before its single final rounding:
at most 0.5 + 2**-4 ulp, below 1 ulp everywhere (subnormal results: one more
half-ulp rounding at most of the 2**-57 part).  These kernels serve the
float64 loops; float32 loops use the cheaper
:mod:`gelu_numba.kernels.normal32` (see :mod:`gelu_numba.kernels.dispatch`),
and calling these on float32 values gives at most 0.5 + 2**-28 float32 ulp.
The measured figures are in the README.

Each kernel is a plain Python function of scalars, compiled by
``gelu_numba.targets`` into ufuncs (and device functions) for every target.
"""

import math

import numpy as np
from numba import njit

from gelu_numba.kernels.primitives import (
    SHIFTER, dd_mul, fast_two_sum, fma, mul_round, nan_to_zero, one_minus_dd,
    poly_dd, pow2, scaled_mul, two_prod, two_sum,
)
from gelu_numba.tables.normal_cdf import (
    A_MAX, EXP_HI, EXP_LO, H_HI, H_LO, INV_LN2, INV_STEP, LN2_1, LN2_2,
    LN2_3, PHI0_HI, PHI0_LO, R_HI, R_LO, STEP, Z0_HI, Z0_LO,
)

_INF = math.inf
_NAN = math.nan
# finite stand-in for an infinite x: large enough that GELU(x) = x exactly,
# small enough to be finite in float32 too (LLVM may round both arms of a
# select to float32 before selecting)
_BIG = 2.0**100


@njit(inline="always")
def clamp_abs(x):
    """``min(|x|, A_MAX)`` for a non-NaN x (the table index must stay valid)."""
    a = abs(x)
    return a if a < A_MAX else A_MAX


@njit(inline="always")
def is_finite(x):
    """Quiet test (no ordered compare on NaN) that x is finite."""
    return x == x and x != _INF and x != -_INF


@njit(inline="always")
def exp_neg_half_sq(a):
    """``exp(-a**2/2) = (eh + el) * 2**k`` for ``0 <= a <= A_MAX``.

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
    eh, el, k = exp_neg_half_sq(a)
    rh, rl = tail_poly(a, R_HI, R_LO)
    qh, ql = dd_mul(eh, el, rh, rl)
    return qh, ql, k


@njit(inline="always")
def grad_tail_dd(a):
    """``G(a) = E(a) (a - z0) H(a) = (gh + gl) * 2**k``: GELU'(-a), with its
    zero at ``a = z0`` as an exact factor."""
    eh, el, k = exp_neg_half_sq(a)
    hh, hl = tail_poly(a, H_HI, H_LO)
    dh, dl = two_sum(a, -Z0_HI)
    dh, dl = fast_two_sum(dh, dl - Z0_LO)
    gh, gl = dd_mul(dh, dl, hh, hl)
    gh, gl = dd_mul(eh, el, gh, gl)
    return gh, gl, k


@njit(inline="always")
def unscale(h, l, k):
    """``(h + l) * 2**k`` as a dd, for use beside 1 (tiny values flush early)."""
    f = pow2(max(k, -1000))
    return h * f, l * f


def ndtr(x):
    """Standard normal CDF Phi(x)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    qh, ql, k = upper_tail_dd(clamp_abs(xs))
    neg = scaled_mul(1.0, qh, ql, k)
    uh, ul = unscale(qh, ql, k)
    ph, pl = one_minus_dd(uh, ul)
    r = neg if xs < 0.0 else ph + pl
    return r if xd == xd else xd


def norm_pdf(x):
    """Standard normal density phi(x)."""
    xd = np.float64(x)
    eh, el, k = exp_neg_half_sq(clamp_abs(nan_to_zero(xd)))
    mh, ml = dd_mul(eh, el, PHI0_HI, PHI0_LO)
    r = scaled_mul(1.0, mh, ml, k)
    return r if xd == xd else xd


def gelu(x):
    """GELU(x) = x Phi(x)."""
    xd = np.float64(x)
    # finite stand-in for NaN and +-inf, fixed up at the end
    xs = nan_to_zero(xd)
    xs = xs if abs(xs) < _BIG else math.copysign(_BIG, xs)
    qh, ql, k = upper_tail_dd(clamp_abs(xs))
    # x < -A_MAX only multiplies a flushed-to-zero tail; clamping it keeps
    # the scaled product finite (GELU(-inf) = -0.0)
    xn = xs if xs > -A_MAX else -A_MAX
    neg = scaled_mul(xn, qh, ql, k)
    uh, ul = unscale(qh, ql, k)
    ph, pl = one_minus_dd(uh, ul)
    pos = mul_round(xs, ph, pl)
    r = neg if xs < 0.0 else pos
    r = r if xs != _BIG else xd  # GELU(+inf) = +inf
    return r if xd == xd else xd


@njit(inline="always")
def tail_or_complement(neg, h, l, k):
    """``(h + l) 2**k`` rounded once if ``neg``, else ``1 - (h + l) 2**k``:
    a CDF-like value from its lower tail, for either sign of x."""
    lower = scaled_mul(1.0, h, l, k)
    uh, ul = unscale(h, l, k)
    ph, pl = one_minus_dd(uh, ul)
    return lower if neg else ph + pl


@njit(inline="always")
def grad_parts(xs):
    """GELU'(xs) as ``(gh + gl) * 2**k`` (xs < 0) and ``ph + pl`` (xs >= 0)."""
    gh, gl, k = grad_tail_dd(clamp_abs(xs))
    uh, ul = unscale(gh, gl, k)
    ph, pl = one_minus_dd(uh, ul)
    return gh, gl, k, ph, pl


def gelu_grad(x):
    """GELU'(x) = Phi(x) + x phi(x)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    gh, gl, k, ph, pl = grad_parts(xs)
    r = scaled_mul(1.0, gh, gl, k) if xs < 0.0 else ph + pl
    return r if xd == xd else xd


def gelu_backward(dy, x):
    """Fused backward pass: dy * GELU'(x), rounded once."""
    dyd = np.float64(dy)
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    dy_finite = is_finite(dyd)
    dys = dyd if dy_finite else 1.0
    gh, gl, k, ph, pl = grad_parts(xs)
    neg = xs < 0.0
    r = scaled_mul(dys, gh, gl, k) if neg else mul_round(dys, ph, pl)
    # infinite or NaN dy: the IEEE product with GELU'(x), whose sign and
    # non-zeroness the unscaled mantissa gh carries even where GELU' underflows
    r = r if dy_finite else dyd * (gh if neg else ph)
    # GELU'(-inf) is exactly 0: dy * 0, with inf * 0 = NaN
    r = r if xd != -_INF else (dys * -0.0 if dy_finite else _NAN)
    return r if xd == xd else xd


def gelu_grad2(x):
    """GELU''(x) = phi(x) (2 - x**2)."""
    xd = np.float64(x)
    a = clamp_abs(nan_to_zero(xd))
    eh, el, k = exp_neg_half_sq(a)
    p, pe = two_prod(a, a)
    # 2 - a**2 = (2 - p) - pe exactly: its zero at sqrt 2 costs nothing
    wh, wl = two_sum(2.0, -p)
    wh, wl = fast_two_sum(wh, wl - pe)
    mh, ml = dd_mul(eh, el, wh, wl)
    mh, ml = dd_mul(mh, ml, PHI0_HI, PHI0_LO)
    r = scaled_mul(1.0, mh, ml, k)
    return r if xd == xd else xd
