"""The element rule of the stochastic 0-I map (Hendrycks & Gimpel, section 2).

``soi_map(x) = x * m`` with ``m ~ Bernoulli(Phi(x))``: given a uniform
number ``u`` of [0, 1) and ``p = Phi(x)``, ``m = 1`` exactly when
``u < p``.  The product ``x * m`` is exact, written as a select: ``x``, or a
zero with the sign of ``x``; NaN stays NaN (``u < NaN`` is false, and
``NaN * 0`` is NaN).  The CPU loop (:mod:`gelu_numba.soi`, SplitMix64) and
the GPU kernel (:mod:`gelu_numba.gpu.soi`, xoroshiro128+) share it.
"""

import math

from numba import njit


@njit(inline="always")
def keep_or_zero(v, u, p):
    """``v * (u < p)``: ``v`` where ``u < p``, else a zero with its sign."""
    return v if u < p or v != v else math.copysign(0.0, v)
