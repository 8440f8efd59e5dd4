"""mpmath ground truth for GELU and its derivatives.

Method
------
Every function takes a Python float (a double) and evaluates the textbook
formula in mpmath at a working precision of at least ``BASE_PREC`` = 320 bits,
scoped with :func:`mpmath.workprec` (the global ``mp.prec`` is never changed):

* ``ndtr(x) = erfc(-x/sqrt(2))/2`` (no ``1 + erf`` cancellation),
* ``norm_pdf(x) = exp(-x*x/2)/sqrt(2*pi)`` with ``x*x`` exact,
* ``gelu(x) = x*ndtr(x)``, ``gelu_grad(x) = ndtr(x) + x*norm_pdf(x)``,
* ``gelu_grad2(x) = norm_pdf(x)*(2 - x*x)`` with ``2 - x*x`` exact,
* ``gelu_backward(dy, x) = dy*gelu_grad(x)``.

Accuracy
--------
Two effects could eat into the working precision, and both are compensated:

* erfc(z) has relative condition number about ``2 z**2``, so rounding
  ``z = -x/sqrt(2)`` costs about ``2*log2|x|`` bits; the precision is raised
  by that much for ``|x| > 1`` (this matters only for huge ``|x|``).
* ``gelu_grad`` cancels near its zero ``X0 = -0.7517915...``. The number of
  bits lost is measured after each evaluation (magnitude of the larger term
  over magnitude of the sum) and the evaluation is repeated at a higher
  precision until at least ``TARGET_BITS`` = 256 bits survive. ``gelu_grad2``
  needs no such care since ``2 - x*x`` is computed exactly.

So every finite result carries at least 200 correct bits (in practice
>= 256) for every double ``x``, far beyond the 100 bits the project needs.

Results are mpf objects whose mantissas are kept exactly; do further
arithmetic on them inside a ``workprec`` block, or convert with
:func:`to_dd`. Special inputs (NaN, +-inf) return Python floats equal to the
limits: ``gelu(-inf) = -0.0``, ``gelu(inf) = inf``, ``gelu_grad(inf) = 1``,
``gelu_grad(-inf) = -0.0`` (the limit is approached from below),
``gelu_grad2(+-inf) = -0.0``, ``ndtr(-inf) = 0``, ``ndtr(inf) = 1``,
``norm_pdf(+-inf) = 0``; NaN gives NaN.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

__all__ = [
    "BASE_PREC",
    "TARGET_BITS",
    "X0",
    "GELU_X0",
    "ndtr",
    "norm_pdf",
    "gelu",
    "gelu_grad",
    "gelu_grad2",
    "gelu_backward",
    "evaluate_all",
    "to_double",
    "to_dd",
    "ulp_error",
    "ulp_error_dd",
    "FUNCTIONS",
]

#: Base working precision in bits.
BASE_PREC = 320
#: Correct bits guaranteed to survive the cancellation in ``gelu_grad``.
TARGET_BITS = 256
# Beyond this the only way to get more cancellation would be x == X0 exactly,
# which no double is; the cap just keeps a bug from looping forever.
_MAX_PREC = 20000

#: The zero of GELU' (the minimiser of GELU), as a 30-digit string.
X0 = "-0.751791524693564457457904946780"
#: GELU(X0), the minimum of GELU, as a 30-digit string.
GELU_X0 = "-0.169971207479903661693868470982"

#: the exact functions (the catalog's group "exact") in the column order of
#: the committed table ``tests/data/reference_table.npz`` (make_table)
FUNCTIONS = ("ndtr", "norm_pdf", "gelu", "gelu_grad", "gelu_grad2", "gelu_backward")

# (precision p, smallest normal exponent emin) of the target formats.
# bfloat16 (no NumPy dtype) is named by its string.
_FORMATS = {np.dtype(np.float64): (53, -1022), np.dtype(np.float32): (24, -126),
            np.dtype(np.float16): (11, -14), "bfloat16": (8, -126)}


def _format(dtype):
    try:
        return _FORMATS["bfloat16" if dtype == "bfloat16" else np.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError("dtype must be float64, float32, float16 or 'bfloat16', "
                         f"got {dtype!r}") from None


def _prec_for(x: float) -> int:
    # Compensates the 2*z**2 condition number of erfc at z = -x/sqrt(2):
    # log2(x**2) extra bits.
    e = math.frexp(x)[1]
    return BASE_PREC + 2 * max(e, 0)


def _mag(v) -> int:
    """floor(log2|v|) + 1 for a nonzero mpf, a large negative number for 0."""
    sign, man, exp, bc = v._mpf_
    if not man:
        return -(10**9)
    return exp + bc


# Beyond this |x| the Mills-ratio series replaces erfc: mpmath's erfc raises
# OverflowError for huge arguments, and with x**2 >= 2**64 each series term
# gains 64 bits, so a handful of terms suffice.
_ASYMPTOTIC_FROM = 2.0**32


def _phi_terms(x: float, prec: int):
    """(Phi(x), phi(x)) at ``prec`` bits for finite ``x``."""
    with mpmath.workprec(prec):
        xm = mpmath.mpf(x)
        # x*x needs 106 bits at most, so it is exact here.
        pdf = mpmath.exp(-(xm * xm) / 2) / mpmath.sqrt(2 * mpmath.pi)
        if abs(x) < _ASYMPTOTIC_FROM:
            cdf = mpmath.erfc(-xm / mpmath.sqrt(2)) / 2
        else:
            # Phi(-|x|) = phi(x)/|x| * sum_k (-1)^k (2k-1)!! / x^(2k); the
            # series alternates, so the error is below the first omitted term.
            x2 = xm * xm
            term = mpmath.mpf(1)
            total = mpmath.mpf(0)
            k = 0
            eps = mpmath.ldexp(1, -prec - 8)
            while abs(term) > eps:
                total += term
                k += 1
                term = -term * (2 * k - 1) / x2
            tail = pdf / abs(xm) * total
            cdf = tail if x < 0 else 1 - tail
    return cdf, pdf


def ndtr(x: float):
    """Standard normal CDF Phi(x) as an mpf (>= 256 correct bits).

    Parameters
    ----------
    x : float
        A double. ``-inf`` gives 0.0, ``inf`` gives 1.0, NaN gives NaN.

    Returns
    -------
    mpmath.mpf or float
    """
    x = float(x)
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    return _phi_terms(x, _prec_for(x))[0]


def norm_pdf(x: float):
    """Standard normal density phi(x) as an mpf.

    Parameters
    ----------
    x : float
        A double. ``+-inf`` gives 0.0, NaN gives NaN.

    Returns
    -------
    mpmath.mpf or float
    """
    x = float(x)
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return 0.0
    return _phi_terms(x, _prec_for(x))[1]


def gelu(x: float):
    """GELU(x) = x*Phi(x) as an mpf.

    Parameters
    ----------
    x : float
        A double. ``-inf`` gives -0.0, ``inf`` gives inf, NaN gives NaN.

    Returns
    -------
    mpmath.mpf or float
    """
    x = float(x)
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return x if x > 0 else -0.0
    prec = _prec_for(x)
    cdf, _ = _phi_terms(x, prec)
    with mpmath.workprec(prec):
        return mpmath.mpf(x) * cdf


def _grad(x: float, prec: int):
    """GELU'(x) for finite x, raising precision until TARGET_BITS survive."""
    while True:
        cdf, pdf = _phi_terms(x, prec)
        with mpmath.workprec(prec):
            t = mpmath.mpf(x) * pdf
            g = cdf + t
        lost = max(_mag(cdf), _mag(t)) - _mag(g)
        if prec - lost >= TARGET_BITS + 32 or prec >= _MAX_PREC:
            return g
        prec = min(_MAX_PREC, prec + lost + 64)


