"""Scalar kernels for float32 results in float32 arithmetic (the GPU's float32
kernels): ndtr, norm_pdf, gelu, gelu_grad, gelu_grad2, gelu_backward.

Why a second float32 algorithm.  :mod:`gelu_numba.kernels.normal32_cpu_f64` computes
float32 results in float64, which the CPU runs at full speed and an H100 at
half its float32 rate, but most GPUs that ML users have (L4, A10, T4, RTX) at
1/32 to 1/64 of it.  These kernels use float32 operations only, with
float-float steps (a value carried as an unevaluated sum ``hi + lo`` of two
float32) where the bound needs them; compiled for CUDA they contain no
float64 instruction (the gelu-numba repository's ``tests/test_ptx.py``
counts them in the PTX).

Method, for ``a = |x| <= A_F32 = 20`` (beyond, every result has underflowed
or is exactly ``x``; special values first, by bits)
-------------------------------------------------------------------------
* ``exp(-a**2/2) = (eh + el) 2**k``: ``a**2 = h + l`` exactly (``l = fma(a,
  a, -h)``); ``k = round(-h/2 / ln 2)`` (rounding shifter); ``rh = -h/2 - k LN2_HI`` is exact (one
  FMA: ``LN2_HI`` is ln 2 rounded to float32 and ``|rh| <= 0.36``, so the
  result is a float32) and ``rl = -l/2 - k LN2_LO`` (``|rl| < 2**-17``);
  ``exp(rh) = 1 + rh + rh**2/2 + rh**3 P3(rh)`` with ``rh**2/2`` split exactly
  and the two leading sums in float-float, then the factor ``1 + rl``.
  ``P3``: the Taylor series of ``(exp(r) - 1 - r - r**2/2)/(r**3/2)`` to
  degree 5 (truncation below ``2**-31`` of ``exp(r)``).
* ``R(a) = erfcx(a/sqrt 2)/2 = t P_R(u)`` and ``H(a) = (R(a) - a phi0)/(a -
  z0) = P_H(u)`` with ``t = 1/(1 + a/2)`` (``1 + a/2`` a float-float sum, the
  quotient corrected to float-float by one FMA residual) and ``u = t - 1/2``
  (its rounding error recovered exactly); degree-12 polynomials in ``u``
  (``gelu_numba/tables/normal_cdf32_gpu32.py``, the repository's ``python -m
  fitting.make_tables32_gpu32``), float32 Horner steps up to ``u**2``
  and the last two in float-float, which also take the first-order effect
  of ``t``'s and ``u``'s low parts.
* ``Phi(-a) = E R``, ``GELU'(-a) = E (a - z0) H`` (``a - z0`` in float-float
  from three float32 parts of z0, so the zero stays a factor), every product
  a float-float product (one FMA for the error), the scaling by ``2**k`` last
  and in two or three exact power-of-two factors, so that a normal result is
  rounded once and a subnormal one at most twice.
* ``x >= 0``: ``GELU = x - x Phi(-a)``, ``Phi = 1 - Phi(-a)``, ``GELU' = 1 -
  GELU'(-a)`` by a float-float subtraction (``Phi(-a) <= 1/2``, ``|GELU'(-a)|
  < 1``: the larger operand is known).

Error bound
-----------
The value before the final rounding is ``exact * (1 + d)``.  The budget: the
stored polynomials ``2**-28.4`` (R) and ``2**-29.8`` (H) (table header,
evaluated exactly), their evaluation (float32 Horner steps up to ``u**2``,
whose share of the value ``|u**2 S(u)| / |P|`` stays below 0.1, then the
float-float steps, ``t`` and ``u``) near ``2**-27``, ``exp`` below ``2**-29``,
each float-float product about ``2**-44``, the final sum of a pair
``2**-48``: ``|d| < 2**-26``, so a normal result within ``0.5 + 2**-26 *
2**24 = 0.75`` ulp.  A subnormal result is rounded twice (to 24 bits before
the power-of-two scaling, then to its spacing): ``0.5 + 0.25 + 0.125``.  The
evaluation term is an estimate, not a proof, so the stated bound
:data:`BOUND` = 0.875 ulp is checked on every float32 input: the kernels
compiled for the CPU perform the same IEEE operations in the same order
(the repository's ``python -m analysis.sweep_float32 --kernels gpu32`` and
its ``analysis/results/sweep_float32_gpu32.json``):

<<gpu32_table>>

(gelu_backward with one pseudo-random ``dy`` per input, ``|dy|`` in ``[0.25,
4)``; the repository's ``tests/test_gpu32.py`` adds ``dy`` from ``2**-140`` to ``2**127``.)  Every worst case is a subnormal result.

Instructions per element: no float64 instruction at all (the repository's
``tests/test_ptx.py`` asserts it); the SASS of each launched kernel, per
element, beside the float64-arithmetic float32 kernels: the repository's
``python -m analysis.gpu.sass`` (``benchmarks/results/gpu_sass_sm90.md``).

CUDA compiles the same operations: every float32 product or sum that could
be contracted into an FMA is an explicit ``mul_rn``/``add_rn`` (PTX
``mul.rn.f32``/``add.rn.f32``, never fused), the FMAs are explicit, the
quotient is IEEE ``div.rn.f32`` and no fast-math flag is set, so the GPU
returns the bits that the sweep judged (the repository's ``tests/test_gpu.py``
checks it on a GPU, and under the simulator, where the helpers run as Python
on NumPy float32 scalars: :func:`~gelu_numba.kernels.primitives.bits32.inline_helper`).
"""

