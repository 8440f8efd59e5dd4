"""Linear minimax fits by the Remez exchange algorithm, in mpmath.

Problem: for a function ``F``, a weight ``w`` (1 unless given) and basis
functions ``phi_0 .. phi_{m-1}`` forming a Haar (Chebyshev) system on the
open interval ``(lo, hi)``, find the coefficients ``c`` minimising

    max over lo <= a <= hi of |w(a) (sum_j c_j phi_j(a) - F(a))|.

Method: the second algorithm of Remez (1934).  A reference of ``m + 1``
points ``x_0 < ... < x_m`` (at first Chebyshev extrema of the interval, or
Chebyshev nodes, all interior, when an end point is dead, see below) is
kept, and each iteration

1. solves the levelled system ``w(x_i) (sum_j c_j phi_j(x_i) - F(x_i)) =
   (-1)**i E``, ``i = 0..m``, for ``c`` and the level ``E``;
2. samples the weighted error of ``c`` on a dense grid of
   Chebyshev-distributed points (end points included) and refines each local
   maximum of ``|err|`` by Brent's search (parabolic steps, golden-section
   fall-back) in the bracket of its two grid neighbours;
3. exchanges (multi-point exchange): of the refined extrema and the old
   reference points, those with ``|err| >= |E|`` are kept, sorted, each run of
   equal sign is reduced to its largest member, and while more than ``m + 1``
   remain the end with the smaller ``|err|`` is dropped.  The new reference
   alternates in sign, has ``|err| >= |E|`` everywhere and contains the
   global maximum, so ``|E|`` increases from step to step;

until ``(max |err| - |E|) / |E| < tol``.

Dead points: where the weighted basis all vanish (e.g. ``a = 0`` for the
basis ``a * a**j`` on ``[0, L]``, or a zero of ``w``) the error does not
depend on ``c``; such points never enter a reference (they would make the
levelled system singular, or force ``E = 0`` when ``F`` vanishes there too).
The extrema are then taken in the interior.  The Haar condition is only
needed on the live points.

What it guarantees.  By de la Vallée Poussin's theorem, since the error of
the final ``c`` is ``+-E`` with alternating signs on the reference, no
coefficients whatsoever have a smaller maximum weighted error than ``|E|``:
the level is a *lower* bound of the best error ``E*`` (up to the 40-digit
working precision).  The maximum found on the grid plus refinement is the
exact error of ``c`` at the points looked at, hence a lower bound of the
error of ``c`` and an *estimate* of its upper bound, accurate for smooth
error curves but not proven (a spike narrower than the grid spacing would be
missed).  At convergence ``E*`` is bracketed within a relative ``tol``.  For
a kernel the figure that counts is :func:`certify`'s: the error of the
coefficients *as stored* (rounded to doubles), evaluated exactly in mpmath.

References: E. Remez, "Sur le calcul effectif des polynômes d'approximation
de Tchebichef", C. R. Acad. Sci. Paris 199 (1934) 337-340; E. W. Cheney,
*Introduction to Approximation Theory*, ch. 3 (Haar systems, de la Vallée
Poussin, exchange); L. N. Trefethen, *Approximation Theory and Approximation
Practice*, ch. 10 (and Chebfun's ``remez``); R. P. Brent, *Algorithms for
Minimization without Derivatives* (1973), ch. 5 (the local search).
"""

import warnings
from collections import namedtuple

import mpmath as mp

DPS = 40
"""Default working precision (decimal digits) of the fits."""

_XTOL = "1e-12"  # local search: x tolerance relative to the bracket width
_MAXITER = 100   # local search: evaluations (enough for golden section to _XTOL)
_NBEST = 8       # max_abs: grid maxima always refined ...
_NMAX = 64       # ... and at most this many (those within half of the max)


class MinimaxFit(namedtuple("MinimaxFit", "coeffs error reference iterations")):
    """Result of :func:`remez`.

    Fields: ``coeffs`` (list of mpf, one per basis function), ``error`` (the
    maximum weighted error of ``coeffs`` found on the refined grid, an
    estimate of the best error from above), ``reference`` (the ``m + 1``
    points of the last levelled system, ascending), ``iterations`` (levelled
    systems solved).  Attributes beside the tuple: ``level``, the signed
    level ``E`` (the weighted error at ``reference[i]`` is ``(-1)**i E``;
    ``|E|`` is a lower bound of the best error), and ``converged``.
    """

    level = None
    converged = None


def _chebyshev_grid(lo, hi, n):
    """``n`` Chebyshev extrema of ``[lo, hi]``, ascending, ends exact."""
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    xs = [mid - half * mp.cos(mp.pi * k / (n - 1)) for k in range(n)]
    xs[0], xs[-1] = lo, hi
    return xs