def gelu_grad(x: float):
    """GELU'(x) = Phi(x) + x*phi(x) as an mpf.

    The precision is raised adaptively so that the cancellation near
    ``X0`` still leaves >= 256 correct bits.

    Parameters
    ----------
    x : float
        A double. ``inf`` gives 1.0, ``-inf`` gives -0.0, NaN gives NaN.

    Returns
    -------
    mpmath.mpf or float
    """
    x = float(x)
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return 1.0 if x > 0 else -0.0
    return _grad(x, _prec_for(x))


def gelu_grad2(x: float):
    """GELU''(x) = phi(x)*(2 - x**2) as an mpf.

    ``2 - x*x`` is evaluated exactly (as ``x`` is a double it has at most
    106 significant bits near the zeros ``+-sqrt(2)``), so the zeros cost no
    precision.

    Parameters
    ----------
    x : float
        A double. ``+-inf`` gives -0.0, NaN gives NaN.

    Returns
    -------
    mpmath.mpf or float
    """
    x = float(x)
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return -0.0
    prec = _prec_for(x)
    _, pdf = _phi_terms(x, prec)
    xm = mpmath.mpf(x)
    # Exact: no rounding, whatever the magnitudes.
    q = mpmath.fsub(2, mpmath.fmul(xm, xm, exact=True), exact=True)
    with mpmath.workprec(prec):
        return pdf * q