import numpy as np

from gelu_numba.figures import fill as _fill
from gelu_numba.kernels.primitives import (add_rn, float32_bits, float32_from_bits, fma32,
                                           horner32, inline_helper, mul_rn)
from gelu_numba.tables import normal_cdf32_gpu32 as tab

__doc__ = _fill(__doc__)

#: the stated bound in ulps: 0.5 + 2**-26 * 2**24 for a normal result; a
#: subnormal one is rounded twice (to 24 bits before the scaling, at most
#: 1/4 of its spacing, then to the spacing): 0.5 + 0.25 + 0.125
BOUND = 0.875

_f = np.float32
ZERO = _f(0.0)
ONE = _f(1.0)
HALF = _f(0.5)
NEG_HALF = _f(-0.5)
TWO = _f(2.0)
TWO_120 = _f(2.0**120)
TWO_M90 = _f(2.0**-90)
#: the domain clamp A_F32 = 20 as float32 bits (|x| and A compared as integers)
A = _f(tab.A_F32)
A_BITS = np.uint32(A.view(np.uint32))
INF_BITS = np.uint32(0x7F800000)
INF = _f(np.inf)
P_T = _f(tab.P_T)
T_C = _f(tab.T_C)
#: the low two coefficients of P_R, P_H as float32 (hi, lo); the others
#: highest power first, for Horner
R_C1 = tuple(_f(v) for v in tab.R_F32_PAIRS[1])
R_C0 = tuple(_f(v) for v in tab.R_F32_PAIRS[0])
R_REST = tuple(_f(v) for v in reversed(tab.R_F32_REST))
H_C1 = tuple(_f(v) for v in tab.H_F32_PAIRS[1])
H_C0 = tuple(_f(v) for v in tab.H_F32_PAIRS[0])
H_REST = tuple(_f(v) for v in reversed(tab.H_F32_REST))
#: z0 (GELU'(-z0) = 0) as three float32 parts, and phi0 = 1/sqrt(2 pi) as two
Z0_0, Z0_1, Z0_2 = (_f(v) for v in tab.Z0_F32)
PHI0_HI, PHI0_LO = (_f(v) for v in tab.PHI0_F32)
#: 1.5 * 2**23: adding it rounds a float32 below 2**22 in magnitude to an
#: integer (the rounding shifter)
SHIFTER = _f(12582912.0)
#: 1/ln 2 (any float32 near it: it only picks k); ln 2 = LN2_HI + LN2_LO,
#: LN2_HI = RN32(ln 2), LN2_LO = RN32(ln 2 - LN2_HI)
INV_LN2 = _f(1.4426950408889634)
LN2_HI = _f(0.6931471824645996)
LN2_LO = _f(0.6931471805599453 - 0.6931471824645996)
#: P3(r) = (exp(r) - 1 - r - r**2/2)/(r**3/2) = 2 (1/3! + r/4! + ... + r**5/8!),
#: highest power first
P3 = tuple(_f(2.0 / f) for f in (40320.0, 5040.0, 720.0, 120.0, 24.0, 6.0))


# ----------------------------------------------------------- float32 pieces

@inline_helper
def sub_rn(a, b):
    return add_rn(a, -b)


@inline_helper
def fast_two_sum32(a, b):
    """``s + e = a + b`` exactly, for ``|a| >= |b|``."""
    s = add_rn(a, b)
    return s, sub_rn(b, sub_rn(s, a))


