"""Rational fits ``P(a)/Q(a)`` with small relative error, in mpmath.

Method: Lawson's iteratively reweighted least squares on the linearised
problem ``P(a_i) - f(a_i) Q(a_i) ~ 0`` (Sanathanan-Koerner: each row is
divided by ``f(a_i) Q_prev(a_i)``, so the residual is the relative error of
``P/Q``), on Chebyshev nodes of ``[lo, hi]``, with ``Q(0) = 1``.  The Lawson
weights drive the least-squares solution towards the minimax one; the best
iterate is kept.  This is not a Remez exchange and proves nothing by itself:
the error that counts is :func:`certify`'s, the relative error of the
rational function *as stored in doubles*, evaluated exactly (in mpmath) on a
dense grid.
"""

from collections import namedtuple

import mpmath as mp

RationalFit = namedtuple("RationalFit", "p q max_rel_error")
RationalFit.__doc__ = """Coefficients (doubles, ascending powers) of P and Q,
and the certified relative error of P/Q as stored."""


def horner(coeffs, x):
    """``sum coeffs[j] x**j`` (ascending powers), in mpmath."""
    acc = mp.mpf(0)
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc


def chebyshev_nodes(lo, hi, n):
    """The ``n`` Chebyshev points of the first kind on ``[lo, hi]``."""
    return [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n)
            for k in range(n)]


def lawson(f, lo, hi, m, n, nodes=400, iters=30, p0=None, weight=None):
    """Numerator degree ``m``, denominator degree ``n`` fit of ``f`` on
    ``[lo, hi]`` in relative error; returns (p, q) as mpmath numbers.

    ``p0`` fixes the constant term of P (with ``lo = 0`` and ``p0 = f(0)``
    a double, P/Q is then exact at 0, where float32 inputs crowd).
    ``weight``: minimise ``max |weight(a) (P/Q - f)|`` instead of the
    relative error (``weight = 1/f``)."""
    j0 = 0 if p0 is None else 1
    xs = chebyshev_nodes(lo, hi, nodes)
    fs = [f(x) for x in xs]
    ws = [1 / fx for fx in fs] if weight is None else [weight(x) for x in xs]
    w = [mp.mpf(1)] * nodes
    qprev = [mp.mpf(1)] * nodes
    best = None
    for _ in range(iters):
        rows, rhs = [], []
        for x, fx, wx, wi, qp in zip(xs, fs, ws, w, qprev):
            s = mp.sqrt(wi) * wx / qp
            rows.append([s * x**j for j in range(j0, m + 1)]
                        + [-s * fx * x**j for j in range(1, n + 1)])
            rhs.append(s * (fx if p0 is None else fx - p0))
        sol = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))[0]
        p = ([] if p0 is None else [mp.mpf(p0)]) + [sol[j] for j in range(m + 1 - j0)]
        q = [mp.mpf(1)] + [sol[m - j0 + j] for j in range(1, n + 1)]
        qv = [horner(q, x) for x in xs]
        err = [(horner(p, x) / qx - fx) * wx
               for x, fx, wx, qx in zip(xs, fs, ws, qv)]
        e = max(abs(v) for v in err)
        if best is None or e < best[0]:
            best = (e, p, q)
        w = [wi * abs(v) for wi, v in zip(w, err)]
        total = sum(w)
        w = [wi / total for wi in w]
        qprev = qv
    return best[1], best[2]


def certify(f, p, q, lo, hi, npts=2000):
    """Max relative error of ``P/Q`` with the given double coefficients, on
    ``npts`` Chebyshev extrema of ``[lo, hi]`` (endpoints included) and as
    many equally spaced points, evaluated exactly in mpmath."""
    pm = [mp.mpf(c) for c in p]
    qm = [mp.mpf(c) for c in q]
    pts = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * k / (npts - 1))
           for k in range(npts)]
    pts += [lo + (hi - lo) * k / npts for k in range(1, npts)]
    worst = mp.mpf(0)
    for x in pts:
        fx = f(x)
        worst = max(worst, abs((horner(pm, x) / horner(qm, x) - fx) / fx))
    return worst


def fit(f, lo, hi, m, n, nodes=400, iters=30, npts=2000, p0=None):
    """Fit, round to doubles and certify; see :class:`RationalFit`."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    p, q = lawson(f, lo, hi, m, n, nodes, iters, p0)
    p = [float(c) for c in p]
    q = [float(c) for c in q]
    return RationalFit(p, q, certify(f, p, q, lo, hi, npts))
