"""Generate ``gelu_numba/tables/normal_cdf32_gpu32.py``: the coefficients of the
float32 kernels that compute in float32 arithmetic (the GPU's).

Usage::

    python -m fitting.make_tables32_gpu32 [--out PATH] [--check]

``gelu_numba/kernels/gpu32.py`` evaluates, for ``0 <= a <= A_F32``,

* ``R(a) = erfcx(a/sqrt 2)/2 = t P_R(u)`` and
* ``H(a) = (R(a) - a phi0)/(a - z0) = P_H(u)``

with ``t = 1/(1 + a/2)`` (``a/2`` is exact, so ``1 + a/2`` is a float-float
sum and ``t`` a float-float quotient) and each ``P`` a polynomial in
``u = t - 1/2``.  Why this variable: ``t`` maps ``[0, A_F32]`` onto ``[1/11,
1]``, ``u`` onto ``[-0.41, 0.5]``, and ``P_R`` moves only between 0.22 (``a =
A_F32``) and 0.5 (``a = 0``), so the float32 Horner steps up to ``u**2`` carry a
small share of the value and only the last two need float-float.  Other
``t = 1/(1 + p a)`` (p = 1/4 to 1) were tried during the design and did worse
at these degrees.

The fit: weighted least squares in relative error on 4000 Chebyshev nodes in
``t``, the values from mpmath at 256 bits; the coefficients are fixed from the
highest degree down, each rounded to float32 before the lower ones are refitted
(so the float32 rounding is part of the fit), and the two lowest are stored as
float32 pairs ``(hi, lo)``.  The header states each approximation's relative
error as stored, evaluated exactly (mpmath) on 20000 points.
"""

import sys
from pathlib import Path

import mpmath as mp
import numpy as np

from fitting.make_tables import PREC, _funcs, run_generator

#: the kernels' domain 0 <= a <= A_F32, as the float64-arithmetic float32
#: kernels' A32: beyond it every float32 result has underflowed or is exactly
#: x, gelu_backward's dy * GELU'(x) with |dy| < 2**128 included (by |x| = 19.6)
A_F32 = 20.0
#: t = 1/(1 + P_T a) (a power of two: P_T a is exact) and u = t - T_C
P_T = 0.5
T_C = 0.5
#: polynomial degrees of P_R and P_H in u
DEG = {"R": 12, "H": 12}
#: coefficients stored as float32 (hi, lo) pairs: the lowest NCOMP, which the
#: kernel's float-float Horner steps add
NCOMP = 2
NODES = 4000
CHECK_POINTS = 20000
OUT = Path(__file__).resolve().parents[1] / "gelu_numba" / "tables" / "normal_cdf32_gpu32.py"


def _f32(v):
    return float(np.float32(v))


def _target(name, R, H):
    """The function of t to fit, as an mpmath function."""
    def a_of(t):
        return (1 - t) / (P_T * t)
    if name == "R":
        return lambda t: R(a_of(t)) / t
    return lambda t: H(a_of(t))


def fit(g, deg, ncomp=NCOMP):
    """Coefficients (ascending powers of u) of the relative-error fit of
    ``g`` on ``[t_min, 1]``: ``deg - ncomp + 1`` float32 values and ``ncomp``
    values kept in float64 (split into float32 pairs when stored)."""
    t_min = 1 / (1 + P_T * mp.mpf(A_F32))
    k = np.arange(NODES)
    ts = [(1 + t_min) / 2 + (1 - t_min) / 2 * mp.cos(mp.pi * (int(i) + mp.mpf(0.5)) / NODES)
          for i in k]
    vals = np.array([float(g(t)) for t in ts])
    u = np.array([float(t - T_C) for t in ts])
    V = np.vander(u, deg + 1, increasing=True) / vals[:, None]
    rhs = np.ones(NODES)
    fixed = {}
    for j in range(deg, -1, -1):
        free = [i for i in range(deg + 1) if i not in fixed]
        r = rhs - sum(V[:, i] * fixed[i] for i in fixed) if fixed else rhs
        c, *_ = np.linalg.lstsq(V[:, free], r, rcond=None)
        fixed[j] = _f32(c[free.index(j)]) if j >= ncomp else float(c[free.index(j)])
    return [fixed[i] for i in range(deg + 1)]


