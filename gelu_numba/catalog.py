"""The public functions: name, scalar kernel, number of inputs, docstring.

Every target (``gelu_numba`` for the CPU, ``gelu_numba.parallel``,
``gelu_numba.gpu``) is generated from this one list, so a function is
declared once and documented once.
"""

from collections import namedtuple

from gelu_numba.kernels import normal, normal32
from gelu_numba.kernels.dispatch import by_precision

Entry = namedtuple("Entry", "name kernel nin doc")

_DTYPES = """
    Loops for float32 and float64 (float32 in, float32 out); bool, integer and
    float16 inputs are cast by NumPy's safe-casting rules (int32/int64 to
    float64).  Other dtypes raise ``TypeError``.  All ufunc keywords work:
    ``out=`` (also in place, ``out=x``), ``where=``, broadcasting."""

_EXACT = """
    Error below 1 ulp in float64 and in float32, including subnormal results
    and the whole underflowing tail (measured maxima in the README).
    float64 is evaluated in double-double arithmetic
    (``gelu_numba.kernels.normal``, bound 0.5 + 2**-4 ulp); float32 in float64
    arithmetic with rational approximations (``gelu_numba.kernels.normal32``,
    bound 0.5 + 2**-13 ulp).  Both loops are SIMD-vectorised."""

ENTRIES = [
    Entry("gelu", by_precision(normal.gelu, normal32.gelu, 1), 1, f"""gelu(x, /, out=None, *, where=True, ...)

    Exact GELU: ``x * Phi(x)``, Phi the standard normal CDF
    (Hendrycks & Gimpel's GELU with mu = 0, sigma = 1).

    Domain: all real x.  ``gelu(+inf) = +inf``, ``gelu(-inf) = -0.0``,
    ``gelu(+-0) = +-0``, NaN propagates.  Underflows to -0.0 below about
    x = -38.51 (float64) and x = -14.36 (float32).
{_DTYPES}
{_EXACT}
"""),
    Entry("gelu_grad", by_precision(normal.gelu_grad, normal32.gelu_grad, 1), 1, f"""gelu_grad(x, /, out=None, *, where=True, ...)

    First derivative of GELU: ``Phi(x) + x * phi(x)``.

    Domain: all real x.  ``gelu_grad(+inf) = 1``, ``gelu_grad(-inf) = -0.0``,
    NaN propagates.  Its zero x0 = -0.75179152469356... is handled as an
    exact factor, so the error bound is relative even next to it.
{_DTYPES}
{_EXACT}
"""),
    Entry("gelu_grad2", by_precision(normal.gelu_grad2, normal32.gelu_grad2, 1), 1, f"""gelu_grad2(x, /, out=None, *, where=True, ...)

    Second derivative of GELU: ``phi(x) * (2 - x**2)``.

    Domain: all real x; ``gelu_grad2(+-inf) = -0.0``, NaN propagates.  The
    factor ``2 - x**2`` is exact, so the bound holds next to x = +-sqrt(2).
{_DTYPES}
{_EXACT}
"""),
    Entry("gelu_backward", by_precision(normal.gelu_backward, normal32.gelu_backward, 2), 2, f"""gelu_backward(dy, x, /, out=None, *, where=True, ...)

    Fused backward pass of GELU: ``dy * gelu_grad(x)``, rounded once.

    Domain: all real dy and x; IEEE rules for infinities
    (``gelu_backward(inf, -inf)`` is NaN since ``gelu_grad(-inf) = 0``).
    The scaling is internal, so ``dy * gelu_grad(x)`` is right even where
    ``gelu_grad(x)`` alone would underflow.
{_DTYPES}
{_EXACT}
"""),
    Entry("ndtr", by_precision(normal.ndtr, normal32.ndtr, 1), 1, f"""ndtr(x, /, out=None, *, where=True, ...)

    Standard normal CDF ``Phi(x) = erfc(-x/sqrt 2)/2`` (SciPy's name).

    Domain: all real x; ``ndtr(-inf) = 0``, ``ndtr(+inf) = 1``, NaN
    propagates.  Underflows to 0 below about x = -38.48 (float64),
    x = -14.17 (float32).
{_DTYPES}
{_EXACT}
"""),
    Entry("norm_pdf", by_precision(normal.norm_pdf, normal32.norm_pdf, 1), 1, f"""norm_pdf(x, /, out=None, *, where=True, ...)

    Standard normal density ``phi(x) = exp(-x**2/2) / sqrt(2 pi)``.

    Domain: all real x; ``norm_pdf(+-inf) = 0``, NaN propagates.
{_DTYPES}
{_EXACT}
"""),
]