def _chebyshev_nodes(lo, hi, n):
    """The ``n`` Chebyshev points of the first kind, ascending (interior)."""
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    return [mid - half * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]


def _brent_max(g, a, b, x, gx):
    """Maximise ``g`` on ``[a, b]`` from the point ``x`` (value ``gx``) by
    Brent's method (parabolic interpolation, golden-section fall-back).

    Returns the best ``(x, g(x))`` seen, so never worse than the start."""
    golden = (3 - mp.sqrt(5)) / 2
    tol1 = (b - a) * mp.mpf(_XTOL)
    tol2 = 2 * tol1
    fx = -gx
    v = w = x
    fv = fw = fx
    d = e = mp.mpf(0)
    for _ in range(_MAXITER):
        m = (a + b) / 2
        if abs(x - m) <= tol2 - (b - a) / 2:
            break
        parabolic = False
        if abs(e) > tol1:
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2 * (q - r)
            if q > 0:
                p = -p
            q = abs(q)
            etemp, e = e, d
            if not (abs(p) >= abs(q * etemp / 2) or p <= q * (a - x) or p >= q * (b - x)):
                d = p / q
                u = x + d
                if u - a < tol2 or b - u < tol2:
                    d = tol1 if m >= x else -tol1
                parabolic = True
        if not parabolic:
            e = (a - x) if x >= m else (b - x)
            d = golden * e
        u = x + d if abs(d) >= tol1 else x + (tol1 if d >= 0 else -tol1)
        fu = -mp.mpf(g(u))
        if fu <= fx:
            if u >= x:
                a = x
            else:
                b = x
            v, w, x = w, x, u
            fv, fw, fx = fw, fx, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, w = w, u
                fv, fw = fw, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu
    return x, -fx


def _local_maxima(vals):
    """Indices ``k`` with ``vals[k]`` >= both neighbours (one at the ends)."""
    n = len(vals)
    return [k for k in range(n)
            if (k == 0 or vals[k] >= vals[k - 1]) and (k == n - 1 or vals[k] >= vals[k + 1])]


def _refine(g, xs, k, gk):
    """Brent search for the maximum of ``g`` around grid point ``xs[k]``."""
    a, b = xs[max(k - 1, 0)], xs[min(k + 1, len(xs) - 1)]
    return _brent_max(g, a, b, xs[k], gk)


def alternating(cand, size):
    """The exchange step: of the ``(x, error)`` candidates, sorted by x, keep
    the largest ``|error|`` of each run of equal sign, then drop the end with
    the smaller ``|error|`` while more than ``size`` remain."""
    new = []
    for x, e in sorted(cand, key=lambda p: p[0]):
        if new and (new[-1][1] > 0) == (e > 0):
            if abs(e) > abs(new[-1][1]):
                new[-1] = (x, e)
        else:
            new.append((x, e))
    while len(new) > size:
        if abs(new[0][1]) < abs(new[-1][1]):
            new.pop(0)
        else:
            new.pop()
    return new


def max_abs(f, lo, hi, *, grid=4000, refine=True, dps=DPS):
    """``(max |f|, location)`` on ``[lo, hi]``.

    ``f`` (returning mpf or float) is sampled at ``grid`` Chebyshev extrema of
    the interval (end points included); with ``refine``, the largest local
    maxima of ``|f|`` on the grid (the best ``8``, and up to ``64`` of those
    above half the maximum) are refined by Brent's search between their grid
    neighbours.  For smooth ``f`` the value is the true maximum to far better
    than 1e-10 relative, provided no peak is much narrower than the grid
    spacing; it is always a value of ``|f|`` actually attained (a lower bound).
    """
    with mp.workdps(dps):
        lo, hi = mp.mpf(lo), mp.mpf(hi)
        if lo == hi:
            return abs(mp.mpf(f(lo))), lo
        xs = _chebyshev_grid(lo, hi, max(int(grid), 3))
        fs = [mp.mpf(f(x)) for x in xs]
        vals = [abs(v) for v in fs]
        kbest = max(range(len(xs)), key=vals.__getitem__)
        best, loc = vals[kbest], xs[kbest]
        if refine and best > 0:
            cand = sorted(_local_maxima(vals), key=vals.__getitem__, reverse=True)
            nref = max(_NBEST, sum(1 for k in cand[:_NMAX] if vals[k] >= best / 2))
            for k in cand[:nref]:
                s = 1 if fs[k] > 0 else -1
                x, gx = _refine(lambda t, s=s: s * mp.mpf(f(t)), xs, k, vals[k])
                if gx > best:
                    best, loc = gx, x
        return best, loc


