"""Scalar kernels of the paper's generalisations: ``x Phi((x - mu)/sigma)``
and ``x F(x)`` for the Laplace and Cauchy CDFs (the logistic one, the SiLU,
is in :mod:`gelu_numba.kernels.logistic`).

Method
------
* ``gelu_general``: ``z = (x - mu)/sigma`` as a double-double (``x - mu`` is
  exact as a dd, then one dd division), ``a = |z|``, and
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
correction leaves ``al**2`` terms, 2**-106); the LaLU: 0.5 ulp + 2**-50;
the Cauchy forms: the C library's atan error (below 1 ulp) plus 0.5 ulp.
float32 results: below 0.5 + 2**-14 ulp.  Measured: README.
"""

import math

import numpy as np
from numba import njit

from gelu_numba.kernels import normal32
from gelu_numba.kernels.normal import exp_dd, tail_or_complement, tail_poly, unscale
from gelu_numba.kernels.primitives import (
    dd_add, dd_div, dd_mul, dd_mul_d, fma, horner_dd, mul_round, nan_to_zero,
    one_minus_dd, restore_inf, scaled_mul, stand_in, two_prod, two_sum,
)
from gelu_numba.tables.approximations import (
    CAUCHY_C, INV_PI,
)
from gelu_numba.tables.normal_cdf import A_MAX, PHI0_HI, R_HI, R_LO
from gelu_numba.tables.normal_cdf32 import A32

_NAN = math.nan
_INF = math.inf
# finite stand-in for infinite x or mu (the limits are restored at the end)
_BIG = 2.0**1000
# |x - mu| > 2**10 sigma: |z| > A_MAX, Phi(z) is 0 or 1 in both formats
_FAR = 2.0**-10
# exp_dd and scaled_mul need a <= 1500 (k >= -2200); x e**-1500 is 0 for
# every double x
_LAPLACE_AMAX = 1500.0
# |x| >= 2**60: atan(1/|x|) = 1/|x| and x F_C(x) is -1/pi or x, rounded
_CAUCHY_BIG = 2.0**60
_CAUCHY_C_LO = (0.0,) * len(CAUCHY_C)


# ------------------------------------------------------------- gelu_general

@njit(inline="always")
def _stand_in(v):
    return v if abs(v) < _BIG else math.copysign(_BIG, v)


@njit(inline="always")
def _general_inputs(x, mu, sigma):
    """NaN-free, finite stand-ins; ``s`` the sigma used by the smooth path
    and ``far`` where |z| is beyond every table."""
    xs = _stand_in(nan_to_zero(x))
    ms = _stand_in(nan_to_zero(mu))
    ss = nan_to_zero(sigma)
    s = ss if ss > 0.0 and ss < _INF else 1.0
    dh, dl = two_sum(xs, -ms)
    far = abs(dh) * _FAR > s
    return xs, ss, s, dh, dl, far


@njit(inline="always")
def _general_finish(r, x, mu, sigma, xs, ss, dh, far):
    """The limits and invalid cases shared by both precisions."""
    zero = math.copysign(0.0, xs)
    r = r if not far else (xs if dh > 0.0 else zero)
    # sigma = 0: x H(x - mu) with H(0) = 1/2;  sigma = inf: z = 0
    step = xs if dh > 0.0 else (0.5 * xs if dh == 0.0 else zero)
    r = r if ss != 0.0 else step
    r = r if ss != _INF else 0.5 * xs
    # infinite x: x (Phi > 0) or the signed zero of the x -> -inf limit
    x_inf = abs(xs) == _BIG
    r = r if not x_inf else (x if r > 0.0 else zero)
    mu_inf = abs(nan_to_zero(mu)) == _INF
    invalid = (not (x == x and mu == mu and sigma == sigma) or ss < 0.0
               or (x_inf and mu_inf) or (ss == _INF and (x_inf or mu_inf)))
    return r if not invalid else _NAN


