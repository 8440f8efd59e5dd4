"""Generate ``gelu_numba/tables/normal_cdf.py``, the tables of the exact kernels.

Usage::

    python -m gelu_numba.fitting.make_tables [--out PATH] [--check]

``--check`` regenerates into memory and fails if the committed file differs.

What is tabulated (see ``gelu_numba/kernels/normal.py`` for how it is used):

* ``R(a) = Q(a) * exp(a**2/2) = erfcx(a/sqrt 2)/2`` for ``0 <= a < 55``, the
  scaled upper tail of the normal distribution (``Q(a) = Phi(-a)``), on 110
  intervals of width 1/2, each a degree-15 polynomial in ``t = a - m``.
* ``H(a) = (R(a) - a/sqrt(2 pi)) / (a - z0)`` on the same intervals, where
  ``z0 = -x0 = 0.7517...`` is the zero of ``R(a) - a phi0``; then
  ``GELU'(-a) = exp(-a**2/2) (a - z0) H(a)`` holds with the zero factored out.
* ``exp(r)`` for ``|r| <= 0.347`` (``> ln(2)/2`` plus rounding), degree 12.
* constants: ``1/sqrt(2 pi)`` as double-double, ``z0`` as a triple-double
  (``a - z0`` is computed next to its zero), ``ln 2`` in three
  parts of 41, 41 and 53 bits (so ``k*LN2_1`` and ``k*LN2_2`` are exact for
  ``|k| < 2**12``), ``1/ln 2``.

All values are computed with mpmath at 256 bits.
"""

import argparse
import sys
import time
from pathlib import Path

import mpmath as mp

from gelu_numba.fitting.chebyshev import fit

PREC = 256
STEP = 0.5          # interval width in a
N_INTERVALS = 110   # covers 0 <= a < 55
A_MAX = 54.75       # clamp: every output has underflowed long before
N_COEF = 16
N_DD = 3
EXP_R = 0.347
EXP_COEF = 13
OUT = Path(__file__).resolve().parents[1] / "tables" / "normal_cdf.py"


def _funcs():
    phi0 = 1 / mp.sqrt(2 * mp.pi)

    def R(a):
        return mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2

    z0 = mp.findroot(lambda a: R(a) - phi0 * a, mp.mpf("0.75"))

    def H(a):
        d = a - z0
        if abs(d) < mp.mpf(2) ** -60:
            return mp.diff(lambda u: R(u) - phi0 * u, z0)
        return (R(a) - phi0 * a) / d

    return phi0, z0, R, H


def expansion_point(i):
    """Interval i covers [i/2, (i+1)/2); interval 0 expands about 0, so that
    t = a is exact, the others about their centre, where t = a - m is exact
    by Sterbenz's lemma (m/2 <= a <= 2m)."""
    return mp.mpf(0) if i == 0 else mp.mpf(i) * STEP + STEP / 2


def _dd(v):
    hi = float(v)
    return hi, float(v - mp.mpf(hi))


def _fmt_array(name, rows, comment):
    lines = [f"# {comment}", f"{name} = np.array(["]
    for row in rows:
        lines.append("    [" + ", ".join(repr(v) for v in row) + "],")
    lines.append("], dtype=np.float64)")
    return "\n".join(lines)


