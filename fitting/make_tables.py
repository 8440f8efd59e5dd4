"""Generate ``gelu_numba/tables/normal_cdf.py``, the tables of the exact kernels.

Usage::

    python -m fitting.make_tables [--out PATH] [--check]

``--check`` regenerates into memory and fails if the committed file differs.

What is tabulated (see ``gelu_numba/kernels/normal.py`` for how it is used):

* ``R(a) = Q(a) * exp(a**2/2) = erfcx(a/sqrt 2)/2`` for ``0 <= a <= A_MAX``,
  the scaled upper tail of the normal distribution (``Q(a) = Phi(-a)``), as
  a function of ``t = (a - 4)/(a + 4)`` (Weideman's variable for erfcx: it
  maps ``[0, inf)`` onto ``[-1, 1)``, where R is analytic, so two
  polynomials cover the whole range): one for ``a < 4`` (``t <= 0``) in
  ``v = t + 1/2``, one for ``a >= 4`` in ``v = t - 1/2``, each interpolating
  at Chebyshev nodes on its piece widened by 2**-10.
* ``H(a) = (R(a) - a/sqrt(2 pi)) / (a - z0)`` in the same two pieces, where
  ``z0 = -x0 = 0.7517...`` is the zero of ``R(a) - a phi0``; then
  ``GELU'(-a) = exp(-a**2/2) (a - z0) H(a)`` holds with the zero factored out.
* ``exp(r)`` for ``|r| <= 0.347`` (``> ln(2)/2`` plus rounding), degree 12.
* constants: ``1/sqrt(2 pi)`` as double-double, ``z0`` as a triple-double
  (``a - z0`` is computed next to its zero), ``ln 2`` in three
  parts of 41, 41 and 53 bits (so ``k*LN2_1`` and ``k*LN2_2`` are exact for
  ``|k| < 2**12``), ``1/ln 2``.

The first coefficients of each polynomial keep a low part (they are
evaluated in double-double by :func:`gelu_numba.kernels.primitives.
polynomials.poly_dd_source`); the generator checks on a dense grid which of those
steps may add the coefficient with ``fast_two_sum`` (``|c_j| >= |v S_{j+1}(v)|``
with a margin) and lists the others in ``*_EXACT_STEPS``.

All values are computed with mpmath at 256 bits.
"""

import argparse
import sys
import time
from pathlib import Path

import mpmath as mp

from fitting.chebyshev import fit

PREC = 256
C_T = 4             # t = (a - C_T)/(a + C_T); 2 C_T = 8 keeps 8/(a + 4) exact
A_MAX = 54.75       # clamp: every output has underflowed long before
WIDEN = 2**-10      # each piece is fitted this much beyond its end points
R_COEF, R_DD = 19, 5
H_COEF, H_DD = 17, 4
EXP_R = 0.347
EXP_COEF, EXP_DD = 13, 3
FAST_MARGIN = 0.75  # fast_two_sum where max |v S_{j+1}(v)| <= this * |c_j|
OUT = Path(__file__).resolve().parents[1] / "gelu_numba" / "tables" / "normal_cdf.py"


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


def pieces():
    """The two pieces in ``t``: ``(centre, t_lo, t_hi)``; ``v = t - centre``.

    ``a < 4`` gives ``-1 <= t < 0`` and ``a >= 4`` gives ``0 <= t <= t(A_MAX)``;
    the kernel computes ``v`` as ``(1 - centre) - 8/(a + 4)`` (see
    ``normal.tail_variable``).
    """
    c = mp.mpf(C_T)
    t_max = (mp.mpf(A_MAX) - c) / (mp.mpf(A_MAX) + c)
    w = mp.mpf(WIDEN)
    return ((-mp.mpf(0.5), -mp.mpf(1), w), (mp.mpf(0.5), -w, t_max + w))


def exact_steps(fits, ndd, npts=400):
    """Steps ``j < ndd`` where some piece may have ``|v S_{j+1}(v)|`` above
    ``FAST_MARGIN |c_j|`` (``S_{j+1} = sum_{i > j} c_i v**(i - j - 1)``)."""
    need = set()
    for pf in fits:
        c = [mp.mpf(h) for h in pf.hi]
        for j in range(ndd):
            worst = mp.mpf(0)
            for k in range(npts):
                v = pf.t_lo + (pf.t_hi - pf.t_lo) * k / (npts - 1)
                tail = mp.polyval(c[:j:-1], v) * v
                worst = max(worst, abs(tail / c[j]))
            if worst > FAST_MARGIN:
                need.add(j)
    return tuple(sorted(need))


