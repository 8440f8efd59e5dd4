"""The catalog: every public function as one plain record.

A :class:`Function` names a function, its float64 and float32 scalar
kernels (plain Python functions of :mod:`gelu_numba.kernels`), its number of
inputs, its documentation (mathematics, domain, special values, accuracy:
what every target shares) and the public modules that carry it.  Nothing
here compiles anything: the targets (:mod:`gelu_numba.targets`) turn a
record into a CPU ufunc, a multithreaded ufunc, a CUDA kernel or a device
function, and add their own interface paragraph to the documentation.

Adding a function is a kernel in :mod:`gelu_numba.kernels` and one record
here.  :func:`lookup` finds a record by name, :func:`published` lists the
records of one public module, :func:`group` those of one group.
"""

import contextlib
import dataclasses
import importlib
import inspect
import math
import sys
import textwrap
from collections import namedtuple
from dataclasses import dataclass
from types import MappingProxyType

from gelu_numba.kernels import (
    erf_as, family, fitted, formulas, gpu32, logistic, normal, normal32_cpu_f64, rounded32,
)
from gelu_numba.figures import FIGURES
from gelu_numba.measured import MEASURED
from gelu_numba.tables import approximations as _tab

#: the groups of :attr:`Function.group`, in catalog order
GROUPS = ("exact", "family", "approximation")

#: the records that the targets' formulas name by their mathematical role:
#: GELU itself, Phi (the standard normal CDF) and phi (its density); the
#: records' links name the rest (:func:`derivatives`, :attr:`Function.backward`)
GELU, CDF, PDF = "gelu", "ndtr", "norm_pdf"

#: the public modules, as ``Function.modules`` names them
TOP, APPROX, PARALLEL, GPU = ("gelu_numba", "gelu_numba.approximations",
                              "gelu_numba.parallel", "gelu_numba.gpu")

#: each parameter name of the records in the documentation's examples: an
#: array of :data:`EXAMPLE_ARRAYS`, or a number
EXAMPLE_ARGUMENTS = MappingProxyType({"x": "x", "dy": "dy", "mu": "0.25", "sigma": "0.5"})
#: the examples' arrays: name -> the NumPy expression that makes it
EXAMPLE_ARRAYS = MappingProxyType({"x": "np.linspace(-3, 3, 7, dtype=np.float32)",
                                   "dy": "np.ones(7, np.float32)"})


