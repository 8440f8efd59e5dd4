"""The stochastic 0-I map on the GPU, with numba-cuda's xoroshiro128+.

``soi_map(x, seed=None, out=None, stream=0)`` returns ``x * m``,
``m ~ Bernoulli(Phi(x))`` independently per element (Hendrycks & Gimpel,
section 2; its mean is GELU), with the element rule of the CPU map
(:func:`gelu_numba.kernels.soi.keep_or_zero`: ``x`` or a zero with its
sign, NaN stays NaN) and ``Phi`` the package's :func:`ndtr` device function
of the input's precision.

Random numbers
--------------
``S = min(n, STREAMS)`` xoroshiro128+ streams (numba-cuda's
``create_xoroshiro128p_states(S, seed)``: stream s starts ``s * 2**64``
steps into the sequence of ``seed``).  The element of C-order flat index
i draws the ``(i // S)``-th number of stream ``i % S``, as a float64 of
[0, 1) on the grid of step 2**-53 (``xoroshiro128p_uniform_float64``);
``m = (u < p)``.  S depends on n alone and each stream is consumed in
element order whatever thread runs it, so the result is a pure function of
(seed, the input values, dtype and shape): the same on every device, grid
and simulator.  It is *not* the CPU :func:`gelu_numba.soi_map` stream
(SplitMix64): the two agree in distribution, not bit for bit.  Seeds are
integers of [0, 2**64) or None (a fresh one from the operating system).

Accuracy: ``|P(m = 1) - Phi(x)| < 2**-53 + ulp(Phi(x))`` as on the CPU.
Cost: the states are made on the host (about 30 ms for 2**18 of them)
and copied to the device, 4 MiB, on each call.
"""

import math

from numba import cuda
from numba.cuda.random import (
    create_xoroshiro128p_states, xoroshiro128p_uniform_float64,
)

from gelu_numba.gpu import device
from gelu_numba.gpu.target import (
    _CAST, _generate, _launch, _loop_fields, launch_config, operands,
    prepare_inputs, prepare_out,
)
from gelu_numba.kernels.soi import keep_or_zero
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
        states = create_xoroshiro128p_states(streams, seed=s, stream=stream)
        (view,), target, layout = operands([view], dst, shape)
        kernel = _kernels.get((loop, layout))
        if kernel is None:
            kernel = _generate(_SOI, {
                "cast": _CAST[loop], "ndtr": device.ndtr,
                "keep_or_zero": cuda.jit(device=True)(keep_or_zero.py_func),
                "uniform": xoroshiro128p_uniform_float64},
                **_loop_fields(layout, 1, 12))
            _kernels[(loop, layout)] = kernel
        blocks, threads = launch_config(streams)
        _launch(kernel, blocks, threads, stream, (view, target, states, streams))
    return dst if out is None else out
