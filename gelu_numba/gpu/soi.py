"""The stochastic 0-I map on the GPU, with numba-cuda's xoroshiro128+.

``soi_map(x, seed=None, out=None, stream=0)`` returns ``x * m``,
``m ~ Bernoulli(Phi(x))`` independently per element (Hendrycks & Gimpel,
section 2; its mean is GELU), with the element rule of the CPU map
(:func:`gelu_numba.kernels.splitmix.keep_or_zero`: ``x`` or a zero with its
sign, NaN stays NaN) and ``Phi`` the package's :func:`ndtr` device function
of the input's precision.

Random numbers
--------------
``S = min(n, STREAMS)`` streams of numba-cuda's xoroshiro128+
(``xoroshiro128p_uniform_float64``: a float64 of [0, 1) on the grid of
step 2**-53).  The element of C-order flat index i draws the
``(i // S)``-th number of stream ``i % S``; ``m = (u < p)``.  Stream s
starts from the state ``(w[2s], w[2s + 1])``, w the SplitMix64 stream of
the seed (Vigna's recommended seeding of xoroshiro), set on the device by
one thread per stream.  (numba-cuda's own ``create_xoroshiro128p_states``
spaces its streams 2**64 steps apart, but makes them on the host, one jump
after the other, which takes far longer than the kernel.
Streams from distinct seeded states overlap with probability about
``S**2 * draws / 2**128``, below 2**-60 here.)  S depends on n alone and
each stream is consumed in element order whatever thread runs it, so the
result is a pure function of (seed, the input values, dtype and shape):
the same on every device, grid and under the simulator.  It is *not* the
CPU :func:`gelu_numba.soi_map` (which draws SplitMix64 directly): the two
agree in distribution, not bit for bit.  Seeds are integers of
[0, 2**64) or None (a fresh one from the operating system).

Accuracy: ``|P(m = 1) - Phi(x)| < 2**-53 + ulp(Phi(x))`` as on the CPU.
"""

from gelu_numba.soi import seed64
from gelu_numba.targets.cuda.soi_kernel import STREAMS, launch_soi

__all__ = ["soi_map", "STREAMS"]


def soi_map(x, seed=None, out=None, stream=0):
    """Stochastic 0-I map on the GPU: ``x * m``, ``m ~ Bernoulli(Phi(x))``.

    Parameters
    ----------
    x : device array, NumPy array or scalar
        float32 or float64 (other real dtypes by NumPy's safe casting), any
        shape and strides; host data is copied to the device.  Not modified
        unless passed as ``out``.
    seed : None or int in [0, 2**64)
        Equal seeds give identical results on any device.
    out : device array, optional
        x's shape, float32 or float64; may be x itself.
    stream : numba stream, optional

    Returns
    -------
    device array
        ``x`` where m = 1, a signed zero where m = 0; ``out`` when given.
        Its expectation is ``gelu(x)``.  See :mod:`gelu_numba.gpu.soi`.
    """
    return launch_soi(x, seed64(seed), out, stream)