@dataclass(frozen=True, eq=False)
class Function:
    """One public function (equal only to itself: its kernels' tables are
    arrays).

    Attributes
    ----------
    name : str
        The public name (``gelu``, ``gelu_backward``, ...).
    k64, k32 : function
        The float64 and float32 scalar kernels.
    nin : int
        Number of inputs.
    doc : str
        Mathematics, domain, special values and accuracy, as the body of a
        NumPy-style docstring (the targets add the call signature and the
        interface); its last paragraph states :attr:`bound` and the
        measured maxima of :mod:`gelu_numba.measured`.
    modules : tuple of str
        The public modules that publish it; the first is its home (where
        it pickles to).
    bound : tuple of float
        The stated error bound in ulps of the exact value, (float32,
        float64); the gelu-numba repository's ``tests/test_measured.py``
        holds the measured maxima to it.
    gpu32 : function or None
        The GPU's float32 kernel where it is not ``k32``: float32 arithmetic
        (:mod:`gelu_numba.kernels.gpu32`) instead of the CPU's float64,
        which most GPUs run at 1/32 to 1/64 of their float32 rate.
    gpu_bound : float or None
        The stated float32 bound in ulps of its float32-arithmetic GPU
        kernels (``gpu32`` and ``lean32``: :data:`GPU32_BOUND`),
        where it has them; elsewhere the GPU runs ``k32``
        (:data:`PLAIN32_BOUND` for the exact functions).
    ordinary : tuple or None
        ``(in_range, kernel)``: the float64 kernel's ordinary form, which
        returns its bits for the arguments ``in_range`` accepts by fewer
        steps (:mod:`gelu_numba.kernels.normal`); the CPU loops run each
        block of elements all in range through it.
    half : bool
        Whether it has correctly rounded 2-byte loops (float16, and
        bfloat16 on its bits: :mod:`gelu_numba.targets.cpu.half_loops`), on the CPU
        and for the GPU's 2-byte kernels; the PyTorch and JAX targets run
        half tensors through them in one pass where it does.
    group : str
        ``"exact"`` (GELU, its derivatives, Phi and phi: correctly
        rounded but for a small excess), ``"family"`` (the paper's
        generalisations) or ``"approximation"`` (the approximations of
        GELU and their derivatives): :data:`GROUPS`.
    reference : str or callable
        The mpmath reference the accuracy measurements judge it against:
        a callable, or ``"module.function"`` of the gelu-numba
        repository's ``reference`` package (``"mp.gelu"``,
        ``"approx.gelu_tanh"``).
    lean32 : tuple or None
        ``(kernel, table)`` of its lean float32 GPU kernel (float32
        arithmetic from one table row, :mod:`gelu_numba.kernels.lean32`):
        the scalar kernel takes the table as its last argument.
    tabled : tuple or None
        ``(kernel, tables)``: ``k32`` in the form that takes its tables as
        the last argument, for GPU kernels that read them from device
        memory (:mod:`gelu_numba.kernels.normal32_cpu_f64`).
    rounded : tuple or None
        ``(kernel, fast, accurate, bracket)``: its correctly rounded
        float32 kernel on the CPU, which the float32 loops run instead of
        ``k32``, that kernel's fast and accurate paths, and the bracket its
        rounding test uses (:mod:`gelu_numba.kernels.rounded32`).
    derivative : str or None
        The name of the record that is its first derivative (``gelu`` ->
        ``gelu_grad`` -> ``gelu_grad2``; ``ndtr`` -> ``norm_pdf``): what
        the JAX and PyTorch targets differentiate it by.
    backward : str or None
        The name of its fused backward, ``dy * derivative(x)`` rounded once
        (``gelu`` -> ``gelu_backward``).
    approximate : str or None
        For an approximation of GELU: the value of the frontends'
        ``approximate`` argument that selects it (``"tanh"`` for
        ``gelu_tanh``; :func:`approximate_keys`).
    formula : function or None
        For an approximation of GELU: its formula as array operations,
        ``formula(w, ops)`` (:mod:`gelu_numba.kernels.formulas`), which
        the PyTorch and JAX targets differentiate beyond its recorded
        derivative and the ONNX export writes out.
    """

    name: str
    k64: object
    k32: object
    nin: int
    doc: str
    modules: tuple
    bound: tuple
    gpu32: object = None
    gpu_bound: float = None
    ordinary: tuple = None
    half: bool = False
    group: str = "exact"
    reference: object = None
    lean32: tuple = None
    tabled: tuple = None
    rounded: tuple = None
    derivative: str = None
    backward: str = None
    approximate: str = None
    formula: object = None

    def __post_init__(self):
        if self.group not in GROUPS:
            raise ValueError(f"{self.name}: group must be one of {', '.join(GROUPS)} "
                             f"(got {self.group!r})")
        if self.reference is None:
            object.__setattr__(self, "reference", ("mp." if self.group == "exact" else
                                                   "approx.") + self.name)
        if self.approximate is not None and (self.formula is None or self.derivative is None):
            raise ValueError(f"{self.name}: an approximation that approximate= selects needs "
                             "its formula and its derivative's record (formula=, derivative=)")

    def kernel(self, char):
        """The CPU kernel of loop ``char``: ``"f"`` (float32) or ``"d"``."""
        if char == "f":
            return self.k32 if self.rounded is None else self.rounded[0]
        return self.k64

    def ordinary_kernel(self, char):
        """``(in_range, kernel)`` of loop ``char``'s ordinary form, or None."""
        return self.ordinary if char == "d" else None

    def rounded_kernel(self, char):
        """``(fast, accurate, bracket)`` of loop ``char``'s correctly
        rounded form: the fast path, the accurate path and the rounding
        test's bracket (:mod:`gelu_numba.kernels.rounded32`), or None."""
        if char != "f" or self.rounded is None:
            return None
        return self.rounded[1:]

    @property
    def params(self):
        """The kernel's parameter names, e.g. ``("dy", "x")``."""
        return tuple(inspect.signature(self.k64).parameters)


