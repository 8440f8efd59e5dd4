"""Generate ``gelu_numba/tables/normal_cdf32_lean32.py``: the table of the lean
float32-arithmetic kernel (:mod:`gelu_numba.kernels.lean32`).

Usage::

    python -m fitting.make_tables32_lean32 [--out PATH] [--check]

The kernel evaluates ``Phi(-a)`` (and ``GELU'(-a)``) for ``0 <= a <= A_F32``
from one table row, with no division and no separate ``exp(-a**2/2)``::

    Phi(-a) = Phi(-c) exp(D(a - c)),   D(d) = S(c + d) - S(c),
    S(a) = log Phi(-a),

where ``c`` is the row's centre and ``D`` a polynomial without constant
term.  The rows cover ``[0, 1)`` in four pieces of width 1/4 (``a <
1``: row ``floor(4 a)``) and ``[1, A_F32]`` in pieces of unit width in
``a**2`` (row ``3 + floor(a**2)``): ``S'(a)`` is about ``-a``, so a piece of
width ``1/(2a)`` keeps ``|D|`` below about 1/4 everywhere, the range of
the kernel's ``exp`` polynomial, without a reduction by ``ln 2``.  Each
centre is a float32 inside its piece (0 for the first), so ``a - c`` is
exact (Sterbenz: ``c/2 <= a <= 2 c`` on every other piece).

Each row holds 11 float32 values: ``c``; ``f(c) = (mh + ml) 2**e``
(``1/2 <= mh < 1``, a float32 pair within 2**-48) with ``2**e = f1 f2``
(``f1 = 2**ceil(e/2)``, ``f2 = 2**(e - ceil(e/2))``: normal for every row
whose results do not underflow to 0; 0 where ``2**e2`` is below the
subnormals); and ``D``'s coefficients ``d1`` (a pair ``d1h + d1l``),
``d2 ... d5`` (float32).  Two tables:
``f = Phi(-a)`` (``Q_TABLE``: ``Phi``, GELU) and ``f = GELU'(-a)/(z0 -
a)`` (``G_TABLE``: GELU' and the backward; positive, its zero at ``z0``
divided out, so that the kernel keeps it as the exact factor ``z0 - a``).

The fit of ``D`` on each piece (widened by ``WIDEN`` at both ends: the
kernel picks the row from ``a**2`` rounded, and ``3 + a**2`` rounded):
least squares on Chebyshev nodes, the values from mpmath at 256 bits,
coefficients fixed from the highest degree down, each rounded to float32
before the lower ones are refitted.  The header states the largest
absolute error of ``D`` as stored (pair summed), evaluated exactly on
``CHECK_POINTS`` points of every widened piece, the largest ``|D|`` and the
largest relative error of the pairs ``mh + ml``.
"""

import sys
from pathlib import Path

import mpmath as mp
import numpy as np

from fitting.make_tables import PREC, run_generator

#: the domain 0 <= a <= A_F32, that of the other float32 kernels
A_F32 = 20.0
#: pieces of width 1/4 below a = 1, then unit width in a**2 up to (and
#: including the row of) a**2 = A_F32**2
SMALL = 4
ROWS = SMALL + int(A_F32 ** 2)
#: D(d) = d1 d + ... + d5 d**5
DEG = 5
#: values per row: c, mh, ml, f1, f2, d1h, d1l, d2 ... d5
WIDTH = 7 + DEG - 1
WIDEN = 2.0**-18
NODES = 16
CHECK_POINTS = 64
OUT = Path(__file__).resolve().parents[1] / "gelu_numba" / "tables" / "normal_cdf32_lean32.py"


def _f32(v):
    return float(np.float32(float(v)))


def Q(a):
    """Phi(-a)."""
    return mp.erfc(a / mp.sqrt(2)) / 2


def _z0():
    return mp.findroot(lambda a: Q(a) - a * mp.npdf(a), mp.mpf("0.75"))


def G_ratio(a):
    """``GELU'(-a)/(z0 - a) = (Phi(-a) - a phi(a))/(z0 - a) > 0`` (at ``z0``
    its limit, ``phi(z0) (2 - z0**2)``)."""
    z0 = _Z0[0]
    d = z0 - a
    if abs(d) < mp.mpf(2) ** -100:
        return mp.npdf(z0) * (2 - z0 * z0)
    return (Q(a) - a * mp.npdf(a)) / d


_Z0 = []
#: the tables: name -> the positive function f whose log the rows expand
#: (``Phi(-a)``, ``GELU'(-a)/(z0 - a)``)
FUNCTIONS = {"Q": Q, "G": G_ratio}


def piece(j):
    """``(lo, hi, c)`` of row j."""
    if j < SMALL:
        lo, hi = mp.mpf(j) / SMALL, mp.mpf(j + 1) / SMALL
        c = 0.0 if j == 0 else _f32((lo + hi) / 2)
    else:
        n = j - SMALL + 1
        lo, hi = mp.sqrt(n), mp.sqrt(n + 1)
        c = _f32(mp.sqrt(n + mp.mpf(0.5)))
    return lo, hi, c


