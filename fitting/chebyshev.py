"""Polynomial fits by interpolation at Chebyshev nodes, in mpmath.

Interpolation at the ``n`` Chebyshev nodes of an interval is within a small
factor (the Lebesgue constant, below 3 for n <= 30) of the minimax polynomial
of the same degree, and needs no iteration: it is the fitting method for the
coefficient tables of the accurate kernels, where the approximation error is
driven far below the rounding error (2**-64 and less) by the degree.  The fit
is certified by evaluating the polynomial with its *stored* (rounded)
coefficients in exact rational arithmetic on a dense grid plus the interval's
end points, and comparing with the function at the working precision.
"""

from dataclasses import dataclass
from fractions import Fraction

import mpmath as mp


@dataclass
class PolyFit:
    """A polynomial ``sum_j c_j t**j`` approximating ``f(m + t)``.

    Attributes
    ----------
    m : mpf
        Expansion point.
    t_lo, t_hi : mpf
        Interval of ``t`` on which the fit holds.
    hi, lo : list of float
        Coefficients rounded to double, and the rounding error of the first
        ``len(lo)`` of them (so that ``hi[j] + lo[j]`` carries ~106 bits).
    max_rel_error : float
        Largest relative error of the stored polynomial on the check grid.
    """

    m: object
    t_lo: object
    t_hi: object
    hi: list
    lo: list
    max_rel_error: float


def chebyshev_nodes(t_lo, t_hi, n):
    """The ``n`` Chebyshev points of the first kind on ``[t_lo, t_hi]``."""
    c = (t_lo + t_hi) / 2
    h = (t_hi - t_lo) / 2
    return [c + h * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]


def interpolate(f, m, t_lo, t_hi, n):
    """Monomial coefficients of the degree ``n-1`` interpolant of ``f(m+t)``."""
    ts = chebyshev_nodes(t_lo, t_hi, n)
    vander = mp.matrix([[t**j for j in range(n)] for t in ts])
    rhs = mp.matrix([f(m + t) for t in ts])
    return list(mp.lu_solve(vander, rhs))


def round_coefficients(coeffs, ndd):
    """Split coefficients into doubles; the first ``ndd`` keep a low part."""
    hi = [float(c) for c in coeffs]
    lo = [float(c - mp.mpf(h)) for c, h in zip(coeffs[:ndd], hi[:ndd])]
    return hi, lo


def stored_value(hi, lo, t):
    """Exact value at the rational ``t`` of the polynomial as stored."""
    coeffs = [Fraction(h) + (Fraction(lo[j]) if j < len(lo) else 0)
              for j, h in enumerate(hi)]
    acc = Fraction(0)
    for c in reversed(coeffs):
        acc = acc * t + c
    return acc


def certify(f, m, t_lo, t_hi, hi, lo, npts):
    """Max relative error of the stored polynomial against ``f(m+t)``.

    The grid has ``npts`` equally spaced points plus the Chebyshev extrema;
    each ``t`` is rounded to a double first, as the kernel sees it.
    """
    grid = [t_lo + (t_hi - t_lo) * k / (npts - 1) for k in range(npts)]
    grid += chebyshev_nodes(t_lo, t_hi, len(hi) + 1)
    worst = mp.mpf(0)
    for t in grid:
        td = float(t)
        exact = f(m + mp.mpf(td))
        approx = stored_value(hi, lo, Fraction(td))
        err = abs((mp.mpf(approx.numerator) / approx.denominator - exact) / exact)
        worst = max(worst, err)
    return float(worst)


def fit(f, m, t_lo, t_hi, n, ndd, npts=128):
    """Fit, round and certify; see :class:`PolyFit`."""
    coeffs = interpolate(f, m, t_lo, t_hi, n)
    hi, lo = round_coefficients(coeffs, ndd)
    err = certify(f, m, t_lo, t_hi, hi, lo, npts)
    return PolyFit(m, t_lo, t_hi, hi, lo, err)