#: max |error| of an approximation against the exact GELU (forward) and
#: GELU' (grad), and an x where each occurs
MaxErrors = namedtuple("MaxErrors", "forward forward_at grad grad_at")

def record(name, k64, k32, nin, body, how, bound, modules, gpu32=None, group="exact",
           measured=None, **fields):
    """A :class:`Function` whose docstring is ``body`` followed by the
    accuracy paragraph: ``how`` it is evaluated, the stated ``bound``
    (float32, float64) and the ``measured`` maxima (float32, float64; by
    default those of :mod:`gelu_numba.measured`, NaN where it has none).
    ``fields``: the record's other attributes."""
    m32, m64 = measured or MEASURED.get(name, (math.nan, math.nan))
    exhaustive = FIGURES.get(f"exhaustive32_{name}")
    if exhaustive is not None and measured is None:
        found = (f"measured max {exhaustive} ulp over all 2**32 float32 inputs "
                 f"(``python -m analysis.sweep_float32``) and {m64:.3f} ulp on sampled "
                 f"float64 inputs")
    else:
        found = f"measured max {m32:.3f} and {m64:.3f} ulp on sampled inputs"
    text = (f"Accuracy: {how}  Stated bound: {_ulps(bound[0])} (float32), "
            f"{_ulps(bound[1])} (float64); {found} "
            f"(:mod:`gelu_numba.measured`, by ``python -m analysis.accuracy "
            f"--write-measured`` in the gelu-numba repository).")
    doc = body + "\n\n" + textwrap.fill(text, 76, initial_indent="    ",
                                         subsequent_indent="    ")
    return Function(name, k64, k32, nin, doc, modules, bound, gpu32, group=group, **fields)


def describe_bound(bound):
    """A stated bound as written: ``0.5 + 2**-e`` where it is one, else the
    number (``1``, ``1.5``)."""
    excess = bound - 0.5
    if excess > 0:
        e = -math.log2(excess)
        if e == int(e) and e >= 2:
            return f"0.5 + 2**-{int(e)}"
    return f"{bound:g}"


def _ulps(bound):
    return f"{describe_bound(bound)} ulp"


#: the exact functions' stated bounds in ulps, (float32, float64): float32
#: correctly rounded (gelu_numba.kernels.rounded32), float64 the error
#: analysis of gelu_numba.kernels.normal
EXACT_BOUND = (0.5, 0.5 + 2**-4)
#: the fused backward's: correctly rounded but where the float64 kernel's
#: value is a float32 midpoint (gelu_numba.kernels.rounded32), which is then
#: within 0.5625 float64 ulp, 2**-29.8 float32 ulp, of the exact value
BACKWARD_BOUND = (0.5 + 2**-29, EXACT_BOUND[1])
#: the stated float32 bound of the float32 kernels in float64 arithmetic
#: without the rounding test (gelu_numba.kernels.normal32_cpu_f64, a
#: record's ``k32``), which GPUs with full-rate FP64 run: its error analysis
PLAIN32_BOUND = 0.5 + 2**-7
#: the stated float32 bound of the GPU's float32-arithmetic kernels (gpu32
#: and lean32: the error analysis of gelu_numba.kernels.gpu32)
GPU32_BOUND = gpu32.BOUND

_EXACT = ("float64 in double-double arithmetic (:mod:`gelu_numba.kernels.normal`); "
          "float32 on the CPU correctly rounded, subnormal results and the whole "
          "underflowing tail included: a fast path in float64 arithmetic with rational "
          "approximations, a rounding test, and the float64 kernel where the test is "
          "unsure (:mod:`gelu_numba.kernels.rounded32`), checked on all 2**32 inputs "
          "(``python -m analysis.sweep_float32`` and ``tests/test_rounded32.py`` in the "
          "gelu-numba repository).")

