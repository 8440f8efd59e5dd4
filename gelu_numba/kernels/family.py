"""Scalar kernels of the paper's generalisations: ``x Phi((x - mu)/sigma)``
and ``x F(x)`` for the Laplace and Cauchy CDFs (the logistic one, the SiLU,
is in :mod:`gelu_numba.kernels.logistic`).

Method
------
* ``gelu_general``: ``z = (x - mu)/sigma`` as a double-double (``x - mu`` is
  exact as a dd, then one dd division, all three scaled by the power of two
  of sigma so that no term leaves the normal range), ``a = |z|``, and
  ``Phi(-a) = exp(-a**2/2) R(a)`` with the tables of
  :mod:`gelu_numba.kernels.normal`: ``a**2/2`` in dd for ``exp_dd``, and
  ``R(ah + al) = R(ah) + al (ah R(ah) - phi0)`` to first order
  (``R' = a R - phi0``).  z is steep inside Phi (condition ``z**2``), so it
  must not be rounded to a double first.  ``sigma = 0`` is the limit
  ``x H(x - mu)`` with ``H(0) = 1/2`` (ReLU for mu = 0); ``sigma < 0`` is NaN.
  float32: z in float64 and the float32 normal kernels.
* LaLU ``x F_L(x)``: ``F_L = e**x/2`` (x < 0), ``1 - e**-x/2``; its derivative
  ``F_L + x e**-|x|/2`` is ``E (1 - a)/2`` for x < 0 (zero at -1, where
  ``1 - a`` is exact) and ``1 - E (1 - a)/2`` for x >= 0, E = e**-a, in dd
  (one kernel for both dtypes).
* Cauchy ``x F_C(x)``, ``F_C = 1/2 + atan(x)/pi``: for |x| <= 1 directly;
  for |x| > 1 with ``atan(1/|x|)`` (``F_C(x) = atan(1/|x|)/pi`` for x < 0,
  no cancellation), 1/|x| carried as a dd.  Its derivative for x < 0 is
  ``D = (atan y - y/(1 + y**2))/pi``, y = 1/|x|, which cancels for large
  |x|: for ``y <= 1``, ``D = y**3 C(y**2)/pi`` with C a polynomial in
  ``2 y**2 - 1`` (Remez fit, relative error 6e-17 as stored; ``C(0) = 2/3``)
  evaluated in dd; for ``|x| < 1`` directly (at most a 2.75-fold
  cancellation, next to x = -1).  ``atan`` is the C
  library's (a scalar call: these loops do not vectorise); one kernel for
  both dtypes.

Error bound
-----------
gelu_general float64: below 0.5 ulp + 2**-52 relative (the first-order R
correction leaves ``al**2`` terms, 2**-106); the LaLU: below 0.5 ulp + 2**-50;
the Cauchy forms: the C library's atan error (below 1 ulp) plus 0.5 ulp.
float32 results: below 0.5 + 2**-14 ulp, gelu_general's below 0.5 + 2**-7.9
(it takes Phi from :mod:`gelu_numba.kernels.normal32_cpu_f64`).  Measured: :mod:`gelu_numba.measured`.
"""

import math

import numpy as np

from gelu_numba.kernels import normal32_cpu_f64
from gelu_numba.kernels.normal import exp_dd, tail_ratio_dd
from gelu_numba.kernels.primitives import (
    inline, clamp_abs, dd_add, dd_div, dd_mul, dd_mul_d, fma, horner_dd, is_finite,
    mul_tail_or_complement, nan_to_zero, normalised, one_minus_dd, pow2,
    restore_inf, scaled_mul, stand_in, two_prod, two_sum,
)
from gelu_numba.tables.approximations import (
    CAUCHY_C, INV_PI,
)
from gelu_numba.tables.normal_cdf import A_MAX, PHI0_HI
from gelu_numba.tables.normal_cdf32_cpu_f64 import A32