def split(v):
    """``v`` as float32 ``(hi, lo)`` with ``hi + lo`` within 2**-48 of it."""
    hi = _f32(v)
    return hi, _f32(v - hi)


def stored(coeffs, ncomp=NCOMP):
    """The coefficients as the kernel sees them (pairs summed exactly)."""
    out = []
    for i, c in enumerate(coeffs):
        if i < ncomp:
            hi, lo = split(c)
            out.append(mp.mpf(hi) + mp.mpf(lo))
        else:
            out.append(mp.mpf(c))
    return out


def max_rel_error(g, coeffs):
    t_min = 1 / (1 + P_T * mp.mpf(A_F32))
    cs = stored(coeffs)
    worst = mp.mpf(0)
    for i in range(CHECK_POINTS + 1):
        t = t_min + (1 - t_min) * mp.mpf(i) / CHECK_POINTS
        u = t - T_C
        p = mp.mpf(0)
        for c in reversed(cs):
            p = p * u + c
        worst = max(worst, abs(p / g(t) - 1))
    return worst


def _z0_parts(z0):
    hi = _f32(z0)
    mid = _f32(z0 - hi)
    lo = _f32(z0 - hi - mid)
    return hi, mid, lo


def generate(progress=True):
    """Return the text of the table module."""
    with mp.workprec(PREC):
        phi0, z0, R, H = _funcs()
        fits, errs = {}, {}
        for name in ("R", "H"):
            g = _target(name, R, H)
            fits[name] = fit(g, DEG[name])
            errs[name] = max_rel_error(g, fits[name])
            if progress:
                print(f"{name}: max rel. error 2**{float(mp.log(errs[name], 2)):.1f}",
                      file=sys.stderr)
        z0_parts = _z0_parts(z0)
        phi0_parts = split(phi0)

    def poly(name):
        cs = fits[name]
        pairs = [split(c) for c in cs[:NCOMP]]
        return (f"{name}_F32_PAIRS = {tuple(pairs)!r}\n"
                f"{name}_F32_REST = {tuple(cs[NCOMP:])!r}")

    lines = [
        '"""Coefficients of the float32-arithmetic normal-CDF kernels (GENERATED: do not edit).',
        "",
        "Regenerate in the gelu-numba repository with::",
        "",
        "    python -m fitting.make_tables32_gpu32",
        "",
        f"mpmath {mp.__version__}, {PREC}-bit working precision; t = 1/(1 + {P_T} a),",
        f"u = t - {T_C}, 0 <= a <= {A_F32}.  Relative errors as stored (pairs summed),",
        f"evaluated exactly on {CHECK_POINTS} points:",
        "",
        f"* R(a) = erfcx(a/sqrt 2)/2 = t P_R(u), degree {DEG['R']}: "
        f"2**{float(mp.log(errs['R'], 2)):.1f}",
        f"* H(a) = (R(a) - a/sqrt(2 pi))/(a - z0) = P_H(u), degree {DEG['H']}: "
        f"2**{float(mp.log(errs['H'], 2)):.1f}",
        "",
        f"*_PAIRS: the {NCOMP} lowest coefficients as float32 (hi, lo), ascending;",
        "*_REST: the others as float32 values, ascending (from u**NCOMP).",
        "Z0_F32: z0 = 0.7517915... (the zero of GELU'(-a)) as three float32 parts;",
        "PHI0_F32: 1/sqrt(2 pi) as a float32 pair.",
        '"""',
        "",
        f"A_F32 = {A_F32!r}",
        f"P_T = {P_T!r}",
        f"T_C = {T_C!r}",
        f"NCOMP = {NCOMP!r}",
        "",
        poly("R"),
        poly("H"),
        f"Z0_F32 = {z0_parts!r}",
        f"PHI0_F32 = {phi0_parts!r}",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    return run_generator(generate, OUT, "python -m fitting.make_tables32_gpu32",
                         "Regenerate the float32-arithmetic kernels' coefficients.", argv)


if __name__ == "__main__":
    sys.exit(main())