_IMPL = ("implementation error against the formula itself (mpmath): float64 in "
         "double-double arithmetic with one final rounding, float32 in float64.")

_EXACT_MODULES = (TOP, PARALLEL, GPU)


class Imported(tuple):
    """``(kernel, table)`` named in a module that is imported on first use:
    the lean kernels' tables are large, and only a GPU launch reads them
    (the package's import stays as fast without them)."""

    def __new__(cls, module, kernel, table):
        return super().__new__(cls, (module, kernel, table))

    def __getitem__(self, i):
        module, *names = tuple.__iter__(self)
        return getattr(importlib.import_module(module), names[i])

    def __iter__(self):
        return iter((self[0], self[1]))

    def __len__(self):
        return 2

    def __repr__(self):
        module, kernel, table = tuple.__iter__(self)
        return f"Imported({module}.{kernel}, {module}.{table})"


def _lean32(kernel, table):
    """A lean float32 GPU kernel and its table, imported on first use."""
    return Imported("gelu_numba.kernels.lean32", kernel, table)


def _exact():
    # the GPU's float32-arithmetic bound wherever a record has such a kernel
    return [dataclasses.replace(f, gpu_bound=GPU32_BOUND if f.gpu32 is not None else None)
            for f in _exact_records()]


def _exact_records():
    return [
        record(GELU, normal.gelu, normal32_cpu_f64.gelu, 1, """
    Exact GELU: ``x * Phi(x)``, Phi the standard normal CDF
    (Hendrycks & Gimpel's GELU with mu = 0, sigma = 1).

    Domain: all real x.  ``gelu(+inf) = +inf``, ``gelu(-inf) = -0.0``,
    ``gelu(+-0) = +-0``, NaN propagates.  Underflows to -0.0 below about
    x = -38.58 (float64) and x = -14.36 (float32).""", _EXACT, EXACT_BOUND, _EXACT_MODULES,
                  gpu32.gelu, derivative="gelu_grad", backward="gelu_backward", half=True,
                  lean32=_lean32("gelu_t", "Q_TABLE"),
                  tabled=(normal32_cpu_f64.gelu_t, normal32_cpu_f64.TABLES),
                  rounded=(rounded32.gelu, rounded32.gelu_fast, rounded32.gelu_accurate,
                           rounded32.bracket),
                  ordinary=(normal.in_range, normal.gelu_ordinary)),
        record("gelu_grad", normal.gelu_grad, normal32_cpu_f64.gelu_grad, 1, """
    First derivative of GELU: ``Phi(x) + x * phi(x)``.

    Domain: all real x.  ``gelu_grad(+inf) = 1``, ``gelu_grad(-inf) = -0.0``,
    NaN propagates.  Its zero x0 = -0.75179152469356... is handled as an
    exact factor, so the error bound is relative even next to it.""", _EXACT, EXACT_BOUND, _EXACT_MODULES,
                  gpu32.gelu_grad, derivative="gelu_grad2", half=True,
                  lean32=_lean32("gelu_grad_t", "G_TABLE"),
                  tabled=(normal32_cpu_f64.gelu_grad_t, normal32_cpu_f64.TABLES),
                  rounded=(rounded32.gelu_grad, rounded32.gelu_grad_fast,
                           rounded32.gelu_grad_accurate, rounded32.bracket),
                  ordinary=(normal.in_range, normal.gelu_grad_ordinary)),
        record("gelu_grad2", normal.gelu_grad2, normal32_cpu_f64.gelu_grad2, 1, """
    Second derivative of GELU: ``phi(x) * (2 - x**2)``.

    Domain: all real x; ``gelu_grad2(+-inf) = -0.0``, NaN propagates.  The
    factor ``2 - x**2`` is exact, so the bound holds next to x = +-sqrt(2).""", _EXACT, EXACT_BOUND, _EXACT_MODULES,
                  gpu32.gelu_grad2,
                  tabled=(normal32_cpu_f64.gelu_grad2_t, normal32_cpu_f64.TABLES),
                  rounded=(rounded32.gelu_grad2, rounded32.gelu_grad2_fast,
                           rounded32.gelu_grad2_accurate, rounded32.bracket),
                  ordinary=(normal.in_range, normal.gelu_grad2_ordinary)),
        record("gelu_backward", normal.gelu_backward, normal32_cpu_f64.gelu_backward, 2, """
    Fused backward pass of GELU: ``dy * gelu_grad(x)``, rounded once.

    Domain: all real dy and x; IEEE rules for infinities
    (``gelu_backward(inf, -inf)`` is NaN since ``gelu_grad(-inf) = 0``).
    The scaling is internal, so ``dy * gelu_grad(x)`` is right even where
    ``gelu_grad(x)`` alone would underflow.""", _EXACT, BACKWARD_BOUND, _EXACT_MODULES,
                  gpu32.gelu_backward, half=True,
                  lean32=_lean32("gelu_backward_t", "G_TABLE"),
                  tabled=(normal32_cpu_f64.gelu_backward_t, normal32_cpu_f64.TABLES),
                  rounded=(rounded32.gelu_backward, rounded32.gelu_backward_fast,
                           rounded32.gelu_backward_accurate, rounded32.bracket_exact),
                  ordinary=(normal.in_range_backward, normal.gelu_backward_ordinary)),
        record(CDF, normal.ndtr, normal32_cpu_f64.ndtr, 1, """
    Standard normal CDF ``Phi(x) = erfc(-x/sqrt 2)/2`` (SciPy's name).

    Domain: all real x; ``ndtr(-inf) = 0``, ``ndtr(+inf) = 1``, NaN
    propagates.  Underflows to 0 below about x = -38.49 (float64),
    x = -14.17 (float32).""", _EXACT, EXACT_BOUND, _EXACT_MODULES,
                  gpu32.ndtr, derivative=PDF,
                  lean32=_lean32("ndtr_t", "Q_TABLE"),
                  tabled=(normal32_cpu_f64.ndtr_t, normal32_cpu_f64.TABLES),
                  rounded=(rounded32.ndtr, rounded32.ndtr_fast, rounded32.ndtr_accurate,
                           rounded32.bracket),
                  ordinary=(normal.in_range, normal.ndtr_ordinary)),
        record(PDF, normal.norm_pdf, normal32_cpu_f64.norm_pdf, 1, """
    Standard normal density ``phi(x) = exp(-x**2/2) / sqrt(2 pi)``.

    Domain: all real x; ``norm_pdf(+-inf) = 0``, NaN propagates.""", _EXACT, EXACT_BOUND, _EXACT_MODULES,
                  gpu32.norm_pdf,
                  tabled=(normal32_cpu_f64.norm_pdf_t, normal32_cpu_f64.TABLES),
                  rounded=(rounded32.norm_pdf, rounded32.norm_pdf_fast,
                           rounded32.norm_pdf_accurate, rounded32.bracket),
                  ordinary=(normal.in_range, normal.norm_pdf_ordinary)),
    ]