def gelu_general_64(x, mu, sigma):
    """x Phi((x - mu)/sigma), the GELU of N(mu, sigma**2)."""
    xd, md, sd = np.float64(x), np.float64(mu), np.float64(sigma)
    xs, ss, s, dh, dl, far = _general_inputs(xd, md, sd)
    zh, zl = dd_div(dh if not far else 0.0, dl if not far else 0.0, s, 0.0)
    neg = zh < 0.0
    ah = min(abs(zh), A_MAX)
    al = (-zl if neg else zl) if abs(zh) < A_MAX else 0.0
    qh, ql = dd_mul(ah, al, ah, al)
    eh, el, k = exp_dd(-0.5 * qh, -0.5 * ql)
    rh, rl = tail_poly(ah, R_HI, R_LO)
    # R(ah + al) = R(ah) + al R'(ah), R' = a R - phi0; the al**2 term is 2**-106
    rh, rl = dd_add(rh, rl, al * (ah * rh - PHI0_HI), 0.0)
    qh, ql = dd_mul(eh, el, rh, rl)
    xn = xs if abs(zh) < A_MAX else 0.0 * xs
    lower = scaled_mul(xn, qh, ql, k)
    uh, ul = unscale(qh, ql, k)
    ph, pl = one_minus_dd(uh, ul)
    r = lower if neg else mul_round(xs, ph, pl)
    return _general_finish(r, xd, md, sd, xs, ss, dh, far)


def gelu_general_32(x, mu, sigma):
    """x Phi((x - mu)/sigma), float32 result (float64 arithmetic)."""
    xd, md, sd = np.float64(x), np.float64(mu), np.float64(sigma)
    xs, ss, s, dh, dl, far = _general_inputs(xd, md, sd)
    z = (dh if not far else 0.0) / s
    q = normal32.upper_tail(min(abs(z), A32))
    r = xs * q if z < 0.0 else xs * (1.0 - q)
    r = r if abs(z) < A32 or z > 0.0 else 0.0 * xs
    return _general_finish(r, xd, md, sd, xs, ss, dh, far)


# -------------------------------------------------------------------- LaLU

@njit(inline="always")
def _laplace_parts(xs):
    a = min(abs(xs), _LAPLACE_AMAX)
    eh, el, k = exp_dd(-a, 0.0)
    return a, eh, el, k


def lalu(x):
    """x F(x), F the standard Laplace CDF (the "LaLU")."""
    xd = np.float64(x)
    xs = stand_in(nan_to_zero(xd))
    a, eh, el, k = _laplace_parts(xs)
    xn = max(xs, -_LAPLACE_AMAX)
    neg = scaled_mul(xn, 0.5 * eh, 0.5 * el, k)
    uh, ul = unscale(0.5 * eh, 0.5 * el, k)
    ph, pl = one_minus_dd(uh, ul)
    r = neg if xs < 0.0 else mul_round(xs, ph, pl)
    r = restore_inf(r, xs, xd)
    return r if xd == xd else xd


def lalu_grad(x):
    """Derivative of the LaLU: F(x) + x e**-|x|/2."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a, eh, el, k = _laplace_parts(xs)
    ih, il = two_sum(1.0, -a)               # exact next to the zero a = 1
    gh, gl = dd_mul(eh, el, 0.5 * ih, 0.5 * il)
    r = tail_or_complement(xs < 0.0, gh, gl, k)
    return r if xd == xd else xd


# ------------------------------------------------------------------ Cauchy

@njit(inline="always")
def _recip_dd(a):
    """1/a as a dd (a >= 1)."""
    yh = 1.0 / a
    return yh, fma(-yh, a, 1.0) / a


@njit(inline="always")
def _atan_recip_over_pi(a):
    """atan(1/a)/pi as a dd, a > 1 (1/a carried as a dd)."""
    yh, yl = _recip_dd(a)
    at = math.atan(yh) + yl / (1.0 + yh * yh)
    return dd_mul_d(INV_PI[0], INV_PI[1], at)


@njit(inline="always")
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


def x_cauchy(x):
    """x F(x), F the standard Cauchy CDF: tends to -1/pi as x -> -inf."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    big = abs(xs) >= _CAUCHY_BIG
    xc = xs if not big else 0.0
    fh, fl = _cauchy_cdf(xc)
    r = mul_round(xc, fh, fl)
    r = r if not big else (xs if xs > 0.0 else -INV_PI[0])
    return r if xd == xd else xd


@njit(inline="always")
def _cauchy_c(th, tl):
    """C(t) for a dd ``0 <= t <= 1``: the polynomial in ``2t - 1``, in dd."""
    sh, sl = dd_add(2.0 * th, 2.0 * tl, -1.0, 0.0)
    return horner_dd(sh, sl, CAUCHY_C, _CAUCHY_C_LO)


def x_cauchy_grad(x):
    """Derivative of x F_C(x): F_C(x) + x/(pi (1 + x**2))."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    big = abs(xs) >= _CAUCHY_BIG
    xc = xs if not big else 0.0
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
