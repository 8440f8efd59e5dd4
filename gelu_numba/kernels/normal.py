"""Scalar kernels: the normal CDF and density, GELU and its derivatives.

Method
------
Everything is reduced to ``a = |x|`` and three smooth functions
(coefficients in ``gelu_numba/tables/normal_cdf.py``)::

    E(a) = exp(-a**2/2)                 (double-double, times 2**k)
    R(a) = Phi(-a) / E(a) = erfcx(a/sqrt 2)/2
    H(a) = (R(a) - a phi0) / (a - z0),  phi0 = 1/sqrt(2 pi),  z0 = -x0

so that, with ``Q = E R = Phi(-a)``::

    x < 0:  Phi(x) = Q,                 GELU(x) = x Q,
            GELU'(x) = E (a - z0) H
    x >= 0: Phi(x) = 1 - Q,             GELU(x) = x (1 - Q),
            GELU'(x) = 1 - E (a - z0) H
    phi(x) = phi0 E,   GELU''(x) = phi0 E (2 - a**2).

This avoids each trap of the gelu-numba repository's ``docs/numerics.md``:
no ``1 + erf`` cancellation (Q is computed directly); the argument of the
exponential is ``a**2/2`` carried exactly as ``p + pe`` (``two_prod``);
``exp`` reduces ``s = -a**2/2`` by ``k ln 2`` with a 135-bit ``ln 2`` and
returns a double-double; the zeros of GELU' (``x0``) and of GELU''
(``+-sqrt 2``) are factors evaluated exactly (``a - z0`` and ``2 - a**2`` as
double-doubles); underflow is handled by keeping the mantissa and the power
of two apart until a single final scaling (:func:`scaled_mul`).

R and H need no table: in Weideman's variable ``t = (a - 4)/(a + 4)``,
which maps ``[0, inf)`` onto ``[-1, 1)`` and in which erfcx is analytic,
each is two polynomials, one for ``a < 4`` (``t < 0``) and one for
``a >= 4``, in ``v = t -+ 1/2`` (``|v| <= 1/2``).  The loop computes both
coefficient choices as selects (blends), so no element reads a table row
(the 110-interval tables of earlier versions cost 19 gathers an element:
half the time of the loop).  ``t`` costs one division, carried as a dd
(:func:`tail_variable`).  Every polynomial is generated straight-line code
(:func:`gelu_numba.kernels.primitives.polynomials.poly_dd_source`): the high-order terms
in plain float64 by Estrin's scheme (the loop is bound by the latency of
its dependency chains, not by its instruction count), the first few in
"lean" double-double steps.

Error bound
-----------
Relative errors, each checked against mpmath (the repository's
``tests/test_tables.py`` and the generator's certification):

* approximation, polynomials as stored: R 2**-60.8, H 2**-60.0, exp 2**-60.4
  (the table header: the generator's certification);
* evaluation: the plain part's rounding errors are scaled by ``|v|**n``
  (``n`` = 5 lean steps for R, 4 for H, 3 for exp; ``|v| <= 1/2``,
  ``|r| <= 0.347``); the lean steps add about 2**-104 each; the low part of
  ``v`` (the division's rounding error, ``<= 2**-52``) enters the lean
  steps, and the first-order term it leaves out, ``vl v**n S_n'(v)``, is
  below 2**-60.  With the division, R, H and E stay below 2**-59 (the
  repository's ``tests/test_tables.py`` measures and asserts it);
* ``a - z0`` is a double-double within 2**-104 relative of its exact value
  however close a is to z0 (z0 is stored in three parts: with two, the part
  left out is 2**-54.6 of ``a - z0`` at the double nearest x0, which cost
  the fused backward up to 0.81 ulp there);
* the double-double products, the final one by ``x`` or ``dy`` included,
  add 2**-100.

Each float64 result, the fused ``dy * GELU'(x)`` for every finite dy
included, is therefore ``(1 + d) * exact`` with ``|d| < 2**-57`` before its
single final rounding: at most 0.5 + 2**-4 ulp, below 1 ulp everywhere; a
subnormal result is scaled once from the double-double
(:func:`mul_tail_or_complement`, :func:`scaled_mul`), so it too is rounded
once.  Measured (the mpmath table, the repository's ``python -m
analysis.accuracy``): see :mod:`gelu_numba.measured` and the site's results pages; the
fused backward is checked at many dy next to x0 (the repository's
``tests/test_backward_x0.py``).  These kernels serve the float64 loops, and
the correctly rounded float32 loops as their accurate path
(:mod:`gelu_numba.kernels.rounded32`, whose fast path is the cheaper
:mod:`gelu_numba.kernels.normal32_cpu_f64`): on float32 values they give at
most 0.5 + 2**-28 float32 ulp, and their value rounds correctly unless it is
a float32 midpoint.

Each kernel is a plain Python function of scalars, compiled by
``gelu_numba.targets`` into ufuncs (and device functions) for every target.
"""

