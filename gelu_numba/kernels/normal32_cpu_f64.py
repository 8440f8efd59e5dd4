"""Scalar kernels for float32 results, evaluated in float64 arithmetic.

Two users: on the CPU they are the fast path of the correctly rounded
float32 kernels (:mod:`gelu_numba.kernels.rounded32`), read with that
module's tables (two degrees higher, relative error below 2**-42); GPUs
with full-rate FP64 run them as they stand, with the tables and the bound
below (a record's ``k32``).

Method
------
The same reduction as :mod:`gelu_numba.kernels.normal` (``a = |x|``,
``E(a) = exp(-a**2/2)``, ``R(a) = erfcx(a/sqrt 2)/2``, ``H(a) = (R(a) -
a phi0)/(a - z0)``, ``Q = E R``), but a float32 result only needs a relative
error well below 2**-25 before its final rounding, so plain float64
arithmetic replaces double-double and each tabulated function is a single
rational function on ``0 <= a <= A32 = 20`` instead of 40 table rows
(``gelu_numba/tables/normal_cdf32_cpu_f64.py``):

* ``a**2/2`` is exact in float64 (a float32 has 24 significant bits), so the
  argument of ``exp`` carries no rounding error;
* ``exp(s)``: ``s = k ln 2 + r`` with ``k`` from the rounding shifter and
  ``ln 2`` rounded to a double, a degree-7 polynomial for ``exp(r)``, and
  ``2**k`` added to the exponent bits (:func:`scale_shifted`);
* ``R`` and ``H``: ``P(a)/Q(a)`` of degrees (5, 6) with positive ``Q``.

Every branch is a select and there is no table lookup, libm call or loop
with a data-dependent trip count, so the unit-stride ufunc loop vectorises:
``NUMBA_DUMP_ASSEMBLY=1`` shows packed ``vfmadd...pd`` on ``zmm`` registers
(``ymm`` on AVX2) and one ``vdivpd`` per vector of elements in the loop (its
instruction counts and times: ``python -m benchmarks.anatomy`` in the
gelu-numba repository, ``benchmarks/results/anatomy_zen4.md``).

Error bound
-----------
A float32 result needs a relative error below 2**-25 before its final
rounding to stay below 1 ulp; the degrees are the lowest that keep the
bound within 2**-7 ulp of correct rounding (one degree less loses 5 bits,
the repository's ``python -m fitting.make_tables32_cpu_f64``), and each saved degree is
one packed FMA per eight elements in a loop bound by FMA throughput.
Certified errors of the stored approximations: R 2**-32.4, H 2**-33.6,
exp 2**-34.1 (table header).  ``ln 2`` as one double puts ``|k| 2**-55.4``
into ``r`` (``|k| <= 289`` for ``a <= A32``: 2**-47.2); the float64
evaluation adds below 2**-49.  The value before the final rounding is
therefore ``exact * (1 + d)`` with ``|d| < 2**-31.9``, which after rounding
to float32 is at most ``0.5 + 2**-7.9`` ulp (subnormal float32 results
included: the absolute error is far below their spacing).  ``GELU'`` keeps
its zero as the factor ``a - z0`` with z0 in double-double, so the bound
holds next to x0 too.  The exhaustive float32 sweep (the site's results pages; the repository's
``analysis/results/sweep_float32_full.json``) measures the actual maximum
and the share of correctly rounded results.

Each function takes and returns float64 values; the ufunc loop converts from
and to float32.

The tables are an argument
--------------------------
Each kernel ``f`` is ``f_t`` with :data:`TABLES` (the coefficients of
``exp``, ``R`` and ``H``, and ``exp``'s ``1/ln 2`` and ``ln 2``) as its last
argument: on the CPU these are
constants folded into the code, exactly as if written in place; a CUDA
kernel loads them from a device array once, before its loop
(the ``_t`` forms, a catalog record's ``tabled``; ``gelu_numba.targets.cuda.codegen``), because ptxas puts a
float64 literal into registers again for every element, two instructions
each (no SASS instruction takes a 64-bit immediate; the repository's
``python -m analysis.gpu.sass`` counts them).  The same operations in the
same order either way: the same bits.
"""