_NAN = math.nan
_INF = math.inf
# |x - mu| > 2**10 sigma: |z| > A_MAX, Phi(z) is 0 or 1 in both formats
_FAR = 1024.0
# x and mu enter z scaled by sigma's power of two: below 2**-800 (relative
# to sigma) they are dropped from z (they move it by less than 2**-799, and
# their double-double error terms would reach the subnormal range); above
# 2**1000 they are clamped (|z| is then far beyond the tables unless x = mu,
# and equal inputs stay equal)
_Z_DROP = -800
_Z_CLAMP = 1000
# exp_dd and scaled_mul need a <= 1500 (k >= -2200); x e**-1500 is 0 for
# every double x
_LAPLACE_AMAX = 1500.0
# |x| >= 2**60: atan(1/|x|) = 1/|x| and x F_C(x) is -1/pi or x, rounded
_CAUCHY_BIG = 2.0**60
_CAUCHY_C_LO = (0.0,) * len(CAUCHY_C)


# ------------------------------------------------------------- gelu_general

@inline
def _general_inputs(x, mu, sigma):
    """Finite stand-ins: x and mu are replaced by 0 where either is
    infinite or NaN (:func:`_general_finish` then supplies the limit or
    NaN); ``s`` is the sigma used by the smooth path."""
    ok = is_finite(x) and is_finite(mu)
    xs = x if ok else 0.0
    ms = mu if ok else 0.0
    ss = nan_to_zero(sigma)
    s = ss if ss > 0.0 and ss < _INF else 1.0
    return xs, ms, ss, s


@inline
def _over_sigma(v, es):
    """``v 2**-es`` exactly, 0 below 2**-800 and clamped above 2**1000."""
    m, e = normalised(v)
    ez = e - es
    scaled = m * pow2(min(max(ez, -1022), _Z_CLAMP))
    return scaled if ez >= _Z_DROP else 0.0


@inline
def _general_finish(r, x, mu, sigma, xs, ms, ss, far):
    """The limits and invalid cases shared by both precisions."""
    zero = math.copysign(0.0, x)
    r = r if not far else (xs if xs > ms else zero)
    # sigma = 0: x H(x - mu) with H(0) = 1/2, where x = mu makes r = x/2
    # already (z = 0); sigma = inf: z = 0 was used (no separate x/2, which
    # for a subnormal x would raise the underflow flag in every lane)
    r = r if ss != 0.0 else (xs if xs > ms else (r if xs == ms else zero))
    # infinite x: x Phi(+-inf), +inf or -0.0 (the sign of the x -> -inf limit)
    x_inf = abs(nan_to_zero(x)) == _INF
    # (copysign, not x > 0: an ordered comparison of a NaN lane raises invalid)
    r = r if not x_inf else (x if math.copysign(1.0, x) > 0.0 else -0.0)
    # infinite mu: x Phi(-+inf), a zero with x's sign or x
    mu_inf = abs(nan_to_zero(mu)) == _INF
    r = r if not mu_inf else (zero if math.copysign(1.0, mu) > 0.0 else x)
    invalid = (not (x == x and mu == mu and sigma == sigma) or ss < 0.0
               or (x_inf and mu_inf) or (ss == _INF and (x_inf or mu_inf)))
    return r if not invalid else _NAN


