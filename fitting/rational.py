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


def remez(f, lo, hi, m, n, *, start, weight=None, p0=None, grid=1200, iters=30,
          tol=mp.mpf("1e-4"), dps=40):
    """Rational Remez exchange: ``P/Q`` (degrees ``m``, ``n``, ``Q(0) = 1``;
    ``P(0) = p0`` when given) minimising ``max |weight (P/Q - f)|`` on
    ``[lo, hi]`` (``weight`` 1/f, relative error, by default).

    Method (Cheney, *Introduction to Approximation Theory*, ch. 5; the
    linearised levelled system of Werner/Fraser-Hart): with ``N`` free
    coefficients, a reference of ``N + 1`` points, and the level ``E``, solve

        w_i (P(x_i) - f_i Q(x_i)) = (-1)**i E Q_prev(x_i)

    (linear in the coefficients and ``E`` once ``Q`` on the right is the
    previous iterate's), a few times until ``E`` settles, then exchange the
    reference for the alternating extrema of the weighted error (refined
    local maxima on a Chebyshev grid, one per sign run, the smaller end
    trimmed; :func:`fitting.remez.remez` does the same for linear
    problems).  ``start`` = ``(p, q)``, e.g. Lawson's fit: its error's
    extrema give the first reference.  Returns ``(p, q, level, max_error,
    converged)``; ``|level|`` bounds the best error from below
    (de la Vallée Poussin) and ``max_error`` is the error found on the
    refined grid.  If ``Q`` gets a zero on the interval, or the error stops
    decreasing, the best iterate so far is returned, not converged."""
    from fitting import remez as lin
    j0 = 0 if p0 is None else 1
    N = (m + 1 - j0) + n
    with mp.workdps(dps):
        lo, hi = mp.mpf(lo), mp.mpf(hi)
        wf = (lambda x: 1 / f(x)) if weight is None else weight
        xs = lin._chebyshev_grid(lo, hi, grid)
        fx = [f(x) for x in xs]
        wx = [wf(x) for x in xs]
        p, q = [mp.mpf(c) for c in start[0]], [mp.mpf(c) for c in start[1]]

        def err_at(x, p, q):
            return wf(x) * (horner(p, x) / horner(q, x) - f(x))

        def extrema(p, q):
            es = [w * (horner(p, x) / horner(q, x) - v) for x, v, w in zip(xs, fx, wx)]
            absd = [abs(e) for e in es]
            out = []
            for k in lin._local_maxima(absd):
                s = 1 if es[k] > 0 else -1
                x, g = lin._refine(lambda t, s=s: s * err_at(t, p, q), xs, k, absd[k])
                out.append((x, s * g))
            return out, max(absd)

        cand, worst = extrema(p, q)
        ref = [x for x, _ in lin.alternating(cand, N + 1)]
        best = (worst, p, q, mp.mpf(0))
        if len(ref) < N + 1:
            return p, q, mp.mpf(0), worst, False
        for _ in range(iters):
            qprev = [horner(q, x) for x in ref]
            for _inner in range(6):
                a = mp.matrix(N + 1, N + 1)
                rhs = mp.matrix(N + 1, 1)
                for i, x in enumerate(ref):
                    w, v = wf(x), f(x)
                    cols = [w * x**j for j in range(j0, m + 1)] + \
                           [-w * v * x**k for k in range(1, n + 1)]
                    for j, c in enumerate(cols):
                        a[i, j] = c
                    a[i, N] = -(1 if i % 2 == 0 else -1) * qprev[i]
                    rhs[i] = w * v - (w * p0 if p0 is not None else 0)
                sol = mp.lu_solve(a, rhs)
                p = ([] if p0 is None else [mp.mpf(p0)]) + [sol[j] for j in range(m + 1 - j0)]
                q = [mp.mpf(1)] + [sol[m + 1 - j0 + k] for k in range(n)]
                level = sol[N]
                qnew = [horner(q, x) for x in ref]
                if max(abs(u / v - 1) for u, v in zip(qnew, qprev)) < mp.mpf("1e-20"):
                    break
                qprev = qnew
            qs = [horner(q, x) for x in xs]
            if min(qs) <= 0:
                break                               # a pole: keep the best so far
            cand, worst = extrema(p, q)
            if worst < best[0]:
                best = (worst, p, q, level)
            if abs(level) > 0 and (worst - abs(level)) / abs(level) < tol:
                return p, q, level, worst, True
            new = lin.alternating(cand + [(x, err_at(x, p, q)) for x in ref], N + 1)
            newref = [x for x, _ in new]
            if len(newref) < N + 1 or newref == ref:
                break
            ref = newref
        worst, p, q, level = best
        return p, q, level, worst, False
