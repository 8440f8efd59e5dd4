"""GELU, Phi and GELU' for float32 in float32 arithmetic from one table row:
no division and no separate ``exp(-a**2/2)``: what ``gelu_numba.gpu``
launches for float32 on GPUs without full-rate FP64 (``gelu``, ``ndtr``,
``gelu_grad``, ``gelu_backward``; :meth:`GpuFunction.variant
<gelu_numba.targets.cuda.function.GpuFunction.variant>`), its table a device array
passed to the kernel.  The device functions of ``gelu_numba.gpu.device``,
which a user's kernel calls without a table, keep
:mod:`gelu_numba.kernels.gpu32`.

Method, for ``a = |x| <= A_F32 = 20`` (beyond: the limits, as the other
float32 kernels; special values first, by bits)
----------------------------------------------------------------------
``S(a) = log f(a)`` is smooth for ``f(a) = Phi(-a)`` and for ``f(a) =
GELU'(-a)/(z0 - a)`` (positive: the zero ``z0`` of GELU' divided out), with
``S'(a)`` about ``-a``.  Row ``j`` of ``f``'s table
(``gelu_numba/tables/normal_cdf32_lean32.py``, the repository's ``python -m
fitting.make_tables32_lean32``) covers a piece of ``[0, A_F32]`` (quarters
below 1, then unit steps of ``a**2``, so that ``S`` moves by at most about
1/3 across a piece) and holds its centre ``c``, ``f(c) = (mh + ml) 2**e``
with ``2**e = f1 f2``, and the polynomial ``D(d) = S(c + d) - S(c)`` of
degree 5 without constant term.  Then::

    f(a) = (mh + ml) 2**e exp(D(a - c))

* the row: ``floor(4 a)`` below 1, else ``3 + floor(a**2)`` (``a**2`` and
  ``3 + a**2`` rounded: a row is fitted slightly beyond its piece);
* ``d = a - c`` is exact (``c/2 <= a <= 2 c``, or ``c = 0``);
* ``D = d (d1 + d T(d))`` with ``d1 = d1h + d1l`` and ``d1h d`` exact
  (one FMA), the rest plain float32; then one fast two-sum makes
  ``(Dh, Dl)``, ``|Dh| <= <<d_max>>``;
* ``exp(Dh + Dl)`` as a float32 pair (:func:`~gelu_numba.kernels.
  gpu32.exp_pair`, the other kernel's: no reduction by ``ln 2``
  is needed);
* ``f(a)`` a float-float product; for GELU' times ``z0 - a`` as a
  float-float (z0 in three parts, as the other kernel); scaled by ``f1
  f2 = 2**e``: GELU(-a) = ``-(a Phi(-a))``, GELU(a) = ``a - a Phi(-a)`` by
  a float-float subtraction, ``Phi`` and ``GELU'`` at ``x >= 0`` as ``1 -
  f(a)`` the same way (where ``2**e`` underflows, the term is far below
  half an ulp);
* the fused backward: the other kernel's product of ``dy`` (moved by
  ``2**-kd``, :func:`~gelu_numba.kernels.gpu32.backward_product`)
  and the selected pair, rounded to ``y``, then ``y f1``, ``f2`` and
  ``2**kd`` in the order that keeps every intermediate normal wherever the
  result is not 0: only the last product rounds.

The tables are read column after column (see :data:`Q_TABLE`): 11 float32
an element, from device memory on a GPU, where the other kernel reads none.

Error bound (an estimate; the exhaustive sweep of the CPU compilation is
the proof)
----------------------------------------------------------------------
``D``: the table's certified ``2**<<q_d_error>>`` (Phi) and ``2**<<g_d_error>>`` (GELU')
absolute, its evaluation about ``2**-29.5`` (the plain part ``d**2 T`` is
below 0.03); ``exp_pair`` below ``2**-29``; the pairs ``mh + ml``
``2**-49``; the products ``2**-44``: a normal result within about ``0.5 +
2**-28 * 2**24`` ulp; a subnormal result rounded twice (to 24 bits, then
by the scaling to its spacing), as in the other kernel,
whose stated bound :data:`BOUND` these kernels share.  The exhaustive
sweep: the repository's ``python -m analysis.sweep_float32 --kernels
lean32`` and ``analysis/results/sweep_float32_lean32.json``.
"""

