"""Scalar kernels of the logistic forms ``x sigma(y(x))``: the tanh form of
GELU, the sigmoid form of GELU and the SiLU, with their derivatives.

Method
------
With ``t = |y| >= 0`` (y has the sign of x in all three forms) and
``E = exp(-t)``, which never overflows::

    x >= 0:  x sigma(y) = x / (1 + E)
    x <  0:  x sigma(y) = x E / (1 + E)

so the ``1 + tanh(u)`` cancellation of the negative tail never happens
(``tanh u = 2 sigma(2u) - 1``, hence ``0.5 x (1 + tanh u) = x sigma(2u)``).
The derivative is ``sigma(y) (1 + w sigma(-y))`` with ``w = x y'(x)`` (the
sign of x)::

    x >= 0:  (1 + E (1 + w)) / (1 + E)**2
    x <  0:  E (1 + E + w) / (1 + E)**2

The last form cancels at the derivative's zero ``x0``; within ``delta`` of
it the kernels use ``(x - x0) B(x - x0)`` instead, B a Taylor polynomial
generated in mpmath (:func:`~gelu_numba.kernels.primitives.polynomials.taylor_at_zero`).

float64 (``*_64``): ``exp(-t)`` is steep, so t is carried as a double-double
(``exp`` amplifies t's relative error by t, up to 1500 here: rounded t
would cost hundreds of ulps in the tail), E comes from the double-double
``exp_dd`` (2**-60), and every later operation is double-double with one
final rounding, and the subnormal range scaled once (``scaled_mul``).
float32 (``*_32``): the same formulas in plain float64 (relative error
below 2**-33.5 before the final rounding to float32: ``exp_plain``
of :mod:`gelu_numba.kernels.normal32_cpu_f64`, 2**-34 plus 2**-47 for ``|s| <= 200``).

Error bound
-----------
Against each form's own formula (``reference.approx`` in the gelu-numba
repository): float64 below 0.5 ulp + 2**-50 relative, except within
``delta`` of the derivative's zero, where the Taylor form's few roundings
give at most about 1.5 ulp; float32 below 0.5 + 2**-9 ulp.  Measured maxima: :mod:`gelu_numba.measured`.
"""

import math

import numpy as np

from gelu_numba.kernels.normal import exp_dd
from gelu_numba.kernels.normal32_cpu_f64 import TABLES, exp_plain
from gelu_numba.kernels.primitives import (
    inline, clamp_abs, dd_add, dd_div, dd_mul, dd_mul_d, nan_to_zero, scaled_mul,
    taylor_at_zero, two_prod, unscale,
)
from gelu_numba.tables.approximations import (
    SIGMOID_BETA, TANH_C2, TANH_K, TANH_K3, ZERO_SIGMOID, ZERO_SILU, ZERO_TANH,
)

_INF = math.inf
# exp_dd and scaled_mul work down to t = 1500 (k >= -2200); every form is
# evaluated at |x| clamped so that t stays below that, where its value has
# long been 0 or x in float64
_TANH_XMAX = 26.0                       # t = 1296
_SIG_XMAX = 880.0                       # t = 1498 for beta = 1.702
_SILU_XMAX = 1400.0
# float32 results: exp(-200) times any float32 is below half the smallest
# float32 subnormal, so t is clamped there (E stays a normal double)
_T32_MAX = 200.0
# the largest float32 is below it: only x = -inf is beyond
_F32_BIG = 3.5e38


@inline
def _clamp(x, m):
    x = x if x < m else m
    return x if x > -m else -m


@inline
def _forward_64(x, th, tl):
    """x sigma(y) for finite x, t = |y| = th + tl (dd)."""
    eh, el, k = exp_dd(-th, -tl)
    uh, ul = unscale(eh, el, k)
    dh, dl = dd_add(1.0, 0.0, uh, ul)
    neg = x < 0.0
    qh, ql = dd_div(eh if neg else 1.0, el if neg else 0.0, dh, dl)
    return scaled_mul(x, qh, ql, k if neg else np.int64(0))


@inline
def _grad_64(neg, th, tl, wh, wl):
    """sigma(y) (1 + w sigma(-y)) for t = |y| and w = x y'(x) (dds)."""
    eh, el, k = exp_dd(-th, -tl)
    uh, ul = unscale(eh, el, k)
    dh, dl = dd_add(1.0, 0.0, uh, ul)
    # x < 0: 1 + E + w;  x >= 0: 1 + E (1 + w)
    nh, nl = dd_add(dh, dl, wh, wl)
    ph, pl = dd_add(1.0, 0.0, wh, wl)
    ph, pl = dd_mul(uh, ul, ph, pl)
    ph, pl = dd_add(1.0, 0.0, ph, pl)
    fh = nh if neg else ph
    fl = nl if neg else pl
    fh, fl = dd_mul(fh, fl, eh if neg else 1.0, el if neg else 0.0)
    d2h, d2l = dd_mul(dh, dl, dh, dl)
    qh, ql = dd_div(fh, fl, d2h, d2l)
    return scaled_mul(1.0, qh, ql, k if neg else np.int64(0))


@inline
def _forward_32(x, t):
    e = exp_plain(-min(t, _T32_MAX), TABLES)
    # x = -inf: the factor -0.0 gives the limit -0.0 exactly (a product with
    # the largest float32 would be a float32 subnormal, see normal32_cpu_f64)
    xn = x if x > -_F32_BIG else -0.0
    return (x if x >= 0.0 else xn * e) / (1.0 + e)


@inline
def _grad_32(neg, t, w):
    e = exp_plain(-min(t, _T32_MAX), TABLES)
    d = 1.0 + e
    f = e * (d + w) if neg else 1.0 + e * (1.0 + w)
    return f / (d * d)


