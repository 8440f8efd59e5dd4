"""Generate ``gelu_numba/tables/half_fit.py``: the coefficients of
``gelu_half32`` (:mod:`gelu_numba.kernels.half32`), the float32-arithmetic
GELU fitted for float16 and bfloat16 outputs.

Usage::

    python -m fitting.make_half [--out PATH] [--check]

The form is Hastings's (Abramowitz & Stegun 7.1.26), refitted for the normal
tail in relative error: for ``a = |x|``,

    Phi(-a) = exp(-a**2/2) * t * P(t),   t = 1/(1 + p a),

so ``t * P(t) = erfcx(a/sqrt 2)/2`` on ``0 <= a <= A`` maps to ``t`` in
``[1/(1 + p A), 1]``, a finite interval for the whole tail.  ``P`` of degree
``DEGREE`` is the minimax fit of ``F(t) = erfcx(a(t)/sqrt 2)/(2 t)`` in
relative error (weight ``1/F``) by :func:`fitting.remez.remez`;
``p`` is the one of ``P_GRID`` whose float32-rounded coefficients have the
smallest certified error.  Why relative error over the whole tail: a
bfloat16 result is right only if the float32 value is relatively within
about 1e-6 of GELU for every bfloat16 input down to x = -13.2, where GELU
leaves bfloat16's range (``analysis/results/exhaustive/half.md``); the
clamped fits (``poly*``, ``rat*``) return 0 from x = -6.

The certified error is that of the coefficients as stored (float32 values,
``remez.certify`` in mpmath on a refined 4000-point grid).
"""

import sys
from pathlib import Path

import mpmath as mp
import numpy as np

from fitting import remez
from fitting.make_tables import run_generator

OUT = Path(__file__).resolve().parents[1] / "gelu_numba" / "tables" / "half_fit.py"
COMMAND = "python -m fitting.make_half"
DPS = 40
#: the fit covers 0 <= a <= A; the kernel returns x or -0 beyond it
A = 16
DEGREE = 8
#: candidate values of p (t = 1/(1 + p a))
P_GRID = (0.30, 0.325, 0.35, 0.375, 0.40)


def _problem(p):
    p = mp.mpf(p)

    def F(t):
        a = (1 / t - 1) / p
        return mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / (2 * t)

    basis = [(lambda j: (lambda t: t**j))(j) for j in range(DEGREE + 1)]
    return F, basis, 1 / (1 + p * A), mp.mpf(1)


def fit(p):
    """(float32 coefficients, certified max relative error, where in a) of
    the degree-DEGREE fit for ``p`` (itself rounded to float32)."""
    p = float(np.float32(p))
    with mp.workdps(DPS):
        F, basis, lo, hi = _problem(p)
        w = (lambda t: 1 / F(t))
        r = remez.remez(F, basis, lo, hi, weight=w, tol=1e-4, dps=DPS)
        c32 = [float(np.float32(float(c))) for c in r.coeffs]
        err, at_t = remez.certify(F, basis, c32, lo, hi, weight=w, dps=DPS)
        return p, c32, float(err), float((1 / at_t - 1) / p)


def generate(progress=True):
    best = None
    for p in P_GRID:
        p32, c, err, at = fit(p)
        if progress:
            print(f"p = {p32:.9g}: max rel. error {err:.3g} (a = {at:.3g})", file=sys.stderr)
        if best is None or err < best[2]:
            best = (p32, c, err, at)
    p32, c, err, at = best
    lines = [
        '"""Coefficients of gelu_half32 (GENERATED: do not edit).',
        "",
        f"Regenerate with ``{COMMAND}`` in the gelu-numba repository",
        "(``--check`` compares); method and error in its fitting/make_half.py.",
        '"""',
        "",
        f"#: t = 1/(1 + P a); chosen from {P_GRID} (float32)",
        f"P = {p32!r}  # {p32.hex()}",
        "#: P(t), ascending powers of t, float32 values: Phi(-a) = exp(-a^2/2) t P(t)",
        "COEFFS = (",
    ]
    lines += [f"    {v!r},  # {v.hex()}" for v in c]
    lines += [
        ")",
        "#: the fit covers 0 <= a <= A",
        f"A = {float(A)!r}",
        "#: certified max |t P(t) / (erfcx(a/sqrt 2)/2) - 1| on [0, A], coefficients as",
        "#: stored, and the a where it occurs",
        f"MAX_REL_ERROR = {err!r}",
        f"MAX_REL_ERROR_AT = {at!r}",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    return run_generator(generate, OUT, COMMAND,
                         "Regenerate the coefficients of gelu_half32.", argv)


if __name__ == "__main__":
    sys.exit(main())