def gelu_backward(dy: float, x: float):
    """dy * GELU'(x) as an mpf (the vector-Jacobian product of GELU).

    Parameters
    ----------
    dy : float
        Incoming gradient (a double).
    x : float
        A double.

    Returns
    -------
    mpmath.mpf or float
        NaN if either argument is NaN or if an infinite ``dy`` meets a zero
        gradient; a signed infinity for infinite ``dy`` otherwise.
    """
    dy = float(dy)
    g = gelu_grad(x)
    if math.isnan(dy) or (isinstance(g, float) and math.isnan(g)):
        return math.nan
    if isinstance(g, float):
        return dy * g
    if math.isinf(dy):
        if not g:
            return math.nan
        return math.copysign(math.inf, dy) * (1.0 if g > 0 else -1.0)
    # Exact product: no rounding on top of g's.
    return mpmath.fmul(dy, g, exact=True)


def evaluate_all(x: float, dy: float = 1.0) -> dict:
    """All six functions at once (sharing the Phi/phi evaluations).

    Parameters
    ----------
    x, dy : float
        Finite doubles.

    Returns
    -------
    dict
        ``{name: mpf}`` for every name in :data:`FUNCTIONS`; ``gelu_backward``
        uses ``dy``.
    """
    x = float(x)
    dy = float(dy)
    if not (math.isfinite(x) and math.isfinite(dy)):
        return {
            "ndtr": ndtr(x),
            "norm_pdf": norm_pdf(x),
            "gelu": gelu(x),
            "gelu_grad": gelu_grad(x),
            "gelu_grad2": gelu_grad2(x),
            "gelu_backward": gelu_backward(dy, x),
        }
    prec = _prec_for(x)
    cdf, pdf = _phi_terms(x, prec)
    g = _grad(x, prec)
    xm = mpmath.mpf(x)
    q = mpmath.fsub(2, mpmath.fmul(xm, xm, exact=True), exact=True)
    with mpmath.workprec(prec):
        out = {
            "ndtr": cdf,
            "norm_pdf": pdf,
            "gelu": xm * cdf,
            "gelu_grad": g,
            "gelu_grad2": pdf * q,
        }
    out["gelu_backward"] = mpmath.fmul(dy, g, exact=True)
    return out


# ---------------------------------------------------------------- conversions


def to_double(v) -> float:
    """Round an mpf (or float) to the nearest double, ties to even.

    Unlike ``float(mpf)``, this rounds once even when the result is
    subnormal (mpmath rounds to 53 bits first and then again in
    ``math.ldexp``), and keeps the sign of results that underflow to zero.

    Parameters
    ----------
    v : mpmath.mpf or float

    Returns
    -------
    float
        ``+-inf`` when ``|v|`` rounds beyond the largest double.
    """
    if isinstance(v, float):
        return v
    sign, man, exp, bc = _as_mpf(v)._mpf_
    if not man:
        return float(v)  # zero, inf, nan
    s = -1.0 if sign else 1.0
    top = exp + bc  # 2**(top-1) <= |v| < 2**top
    if top < -1075:
        # |v| < 2**-1076, below half the smallest subnormal.
        return math.copysign(0.0, s)
    if top > 1025:
        return math.copysign(math.inf, s)
    try:
        # int -> float and int / int are correctly rounded in CPython,
        # subnormal results included.
        r = float(man << exp) if exp >= 0 else man / (1 << -exp)
    except OverflowError:
        return math.copysign(math.inf, s)
    return math.copysign(r, s)


def to_dd(v) -> tuple[float, float]:
    """Double-double split ``(hi, lo)`` of an mpf.

    Parameters
    ----------
    v : mpmath.mpf or float

    Returns
    -------
    tuple of float
        ``hi`` = ``v`` rounded to nearest; ``lo`` = ``v - hi`` (computed
        exactly) rounded to nearest. Special values give ``(v, 0.0)``.
    """
    if isinstance(v, float):
        return v, 0.0
    v = _as_mpf(v)
    hi = to_double(v)
    if not math.isfinite(hi):
        return hi, 0.0
    rest = mpmath.fsub(v, hi, exact=True)
    lo = to_double(rest)
    if lo == 0.0:
        lo = 0.0
    return hi, lo


def _as_mpf(v):
    # mpmath.mpf(an_mpf) would round to the global 53-bit precision.
    if isinstance(v, mpmath.mpf):
        return v
    with mpmath.workprec(BASE_PREC):
        return mpmath.mpf(v)


def _exponent(v) -> int:
    """floor(log2|v|) of a nonzero finite mpf."""
    sign, man, exp, bc = v._mpf_
    return exp + bc - 1