@inline_helper
def _two_sum(a, b):
    """``s + e = a + b`` exactly (no condition on the magnitudes)."""
    s = add_rn(a, b)
    bb = sub_rn(s, a)
    return s, add_rn(sub_rn(a, sub_rn(s, bb)), sub_rn(b, bb))


@inline_helper
def pow2_32(k):
    """``2**k`` for an int32 ``-126 <= k <= 127``."""
    return float32_from_bits(np.uint32((k + np.int32(127)) << np.int32(23)))


@inline_helper
def scale2(y, k, kmin=np.int32(-156)):
    """``y 2**k`` for ``k <= 0`` in two power-of-two factors, exact unless
    the result is subnormal.  ``k`` is clamped to ``kmin >= -252``, which
    must leave ``|y| 2**kmin < 2**-151`` (a result that rounds to 0): the
    default -156 suits ``|y| < 16``."""
    k = max(k, kmin)
    k1 = k >> np.int32(1)
    return mul_rn(mul_rn(y, pow2_32(k1)), pow2_32(k - k1))


@inline_helper
def scale3(y, k):
    """``y 2**k`` for ``k <= 5`` in three power-of-two factors (``k`` clamped
    to -288, which leaves ``|y| < 2**128`` below ``2**-160``)."""
    k = max(k, np.int32(-288))
    k1 = (k * np.int32(21846)) >> np.int32(16)      # about k/3, in int32 (no division)
    k2 = (k - k1) >> np.int32(1)
    return mul_rn(mul_rn(mul_rn(y, pow2_32(k1)), pow2_32(k2)), pow2_32(k - k1 - k2))


@inline_helper
def exp_neg_half_sq(a):
    """``exp(-a**2/2) = (eh + el) 2**k`` for a float32 ``0 <= a <= A``:
    ``(eh, el, k)``, ``0.7 < eh < 1.42``, relative error below ``2**-29``."""
    h = mul_rn(a, a)
    l = fma32(a, a, -h)
    s = mul_rn(NEG_HALF, h)                         # exact
    kf = sub_rn(fma32(s, INV_LN2, SHIFTER), SHIFTER)  # round(s / ln 2)
    rh = fma32(kf, -LN2_HI, s)                      # exact (see the docstring)
    rl = fma32(kf, -LN2_LO, mul_rn(NEG_HALF, l))
    eh, el = exp_pair(rh, rl)
    return eh, el, np.int32(kf)


@inline_helper
def exp_pair(rh, rl):
    """``exp(rh + rl) = eh + el`` for ``|rh| <= 0.37`` and ``|rl| < 2**-17``
    (``exp(rl) = 1 + rl`` to within ``rl**2``): relative error below
    ``2**-29``."""
    hr = mul_rn(HALF, rh)
    wh = mul_rn(hr, rh)                             # rh**2/2 = wh + wl exactly
    wl = fma32(hr, rh, -wh)
    c = fma32(mul_rn(rh, wh), horner32(P3, rh), wl)
    v, ve = fast_two_sum32(rh, wh)                   # |rh| >= rh**2/2
    eh, ee = fast_two_sum32(ONE, v)                  # |v| < 1
    eh, el = fast_two_sum32(eh, add_rn(ee, add_rn(ve, c)))   # c is up to 1 % of eh
    return eh, fma32(eh, rl, el)


@inline_helper
def _tail_variable(a):
    """``t = th + tl = 1/(1 + a/2)``, ``u = t - 1/2`` rounded, and ``du``,
    the low part of ``u`` (``tl`` and ``u``'s rounding error)."""
    ha = mul_rn(P_T, a)                             # exact (a power of two)
    dh = add_rn(ONE, ha)
    dl = add_rn(sub_rn(max(ONE, ha), dh), min(ONE, ha))   # fast two-sum's error
    th = ONE / dh
    tl = mul_rn(th, fma32(-th, dl, fma32(-th, dh, ONE)))
    u = sub_rn(th, T_C)
    eu = sub_rn(th, add_rn(u, T_C))                   # exact: |T_C| >= th or exact u
    return th, tl, u, add_rn(tl, eu)


@inline_helper
def _dd_step(sh, sl, u, du, ch, cl):
    """One Horner step ``c + u s`` in float-float: ``u`` has the low part
    ``du``, ``s`` and ``c`` are pairs, and ``|c| >= |u s|``."""
    m = mul_rn(sh, u)
    me = fma32(sh, u, -m)
    me = fma32(sl, u, me)
    me = fma32(sh, du, me)
    h, e = fast_two_sum32(ch, m)
    return h, add_rn(e, add_rn(me, cl))


