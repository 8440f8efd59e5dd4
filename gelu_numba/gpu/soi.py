"""The stochastic 0-I map on the GPU, with numba-cuda's xoroshiro128+.

``soi_map(x, seed=None, out=None, stream=0)`` returns ``x * m``,
``m ~ Bernoulli(Phi(x))`` independently per element (Hendrycks & Gimpel,
section 2; its mean is GELU), with the element rule of the CPU map
(:func:`gelu_numba.kernels.soi.keep_or_zero`: ``x`` or a zero with its
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
after the other: 30 ms for 2**18 streams, 100 times the kernel's time.
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

import math

from numba import cuda
import numpy as np
from numba.cuda.random import xoroshiro128p_dtype, xoroshiro128p_uniform_float64

from gelu_numba.gpu import device
from gelu_numba.gpu.target import (
    _CAST, _generate, _launch, _loop_fields, launch_config, operands,
    prepare_inputs, prepare_out,
)
from gelu_numba.kernels.soi import GAMMA, keep_or_zero, mix64
from gelu_numba.soi import _seed64

#: the number of random streams (the parallelism of one call)
STREAMS = 2**18

_SOI = """
def kernel({args}, out, states, streams):
    for s in range(cuda.grid(1), streams, cuda.gridsize(1)):
        for i in range(s, out.size, streams):
{unravel}
            v = {loads}
            out[{out_index}] = keep_or_zero(v, uniform(states, s), ndtr(v))
"""

_kernels = {}
_ONE = np.uint64(1)
_TWO = np.uint64(2)


@cuda.jit
def _seed_streams(states, seed):
    """Stream s starts at SplitMix64 outputs 2s and 2s + 1 of ``seed``."""
    for s in range(cuda.grid(1), states.size, cuda.gridsize(1)):
        base = seed + (np.uint64(s) * _TWO + _ONE) * GAMMA
        states[s]["s0"] = mix64(base)
        states[s]["s1"] = mix64(base + GAMMA)


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
    (view,), loop = prepare_inputs("soi_map", (x,), stream)
    s = _seed64(seed)
    shape = tuple(view.shape)
    dst = prepare_out("soi_map", out, shape, loop, stream)
    n = math.prod(shape)
    if n:
        streams = min(n, STREAMS)
        states = cuda.device_array(streams, dtype=xoroshiro128p_dtype, stream=stream)
        blocks, threads = launch_config(streams)
        _launch(_seed_streams, blocks, threads, stream, (states, s))
        (view,), target, layout = operands([view], dst, shape)
        kernel = _kernels.get((loop, layout))
        if kernel is None:
            kernel = _generate(_SOI, {
                "cast": _CAST[loop], "ndtr": device.ndtr,
                "keep_or_zero": keep_or_zero,
                "uniform": xoroshiro128p_uniform_float64},
                **_loop_fields(layout, 1, 12))
            _kernels[(loop, layout)] = kernel
        _launch(kernel, blocks, threads, stream, (view, target, states, streams))
    return dst if out is None else out