# ------------------------------------------------------------ approximations

#: an approximation's facts: its four kernels (f64, f32, grad f64, grad
#: f32), its formula in words and as array operations
#: (:mod:`gelu_numba.kernels.formulas`), source, a note, and the public
#: modules of it and its derivative
_Approximation = namedtuple("_Approximation", "kernels formula form source note modules",
                            defaults=((APPROX, GPU),))
#: the paper's two forms are also at the top level
_PAPER_MODULES = (APPROX, TOP, GPU)

#: the closed forms: registry name -> _Approximation, the one text of each
#: (its docstring and the registry's record, :mod:`gelu_numba.approximations`)
_CLOSED = {
    "tanh": _Approximation(
        (logistic.gelu_tanh_64, logistic.gelu_tanh_32,
         logistic.gelu_tanh_grad_64, logistic.gelu_tanh_grad_32),
        "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))", formulas.tanh_form,
        "Hendrycks & Gimpel (2016), eq. after (1); BERT/GPT-2's gelu_new, "
        "PyTorch approximate='tanh'",
        "Evaluated as x sigma(2u), faithful in the negative tail.", _PAPER_MODULES),
    "sigmoid": _Approximation(
        (logistic.gelu_sigmoid_64, logistic.gelu_sigmoid_32,
         logistic.gelu_sigmoid_grad_64, logistic.gelu_sigmoid_grad_32),
        "x sigma(1.702 x)", formulas.sigmoid_form, "Hendrycks & Gimpel (2016), section 2",
        "The paper's sigmoid approximation.", _PAPER_MODULES),
    "as26": _Approximation(
        (erf_as.gelu_as26_64, erf_as.gelu_as26_32,
         erf_as.gelu_as26_grad_64, erf_as.gelu_as26_grad_32),
        "0.5 x (1 + erf(x/sqrt 2)), erf by Abramowitz & Stegun 7.1.26 "
        "(erf error <= 1.5e-7)", formulas.as26_form,
        "Abramowitz & Stegun (1964) 7.1.26 (Hastings 1955); oneDNN and "
        "PyTorch CPU SIMD GELU",
        "Evaluated without the 1 + erf cancellation."),
}