import math

import numpy as np

from gelu_numba.kernels.primitives import (
    inline, SHIFTER, clamp_abs, fma, horner, is_finite, nan_to_zero, scale_shifted, step_bits,
)
from gelu_numba.tables.normal_cdf import INV_LN2, PHI0_HI, Z0_HI, Z0_LO
from gelu_numba.tables.normal_cdf32_cpu_f64 import A32, EXP32, H32_P, H32_Q, R32_P, R32_Q

# ln 2 rounded to a double (error 2**-55.4): |k| <= 1022 here, so k*LN2 is
# k ln 2 to within 2**-45.4, an error of that size relative to exp(s)
LN2 = 0.6931471805599453
_INF = math.inf
_NAN = math.nan
# below this |x| (the lowest normal binade and the subnormals of float32),
# x/2 can be a float32 midpoint
_TINY32 = 2.0**-125
#: the constants the kernels read, as one argument (see the module
#: docstring): exp(r)'s coefficients, R's and H's numerators and
#: denominators, then (1/ln 2, ln 2) of exp's reduction
TABLES = (EXP32, R32_P, R32_Q, H32_P, H32_Q, (INV_LN2, LN2))


@inline
def exp_neg_half_sq_plain(a, t):
    """``exp(-a**2/2)`` for a float32 value ``0 <= a <= A32`` (``a*a`` is
    exact in float64); rel. error < 2**-34.  ``t``: :data:`TABLES`."""
    return exp_plain(-0.5 * (a * a), t)


@inline
def exp_plain(s, t):
    """``exp(s)`` for ``-708 <= s <= 0``, relative error below
    ``2**-34 + |s| 2**-55`` (the polynomial, and ``ln 2`` as one double),
    plus ``|s| 2**-53`` for the rounding of s itself."""
    kb = s * t[5][0] + SHIFTER
    kf = kb - SHIFTER
    r = fma(kf, -t[5][1], s)
    return scale_shifted(horner(r, t[0]), kb)


@inline
def upper_tail(a, t):
    """``Q(a) = Phi(-a)``."""
    return exp_neg_half_sq_plain(a, t) * (horner(a, t[1]) / horner(a, t[2]))


@inline
def grad_tail(a, t):
    """``G(a) = GELU'(-a) = E(a) (a - z0) H(a)``, its zero an exact factor
    (a float32 a is at least 2**-25 from z0, so two parts of z0 suffice)."""
    d = (a - Z0_HI) - Z0_LO
    return exp_neg_half_sq_plain(a, t) * (d * (horner(a, t[3]) / horner(a, t[4])))


@inline
def grad(xs, t):
    """GELU'(xs) for a non-NaN xs; -0.0 at -inf."""
    # GELU'(-inf) = -0.0: a zero factor (G < 0 far out gives the sign), not
    # the tail at A32, which is a float32 subnormal (an underflow flag when
    # the ufunc loop converts it, even in an unused lane of a select)
    g = grad_tail(clamp_abs(xs, A32, 0.0), t) * (0.0 if xs == -_INF else 1.0)
    return g if xs < 0.0 else 1.0 - g


# In the float32 loops the float64 value a kernel returns is converted to
# float32 by the loop, and LLVM may move that conversion into both arms of a
# final select: a value that is subnormal in float32 raises the underflow flag
# even in a lane that selects the other arm.  Limits at +-inf are therefore
# made exact zeros by a zero factor rather than selected afterwards.

@inline
def ndtr_t(x, t):
    """Standard normal CDF Phi(x)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    # Phi(-inf) = 0 exactly
    q = upper_tail(clamp_abs(xs, A32, 0.0), t) * (0.0 if xs == -_INF else 1.0)
    r = q if xs < 0.0 else 1.0 - q
    return r if xd == xd else xd


@inline
def norm_pdf_t(x, t):
    """Standard normal density phi(x)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    # phi(+-inf) = 0 exactly
    r = (PHI0_HI * exp_neg_half_sq_plain(clamp_abs(xs, A32, 0.0), t)) * (1.0 if is_finite(xs) else 0.0)
    return r if xd == xd else xd