import math

import numpy as np

from gelu_numba.kernels.primitives import (
    inline, SHIFTER, clamp_abs, dd_add, dd_mul, fast_two_sum, first_piece, float64_bits, fma,
    is_finite, make_poly_dd, mul_tail_or_complement, nan_to_zero, restore_inf,
    scaled_mul, shifted_int, stand_in, two_prod, two_sum,
)
from gelu_numba.tables.normal_cdf import (
    A_MAX, C_T, EXP_EXACT_STEPS, EXP_PIECES, H_EXACT_STEPS, H_PIECES,
    INV_LN2, LN2_1, LN2_2, LN2_3, PHI0_HI, PHI0_LO, R_EXACT_STEPS, R_PIECES,
    Z0_HI, Z0_LO, Z0_LO2,
)

# the polynomials, as straight-line code with literal coefficients (the
# CUDA target reads them from constant memory: primitives.polynomials.make_poly_dd)
_exp_poly = make_poly_dd("exp_poly", EXP_PIECES, EXP_EXACT_STEPS, dd_variable=False)
r_poly = make_poly_dd("r_poly", R_PIECES, R_EXACT_STEPS)
_h_poly = make_poly_dd("h_poly", H_PIECES, H_EXACT_STEPS)
# their first pieces, for the ordinary forms (a < 4)
_r_poly_first = first_piece(r_poly, "r_poly_first", R_PIECES, R_EXACT_STEPS)
_h_poly_first = first_piece(_h_poly, "h_poly_first", H_PIECES, H_EXACT_STEPS)

_INF = math.inf
_NAN = math.nan


@inline
def exp_neg_half_sq_dd(a):
    """``exp(-a**2/2) = (eh + el) * 2**k`` for ``0 <= a <= A_MAX``, with
    ``a**2`` carried exactly (``two_prod``).

    Relative error of ``eh + el`` below 2**-59 (the repository's
    ``tests/test_tables.py``; ``k`` is exact).
    """
    p, pe = two_prod(a, a)
    return exp_dd(-0.5 * p, -0.5 * pe)


@inline
def exp_dd(s, se):
    """``exp(s + se) = (eh + el) * 2**k`` for a dd ``s + se`` with
    ``-2800 < s <= 0.35`` (``|k| < 2**12`` keeps ``k LN2_1`` exact).

    Relative error of ``eh + el`` below 2**-59 (the repository's
    ``tests/test_tables.py``; ``k`` is exact).
    """
    kb = s * INV_LN2 + SHIFTER
    kf = kb - SHIFTER
    # s - kf*LN2_1 is exact (Sterbenz); the rest is carried as a dd (rh, rl)
    r1 = s - kf * LN2_1
    rh, rl = two_sum(r1, -kf * LN2_2)
    rl = rl + (se - kf * LN2_3)
    eh, el = _exp_poly(rh, False)
    # exp(rh + rl) = exp(rh) (1 + rl) to within rl**2/2 < 2**-80 (rl is not
    # small beside rh: it carries the error of a**2, up to 2**-43)
    el = fma(eh, rl, el)
    eh, el = fast_two_sum(eh, el)
    return eh, el, shifted_int(kb)