#: registry name -> MaxErrors (the repository's fitting.make_approximations)
APPROX_ERRORS = MappingProxyType({name: MaxErrors(*err) for name, err in _tab.ERRORS.items()})


def _fit(name):
    fit = _tab.FITS_BY_NAME[name]
    f64, g64, f32, g32 = fitted.t_form_kernels(
        name, fit, getattr(_tab, f"ZERO_FIT_{name.upper()}"))
    m, n = fit["degrees"]
    r = f"P_{m}" if n == 0 else f"P_{m}/Q_{n}"
    return _Approximation(
        (f64, f32, g64, g32),
        f"x (1 - T(abs(x))) (x >= 0), x T(abs(x)) (x < 0); "
        f"T(a) = (L - a)**2 {r}(S a - 1) for a < L = {fit['L']}, else 0",
        formulas.t_form(fit),
        "minimax fit of the absolute error over all real x with T(0) = 1/2 "
        "(GELU'(0) = 1/2 from both sides) and T >= 0 (the sign of GELU kept), "
        "the gelu-numba repository's fitting.make_approximations (Remez exchange" +
        (")" if n == 0 else "; rational Remez exchange from Lawson's fit)"),
        "")


def approximation_text(key):
    """``(formula, source, kind)`` of approximation ``key``: its one text,
    quoted by its docstring and by :mod:`gelu_numba.approximations`."""
    a = _CLOSED[key] if key in _CLOSED else _fit(key)
    return a.formula, a.source, "closed form" if key in _CLOSED else "fit"


def _approximations():
    out = []
    for key in APPROX_ERRORS:
        (f64, f32, g64, g32), formula, form, source, note, modules = (
            _CLOSED[key] if key in _CLOSED else _fit(key))
        note = f"{note + '  ' if note else ''}Source: {source}."
        err = APPROX_ERRORS[key]
        errors = (f"\n    Max absolute error against the exact GELU: {err.forward:.3g} at "
                  f"``|x| = {abs(err.forward_at):.3g}``; derivative {err.grad:.3g} at "
                  f"x = {err.grad_at:.3g}.")
        # the record's name (its derivative's adds _grad)
        name = f"gelu_{key}"
        body = textwrap.fill(f"{formula}.  {note}", 76, initial_indent="    ",
                             subsequent_indent="    ")
        out.append(record(name, f64, f32, 1, f"\n{body}{errors}",
                             _IMPL, (1.0, 1.0), modules, group="approximation",
                             derivative=name + "_grad", approximate=key, formula=form))
        out.append(record(name + "_grad", g64, g32, 1,
                             f"\n    Derivative of :func:`{name}` ({formula}).{errors}",
                             _IMPL + "  Next to the derivative's zero the float64 result "
                             "carries the zero's double-double error too.",
                             (1.0, 1.5), modules, group="approximation"))
    return out