def certify(F, basis, coeffs, lo, hi, *, weight=None, grid=4000, dps=DPS):
    """``(max |weighted error|, location)`` of the coefficients as given.

    The coefficients (floats are taken exactly) are combined with the basis
    and compared with ``F`` in mpmath at ``dps`` digits, so the only error in
    the figure is :func:`max_abs`'s sampling (refined grid maximum)."""
    with mp.workdps(dps):
        cs = [mp.mpf(c) for c in coeffs]

        def err(a):
            v = mp.fsum(c * mp.mpf(phi(a)) for c, phi in zip(cs, basis)) - mp.mpf(F(a))
            return v if weight is None else mp.mpf(weight(a)) * v

        return max_abs(err, lo, hi, grid=grid, dps=dps)


def remez(F, basis, lo, hi, *, grid=2000, iters=40, tol=1e-6, weight=None,
          dps=DPS, reference=None):
    """Minimax coefficients of ``basis`` for ``F`` on ``[lo, hi]`` in the
    weighted error ``w (sum_j c_j basis[j] - F)``; see the module docstring
    for the method and :class:`MinimaxFit` for the result.

    ``grid`` is the number of Chebyshev-distributed sampling points, ``iters``
    the most levelled systems solved, ``tol`` the relative gap between the
    error found and the level at which to stop, ``dps`` the working
    precision and ``reference`` an optional starting reference of
    ``len(basis) + 1`` points.  Not converging in ``iters`` steps gives a
    warning and the iterate with the smallest error."""
    m = len(basis)
    with mp.workdps(dps):
        lo, hi = mp.mpf(lo), mp.mpf(hi)
        tol = mp.mpf(tol)

        def row(x):
            wx = mp.mpf(1) if weight is None else mp.mpf(weight(x))
            return [wx * mp.mpf(phi(x)) for phi in basis], wx * mp.mpf(F(x))

        xs = _chebyshev_grid(lo, hi, max(int(grid), m + 2))
        rows = [row(x) for x in xs]
        scale = max(max(abs(v) for v in r) for r, _ in rows)
        tiny = scale * mp.eps * 16

        def dead(r):
            return max(abs(v) for v in r) <= tiny

        live = [not dead(r) for r, _ in rows]

        if reference is None:
            ref = _chebyshev_grid(lo, hi, m + 1)
            if any(dead(row(x)[0]) for x in ref):
                ref = _chebyshev_nodes(lo, hi, m + 1)
        else:
            ref = sorted(mp.mpf(x) for x in reference)
            if len(ref) != m + 1:
                raise ValueError(f"reference needs {m + 1} points, got {len(ref)}")
        refrows = [row(x) for x in ref]

        best = None
        for it in range(1, iters + 1):
            a = mp.matrix(m + 1, m + 1)
            rhs = mp.matrix(m + 1, 1)
            for i, (r, wf) in enumerate(refrows):
                for j in range(m):
                    a[i, j] = r[j]
                a[i, m] = -1 if i % 2 == 0 else 1
                rhs[i] = wf
            sol = mp.lu_solve(a, rhs)
            c = [sol[j] for j in range(m)]
            level = sol[m]
            lev = abs(level)

            def err(x, c=c):
                r, wf = row(x)
                return mp.fdot(c, r) - wf

            es = [mp.fdot(c, r) - wf for r, wf in rows]
            absd = [abs(v) if ok else mp.mpf(0) for v, ok in zip(es, live)]
            maxerr = max(abs(v) for v in es)  # dead points count in the error
            # candidates: the old reference (|err| = |E|) and refined extrema
            cand = [(x, mp.fdot(c, r) - wf) for x, (r, wf) in zip(ref, refrows)]
            for k in _local_maxima(absd):
                if absd[k] == 0 or absd[k] < lev / 2:
                    continue
                s = 1 if es[k] > 0 else -1
                x, gx = _refine(lambda t, s=s: s * err(t), xs, k, absd[k])
                maxerr = max(maxerr, gx)
                if gx >= lev:
                    cand.append((x, s * gx))
            if best is None or maxerr < best[0]:
                best = (maxerr, c, ref, level, it)
            if maxerr == 0 or (lev > 0 and (maxerr - lev) / lev < tol):
                fit = MinimaxFit(c, maxerr, ref, it)
                fit.level, fit.converged = level, True
                return fit
            newref = [x for x, _ in alternating(cand, m + 1)]
            if len(newref) < m + 1 or newref == ref:
                break  # no exchange possible (precision limit, or not Haar)
            ref = newref
            refrows = [row(x) for x in ref]

        maxerr, c, ref, level, _ = best
        warnings.warn(f"remez: no convergence to tol={mp.nstr(tol, 3)} after {it} "
                      f"iterations (error {mp.nstr(maxerr, 6)}, level {mp.nstr(level, 6)})",
                      RuntimeWarning, stacklevel=2)
        fit = MinimaxFit(c, maxerr, ref, it)  # it: the iterations done
        fit.level, fit.converged = level, False
        return fit