@inline
def tail_variable(a, ordinary=False):
    """``v = t - t_c`` as an unnormalised dd, for ``t = (a - 4)/(a + 4)`` and
    ``t_c = -1/2`` if ``a < 4`` (``upper`` false), ``+1/2`` otherwise.

    ``v = (1 - t_c) - 8 w`` with ``w = 1/(a + 4)`` carried as a dd: the sum
    ``a + 4`` exactly (:func:`two_sum`), the quotient with its residual
    (``fma``), so ``|vl|`` is at most the division's rounding error,
    ``2**-53 * 8 w <= 2**-52``, and ``vh + vl`` is within 2**-100 of v.
    ``1.5 - 8 w`` is exact (Sterbenz: ``1 <= 8 w <= 2``); ``0.5 - 8 w``
    is exact for ``8 w >= 1/4`` and a :func:`fast_two_sum` below.
    ``ordinary`` (a constant): ``a < 4`` is known (:func:`in_range`).
    """
    sh, sl = two_sum(a, C_T)
    wh = 1.0 / sh
    wl = (fma(-sh, wh, 1.0) - sl * wh) * wh
    upper = False if ordinary else a >= C_T
    vh, vl = fast_two_sum(0.5 if upper else 1.5, -2.0 * C_T * wh)
    return vh, vl - 2.0 * C_T * wl, upper


@inline
def tail_ratio_dd(a, ordinary=False):
    """``R(a) = Phi(-a) exp(a**2/2)`` for ``0 <= a <= A_MAX``: an
    unnormalised dd, relative error below 2**-57.5."""
    vh, vl, upper = tail_variable(a, ordinary)
    if ordinary:
        return _r_poly_first(vh, vl)
    return r_poly(vh, vl, upper)


@inline
def grad_ratio_dd(a, ordinary=False):
    """``H(a) = (R(a) - a phi0)/(a - z0)`` for ``0 <= a <= A_MAX``: an
    unnormalised dd, relative error below 2**-58."""
    vh, vl, upper = tail_variable(a, ordinary)
    if ordinary:
        return _h_poly_first(vh, vl)
    return _h_poly(vh, vl, upper)


@inline
def upper_tail_dd(a, ordinary=False):
    """``Q(a) = Phi(-a) = (qh + ql) * 2**k`` (mantissa relative error < 2**-57)."""
    eh, el, k = exp_neg_half_sq_dd(a)
    rh, rl = tail_ratio_dd(a, ordinary)
    qh, ql = dd_mul(eh, el, rh, rl)
    return qh, ql, k


@inline
def grad_tail_dd(a, ordinary=False):
    """``G(a) = E(a) (a - z0) H(a) = (gh + gl) * 2**k``: GELU'(-a), with its
    zero at ``a = z0`` as an exact factor.

    ``a - z0`` is a dd with relative error below 2**-104 however close a is
    to z0: ``a - Z0_HI`` is exact there (Sterbenz) and z0 is carried in
    three parts (with two, the 2**-109 left out would be 2**-53 of
    ``a - z0`` at the double nearest z0).
    """
    eh, el, k = exp_neg_half_sq_dd(a)
    hh, hl = grad_ratio_dd(a, ordinary)
    dh, dl = two_sum(a, -Z0_HI)
    dh, dl = dd_add(dh, dl, -Z0_LO, -Z0_LO2)
    gh, gl = dd_mul(dh, dl, hh, hl)
    gh, gl = dd_mul(eh, el, gh, gl)
    return gh, gl, k