@inline_helper
def _poly(rest, c1, c0, u, du):
    s = horner32(rest, u)
    ph, pl = _dd_step(s, ZERO, u, du, c1[0], c1[1])
    return _dd_step(ph, pl, u, du, c0[0], c0[1])


@inline_helper
def mul_dd32(ah, al, bh, bl):
    """``(ah + al)(bh + bl)`` as a pair (the ``al bl`` term dropped)."""
    p = mul_rn(ah, bh)
    e = fma32(ah, bh, -p)
    e = fma32(ah, bl, e)
    return p, fma32(al, bh, e)


@inline_helper
def upper_tail(a):
    """``Phi(-a) = (qh + ql) 2**k``."""
    eh, el, k = exp_neg_half_sq(a)
    th, tl, u, du = _tail_variable(a)
    ph, pl = _poly(R_REST, R_C1, R_C0, u, du)
    rh, rl = mul_dd32(th, tl, ph, pl)
    qh, ql = mul_dd32(eh, el, rh, rl)
    return qh, ql, k


@inline_helper
def grad_tail(a):
    """``GELU'(-a) = (gh + gl) 2**k``, its zero z0 an exact factor."""
    eh, el, k = exp_neg_half_sq(a)
    th, tl, u, du = _tail_variable(a)
    hh, hl = _poly(H_REST, H_C1, H_C0, u, du)
    dh, dl = minus_z0(a)
    gh, gl = mul_dd32(dh, dl, hh, hl)
    gh, gl = mul_dd32(eh, el, gh, gl)
    return gh, gl, k


@inline_helper
def minus_z0(a):
    """``a - z0 = dh + dl``, the zero of GELU'(-a) an exact factor."""
    s, e = _two_sum(a, -Z0_0)
    # |s| >= |Z0_1| or s = 0: where a and Z0_0 are in one binade s is a
    # multiple of their ulp, 2**-24, and |Z0_1| <= 2**-25; elsewhere |s| >
    # 1/4.  The fast two-sum then gives what a two-sum would.
    dh, e2 = fast_two_sum32(s, -Z0_1)
    return dh, sub_rn(add_rn(e, e2), Z0_2)


@inline_helper
def split_input(x):
    """``(bits of |x|, sign bit, a)`` with ``a = min(|x|, A)`` taken on the
    bits, so that inf and NaN become A and no comparison sees a NaN."""
    bits = float32_bits(x)
    b = bits & np.uint32(0x7FFFFFFF)
    return b, bits & np.uint32(0x80000000), float32_from_bits(min(b, A_BITS))


@inline_helper
def _one_minus(qh, ql, k):
    """``1 - (qh + ql) 2**k`` as a pair, for ``|(qh + ql) 2**k| <= 1``, ``k <=
    0``: scaled exactly (or to a subnormal far below 1's ulp), subtracted in
    float-float."""
    sh = scale2(qh, k)
    sl = scale2(ql, k)
    s, e = fast_two_sum32(ONE, -sh)
    return s, sub_rn(e, sl)


# ------------------------------------------------------------ the functions

def ndtr(x):
    """Standard normal CDF Phi(x), float32 in and out."""
    b, sign, a = split_input(x)
    qh, ql, k = upper_tail(a)
    lower = scale2(add_rn(qh, ql), k)
    uh, ul = _one_minus(qh, ql, k)
    r = lower if sign != 0 else add_rn(uh, ul)
    if b >= A_BITS:                                 # |x| >= 20, inf
        r = ZERO if sign != 0 else ONE
    return x if b > INF_BITS else r


def norm_pdf(x):
    """Standard normal density phi(x), float32 in and out."""
    b, sign, a = split_input(x)
    eh, el, k = exp_neg_half_sq(a)
    ph, pl = mul_dd32(PHI0_HI, PHI0_LO, eh, el)
    r = scale2(add_rn(ph, pl), k)
    if b >= A_BITS:
        r = ZERO
    return x if b > INF_BITS else r


def gelu(x):
    """GELU(x) = x Phi(x), float32 in and out."""
    b, sign, a = split_input(x)
    qh, ql, k = upper_tail(a)
    mh = mul_rn(a, qh)                              # a Phi(-a) = mh + ml
    ml = fma32(a, qh, -mh)
    ml = fma32(a, ql, ml)
    # x < 0: -(a Phi(-a)); x >= 0: x - x Phi(-a) (x Phi(-a) <= x/2)
    neg = -scale2(add_rn(mh, ml), k)
    sh = scale2(mh, k)
    s, e = fast_two_sum32(x, -sh)
    pos = add_rn(s, sub_rn(e, scale2(ml, k)))
    r = neg if sign != 0 else pos
    if b >= A_BITS:
        r = _f(-0.0) if sign != 0 else x
    return x if b > INF_BITS else r


