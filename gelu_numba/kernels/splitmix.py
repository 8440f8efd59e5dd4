"""The element rule of the stochastic 0-I map (Hendrycks & Gimpel, section 2).

``soi_map(x) = x * m`` with ``m ~ Bernoulli(Phi(x))``: given a uniform
number ``u`` of [0, 1) and ``p = Phi(x)``, ``m = 1`` exactly when
``u < p``.  The product ``x * m`` is exact, written as a select: ``x``, or a
zero with the sign of ``x``; NaN stays NaN (``u < NaN`` is false, and
``NaN * 0`` is NaN).  The CPU loop (:mod:`gelu_numba.soi`, SplitMix64) and
the GPU kernel (:mod:`gelu_numba.gpu.soi`, xoroshiro128+) share it, and
SplitMix64's output function, which the CPU map draws from and the GPU map
seeds its streams with.
"""

import math

import numpy as np

from gelu_numba.kernels.primitives import inline

# SplitMix64 (Steele, Lea & Flood 2014; Vigna's splitmix64.c).  Every
# constant is a uint64: Numba unifies uint64 with int64 to float64, which
# would silently break the modular arithmetic.
GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@inline
def mix64(z):
    """SplitMix64's output function: the i-th output of the generator seeded
    with ``s`` is ``mix64(s + (i + 1) * GAMMA)`` (mod 2**64)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@inline
def keep_or_zero(v, u, p):
    """``v * (u < p)``: ``v`` where ``u < p``, else a zero with its sign."""
    return v if u < p or v != v else math.copysign(0.0, v)