# ------------------------------------------------------- the ordinary range
#
# The element loops (gelu_numba.targets.cpu) run each block of elements
# that are all in range (in_range) through the kernels' "ordinary" forms:
# the same operations on the same values, less the steps that only other
# inputs need (NaN and infinities, the a >= 4 pieces of R and H chosen by
# blends, the clamps of huge arguments, the scaling of results near the
# subnormal range).  Each step left out is an identity there, so the
# ordinary form returns the general form's bits (the gelu-numba repository's
# tests/test_ordinary.py compares them) and the error analysis above holds
# unchanged.  Below 4, R and H use their first piece; from 2**-900 (or 0) to
# 4 in |x|, and 2**-900 to 2**900 (or 0) in |dy|, every result is normal,
# far from both ends, as scaled_mul's ``normal`` needs.

#: bit patterns of the ordinary range's ends (the loops compare magnitudes
#: as integers: an ordered float comparison of NaN would raise "invalid")
_X_END = int(np.float64(C_T).view(np.uint64))
_TINY_END = int(np.float64(2.0**-900).view(np.uint64))
_HUGE_END = int(np.float64(2.0**900).view(np.uint64))
_MAGNITUDE = 0x7FFFFFFFFFFFFFFF


@inline
def _magnitude(x):
    return float64_bits(x) & np.uint64(_MAGNITUDE)


@inline
def in_range(x):
    """x in the ordinary range: ``2**-900 <= |x| < 4``, or 0."""
    m = _magnitude(x)
    return (m < np.uint64(_X_END)) & ((m >= np.uint64(_TINY_END)) | (m == np.uint64(0)))


@inline
def in_range_backward(dy, x):
    """(dy, x) in the fused backward's ordinary range: x in :func:`in_range`,
    ``2**-900 <= |dy| <= 2**900`` or 0."""
    m = _magnitude(dy)
    return in_range(x) & (m <= np.uint64(_HUGE_END)) & (
        (m >= np.uint64(_TINY_END)) | (m == np.uint64(0)))


@inline
def _ndtr(x, ordinary):
    xd = np.float64(x)
    xs = xd if ordinary else nan_to_zero(xd)
    qh, ql, k = upper_tail_dd(clamp_abs(xs, A_MAX), ordinary)
    # Phi(-inf) = 0 exactly: a zero factor, not the tail at A_MAX
    y = 1.0 if ordinary or xs != -_INF else 0.0
    r = mul_tail_or_complement(y, xs < 0.0, qh, ql, k, ordinary)
    return r if ordinary or xd == xd else xd


@inline
def _norm_pdf(x, ordinary):
    xd = np.float64(x)
    xs = xd if ordinary else nan_to_zero(xd)
    eh, el, k = exp_neg_half_sq_dd(clamp_abs(xs, A_MAX))
    mh, ml = dd_mul(eh, el, PHI0_HI, PHI0_LO)
    # phi(+-inf) = 0 exactly
    y = 1.0 if ordinary or is_finite(xs) else 0.0
    r = scaled_mul(y, mh, ml, k, ordinary)
    return r if ordinary or xd == xd else xd


@inline
def _gelu(x, ordinary):
    xd = np.float64(x)
    if ordinary:
        xs = xd
    else:
        # finite stand-in for NaN and +-inf, fixed up at the end
        xs = stand_in(nan_to_zero(xd))
    qh, ql, k = upper_tail_dd(clamp_abs(xs, A_MAX), ordinary)
    # below -A_MAX, |GELU(x)| < e**-1498 rounds to -0.0: the factor -0.0
    # gives it exactly (GELU(-inf) = -0.0 included)
    y = xs if ordinary or xs > -A_MAX else -0.0
    r = mul_tail_or_complement(y, xs < 0.0, qh, ql, k, ordinary)
    if ordinary:
        return r
    r = restore_inf(r, xs, xd)  # GELU(+inf) = +inf
    return r if xd == xd else xd