# ------------------------------------------------------ the paper's family

_FAMILY_MODULES = (TOP, GPU)


def _family():
    m = _FAMILY_MODULES
    return [dataclasses.replace(f, group="family", reference=None) for f in [
        record("gelu_general", family.gelu_general_64, family.gelu_general_32, 3, """
    The GELU of N(mu, sigma**2): ``x Phi((x - mu)/sigma)`` (Hendrycks &
    Gimpel, section 2).  ``sigma = 0`` is the limit ``x H(x - mu)`` with
    ``H(0) = 1/2``, which for ``mu = 0`` is the ReLU; ``sigma = inf`` gives
    ``x/2``.  ``sigma < 0`` is outside the domain and gives NaN, silently
    (no floating-point flag; NumPy's own ufuncs raise "invalid" outside
    their domain, e.g. ``np.sqrt(-1.0)``); NaN arguments give NaN.""",
                  "``(x - mu)/sigma`` is carried as a double-double (Phi is steep: a "
                  "rounded z would cost up to z**2 ulps), then the kernels of "
                  ":func:`gelu`; measured at mu = 0.25, sigma = 0.5.", (1.0, 1.0), m),
        record("silu", logistic.silu_64, logistic.silu_32, 1, """
    SiLU (swish): ``x F(x)`` with F the logistic CDF, ``x sigma(x)``.""",
                  _IMPL, (1.0, 1.0), m, derivative="silu_grad"),
        record("silu_grad", logistic.silu_grad_64, logistic.silu_grad_32, 1, """
    Derivative of the SiLU, ``sigma(x) (1 + x sigma(-x))``; its zero
    x0 = -1.27846454... is handled by a Taylor form (relative error bounded).""",
                  _IMPL, (1.0, 1.5), m),
        record("x_cauchy", family.x_cauchy, family.x_cauchy, 1, """
    ``x F(x)`` with F the standard Cauchy CDF ``1/2 + atan(x)/pi``: like
    the ELU it saturates at a negative constant (-1/pi as x -> -inf).""",
                  "the C library's atan (below 1 ulp) and one more rounding.", (1.5, 1.5), m,
                  derivative="x_cauchy_grad"),
        record("x_cauchy_grad", family.x_cauchy_grad, family.x_cauchy_grad, 1, """
    Derivative of :func:`x_cauchy`, ``F(x) + x/(pi (1 + x**2))``; positive
    everywhere, computed without the cancellation of the formula for x < 0.""",
                  "the C library's atan (below 1 ulp) and one more rounding.", (1.5, 1.5), m),
        record("lalu", family.lalu, family.lalu, 1, """
    The "LaLU": ``x F(x)`` with F the standard Laplace CDF
    (``e**x/2`` for x < 0, ``1 - e**-x/2`` for x >= 0).""", _IMPL, (1.0, 1.0), m,
                  derivative="lalu_grad"),
        record("lalu_grad", family.lalu_grad, family.lalu_grad, 1, """
    Derivative of the LaLU, ``F(x) + x e**-|x|/2``; its zero at x = -1 is
    exact.""", _IMPL, (1.0, 1.0), m),
    ]]


FUNCTIONS = tuple(_exact() + _family() + _approximations())
_BY_NAME = {f.name: f for f in FUNCTIONS}
_LISTED = frozenset(FUNCTIONS)


def listed(fn):
    """Whether record ``fn`` is one of this module's own: its kernels are
    files of the package, whose source stamp keys Numba's on-disk cache
    (:mod:`gelu_numba.targets.stamp`).  A record added by
    :func:`registered` is compiled anew in each process instead: the stamp
    would not see its kernels change."""
    return fn in _LISTED


