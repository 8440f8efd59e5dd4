"""Generate ``gelu_numba/tables/normal_cdf32_cpu_f64.py``, the float32 kernels' tables.

Usage::

    python -m fitting.make_tables32_cpu_f64 [--out PATH] [--check]

The float32 kernels (``gelu_numba/kernels/normal32_cpu_f64.py``) evaluate in float64
arithmetic and need a relative error near 2**-32 only, so they use one
rational function per tabulated quantity on all of ``0 <= a <= A32`` (no
table lookup, which would be a gather in the vectorised loop), and a single
polynomial for ``exp``:

* ``R(a) = erfcx(a/sqrt 2)/2`` and ``H(a) = (R(a) - a phi0)/(a - z0)`` (the
  functions of ``make_tables``) as ``P(a)/Q(a)`` of degrees (5, 6) on
  ``[0, A32]``, ``A32 = 20``: every float32 output has underflowed beyond
  (the largest, ``gelu_backward``'s ``dy * GELU'(x)`` with ``|dy| < 2**128``,
  by ``|x| = 19.6``);
* ``exp(r)`` for ``|r| <= 0.347``, degree 7, interpolated at Chebyshev nodes.

All values are computed with mpmath at 256 bits; errors are certified as
stored (doubles), see :mod:`fitting.rational`.
"""

import sys
from pathlib import Path

import mpmath as mp

from fitting import chebyshev, rational
from fitting.make_tables import PREC, _funcs, run_generator

A32 = 20.0
DEG = (5, 6)
EXP_R = 0.347
EXP_COEF = 8
OUT = Path(__file__).resolve().parents[1] / "gelu_numba" / "tables" / "normal_cdf32_cpu_f64.py"


def _log2(e):
    return f"2**{float(mp.log(e, 2)):.1f}"


def generate(progress=True):
    """Return the text of the float32 tables module."""
    with mp.workprec(PREC):
        _, _, R, H = _funcs()
        fits = {}
        # R(0) = 1/2 is kept exact: float32 inputs crowd next to 0, where an
        # error that does not vanish would misround a cluster of them
        for name, f, p0 in (("R", R, 0.5), ("H", H, None)):
            fits[name] = rational.fit(f, 0, A32, *DEG, p0=p0)
            if progress:
                print(f"{name}: max rel. error {_log2(fits[name].max_rel_error)}",
                      file=sys.stderr)
        ef = chebyshev.fit(mp.exp, mp.mpf(0), -mp.mpf(EXP_R), mp.mpf(EXP_R),
                           EXP_COEF, 0)
    out = [
        '"""Coefficients of the float32 normal-CDF kernels (GENERATED: do not edit).',
        "",
        "Regenerate in the gelu-numba repository with::",
        "",
        "    python -m fitting.make_tables32_cpu_f64",
        "",
        f"mpmath {mp.__version__}, {PREC}-bit working precision.  Relative errors",
        "of each approximation as stored, evaluated exactly on 4000 points:",
        "",
        f"* R32_P/R32_Q: R(a) = erfcx(a/sqrt 2)/2 on [0, {A32}], degrees {DEG}, "
        "exact at 0: "
        f"{_log2(fits['R'].max_rel_error)}",
        f"* H32_P/H32_Q: (R(a) - a/sqrt(2 pi))/(a - z0) on [0, {A32}], "
        f"degrees {DEG}: {_log2(fits['H'].max_rel_error)}",
        f"* EXP32: exp(r), |r| <= {EXP_R}, degree {EXP_COEF - 1}: "
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
    return run_generator(generate, OUT, "python -m fitting.make_tables32_cpu_f64",
                         "Regenerate the coefficients of the float32 kernels.", argv)


if __name__ == "__main__":
    sys.exit(main())