import math

import numpy as np

from gelu_numba.kernels.gpu32 import (
    BOUND, A_BITS, INF_BITS, fast_two_sum32, mul_dd32, pow2_32, split_input, sub_rn,
    backward_product, backward_specials, exp_pair, minus_z0,
)
from gelu_numba.kernels.primitives import add_rn, fma32, inline_helper, mul_rn
from gelu_numba.tables import normal_cdf32_lean32 as tab

# the table's certified figures, as its generator wrote them
__doc__ = (__doc__.replace("<<q_d_error>>", f"{math.log2(tab.Q_D_ERROR):.1f}")
           .replace("<<g_d_error>>", f"{math.log2(tab.G_D_ERROR):.1f}")
           .replace("<<d_max>>", f"{max(tab.Q_D_MAX, tab.G_D_MAX):.4f}"))

_f = np.float32
#: the tables as the CPU compilation reads them (constant arrays); CUDA
#: kernels take them as an argument, in device memory.  Column after
#: column: the lanes of a warp read one column of rows that data puts
#: close together (standard normal x: rows 0 to 19), a few memory sectors
#: a read, where whole rows would be one sector a lane.
Q_TABLE = np.array(tab.Q_TABLE, dtype=np.float32).reshape(tab.ROWS, tab.WIDTH).T.ravel()
G_TABLE = np.array(tab.G_TABLE, dtype=np.float32).reshape(tab.ROWS, tab.WIDTH).T.ravel()
# the columns' offsets, unsigned: Numba wraps a signed index that could be
# negative around the array's length, five integer instructions a read
_C, _MH, _ML, _F1, _F2, _D1H, _D1L, _D2, _D3, _D4, _D5 = (
    np.uint64(k * tab.ROWS) for k in range(tab.WIDTH))
ONE = _f(1.0)
FOUR = _f(4.0)
THIRTY_TWO = _f(32.0)
TWO_M60 = _f(2.0**-60)
#: rows before the a**2 pieces, minus one: row = 3 + floor(a**2)
SQ_OFFSET = _f(tab.SMALL - 1)


@inline_helper
def _row(a, t):
    """``f(a) / 2**e = mh + ml`` for ``0 <= a <= A_F32`` from table ``t``
    (``f`` its function: the module docstring), and the row."""
    h = mul_rn(a, a)
    w = mul_rn(FOUR, a) if a < ONE else add_rn(h, SQ_OFFSET)
    base = np.uint64(np.uint32(w))
    d = add_rn(a, -t[base + _C])                    # exact
    d1h = t[base + _D1H]
    tail = fma32(fma32(fma32(t[base + _D5], d, t[base + _D4]), d, t[base + _D3]), d,
                 t[base + _D2])
    dh = mul_rn(d1h, d)
    de = fma32(d1h, d, -dh)                         # d1h d = dh + de exactly
    dl = fma32(mul_rn(d, d), tail, fma32(t[base + _D1L], d, de))
    dh, dl = fast_two_sum32(dh, dl)
    eh, el = exp_pair(dh, dl)
    mh, ml = mul_dd32(t[base + _MH], t[base + _ML], eh, el)
    return mh, ml, base


@inline_helper
def _times_z0_minus_a(a, fh, fl):
    """``(z0 - a)(fh + fl)`` as a pair."""
    dh, dl = minus_z0(a)
    return mul_dd32(dh, dl, -fh, -fl)


@inline_helper
def gelu_t(x, t):
    """GELU(x) = x Phi(x), float32 in and out, from ``Q_TABLE`` ``t``."""
    b, sign, a = split_input(x)
    qh, ql, base = _row(a, t)
    f1, f2 = t[base + _F1], t[base + _F2]
    mh = mul_rn(a, qh)                              # a Phi(-a) = (mh + ml) f1 f2
    ml = fma32(a, qh, -mh)
    ml = fma32(a, ql, ml)
    neg = -mul_rn(mul_rn(add_rn(mh, ml), f1), f2)
    ph, pl = _minus_scaled(x, mh, ml, f1, f2)      # x >= 0: x - x Phi(-a)
    r = neg if sign != 0 else add_rn(ph, pl)
    if b >= A_BITS:
        r = _f(-0.0) if sign != 0 else x
    return x if b > INF_BITS else r