@contextlib.contextmanager
def registered(*records):
    """The catalog with ``records`` added for the duration: every public
    module of a record's ``modules`` publishes it, as if it were listed
    here, and an approximation's :attr:`~Function.approximate` key reaches
    the frontends' ``approximate`` argument; all forgotten on exit.  How a
    function is added without editing this file (the toy records of the
    gelu-numba repository's ``tests/test_adding_a_function.py``, which is
    the recipe's proof)."""
    global FUNCTIONS
    clash = [f.name for f in records if f.name in _BY_NAME]
    clash += [f"approximate={f.approximate!r}" for f in records
              if f.approximate is not None and f.approximate in _BY_APPROXIMATE]
    if clash:
        raise ValueError(f"the catalog already has {', '.join(clash)}")
    saved = FUNCTIONS
    FUNCTIONS = saved + tuple(records)
    _BY_NAME.update((f.name, f) for f in records)
    _BY_APPROXIMATE.update((f.approximate, f) for f in records if f.approximate is not None)
    try:
        yield records
    finally:
        FUNCTIONS = saved
        for f in records:
            del _BY_NAME[f.name]
            _BY_APPROXIMATE.pop(f.approximate, None)
            for module in f.modules:
                loaded = sys.modules.get(module)
                if loaded is not None and f.name in vars(loaded):
                    delattr(loaded, f.name)


def lookup(name):
    """The record of ``name``; ``KeyError`` if there is none."""
    return _BY_NAME[name]


#: the frontends' ``approximate`` value of the exact GELU (PyTorch's name)
EXACT_KEY = "none"
#: ``approximate`` key -> record: the exact GELU, then the approximations
_BY_APPROXIMATE = {EXACT_KEY: _BY_NAME[GELU],
                   **{f.approximate: f for f in FUNCTIONS if f.approximate is not None}}
#: every value of the frontends' ``approximate`` argument that this module
#: lists: ``"none"`` (the exact GELU), then the approximations' keys
#: (``"tanh"`` is PyTorch's and JAX's approximate form);
#: :func:`approximate_keys` adds those of :func:`registered` records
APPROXIMATE = tuple(_BY_APPROXIMATE)


def approximate_keys():
    """Every value of the frontends' ``approximate`` argument now: those
    of :data:`APPROXIMATE`, then those of :func:`registered` records."""
    return tuple(_BY_APPROXIMATE)


def approximate(key):
    """The record that ``approximate=key`` selects (:func:`approximate_keys`):
    the exact ``gelu`` for ``"none"``, else the approximation whose
    :attr:`~Function.approximate` it is."""
    try:
        return _BY_APPROXIMATE[key]
    except (KeyError, TypeError):
        raise ValueError(f"approximate must be one of "
                         f"{', '.join(map(repr, approximate_keys()))} (got {key!r})") from None


def antiderivative(name):
    """The record whose :attr:`~Function.derivative` is ``name``, or None."""
    return next((f for f in FUNCTIONS if f.derivative == name), None)


def derivatives(name):
    """The records of ``name`` and of its derivatives, following
    :attr:`~Function.derivative` (``gelu``, ``gelu_grad``, ``gelu_grad2``):
    the last one's derivative has no record."""
    chain = [lookup(name)]
    while chain[-1].derivative is not None:
        chain.append(lookup(chain[-1].derivative))
    return tuple(chain)


def forward(name):
    """The record whose :attr:`~Function.backward` is ``name`` (``gelu`` for
    ``gelu_backward``), or None."""
    return next((f for f in FUNCTIONS if f.backward == name), None)


def published(module):
    """The records published by public module ``module``, in catalog order."""
    return [f for f in FUNCTIONS if module in f.modules]


def group(name):
    """The records of group ``name`` (:data:`GROUPS`), in catalog order."""
    if name not in GROUPS:
        raise ValueError(f"group must be one of {', '.join(GROUPS)} (got {name!r})")
    return tuple(f for f in FUNCTIONS if f.group == name)


def names(group_name):
    """The names of :func:`group` ``group_name``'s records, in catalog order."""
    return tuple(f.name for f in group(group_name))
