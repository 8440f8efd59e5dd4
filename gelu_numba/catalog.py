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


# ------------------------------------------------ approximations and family

_APPROX_DTYPES = """
    float32 and float64 loops, the same casting rules, keywords and error
    messages as :func:`gelu_numba.gelu`."""

_IMPL = """
    Implementation error against the formula itself (mpmath): below 1 ulp
    in float64 (double-double evaluation, one rounding; about 1.5 ulp next
    to the derivative's zero) and float32 (float64 evaluation)."""


def _named(kernel, name):
    """The compiled body under the public name (the ufunc's __name__)."""
    kernel.__name__ = kernel.__qualname__ = name
    kernel.cuda.__name__ = kernel.cuda.__qualname__ = name
    return kernel


def _approx_entries():
    from gelu_numba.kernels import erf_as, fitted, logistic
    from gelu_numba.tables import approximations as tab

    def pair(name, fwd, grad, formula, doc):
        err = tab.ERRORS.get(name.removeprefix("gelu_"))
        note = ("" if err is None else
                f"\n    Max |error| against the exact GELU: {err[0]:.3g} at "
                f"|x| = {abs(err[1]):.3g}; derivative {err[2]:.3g} at "
                f"x = {err[3]:.3g}.")
        return [
            Entry(name, _named(fwd, name), 1, f"""{name}(x, /, out=None, *, where=True, ...)

    {formula}.  {doc}{note}
{_APPROX_DTYPES}
{_IMPL}
"""),
            Entry(name + "_grad", _named(grad, name + "_grad"), 1, f"""{name}_grad(x, /, out=None, *, where=True, ...)

    Derivative of :func:`{name}` ({formula}).{note}
{_APPROX_DTYPES}
{_IMPL}
"""),
        ]

    def bp(k64, k32):
        return by_precision(k64, k32, 1)

    out = []
    out += pair("gelu_tanh", bp(logistic.gelu_tanh_64, logistic.gelu_tanh_32),
                bp(logistic.gelu_tanh_grad_64, logistic.gelu_tanh_grad_32),
                "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))",
                "Evaluated as x sigma(2u), faithful in the negative tail.")
    out += pair("gelu_sigmoid", bp(logistic.gelu_sigmoid_64, logistic.gelu_sigmoid_32),
                bp(logistic.gelu_sigmoid_grad_64, logistic.gelu_sigmoid_grad_32),
                "x sigma(1.702 x)", "The paper's sigmoid approximation.")
    out += pair("gelu_as26", bp(erf_as.gelu_as26_64, erf_as.gelu_as26_32),
                bp(erf_as.gelu_as26_grad_64, erf_as.gelu_as26_grad_32),
                "0.5 x (1 + erf_AS(x/sqrt 2)), Abramowitz & Stegun 7.1.26",
                "The erf of oneDNN's and PyTorch's SIMD GELU, without the "
                "1 + erf cancellation.")
    for name in sorted(tab.FITS_BY_NAME, key=lambda n: (len(n), n)):
        fit = tab.FITS_BY_NAME[name]
        k = fitted.t_form_kernels(name, fit, getattr(tab, f"ZERO_FIT_{name.upper()}"))
        m, n = fit["degrees"]
        form = f"polynomial of degree {m}" if n == 0 else f"rational of degrees ({m}, {n})"
        out += pair(f"gelu_{name}", bp(k[0], k[2]), bp(k[1], k[3]),
                    f"fitted GELU: x T(|x|) or x (1 - T(|x|)), T(a) = (L - a)**2 R(S a - 1), "
                    f"R a {form}, L = {fit['L']}",
                    "Minimax fit of the absolute error over all real x "
                    "(gelu_numba.fitting.make_approximations).")
    return out


def _named_bp(name, k64, k32, nin):
    return _named(by_precision(k64, k32, nin), name)


def _family_entries():
    from gelu_numba.kernels import family, logistic
    return [
        Entry("gelu_general", _named_bp("gelu_general", family.gelu_general_64,
                                           family.gelu_general_32, 3), 3,
              f"""gelu_general(x, mu, sigma, /, out=None, *, where=True, ...)

    The GELU of N(mu, sigma**2): ``x Phi((x - mu)/sigma)`` (Hendrycks &
    Gimpel, section 2).  ``sigma = 0`` is the limit ``x H(x - mu)`` with
    ``H(0) = 1/2``, which for ``mu = 0`` is the ReLU; ``sigma < 0`` or NaN
    arguments give NaN; ``sigma = inf`` gives ``x/2``.
    Error below 1 ulp in both dtypes: ``(x - mu)/sigma`` is carried as a
    double-double (Phi is steep: a rounded z would cost up to z**2 ulps).
{_APPROX_DTYPES}
"""),
        Entry("silu", _named_bp("silu", logistic.silu_64, logistic.silu_32, 1), 1,
              f"""silu(x, /, out=None, *, where=True, ...)

    SiLU (swish): ``x F(x)`` with F the logistic CDF, ``x sigma(x)``.
    Below 1 ulp in both dtypes (1.5 ulp next to its derivative's zero).
{_APPROX_DTYPES}
"""),
        Entry("silu_grad", _named_bp("silu_grad", logistic.silu_grad_64, logistic.silu_grad_32, 1), 1,
              f"""silu_grad(x, /, out=None, *, where=True, ...)

    Derivative of the SiLU, ``sigma(x) (1 + x sigma(-x))``; its zero
    x0 = -1.27846454... is handled by a Taylor form (relative error bounded).
{_APPROX_DTYPES}
"""),
        Entry("x_cauchy", _named_bp("x_cauchy", family.x_cauchy, family.x_cauchy, 1), 1,
              f"""x_cauchy(x, /, out=None, *, where=True, ...)

    ``x F(x)`` with F the standard Cauchy CDF ``1/2 + atan(x)/pi``: like
    the ELU it saturates at a negative constant (-1/pi as x -> -inf).
    Error about 1 ulp (the C library's atan plus one rounding).
{_APPROX_DTYPES}
"""),
        Entry("x_cauchy_grad", _named_bp("x_cauchy_grad", family.x_cauchy_grad, family.x_cauchy_grad, 1), 1,
              f"""x_cauchy_grad(x, /, out=None, *, where=True, ...)

    Derivative of :func:`x_cauchy`, ``F(x) + x/(pi (1 + x**2))``; positive
    everywhere, computed without the cancellation of the formula for x < 0.
{_APPROX_DTYPES}
"""),
        Entry("lalu", _named_bp("lalu", family.lalu, family.lalu, 1), 1,
              f"""lalu(x, /, out=None, *, where=True, ...)

    The "LaLU": ``x F(x)`` with F the standard Laplace CDF
    (``e**x/2`` for x < 0, ``1 - e**-x/2`` for x >= 0).  Below 1 ulp.
{_APPROX_DTYPES}
"""),
        Entry("lalu_grad", _named_bp("lalu_grad", family.lalu_grad, family.lalu_grad, 1), 1,
              f"""lalu_grad(x, /, out=None, *, where=True, ...)

    Derivative of the LaLU, ``F(x) + x e**-|x|/2``; its zero at x = -1 is
    exact.  Below 1 ulp.
{_APPROX_DTYPES}
"""),
    ]


APPROX_ENTRIES = _approx_entries()
FAMILY_ENTRIES = _family_entries()