@inline
def gelu_t(x, t):
    """GELU(x) = x Phi(x)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    r = x_phi(xs, t)
    # |x| < 2**-125: GELU(x) = x/2 + phi0 x**2 (1 + O(x)), and x/2 may be a
    # float32 midpoint that float64 cannot tell from the exact value (the
    # term phi0 x**2 is 2**-125 times smaller).  Moving x/2 one float64 ulp
    # up (the exact value is above it) makes the final rounding correct.
    tiny = abs(xs) < _TINY32 and xs != 0.0
    r = r if not tiny else step_bits(0.5 * xs, 1 if xs > 0.0 else -1)
    return r if xd == xd else xd


@inline
def gelu_above_tiny_t(x, t):
    """GELU(x), all of :func:`gelu_t` but its step at ``|x| < 2**-125``:
    the fast path of the correctly rounded GELU, whose rounding test sends
    those inputs (results below 2**-126) on to the accurate path
    (:mod:`gelu_numba.kernels.rounded32`)."""
    xd = np.float64(x)
    r = x_phi(nan_to_zero(xd), t)
    return r if xd == xd else xd


@inline
def x_phi(xs, t):
    """``x Phi(x)`` for a non-NaN ``xs``."""
    q = upper_tail(clamp_abs(xs, A32, 0.0), t)
    phi = q if xs < 0.0 else 1.0 - q
    # below -A32 the float32 result is -0.0 (|GELU| < 2**-280): the factor
    # -0.0 gives it exactly, -inf included (no -inf * Q)
    xc = xs if xs > -A32 else -0.0
    return xc * phi


@inline
def gelu_grad_t(x, t):
    """GELU'(x) = Phi(x) + x phi(x)."""
    xd = np.float64(x)
    r = grad(nan_to_zero(xd), t)
    return r if xd == xd else xd


@inline
def gelu_backward_t(dy, x, t):
    """Fused backward pass: dy * GELU'(x), rounded once to float32."""
    dyd = np.float64(dy)
    xd = np.float64(x)
    # GELU'(-inf) = -0.0 (grad gives it), so dy * GELU'(-inf) is a signed
    # zero, and NaN for an infinite dy (inf * 0): that NaN is selected, as in
    # float64, not made by a product that would raise the invalid flag.
    # Where the result is selected (NaN x, inf * 0), dy is replaced by 1 so
    # that no lane holds a float32 subnormal or raises a flag (see above).
    inf_times_zero = xd == -_INF and not is_finite(dyd)
    dys = dyd if xd == xd and not inf_times_zero else 1.0
    r = dys * grad(nan_to_zero(xd), t)
    r = r if not inf_times_zero else _NAN
    return r if xd == xd else xd


@inline
def gelu_grad2_t(x, t):
    """GELU''(x) = phi(x) (2 - x**2)."""
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = clamp_abs(xs, A32, 0.0)
    # a*a is exact, so 2 - a*a is rounded once, even next to a = sqrt 2;
    # GELU''(+-inf) = -0.0 (2 - a*a < 0 gives the sign)
    r = ((PHI0_HI * exp_neg_half_sq_plain(a, t)) * (2.0 - a * a)) * (1.0 if is_finite(xs) else 0.0)
    return r if xd == xd else xd


# The kernels, with the tables in place (the ufuncs' scalar kernels).

def ndtr(x):
    """Standard normal CDF Phi(x)."""
    return ndtr_t(x, TABLES)


def norm_pdf(x):
    """Standard normal density phi(x)."""
    return norm_pdf_t(x, TABLES)


def gelu(x):
    """GELU(x) = x Phi(x)."""
    return gelu_t(x, TABLES)


def gelu_grad(x):
    """GELU'(x) = Phi(x) + x phi(x)."""
    return gelu_grad_t(x, TABLES)


def gelu_backward(dy, x):
    """Fused backward pass: dy * GELU'(x), rounded once to float32."""
    return gelu_backward_t(dy, x, TABLES)


def gelu_grad2(x):
    """GELU''(x) = phi(x) (2 - x**2)."""
    return gelu_grad2_t(x, TABLES)
