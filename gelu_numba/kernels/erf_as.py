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
Against the formula itself (``reference.approx`` in the gelu-numba
repository): float64 below 0.5 ulp + 2**-50 relative (about 1.5 ulp within
1/8 of the derivative's zero), float32 below 0.5 + 2**-9 ulp
(``exp_neg_half_sq_plain``: 2**-34).  Its error against the exact GELU
(about 1.1e-7 absolute) is in the approximations registry.
"""

import math

import numpy as np

from gelu_numba.kernels.normal import exp_neg_half_sq_dd
from gelu_numba.kernels.normal32_cpu_f64 import TABLES, exp_neg_half_sq_plain
from gelu_numba.kernels.primitives import (
    inline, clamp_abs, dd_add, dd_div, dd_mul, dd_mul_d, horner, horner_dd,
    mul_tail_or_complement, nan_to_zero, restore_inf, stand_in, taylor_at_zero,
)
from gelu_numba.tables.approximations import (
    AS26_A_HI, AS26_A_LO, AS26_DA_HI, AS26_DA_LO, AS26_PH, AS26_Q, ZERO_AS26,
)
from gelu_numba.tables.normal_cdf import A_MAX
from gelu_numba.tables.normal_cdf32_cpu_f64 import A32

_INF = math.inf


@inline
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
    a = clamp_abs(xs, A_MAX)
    _, _, ph, pl = _t_parts_64(a)
    eh, el, k = exp_neg_half_sq_dd(a)
    kh, kl = dd_mul(eh, el, 0.5 * ph, 0.5 * pl)        # K/2
    # below -A_MAX the result rounds to -0.0: the factor -0.0 gives it exactly
    y = xs if xs > -A_MAX else -0.0
    r = mul_tail_or_complement(y, xs < 0.0, kh, kl, k)
    r = restore_inf(r, xs, xd)
    return r if xd == xd else xd


def gelu_as26_grad_64(x):
    """Derivative of the A&S 7.1.26 form."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = clamp_abs(xs, A_MAX)
    th, tl, ph, pl = _t_parts_64(a)
    dh, dl = horner_dd(th, tl, AS26_DA_HI, AS26_DA_LO)     # (tP)'
    mh, ml = dd_mul(th, tl, th, tl)
    mh, ml = dd_mul(mh, ml, dh, dl)
    mh, ml = dd_mul(mh, ml, AS26_PH[0], AS26_PH[1])
    # a tP/2 as a dd (the plain product a/2 * ph lost 2**-53 of it: 1.59 ulp
    # at x = -1.208, where I is about a third of its terms)
    ah, al = dd_mul_d(ph, pl, 0.5 * a)
    mh, ml = dd_add(mh, ml, ah, al)
    mh, ml = dd_mul_d(mh, ml, -a)
    ih, il = dd_add(0.5 * ph, 0.5 * pl, mh, ml)           # I
    eh, el, k = exp_neg_half_sq_dd(a)
    gh, gl = dd_mul(eh, el, ih, il)
    # the derivative at -inf is -0.0: a zero factor (I < 0 far out)
    r = mul_tail_or_complement(0.0 if xs == -_INF else 1.0, xs < 0.0, gh, gl, k)
    near, v = taylor_at_zero(xs, ZERO_AS26)
    r = v if near else r
    return r if xd == xd else xd


@inline
def _t_parts_32(a):
    t = 1.0 / (1.0 + AS26_Q[0] * a)
    return t, t * horner(t, AS26_A_HI)


def gelu_as26_32(x):
    """A&S 7.1.26 form, float32 result."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = clamp_abs(xs, A32, 0.0)
    _, tp = _t_parts_32(a)
    h = 0.5 * tp * exp_neg_half_sq_plain(a, TABLES)
    # below -A32 the float32 result is -0.0: the factor -0.0 gives it
    # exactly, -inf included
    xn = xs if xs > -A32 else -0.0
    r = xn * h if xs < 0.0 else xs * (1.0 - h)
    return r if xd == xd else xd


def gelu_as26_grad_32(x):
    """Derivative of the A&S 7.1.26 form, float32 result."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = clamp_abs(xs, A32, 0.0)
    t, tp = _t_parts_32(a)
    m = AS26_PH[0] * (t * t) * horner(t, AS26_DA_HI) + 0.5 * a * tp
    # -0.0 at -inf: a zero factor, not a float32 subnormal (see normal32_cpu_f64)
    g = (exp_neg_half_sq_plain(a, TABLES) * (0.5 * tp - a * m)) * (0.0 if xs == -_INF else 1.0)
    r = g if xs < 0.0 else 1.0 - g
    near, v = taylor_at_zero(xs, ZERO_AS26)
    r = v if near else r
    return r if xd == xd else xd