def gelu_general_64(x, mu, sigma):
    """x Phi((x - mu)/sigma), the GELU of N(mu, sigma**2)."""
    xd, md, sd = np.float64(x), np.float64(mu), np.float64(sigma)
    xs, ms, ss, s = _general_inputs(xd, md, sd)
    # z = (x - mu)/sigma with x, mu and sigma scaled by sigma's power of two
    # (z is unchanged; every term of the dd division stays a normal double)
    sm, es = normalised(s)
    dh, dl = two_sum(_over_sigma(xs, es), -_over_sigma(ms, es))
    # far: Phi(z) is 0 or 1 (sigma = inf has z = 0 however far x is from mu)
    far = abs(dh) > _FAR * sm and ss != _INF
    # z = 0 wherever the smooth path's value is not used (sigma = inf: x/2
    # from z = 0; sigma 0, negative or NaN: the limit or NaN at the end), so
    # that it raises no flag there
    zero_z = far or not (ss > 0.0 and ss < _INF)
    zh, zl = dd_div(dh if not zero_z else 0.0, dl if not zero_z else 0.0, sm, 0.0)
    neg = zh < 0.0
    ah = clamp_abs(zh, A_MAX)
    # the low part goes with ah unless ah was clamped or flushed to 0
    al = (-zl if neg else zl) if ah > 0.0 and ah < A_MAX else 0.0
    qh, ql = dd_mul(ah, al, ah, al)
    eh, el, k = exp_dd(-0.5 * qh, -0.5 * ql)
    rh, rl = tail_ratio_dd(ah)
    # R(ah + al) = R(ah) + al R'(ah), R' = a R - phi0; the al**2 term is 2**-106
    rh, rl = dd_add(rh, rl, al * (ah * rh - PHI0_HI), 0.0)
    qh, ql = dd_mul(eh, el, rh, rl)
    r = mul_tail_or_complement(xs, neg, qh, ql, k)
    return _general_finish(r, xd, md, sd, xs, ms, ss, far)


def gelu_general_32(x, mu, sigma):
    """x Phi((x - mu)/sigma), float32 result (float64 arithmetic)."""
    xd, md, sd = np.float64(x), np.float64(mu), np.float64(sigma)
    xs, ms, ss, s = _general_inputs(xd, md, sd)
    # float32 inputs: no quotient here under- or overflows in float64
    dh = xs - ms
    far = abs(dh) > _FAR * s and ss != _INF
    # z = 0 for sigma = inf, and where the smooth value is replaced at the
    # end (far; sigma 0, negative or NaN): no flag from an unused value
    z = (dh if not (far or not (ss > 0.0 and ss < _INF)) else 0.0) / s
    q = normal32_cpu_f64.upper_tail(clamp_abs(z, A32, 0.0), normal32_cpu_f64.TABLES)
    # where the result is NaN (sigma < 0 or NaN) the product is not used,
    # but the vectorised loop may round both arms to float32 before the
    # select: x = 0 there keeps a tiny x/2 from raising underflow
    xv = xs if sd == sd and ss >= 0.0 else 0.0
    r = xv * q if z < 0.0 else xv * (1.0 - q)
    r = r if abs(z) < A32 or z > 0.0 else 0.0 * xv
    return _general_finish(r, xd, md, sd, xs, ms, ss, far)


# -------------------------------------------------------------------- LaLU

@inline
def _laplace_parts(xs):
    a = clamp_abs(xs, _LAPLACE_AMAX)
    eh, el, k = exp_dd(-a, 0.0)
    return a, eh, el, k


def lalu(x):
    """x F(x), F the standard Laplace CDF (the "LaLU")."""
    xd = np.float64(x)
    xs = stand_in(nan_to_zero(xd))
    a, eh, el, k = _laplace_parts(xs)
    # below -1500, x e**x/2 rounds to -0.0: the factor -0.0 gives it exactly
    y = xs if xs > -_LAPLACE_AMAX else -0.0
    r = mul_tail_or_complement(y, xs < 0.0, 0.5 * eh, 0.5 * el, k)
    r = restore_inf(r, xs, xd)
    return r if xd == xd else xd