def fit_row(f, j):
    """``(c, d)``: the centre and the coefficients ``[d1, ..., d5]`` of
    ``D(d) = log f(c + d) - log f(c)`` (d1 a float, the others float32),
    fitted on row j's widened piece."""
    S = lambda a: mp.log(f(a))
    lo, hi, c = piece(j)
    lo, hi = max(lo * (1 - WIDEN), 0), hi * (1 + WIDEN)
    cm = mp.mpf(c)
    s0 = S(cm)
    nodes = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (k + mp.mpf(0.5)) / NODES)
             for k in range(NODES)]
    ds = np.array([float(a - cm) for a in nodes])
    vals = np.array([float(S(a) - s0) for a in nodes])
    V = np.vander(ds, DEG + 1, increasing=True)[:, 1:]
    fixed = {}
    for i in range(DEG, 0, -1):
        free = [k for k in range(1, DEG + 1) if k not in fixed]
        r = vals - sum(V[:, k - 1] * fixed[k] for k in fixed) if fixed else vals
        coef, *_ = np.linalg.lstsq(V[:, [k - 1 for k in free]], r, rcond=None)
        value = float(coef[free.index(i)])
        fixed[i] = value if i == 1 else _f32(value)
    return c, [fixed[i] for i in range(1, DEG + 1)]


def split(v):
    hi = _f32(v)
    return hi, _f32(mp.mpf(v) - mp.mpf(hi))


def row(f, j):
    """The float32 values of row j of ``f``'s table, and its
    certification: ``(values, max |D error|, max |D|, rel. error of mh +
    ml)``."""
    S = lambda a: mp.log(f(a))
    c, d = fit_row(f, j)
    cm = mp.mpf(c)
    q = f(cm)
    # m in [1/2, 1): a mantissa times (a - z0), a <= 20, stays below 2**5,
    # which the backward's scaling of dy assumes
    e = int(mp.floor(mp.log(q, 2))) + 1
    m = q / mp.mpf(2) ** e
    if m >= 1:
        e, m = e + 1, m / 2
    if m < 0.5:
        e, m = e - 1, m * 2
    mh, ml = split(m)
    e1 = -((-e) // 2)
    f1, f2 = float(mp.mpf(2) ** e1), float(mp.mpf(2) ** (e - e1))
    f1, f2 = _f32(f1), _f32(f2)
    d1h, d1l = split(d[0])
    stored = [mp.mpf(d1h) + mp.mpf(d1l)] + [mp.mpf(v) for v in d[1:]]
    lo, hi, _ = piece(j)
    lo, hi = max(lo * (1 - WIDEN), 0), hi * (1 + WIDEN)
    s0 = S(cm)
    worst, biggest = mp.mpf(0), mp.mpf(0)
    for k in range(CHECK_POINTS + 1):
        a = lo + (hi - lo) * mp.mpf(k) / CHECK_POINTS
        dd = a - cm
        p = mp.mpf(0)
        for v in reversed(stored):
            p = (p + v) * dd
        exact = S(a) - s0
        worst = max(worst, abs(p - exact))
        biggest = max(biggest, abs(exact))
    rel = abs((mp.mpf(mh) + mp.mpf(ml)) / m - 1)
    values = (c, mh, ml, f1, f2, d1h, d1l, *d[1:])
    assert len(values) == WIDTH
    return values, worst, biggest, rel


def generate(progress=True):
    """Return the text of the table module."""
    log2 = lambda v: float(mp.log(v, 2))
    tables, notes = {}, []
    with mp.workprec(PREC):
        _Z0[:] = [_z0()]
        for name, f in FUNCTIONS.items():
            rows, worst, biggest, rel = [], mp.mpf(0), mp.mpf(0), mp.mpf(0)
            for j in range(ROWS):
                values, w, b, r = row(f, j)
                rows.append(values)
                worst, biggest, rel = max(worst, w), max(biggest, b), max(rel, r)
                if progress and j % 100 == 0:
                    print(f"{name} row {j}: D error 2**{log2(w):.1f}", file=sys.stderr)
            tables[name] = (rows, worst, biggest)
            notes += [f"* {name}: D's absolute error 2**{log2(worst):.1f}, max |D| "
                      f"{float(biggest):.4f}, the pairs mh + ml 2**{log2(rel):.1f} relative"]
    lines = [
        '"""The tables of the lean float32-arithmetic kernels (GENERATED: do not edit).',
        "",
        "Regenerate in the gelu-numba repository with::",
        "",
        "    python -m fitting.make_tables32_lean32",
        "",
        f"mpmath {mp.__version__}, {PREC}-bit working precision.  Two tables of {ROWS} rows",
        f"of {WIDTH} float32 values (the generator's docstring says what each is):",
        "Q_TABLE expands log Phi(-a), G_TABLE log(GELU'(-a)/(z0 - a)).  Rows 0-3",
        f"cover 0 <= a < 1 in quarters, row 3 + n covers n <= a**2 < n + 1 up to "
        f"a = {A_F32}.",
        f"As stored, evaluated exactly on {CHECK_POINTS} + 1 points of each piece",
        f"(widened by 2**{log2(WIDEN):.0f} relative):",
        "",
        *notes,
        '"""',
        "",
        f"A_F32 = {A_F32!r}",
        f"SMALL = {SMALL!r}",
        f"ROWS = {ROWS!r}",
        f"WIDTH = {WIDTH!r}",
    ]
    for name, (rows, worst, biggest) in tables.items():
        lines += ["", f"{name}_D_ERROR = {float(worst)!r}", f"{name}_D_MAX = {float(biggest)!r}",
                  f"{name}_TABLE = (", *(f"    {v!r}," for r in rows for v in r), ")"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    return run_generator(generate, OUT, "python -m fitting.make_tables32_lean32",
                         "Regenerate the lean float32 kernel's table.", argv)


if __name__ == "__main__":
    sys.exit(main())