def ulp_error(computed: float, exact, dtype=np.float64) -> float:
    """Error of one computed value in ulps of the exact value.

    ``ulp(v) = 2**(e - p + 1)`` for ``2**e <= |v| < 2**(e+1)``, with ``e``
    clamped at the smallest normal exponent of ``dtype`` so that subnormal
    results are measured in the subnormal spacing; an exact zero has the
    subnormal spacing as its ulp.

    Parameters
    ----------
    computed : float
        The value to judge (a float32 is exactly representable as float).
    exact : mpmath.mpf or float
        The exact value (e.g. from this module). Values beyond the target
        format's range are out of scope.
    dtype : {numpy.float64, numpy.float32, numpy.float16, "bfloat16"}
        The format whose ulp is used.

    Returns
    -------
    float
        0 when both are NaN or equal infinities; inf for mismatched special
        values.
    """
    p, emin = _format(dtype)
    computed = float(computed)
    ex = exact if isinstance(exact, float) else _as_mpf(exact)
    c_nan, e_nan = math.isnan(computed), mpmath.isnan(ex)
    if c_nan or e_nan:
        return 0.0 if (c_nan and e_nan) else math.inf
    c_inf, e_inf = math.isinf(computed), mpmath.isinf(ex)
    if c_inf or e_inf:
        return 0.0 if (c_inf and e_inf and computed == ex) else math.inf
    ex = _as_mpf(ex)
    e = emin if not ex else max(_exponent(ex), emin)
    diff = mpmath.fsub(computed, ex, exact=True)
    # Exact power-of-two scaling, then one rounding.
    return abs(to_double(mpmath.ldexp(diff, -(e - p + 1))))


def ulp_error_dd(computed, hi, lo, dtype=np.float64, res=None) -> np.ndarray:
    """Vectorised ulp error against a double-double exact value ``hi + lo``.

    Parameters
    ----------
    computed : array_like
        Computed values (any float dtype; promoted to float64).
    hi, lo : array_like of float64
        Exact value as a double-double (``lo`` may be all zeros when the
        exact value is a plain float64 reference).
    dtype : {numpy.float64, numpy.float32, numpy.float16, "bfloat16"}
        Target format: its precision and smallest normal exponent define
        ``ulp(hi)``; results with ``|hi|`` below the smallest normal (and
        ``hi == 0``) use the subnormal spacing.

    Returns
    -------
    numpy.ndarray of float64
        ``|(computed - hi) - lo| / ulp(hi)``; 0 where both sides are NaN or
        equal infinities, inf for mismatched special values.

    Notes
    -----
    Where ``|hi|`` is below the smallest normal double, ``lo`` cannot resolve
    less than a subnormal spacing: pass ``res = (exact - hi)/2**-1074`` (the
    table's ``<name>_res``) for the exact error; without it the result is
    only as good as ``lo`` (within 1 ulp there).  ``computed - hi`` is exact by Sterbenz's lemma whenever the two are
    within a factor of 2, i.e. whenever the error is below ~2**p ulps, so the
    result is exact to a relative ~2**-53.
    """
    p, emin = _format(dtype)
    c = np.asarray(computed, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    c, hi, lo = np.broadcast_arrays(c, hi, lo)
    with np.errstate(all="ignore"):
        _, E = np.frexp(hi)
        # frexp gives hi = m*2**E with 0.5 <= |m| < 1, so floor(log2|hi|) = E-1.
        e = np.where(hi == 0, emin, np.maximum(E.astype(np.int64) - 1, emin))
        ulp = np.ldexp(1.0, (e - p + 1).astype(np.int32))
        err = np.abs((c - hi) - lo) / ulp
        # Below the smallest normal double, lo = float(v - hi) is itself
        # quantised to the subnormal spacing and carries no information.
        # With res = (v - hi)/2**-1074 given, the error in units of 2**-1074
        # is exact.
        if res is not None:
            sub64 = np.abs(hi) < np.finfo(np.float64).tiny
            res = np.broadcast_to(np.asarray(res, dtype=np.float64), c.shape)
            scale = 2.0**-1074 / ulp   # 1 for float64; float32 subnormal hi never occurs
            sub_err = np.abs((c - hi) / 2.0**-1074 - res) * scale
            err = np.where(sub64, sub_err, err)
        c_fin, h_fin = np.isfinite(c), np.isfinite(hi)
        special = ~(c_fin & h_fin)
        same = (np.isnan(c) & np.isnan(hi)) | (np.isinf(c) & (c == hi))
        err = np.where(special, np.where(same, 0.0, np.inf), err)
    return err
