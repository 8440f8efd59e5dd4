"""Generate the tables of the float32 kernels in float64 arithmetic:
``gelu_numba/tables/normal_cdf32_cpu_f64.py`` and, with ``--rounded``,
``gelu_numba/tables/normal_cdf32_rounded.py``.

Usage::

    python -m fitting.make_tables32_cpu_f64 [--rounded] [--out PATH] [--check]

The float32 kernels (``gelu_numba/kernels/normal32_cpu_f64.py``) evaluate in float64
arithmetic and need a relative error far below 2**-24 only, so they use one
rational function per tabulated quantity on all of ``0 <= a <= A32`` (no
table lookup, which would be a gather in the vectorised loop), and a single
polynomial for ``exp``:

* ``R(a) = erfcx(a/sqrt 2)/2`` and ``H(a) = (R(a) - a phi0)/(a - z0)`` (the
  functions of ``make_tables``) as ``P(a)/Q(a)`` on ``[0, A32]``, ``A32 =
  20``: every float32 output has underflowed beyond (the largest,
  ``gelu_backward``'s ``dy * GELU'(x)`` with ``|dy| < 2**128``, by ``|x| =
  19.6``);
* ``exp(r)`` for ``|r| <= 0.347``, interpolated at Chebyshev nodes.

Two sets (:class:`Spec`): :data:`PLAIN`, degrees (5, 6) and 7, a relative
error near 2**-32 (the kernels GPUs with full-rate FP64 run), and
:data:`ROUNDED`, degrees (7, 8) and 9, near 2**-44 (the fast path of the
correctly rounded CPU kernels, ``gelu_numba/kernels/rounded32.py``).

All values are computed with mpmath at 256 bits; errors are certified as
stored (doubles), see :mod:`fitting.rational`.
"""

import functools
import sys
from collections import namedtuple
from pathlib import Path

import mpmath as mp

from fitting import chebyshev, rational
from fitting.make_tables import PREC, _funcs, run_generator

A32 = 20.0
EXP_R = 0.347
_TABLES = Path(__file__).resolve().parents[1] / "gelu_numba" / "tables"


class Spec(namedtuple("Spec", "deg exp_coef out command purpose")):
    """One set of the float32 kernels' tables: the rationals' degrees, the
    number of ``exp`` coefficients, the module written, the command that
    writes it, and the title of its docstring."""


#: the tables of the plain float32 kernels (relative error 2**-31.9)
PLAIN = Spec((5, 6), 8, _TABLES / "normal_cdf32_cpu_f64.py", "python -m fitting.make_tables32_cpu_f64",
             "Coefficients of the float32 normal-CDF kernels")
#: the tables of the correctly rounded float32 kernels' fast path
#: (:mod:`gelu_numba.kernels.rounded32`): two degrees more each, about ten
#: bits, so that the rounding test sends about one input in 2**17 on
ROUNDED = Spec((7, 8), 10, _TABLES / "normal_cdf32_rounded.py",
               "python -m fitting.make_tables32_cpu_f64 --rounded",
               "Coefficients of the correctly rounded float32 kernels' fast path")


def _log2(e):
    return f"2**{float(mp.log(e, 2)):.1f}"


def generate(progress=True, spec=PLAIN):
    """Return the text of the float32 tables module ``spec``."""
    deg, exp_coef = spec.deg, spec.exp_coef
    with mp.workprec(PREC):
        _, _, R, H = _funcs()
        fits = {}
        # R(0) = 1/2 is kept exact: float32 inputs crowd next to 0, where an
        # error that does not vanish would misround a cluster of them
        for name, f, p0 in (("R", R, 0.5), ("H", H, None)):
            fits[name] = rational.fit(f, 0, A32, *deg, p0=p0)
            if progress:
                print(f"{name}: max rel. error {_log2(fits[name].max_rel_error)}",
                      file=sys.stderr)
        ef = chebyshev.fit(mp.exp, mp.mpf(0), -mp.mpf(EXP_R), mp.mpf(EXP_R),
                           exp_coef, 0)
    out = [
        f'"""{spec.purpose} (GENERATED: do not edit).',
        "",
        "Regenerate in the gelu-numba repository with::",
        "",
        f"    {spec.command}",
        "",
        f"mpmath {mp.__version__}, {PREC}-bit working precision.  Relative errors",
        "of each approximation as stored, evaluated exactly on 4000 points:",
        "",
        f"* R32_P/R32_Q: R(a) = erfcx(a/sqrt 2)/2 on [0, {A32}], degrees {deg}, "
        "exact at 0: "
        f"{_log2(fits['R'].max_rel_error)}",
        f"* H32_P/H32_Q: (R(a) - a/sqrt(2 pi))/(a - z0) on [0, {A32}], "
        f"degrees {deg}: {_log2(fits['H'].max_rel_error)}",
        f"* EXP32: exp(r), |r| <= {EXP_R}, degree {exp_coef - 1}: "
        f"{_log2(ef.max_rel_error)}",
        "",
        "Coefficients are in ascending powers.",
        '"""',
        "",
        f"A32 = {A32!r}",
        "",
    ]
    for name in ("R", "H"):
        out.append(f"{name}32_P = {tuple(fits[name].p)!r}")
        out.append(f"{name}32_Q = {tuple(fits[name].q)!r}")
    out.append(f"EXP32 = {tuple(ef.hi)!r}")
    out.append("")
    return "\n".join(out)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    spec = ROUNDED if "--rounded" in argv else PLAIN
    argv = [a for a in argv if a != "--rounded"]
    return run_generator(functools.partial(generate, spec=spec), spec.out, spec.command,
                         f"Regenerate the {spec.purpose[0].lower()}{spec.purpose[1:]}.", argv)


if __name__ == "__main__":
    sys.exit(main())