@inline
def _gelu_grad(x, ordinary):
    xd = np.float64(x)
    xs = xd if ordinary else nan_to_zero(xd)
    gh, gl, k = grad_tail_dd(clamp_abs(xs, A_MAX), ordinary)
    # GELU'(-inf) = -0.0: a zero factor (G < 0 far out gives the sign)
    y = 1.0 if ordinary or xs != -_INF else 0.0
    r = mul_tail_or_complement(y, xs < 0.0, gh, gl, k, ordinary)
    return r if ordinary or xd == xd else xd


@inline
def _gelu_backward(dy, x, ordinary):
    dyd = np.float64(dy)
    xd = np.float64(x)
    xs = xd if ordinary else nan_to_zero(xd)
    dy_finite = True if ordinary else is_finite(dyd)
    dys = dyd if dy_finite else 1.0
    gh, gl, k = grad_tail_dd(clamp_abs(xs, A_MAX), ordinary)
    neg = xs < 0.0
    # GELU'(-inf) is exactly -0: dy * -0.0 (G < 0 far out gives the sign)
    y = dys if ordinary or xs != -_INF else math.copysign(0.0, dys)
    r = mul_tail_or_complement(y, neg, gh, gl, k, ordinary)
    if ordinary:
        return r
    # infinite or NaN dy: the IEEE product with GELU'(x), whose sign (that of
    # the mantissa gh for x < 0, + for x >= 0) is all that matters; GELU' is
    # never 0 at a finite x.  A factor +-1, so that no lane overflows.
    r = r if dy_finite else dyd * (math.copysign(1.0, gh) if neg else 1.0)
    # and inf * GELU'(-inf) = inf * 0 = NaN
    r = r if dy_finite or xd != -_INF else _NAN
    return r if xd == xd else xd


@inline
def _gelu_grad2(x, ordinary):
    xd = np.float64(x)
    xs = xd if ordinary else nan_to_zero(xd)
    a = clamp_abs(xs, A_MAX)
    eh, el, k = exp_neg_half_sq_dd(a)
    p, pe = two_prod(a, a)
    # 2 - a**2 = (2 - p) - pe exactly: its zero at sqrt 2 costs nothing
    wh, wl = two_sum(2.0, -p)
    wh, wl = fast_two_sum(wh, wl - pe)
    mh, ml = dd_mul(eh, el, wh, wl)
    mh, ml = dd_mul(mh, ml, PHI0_HI, PHI0_LO)
    # GELU''(+-inf) = -0.0: a zero factor (2 - a**2 < 0 gives the sign)
    y = 1.0 if ordinary or is_finite(xs) else 0.0
    r = scaled_mul(y, mh, ml, k, ordinary)
    return r if ordinary or xd == xd else xd


# The kernels (general forms), then their ordinary forms: one body each.

def ndtr(x):
    """Standard normal CDF Phi(x)."""
    return _ndtr(x, False)


def norm_pdf(x):
    """Standard normal density phi(x)."""
    return _norm_pdf(x, False)


def gelu(x):
    """GELU(x) = x Phi(x)."""
    return _gelu(x, False)


def gelu_grad(x):
    """GELU'(x) = Phi(x) + x phi(x)."""
    return _gelu_grad(x, False)


def gelu_backward(dy, x):
    """Fused backward pass: dy * GELU'(x), rounded once."""
    return _gelu_backward(dy, x, False)


def gelu_grad2(x):
    """GELU''(x) = phi(x) (2 - x**2)."""
    return _gelu_grad2(x, False)


def ndtr_ordinary(x):
    return _ndtr(x, True)


def norm_pdf_ordinary(x):
    return _norm_pdf(x, True)


def gelu_ordinary(x):
    return _gelu(x, True)


def gelu_grad_ordinary(x):
    return _gelu_grad(x, True)


def gelu_backward_ordinary(dy, x):
    return _gelu_backward(dy, x, True)


def gelu_grad2_ordinary(x):
    return _gelu_grad2(x, True)