@inline
def _at_minus_inf_zero(xs):
    """A factor 0.0 at x = -inf, 1.0 elsewhere: a derivative's limit -0.0 at
    -inf as an exact zero (its value at the clamp would be a float32
    subnormal, an underflow flag in the float32 loop; see normal32_cpu_f64)."""
    return 0.0 if xs == -_INF else 1.0


@inline
def _finish(r, xs, zero, xd):
    """Select the Taylor form next to the zero, pass NaN through."""
    near, v = taylor_at_zero(xs, zero)
    r = v if near else r
    return r if xd == xd else xd


# ---------------------------------------------------------------- tanh form

@inline
def _tanh_tw(a):
    """t = 2u = C2 a (1 + K a**2) and |w| = C2 a (1 + 3K a**2), as dds."""
    sh, sl = two_prod(a, a)
    kh, kl = dd_mul(TANH_K[0], TANH_K[1], sh, sl)
    ph, pl = dd_add(1.0, 0.0, kh, kl)
    ph, pl = dd_mul_d(ph, pl, a)
    th, tl = dd_mul(TANH_C2[0], TANH_C2[1], ph, pl)
    kh, kl = dd_mul(TANH_K3[0], TANH_K3[1], sh, sl)
    ph, pl = dd_add(1.0, 0.0, kh, kl)
    ph, pl = dd_mul_d(ph, pl, a)
    wh, wl = dd_mul(TANH_C2[0], TANH_C2[1], ph, pl)
    return th, tl, wh, wl


def gelu_tanh_64(x):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3))) = x sigma(2u)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    xc = _clamp(xs, _TANH_XMAX)
    th, tl, _, _ = _tanh_tw(clamp_abs(xs, _TANH_XMAX))
    r = _forward_64(xc, th, tl)
    r = r if abs(xs) <= _TANH_XMAX else (xs if xs > 0.0 else -0.0)
    return r if xd == xd else xd


def gelu_tanh_grad_64(x):
    """Derivative of the tanh form."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    xc = _clamp(xs, _TANH_XMAX)
    th, tl, wh, wl = _tanh_tw(clamp_abs(xs, _TANH_XMAX))
    neg = xc < 0.0
    r = _grad_64(neg, th, tl, -wh if neg else wh, -wl if neg else wl)
    return _finish(r, xs, ZERO_TANH, xd)


@inline
def _tanh_tw_32(a):
    a2 = a * a
    return TANH_C2[0] * a * (1.0 + TANH_K[0] * a2), TANH_C2[0] * a * (1.0 + TANH_K3[0] * a2)


def gelu_tanh_32(x):
    """The tanh form, float32 result."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    t, _ = _tanh_tw_32(min(abs(xs), _TANH_XMAX))
    r = _forward_32(xs, t)
    return r if xd == xd else xd


def gelu_tanh_grad_32(x):
    """Derivative of the tanh form, float32 result."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    xc = _clamp(xs, _TANH_XMAX)
    neg = xc < 0.0
    t, w = _tanh_tw_32(abs(xc))
    r = _grad_32(neg, t, -w if neg else w) * _at_minus_inf_zero(xs)
    return _finish(r, xs, ZERO_TANH, xd)


# ------------------------------------------------- sigmoid form and SiLU

def _beta_kernels(beta, xmax, zero, name, doc):
    """x sigma(beta x) and its derivative sigma(y)(1 + y sigma(-y)), y = beta x,
    for float64 and float32 results."""
    bh, bl = beta

    def forward_64(x):
        xd = np.float64(x)
        xs = nan_to_zero(xd)
        xc = _clamp(xs, xmax)
        th, tl = dd_mul_d(bh, bl, clamp_abs(xs, xmax))
        r = _forward_64(xc, th, tl)
        r = r if abs(xs) <= xmax else (xs if xs > 0.0 else -0.0)
        return r if xd == xd else xd

    def grad_64(x):
        xd = np.float64(x)
        xs = nan_to_zero(xd)
        xc = _clamp(xs, xmax)
        th, tl = dd_mul_d(bh, bl, clamp_abs(xs, xmax))
        neg = xc < 0.0
        r = _grad_64(neg, th, tl, -th if neg else th, -tl if neg else tl)
        return _finish(r, xs, zero, xd)

    def forward_32(x):
        xd = np.float64(x)
        xs = nan_to_zero(xd)
        r = _forward_32(xs, bh * min(abs(xs), xmax))
        return r if xd == xd else xd

    def grad_32(x):
        xd = np.float64(x)
        xs = nan_to_zero(xd)
        xc = _clamp(xs, xmax)
        y = bh * xc
        r = _grad_32(xc < 0.0, abs(y), y) * _at_minus_inf_zero(xs)
        return _finish(r, xs, zero, xd)

    kernels = (forward_64, grad_64, forward_32, grad_32)
    for f, suffix in zip(kernels, ("_64", "_grad_64", "_32", "_grad_32")):
        f.__name__ = f.__qualname__ = name + suffix
        f.__doc__ = doc + (" (derivative)" if "grad" in suffix else "")
    return kernels


(gelu_sigmoid_64, gelu_sigmoid_grad_64,
 gelu_sigmoid_32, gelu_sigmoid_grad_32) = _beta_kernels(
    SIGMOID_BETA, _SIG_XMAX, ZERO_SIGMOID, "gelu_sigmoid", "x sigma(1.702 x)")

(silu_64, silu_grad_64, silu_32, silu_grad_32) = _beta_kernels(
    (1.0, 0.0), _SILU_XMAX, ZERO_SILU, "silu", "x sigma(x)")