def _dd(v):
    hi = float(v)
    return hi, float(v - mp.mpf(hi))


def _fmt_tuple(values):
    return "(" + ", ".join(repr(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def _fmt_pieces(name, fits, comment):
    lines = [f"# {comment}", f"{name} = ("]
    for pf, label in zip(fits, ("a < 4: v = t + 1/2", "a >= 4: v = t - 1/2")):
        lines += [f"    (  # {label}", f"        {_fmt_tuple(pf.hi)},",
                  f"        {_fmt_tuple(pf.lo)},", "    ),"]
    lines.append(")")
    return "\n".join(lines)


def generate(progress=True):
    """Return the text of the tables module."""
    with mp.workprec(PREC):
        phi0, z0, R, H = _funcs()
        c = mp.mpf(C_T)

        def in_t(f):
            return lambda t: f(c * (1 + t) / (1 - t))

        fits, steps = {}, {}
        for name, f, n, ndd in (("R", R, R_COEF, R_DD), ("H", H, H_COEF, H_DD)):
            fits[name] = [fit(in_t(f), m, lo - m, hi - m, n, ndd, npts=400)
                          for m, lo, hi in pieces()]
            steps[name] = exact_steps(fits[name], ndd)
            if progress:
                print(f"{name}: relative errors " + ", ".join(
                    f"{pf.max_rel_error:.3g}" for pf in fits[name])
                    + f"; two_sum at steps {steps[name]}", file=sys.stderr)
        ef = fit(mp.exp, mp.mpf(0), -mp.mpf(EXP_R), mp.mpf(EXP_R), EXP_COEF, EXP_DD)
        exp_steps = exact_steps([ef], EXP_DD)
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

    def worst(name):
        return log2(max(pf.max_rel_error for pf in fits[name]))

    out = [
        '"""Coefficient tables of the exact normal-CDF kernels (GENERATED: do not edit).',
        "",
        "Regenerate in the gelu-numba repository with::",
        "",
        "    python -m fitting.make_tables",
        "",
        f"mpmath {mp.__version__}, {PREC}-bit working precision.  Each polynomial",
        "interpolates its function at Chebyshev nodes; the errors below are the",
        "largest relative errors of the polynomial *as stored* (dd low parts",
        "included), evaluated exactly on 400 equally spaced points plus the",
        "Chebyshev extrema of each piece.",
        "",
        f"* R_PIECES: R(a) = erfcx(a/sqrt 2)/2 for 0 <= a <= {A_MAX}, in "
        f"t = (a - {C_T})/(a + {C_T}),",
        f"  two pieces of degree {R_COEF - 1}: max rel. error {worst('R')}",
        "* H_PIECES: (R(a) - a/sqrt(2 pi))/(a - z0), the same pieces, degree "
        f"{H_COEF - 1}: max rel. error {worst('H')}",
        f"* EXP_PIECES: exp(r), |r| <= {EXP_R}, degree {EXP_COEF - 1}: "
        f"max rel. error {log2(ef.max_rel_error)}",
        "",
        "Each piece is ``(hi, lo)``: the coefficients of v**j rounded to double",
        "(ascending powers) and the rounding errors of the first few.",
        '"""',
        "",
        "# t = (a - C_T)/(a + C_T); the clamp on a = |x|",
        f"C_T = {float(C_T)!r}",
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
        "# exp(r) = sum c_j r**j; lean dd steps that need two_sum",
        f"EXP_PIECES = (({_fmt_tuple(ef.hi)}, {_fmt_tuple(ef.lo)}),)",
        f"EXP_EXACT_STEPS = {exp_steps!r}",
        "",
        _fmt_pieces("R_PIECES", fits["R"], "R(a) = sum c_j v**j"),
        f"R_EXACT_STEPS = {steps['R']!r}",
        "",
        _fmt_pieces("H_PIECES", fits["H"], "H(a) = sum c_j v**j"),
        f"H_EXACT_STEPS = {steps['H']!r}",
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
    return run_generator(generate, OUT, "python -m fitting.make_tables",
                         "Regenerate the coefficient tables of the exact kernels.",
                         argv)


if __name__ == "__main__":
    sys.exit(main())
