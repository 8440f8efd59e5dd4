"""CUDA kernels of the stochastic 0-I map (:mod:`gelu_numba.gpu.soi`, which
documents the streams): the seeding kernel and the generated map kernels."""

import math

from numba import cuda
import numpy as np
from numba.cuda.random import xoroshiro128p_dtype, xoroshiro128p_uniform_float64

from gelu_numba import catalog
from gelu_numba.kernels.splitmix import GAMMA, keep_or_zero, mix64
from gelu_numba.targets.cuda import launch
from gelu_numba.targets.cuda.codegen import CAST, generate, loop_fields
from gelu_numba.targets.cuda.inputs import operands, prepare_inputs, prepare_out
from gelu_numba.targets.cuda.variants import device

#: the number of random streams (the parallelism of one call)
STREAMS = 2**18

_SOI = """
def kernel({args}, out, states, streams):
    for s in range(cuda.grid(1), streams, cuda.gridsize(1)):
        for i in range(s, out.size, streams):
{unravel}
            v = {loads}
            out[{out_index}] = keep_or_zero(v, uniform(states, s), cdf(v))
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



def launch_soi(x, s, out, stream):
    """``soi_map`` of :mod:`gelu_numba.gpu.soi` with the seed ``s`` (a
    ``numpy.uint64``) already checked."""
    (view,), loop = prepare_inputs("soi_map", (x,), stream)
    shape = tuple(view.shape)
    dst = prepare_out("soi_map", out, shape, loop, stream)
    n = math.prod(shape)
    if n:
        streams = min(n, STREAMS)
        states = cuda.device_array(streams, dtype=xoroshiro128p_dtype, stream=stream)
        blocks, threads = launch.launch_config(streams)
        launch.launch(_seed_streams, blocks, threads, stream, (states, s))
        (view,), target, layout = operands([view], dst, shape)
        kernel = _kernels.get((loop, layout))
        if kernel is None:
            kernel = generate(_SOI, {
                "cast": CAST[loop], "cdf": device(catalog.CDF),
                "keep_or_zero": keep_or_zero,
                "uniform": xoroshiro128p_uniform_float64},
                **loop_fields(layout, 1, 12))
            _kernels[(loop, layout)] = kernel
        launch.launch(kernel, blocks, threads, stream, (view, target, states, streams))
    return dst if out is None else out