@inline_helper
def _grad(b, sign, a):
    gh, gl, k = grad_tail(a)
    lower = scale2(add_rn(gh, gl), k)
    uh, ul = _one_minus(gh, gl, k)
    r = lower if sign != 0 else add_rn(uh, ul)
    if b >= A_BITS:
        # GELU'(x) for |x| >= 20: -0.0 below (GELU'(-a) < 0 there), 1 above
        r = _f(-0.0) if sign != 0 else ONE
    return r


def gelu_grad(x):
    """GELU'(x) = Phi(x) + x phi(x), float32 in and out."""
    b, sign, a = split_input(x)
    r = _grad(b, sign, a)
    return x if b > INF_BITS else r


def gelu_backward(dy, x):
    """dy * GELU'(x) rounded once to float32 (the fused backward pass)."""
    b, sign, a = split_input(x)
    gh, gl, k = grad_tail(a)
    uh, ul = _one_minus(gh, gl, k)
    kd, y = backward_product(dy, sign, gh, gl, uh, ul)
    r = scale3(y, k + kd) if sign != 0 else mul_rn(y, pow2_32(kd))
    return backward_specials(dy, x, b, sign, a, r)


@inline_helper
def backward_product(dy, sign, gh, gl, uh, ul):
    """``(kd, y)``: ``dy 2**-kd`` times ``G = gh + gl`` (GELU'(-a) over its
    power of two, ``|G| < 2**5``) for ``x < 0``, times ``uh + ul = 1 -
    GELU'(-a)`` for ``x >= 0``, as one float-float product rounded once; the
    caller scales it by ``2**kd`` (and G's power of two)."""
    # dy is moved by a power of two 2**-kd first: down by 2**5 where |dy| >=
    # 2**120 (no overflow before the scaling), up by 2**60 where |dy| <
    # 2**-90 (the product's low part would be below the subnormal spacing, a
    # second rounding)
    ady = abs(dy)
    kd = np.int32(5) if ady >= TWO_120 else (np.int32(-60) if ady < TWO_M90 else np.int32(0))
    dys = mul_rn(dy, pow2_32(-kd))
    ph, pl = mul_dd32(dys, ZERO, gh if sign != 0 else uh, gl if sign != 0 else ul)
    # (an exact zero product keeps its sign: -0 + 0 would be +0)
    return kd, ph if ph == ZERO else add_rn(ph, pl)


@inline_helper
def backward_specials(dy, x, b, sign, a, r):
    """The fused backward's result ``r`` where x and dy are finite and
    ``|x| < 20``, else the special values' (the CPU ufunc's)."""
    if b >= A_BITS:
        # GELU'(x) for |x| >= 20: -0.0 below (underflowed), 1 above
        r = mul_rn(dy, _f(-0.0) if sign != 0 else ONE)
    if abs(dy) == INF and b < INF_BITS:
        # an infinite dy times a finite x's GELU'(x), which is never 0: its sign
        r = mul_rn(dy, -ONE if (sign != 0 and a >= Z0_0) else ONE)
    return x if b > INF_BITS else (dy if dy != dy else r)


def gelu_grad2(x):
    """GELU''(x) = phi(x) (2 - x**2), float32 in and out."""
    b, sign, a = split_input(x)
    eh, el, k = exp_neg_half_sq(a)
    h = mul_rn(a, a)
    l = fma32(a, a, -h)
    # 2 - a**2 = 2 - h - l as a normalised pair (h's error l is not small
    # beside 2 - h next to a = sqrt 2)
    sh, sl = fast_two_sum32(TWO, -h) if h <= TWO else fast_two_sum32(-h, TWO)
    sl = sub_rn(sl, l)
    sh, sl = fast_two_sum32(sh, sl) if abs(sh) >= abs(sl) else fast_two_sum32(sl, sh)
    ph, pl = mul_dd32(PHI0_HI, PHI0_LO, eh, el)
    ph, pl = mul_dd32(ph, pl, sh, sl)
    # |phi0 E (2 - a**2)| < 2**8: the clamp 2**-166 leaves below 2**-158
    r = scale2(add_rn(ph, pl), k, np.int32(-166))
    if b >= A_BITS:
        r = _f(-0.0)
    return x if b > INF_BITS else r