def generate(progress=True):
    """Return the text of the tables module."""
    with mp.workprec(PREC):
        phi0, z0, R, H = _funcs()
        tables = {}
        worst = {}
        for name, f in (("R", R), ("H", H)):
            his, los, errs = [], [], []
            for i in range(N_INTERVALS):
                m = expansion_point(i)
                lo_a, hi_a = mp.mpf(i) * STEP, mp.mpf(i + 1) * STEP
                pf = fit(f, m, lo_a - m, hi_a - m, N_COEF, N_DD)
                his.append(pf.hi)
                los.append(pf.lo)
                errs.append(pf.max_rel_error)
            if progress:
                print(f"{name}: {N_INTERVALS} intervals, worst relative error "
                      f"{max(errs):.3g} in interval {errs.index(max(errs))}",
                      file=sys.stderr)
            tables[name] = (his, los)
            worst[name] = max(errs)
        ef = fit(mp.exp, mp.mpf(0), -mp.mpf(EXP_R), mp.mpf(EXP_R), EXP_COEF, N_DD)
        ln2 = mp.ln2
        ln2_1 = mp.nint(ln2 * 2**41) / 2**41
        ln2_2 = mp.nint((ln2 - ln2_1) * 2**82) / 2**82
        ln2_3 = ln2 - ln2_1 - ln2_2
        phi0_hi, phi0_lo = _dd(phi0)
        z0_hi, z0_lo = _dd(z0)
        z0_lo2 = float(z0 - mp.mpf(z0_hi) - mp.mpf(z0_lo))
        consts = {
            "PHI0_HI": phi0_hi, "PHI0_LO": phi0_lo,
            "Z0_HI": z0_hi, "Z0_LO": z0_lo, "Z0_LO2": z0_lo2,
            "INV_LN2": float(1 / ln2),
            "LN2_1": float(ln2_1), "LN2_2": float(ln2_2), "LN2_3": float(ln2_3),
        }

    def log2(e):
        return f"2**{float(mp.log(e, 2)):.1f}" if e > 0 else "0"

    out = [
        '"""Coefficient tables of the exact normal-CDF kernels (GENERATED: do not edit).',
        "",
        "Regenerate with::",
        "",
        "    python -m gelu_numba.fitting.make_tables",
        "",
        f"mpmath {mp.__version__}, {PREC}-bit working precision.  Each polynomial",
        "interpolates its function at Chebyshev nodes; the errors below are the",
        "largest relative errors of the polynomial *as stored* (dd low parts",
        "included), evaluated exactly on 128 equally spaced points plus the",
        "Chebyshev extrema of each interval.",
        "",
        f"* R_*: R(a) = erfcx(a/sqrt 2)/2 on [i/2, (i+1)/2), i < {N_INTERVALS}, "
        f"degree {N_COEF - 1}: max rel. error {log2(worst['R'])}",
        f"* H_*: (R(a) - a/sqrt(2 pi))/(a - z0), same intervals: "
        f"max rel. error {log2(worst['H'])}",
        f"* EXP_*: exp(r), |r| <= {EXP_R}, degree {EXP_COEF - 1}: "
        f"max rel. error {log2(ef.max_rel_error)}",
        "",
        "Row i expands about m_i = 0 for i = 0 and m_i = i/2 + 1/4 otherwise;",
        "*_HI[i, j] is the coefficient of t**j, *_LO[i, j] the rounding error of",
        f"the first {N_DD} coefficients.",
        '"""',
        "",
        "import numpy as np",
        "",
        "# interval width in a, number of intervals, and the clamp on a = |x|",
        f"STEP = {STEP!r}",
        f"INV_STEP = {1 / STEP!r}",
        f"N_INTERVALS = {N_INTERVALS}",
        f"A_MAX = {A_MAX!r}",
        "",
        "# 1/sqrt(2 pi) as dd; z0 = 0.7517915... (zero of R(a) - a/sqrt(2 pi)) in",
        "# three parts: next to z0 the factor a - z0 is as small as 2**-56 and its",
        "# relative error is that of the last part (2**-109 absolute with two)",
    ]
    for k in ("PHI0_HI", "PHI0_LO", "Z0_HI", "Z0_LO", "Z0_LO2"):
        out.append(f"{k} = {consts[k]!r}")
    out += [
        "",
        "# 1/ln 2, and ln 2 = LN2_1 + LN2_2 + LN2_3 with LN2_1, LN2_2 of 41 bits",
        "# so that k*LN2_1 and k*LN2_2 are exact for |k| < 2**12",
    ]
    for k in ("INV_LN2", "LN2_1", "LN2_2", "LN2_3"):
        out.append(f"{k} = {consts[k]!r}")
    out += [
        "",
        _fmt_array("EXP_HI", [ef.hi], "exp(r) = sum EXP_HI[0, j] r**j (+ EXP_LO)"),
        _fmt_array("EXP_LO", [ef.lo], "low parts of the first coefficients"),
        "",
        _fmt_array("R_HI", tables["R"][0], "R(m_i + t): coefficients of t**j"),
        _fmt_array("R_LO", tables["R"][1], "low parts"),
        "",
        _fmt_array("H_HI", tables["H"][0], "H(m_i + t): coefficients of t**j"),
        _fmt_array("H_LO", tables["H"][1], "low parts"),
        "",
    ]
    return "\n".join(out)


def run_generator(generate, out, prog, description, argv=None):
    """Command line shared by the table generators: write ``generate()``
    to ``out`` (``--out``), or with ``--check`` fail if the file differs."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--out", type=Path, default=out, help="output module")
    parser.add_argument("--check", action="store_true",
                        help="fail if the file on disk differs from a fresh run")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    text = generate()
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        print(f"{args.out}: {'up to date' if same else 'DIFFERS'}")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out} in {time.perf_counter() - t0:.0f} s")
    return 0


def main(argv=None):
    return run_generator(generate, OUT, "python -m gelu_numba.fitting.make_tables",
                         "Regenerate the coefficient tables of the exact kernels.",
                         argv)


if __name__ == "__main__":
    sys.exit(main())