@inline_helper
def _minus_scaled(y, vh, vl, f1, f2):
    """``y - (vh + vl) f1 f2`` as a pair, for ``|(vh + vl) f1 f2| <= |y|``
    (the fast two-sum's order): the scaling may underflow where the product
    is far below half an ulp of ``y``."""
    f = mul_rn(f1, f2)
    s, e = fast_two_sum32(y, -mul_rn(vh, f))
    return s, sub_rn(e, mul_rn(vl, f))


@inline_helper
def _complement(vh, vl, f1, f2):
    """``1 - (vh + vl) f1 f2`` as a pair (``|(vh + vl) f1 f2| <= 1``)."""
    return _minus_scaled(ONE, vh, vl, f1, f2)


@inline_helper
def _lower_or_complement(b, sign, vh, vl, f1, f2, low):
    """``V = (vh + vl) f1 f2`` for ``x < 0``, ``1 - V`` for ``x >= 0``
    (``|V| <= 1``); ``low`` and 1 beyond ``A_F32``."""
    lower = mul_rn(mul_rn(add_rn(vh, vl), f1), f2)
    uh, ul = _complement(vh, vl, f1, f2)
    r = lower if sign != 0 else add_rn(uh, ul)
    if b >= A_BITS:
        r = low if sign != 0 else ONE
    return r


@inline_helper
def ndtr_t(x, t):
    """Phi(x), float32 in and out, from ``Q_TABLE`` ``t``."""
    b, sign, a = split_input(x)
    qh, ql, base = _row(a, t)
    r = _lower_or_complement(b, sign, qh, ql, t[base + _F1], t[base + _F2], _f(0.0))
    return x if b > INF_BITS else r


@inline_helper
def gelu_grad_t(x, t):
    """GELU'(x), float32 in and out, from ``G_TABLE`` ``t``."""
    b, sign, a = split_input(x)
    fh, fl, base = _row(a, t)
    gh, gl = _times_z0_minus_a(a, fh, fl)
    # GELU'(x) for |x| >= 20: -0.0 below (GELU'(-a) < 0 there), 1 above
    r = _lower_or_complement(b, sign, gh, gl, t[base + _F1], t[base + _F2], _f(-0.0))
    return x if b > INF_BITS else r


@inline_helper
def gelu_backward_t(dy, x, t):
    """dy * GELU'(x) rounded once to float32, from ``G_TABLE`` ``t``."""
    b, sign, a = split_input(x)
    fh, fl, base = _row(a, t)
    gh, gl = _times_z0_minus_a(a, fh, fl)
    f1, f2 = t[base + _F1], t[base + _F2]
    uh, ul = _complement(gh, gl, f1, f2)
    kd, y = backward_product(dy, sign, gh, gl, uh, ul)
    # x < 0: y 2**e 2**kd (2**e = f1 f2, both <= 1), only the last product
    # rounding.  With |dy| >= 2**-90 (kd = 0), y f1 is normal wherever the
    # result is not 0; with kd = 5 (|dy| >= 2**120) y f1 2**5 stays below
    # 2**128; with kd = -60 an intermediate below 2**-126 means a result
    # below 2**-186.
    big = kd > np.int32(0)
    r = (mul_rn(mul_rn(mul_rn(y, f1), THIRTY_TWO if big else f2),
                f2 if big else (TWO_M60 if kd < np.int32(0) else ONE))
         if sign != 0 else mul_rn(y, pow2_32(kd)))
    return backward_specials(dy, x, b, sign, a, r)


# The kernels with their tables in place (the CPU compilation).

def gelu(x):
    """GELU(x) = x Phi(x), float32 in and out."""
    return gelu_t(x, Q_TABLE)


def ndtr(x):
    """Phi(x), float32 in and out."""
    return ndtr_t(x, Q_TABLE)


def gelu_grad(x):
    """GELU'(x), float32 in and out."""
    return gelu_grad_t(x, G_TABLE)


def gelu_backward(dy, x):
    """dy * GELU'(x) rounded once to float32."""
    return gelu_backward_t(dy, x, G_TABLE)
