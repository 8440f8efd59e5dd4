"""Scalar kernels of GELU through the Abramowitz & Stegun 7.1.26 erf.

Method
------
A&S 7.1.26 (Hastings 1955): for ``z >= 0``, ``erf z ~ 1 - K(z)``,
``K(z) = t P(t) exp(-z**2)``, ``t = 1/(1 + p z)``, ``P`` of degree 4, with
``|error| <= 1.5e-7``; oneDNN and PyTorch's SIMD GELU use it as
``0.5 x (1 + erf(x/sqrt 2))``.  Here the odd extension is evaluated without
the ``1 + erf`` cancellation (a = |x|, z = a/sqrt 2, so exp(-z**2) =
exp(-a**2/2) with an exact argument)::

    x <  0:  Phi_AS(x) = K/2,      x >= 0:  Phi_AS(x) = 1 - K/2
    GELU_AS'(x) = Phi_AS(x) + x Phi_AS'(x),
    Phi_AS'(x)  = exp(-a**2/2) (p/(2 sqrt 2) t**2 (tP)'(t) + a tP(t)/2)

so that, with ``I = tP/2 - a (p/(2 sqrt 2) t**2 (tP)' + a tP/2)``, the
derivative is ``E I`` for x < 0 and ``1 - E I`` for x >= 0; I vanishes at
the derivative's zero, next to which the generated Taylor form is used.

float64: every step in double-double (t, P by dd Horner with the decimal
coefficients as dds, ``exp_dd``), one final rounding; float32: plain float64.

Error bound
-----------
Against the formula itself (``gelu_numba.reference.approx``): float64 below
0.5 ulp + 2**-50 relative (about 1.5 ulp within 1/8 of the derivative's
zero), float32 below 0.5 + 2**-14 ulp.  Its error against the exact GELU
(about 1.1e-7 absolute) is in the approximations registry.
"""

import numpy as np

from gelu_numba.kernels import normal32
from gelu_numba.kernels.normal import (
    clamp_abs, exp_neg_half_sq, tail_or_complement, unscale,
)
from gelu_numba.kernels.primitives import (
    dd_add, dd_div, dd_mul, dd_mul_d, horner, horner_dd, mul_round,
    nan_to_zero, one_minus_dd, restore_inf, scaled_mul, stand_in,
    taylor_at_zero,
)
from gelu_numba.tables.approximations import (
    AS26_A_HI, AS26_A_LO, AS26_DA_HI, AS26_DA_LO, AS26_PH, AS26_Q, ZERO_AS26,
)
from gelu_numba.tables.normal_cdf import A_MAX
from gelu_numba.tables.normal_cdf32 import A32
from numba import njit


@njit(inline="always")
def _t_parts_64(a):
    """t and tP(t) as dds."""
    dh, dl = dd_mul_d(AS26_Q[0], AS26_Q[1], a)
    dh, dl = dd_add(1.0, 0.0, dh, dl)
    th, tl = dd_div(1.0, 0.0, dh, dl)
    ph, pl = horner_dd(th, tl, AS26_A_HI, AS26_A_LO)
    ph, pl = dd_mul(th, tl, ph, pl)
    return th, tl, ph, pl


def gelu_as26_64(x):
    """0.5 x (1 + erf_AS(x/sqrt 2)), A&S 7.1.26."""
    xd = np.float64(x)
    xs = stand_in(nan_to_zero(xd))
    a = clamp_abs(xs)
    _, _, ph, pl = _t_parts_64(a)
    eh, el, k = exp_neg_half_sq(a)
    kh, kl = dd_mul(eh, el, 0.5 * ph, 0.5 * pl)        # K/2
    xn = xs if xs > -A_MAX else -A_MAX
    neg = scaled_mul(xn, kh, kl, k)
    uh, ul = unscale(kh, kl, k)
    qh, ql = one_minus_dd(uh, ul)
    r = neg if xs < 0.0 else mul_round(xs, qh, ql)
    r = restore_inf(r, xs, xd)
    return r if xd == xd else xd


def gelu_as26_grad_64(x):
    """Derivative of the A&S 7.1.26 form."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = clamp_abs(xs)
    th, tl, ph, pl = _t_parts_64(a)
    dh, dl = horner_dd(th, tl, AS26_DA_HI, AS26_DA_LO)     # (tP)'
    mh, ml = dd_mul(th, tl, th, tl)
    mh, ml = dd_mul(mh, ml, dh, dl)
    mh, ml = dd_mul(mh, ml, AS26_PH[0], AS26_PH[1])
    mh, ml = dd_add(mh, ml, 0.5 * a * ph, 0.5 * a * pl)   # a/2 is exact
    mh, ml = dd_mul_d(mh, ml, -a)
    ih, il = dd_add(0.5 * ph, 0.5 * pl, mh, ml)           # I
    eh, el, k = exp_neg_half_sq(a)
    gh, gl = dd_mul(eh, el, ih, il)
    r = tail_or_complement(xs < 0.0, gh, gl, k)
    near, v = taylor_at_zero(xs, ZERO_AS26)
    r = v if near else r
    return r if xd == xd else xd


@njit(inline="always")
def _t_parts_32(a):
    t = 1.0 / (1.0 + AS26_Q[0] * a)
    return t, t * horner(t, AS26_A_HI)


def gelu_as26_32(x):
    """A&S 7.1.26 form, float32 result."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = normal32.clamped_abs(xs)
    _, tp = _t_parts_32(a)
    h = 0.5 * tp * normal32.exp_neg_half_sq(a)
    xn = xs if xs > -A32 else -A32
    r = xn * h if xs < 0.0 else xs * (1.0 - h)
    return r if xd == xd else xd


def gelu_as26_grad_32(x):
    """Derivative of the A&S 7.1.26 form, float32 result."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = normal32.clamped_abs(xs)
    t, tp = _t_parts_32(a)
    m = AS26_PH[0] * (t * t) * horner(t, AS26_DA_HI) + 0.5 * a * tp
    g = normal32.exp_neg_half_sq(a) * (0.5 * tp - a * m)
    r = g if xs < 0.0 else 1.0 - g
    near, v = taylor_at_zero(xs, ZERO_AS26)
    r = v if near else r
    return r if xd == xd else xd