def lalu_grad(x):
    """Derivative of the LaLU: F(x) + x e**-|x|/2."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a, eh, el, k = _laplace_parts(xs)
    ih, il = two_sum(1.0, -a)               # exact next to the zero a = 1
    gh, gl = dd_mul(eh, el, 0.5 * ih, 0.5 * il)
    # the derivative at -inf is -0.0: a zero factor (1 - a < 0 gives the sign)
    r = mul_tail_or_complement(0.0 if xs == -_INF else 1.0, xs < 0.0, gh, gl, k)
    return r if xd == xd else xd


# ------------------------------------------------------------------ Cauchy

@inline
def _recip_dd(a):
    """1/a as a dd (a >= 1)."""
    yh = 1.0 / a
    return yh, fma(-yh, a, 1.0) / a


@inline
def _atan_recip_over_pi(a):
    """atan(1/a)/pi as a dd, a > 1 (1/a carried as a dd)."""
    yh, yl = _recip_dd(a)
    at = math.atan(yh) + yl / (1.0 + yh * yh)
    return dd_mul_d(INV_PI[0], INV_PI[1], at)


@inline
def _cauchy_cdf(xs):
    """F_C(xs) as a dd, for finite |xs| < 2**60."""
    a = abs(xs)
    ch, cl = dd_mul_d(INV_PI[0], INV_PI[1], math.atan(xs))
    ch, cl = dd_add(0.5, 0.0, ch, cl)
    vh, vl = _atan_recip_over_pi(max(a, 1.0))
    wh, wl = one_minus_dd(vh, vl)
    fh = ch if a <= 1.0 else (vh if xs < 0.0 else wh)
    fl = cl if a <= 1.0 else (vl if xs < 0.0 else wl)
    return fh, fl


@inline
def _cauchy_arg(xc):
    """The argument of F_C: xc, or 0 below 2**-200 (see ``clamp_abs``)."""
    return math.copysign(clamp_abs(xc, _CAUCHY_BIG), xc)


def x_cauchy(x):
    """x F(x), F the standard Cauchy CDF: tends to -1/pi as x -> -inf."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    big = abs(xs) >= _CAUCHY_BIG
    xc = xs if not big else 0.0
    fh, fl = _cauchy_cdf(_cauchy_arg(xc))
    r = scaled_mul(xc, fh, fl, np.int64(0))
    r = r if not big else (xs if xs > 0.0 else -INV_PI[0])
    return r if xd == xd else xd


@inline
def _cauchy_c(th, tl):
    """C(t) for a dd ``0 <= t <= 1``: the polynomial in ``2t - 1``, in dd."""
    sh, sl = dd_add(2.0 * th, 2.0 * tl, -1.0, 0.0)
    return horner_dd(sh, sl, CAUCHY_C, _CAUCHY_C_LO)


def x_cauchy_grad(x):
    """Derivative of x F_C(x): F_C(x) + x/(pi (1 + x**2))."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    big = abs(xs) >= _CAUCHY_BIG
    xc = _cauchy_arg(xs if not big else 0.0)
    a = abs(xc)
    fh, fl = _cauchy_cdf(xc)
    # w = a/(1 + a**2) = y/(1 + y**2), y = 1/a
    sh, sl = two_prod(a, a)
    sh, sl = dd_add(1.0, 0.0, sh, sl)
    wh, wl = dd_div(a, 0.0, sh, sl)
    wh, wl = dd_mul(wh, wl, INV_PI[0], INV_PI[1])
    pos_h, pos_l = dd_add(fh, fl, wh, wl)
    # x < 0, |x| < 1: F_C(x) - w/pi, at most a 2.75-fold cancellation
    near_h, near_l = dd_add(fh, fl, -wh, -wl)
    # x < 0, |x| >= 1: y**3 C(y**2)/pi, no cancellation
    yh, yl = _recip_dd(max(a, 1.0))
    th, tl = dd_mul(yh, yl, yh, yl)
    ch, cl = _cauchy_c(th, tl)
    ch, cl = dd_mul(ch, cl, th, tl)
    ch, cl = dd_mul(ch, cl, yh, yl)
    ch, cl = dd_mul(ch, cl, INV_PI[0], INV_PI[1])
    neg = near_h + near_l if a < 1.0 else ch + cl
    r = pos_h + pos_l if xc >= 0.0 else neg
    r = r if not big else (1.0 if xs > 0.0 else 0.0)
    return r if xd == xd else xd
