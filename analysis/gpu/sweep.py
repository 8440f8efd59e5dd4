"""The float32 sweep on the GPU: every float32 input of the GPU's float32
kernels, judged on the device against the GPU's float64 kernels.

Usage::

    python -m analysis.sweep_float32 --device gpu [--functions ...] [--stride N]

(this module is the engine behind ``--device gpu``; the report and the JSON
are :mod:`analysis.sweep_float32`'s).

Method
------
One CUDA kernel per function walks the bit patterns ``k * stride`` of a
chunk (grid-stride, ``k`` from the chunk's first to its last), evaluates the
float32 device function (``gelu_numba.gpu.device.<name>`` on float32
arguments: for the normal-CDF family the float32-arithmetic kernels of
:mod:`gelu_numba.kernels.gpu32`) and, as the reference, the float64
device function on the same input widened to float64 (below 1 ulp of
float64, about 1e-16 relative: ``tests/test_gpu.py`` holds it to the CPU's
float64 ufuncs, which ``tests/test_accuracy.py`` holds to mpmath), and
keeps per-thread statistics that the host adds up: the same fields as the
CPU sweep (:func:`analysis.sweep_float32.sweep`) with the same definitions
(ulp of the reference value, the float32 subnormal spacing below 2**-126;
NaN inputs counted apart; NaN/inf mismatches apart and out of the error
statistics; ``gelu_backward`` with :func:`analysis.sweep_stats.dy_for_bits`'s
``dy``).  Only statistics leave the device: the inputs are generated there.

One difference: where the float64 reference is itself a float32 midpoint,
it cannot tell which neighbour is the correctly rounded result, and either
one counts as correctly rounded; the result's ``reference_midpoints``
says how often that happened.  It happens for ``gelu`` of the inputs whose
half is a subnormal midpoint (``x/2`` with ``|x|`` near 2**-126: there
``Phi(x)`` is 1/2 in float64): the odd significands below 2**-125, 2**22
per sign and binade, 1.7e7 inputs in all; the CPU sweep's reference breaks
those ties by the luck of its own rounding.

Against the CPU sweep of the same kernels (``--kernels gpu32``, against
:mod:`reference.f64`) the reported ulp errors agree to about
1e-6 ulp; ``tests/test_sweep_gpu.py`` compares the two under numba-cuda's
simulator at a coarse stride.
"""

from __future__ import annotations

import functools
import math
import sys
import time

import numpy as np
from numba import cuda, float32, float64, int64, uint32, uint64

from analysis.sweep_stats import dy_bits, empty_stats, finish_row, merge_stats, n_inputs
from gelu_numba.kernels.primitives import float32_from_bits, pow2, split_exponent

#: statistics per thread, in an int64 row: checked, NaN inputs, NaN inputs
#: whose output is not NaN, NaN/inf mismatches, correctly rounded, > 1 ulp,
#: worst bit pattern, first mismatching k (-1: none), reference midpoints
_COUNTS = ("checked", "nan_inputs", "nan_inputs_bad_output", "special_mismatches",
           "correctly_rounded", "over_1ulp")
_NI = len(_COUNTS) + 3
#: float64 row: max ulp error (-1: none yet), the output and the reference there
_NF = 3
#: inputs per launch (one launch per chunk: a progress bar, and no launch
#: long enough to trip a display GPU's watchdog)
GPU_CHUNK = 2**28
_INF = math.inf


@cuda.jit(device=True)
def _ulp32(r):
    """The float32 ulp at the finite float64 value ``r`` (its spacing, the
    subnormal spacing 2**-149 below 2**-126), as ``ulp_error_dd`` has it."""
    if abs(r) < 2.0**-126:
        return 2.0**-149
    _, e = split_exponent(r)
    return pow2(e - 23)


@functools.lru_cache(maxsize=None)
def sweep_kernel(name: str, given: bool = False):
    """The sweep kernel of ``name``, compiled on first launch: it judges the
    GPU's own float32 kernel, or (``given``) the outputs in the ``outs``
    array, element ``k - k0`` for bit pattern ``k * stride`` (another
    library's results for :func:`input_kernel`'s inputs)."""
    from gelu_numba.gpu import device

    dev = getattr(device, name)
    if name == "gelu_backward":
        @cuda.jit(device=True)
        def reference(bits, x):
            return float64(dev(float64(float32_from_bits(dy_bits(bits))), float64(x)))

        @cuda.jit(device=True)
        def own(bits, x):
            return float32(dev(float32_from_bits(dy_bits(bits)), x))
    else:
        @cuda.jit(device=True)
        def reference(bits, x):
            return float64(dev(float64(x)))

        @cuda.jit(device=True)
        def own(bits, x):
            return float32(dev(x))

    if given:
        @cuda.jit(device=True)
        def evaluate(bits, x, outs, i):
            return outs[i], reference(bits, x)
    else:
        @cuda.jit(device=True)
        def evaluate(bits, x, outs, i):
            return own(bits, x), reference(bits, x)

    @cuda.jit
    def kernel(k0, k1, stride, outs, ints, floats):
        # the statistics stay in registers until the thread's last element
        checked = nan_in = nan_bad = special = same = over = ties = int64(0)
        worst = first = int64(-1)
        max_err = float64(-1.0)
        worst_o = worst_r = float64(0.0)
        t = cuda.grid(1)
        for k in range(k0 + t, k1, cuda.gridsize(1)):
            bits = uint32(uint64(k) * uint64(stride) & uint64(0xFFFFFFFF))
            x = float32_from_bits(bits)
            o, r = evaluate(bits, x, outs, k - k0)
            o_nan = o != o
            if x != x:
                nan_in += 1
                if not o_nan:
                    nan_bad += 1
                continue
            checked += 1
            r_nan = r != r
            o_inf = abs(o) == _INF
            r_inf = abs(r) == _INF
            if (o_nan != r_nan) or (o_inf != r_inf) or (o_inf and r_inf and float64(o) != r):
                special += 1
                if first < 0:
                    first = k
                continue
            if o_nan or o_inf:        # both NaN, or equal infinities
                err = 0.0
                same += 1
            else:
                ulp = _ulp32(r)
                err = abs(float64(o) - r) / ulp
                if abs(float64(float32(r)) - r) == 0.5 * ulp:
                    # r is a float32 midpoint: it cannot say which neighbour
                    # is the correct rounding, either one counts
                    ties += 1
                    if err <= 0.5:
                        same += 1
                elif float32(r) == o:
                    same += 1
            if err > 1.0:
                over += 1
            if err > max_err:
                max_err, worst_o, worst_r, worst = err, float64(o), r, int64(bits)
        row = (checked, nan_in, nan_bad, special, same, over, worst, first, ties)
        for j in range(_NI):
            ints[t, j] = row[j]
        floats[t, 0] = max_err
        floats[t, 1] = worst_o
        floats[t, 2] = worst_r

    return kernel


def _simulated() -> bool:
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def _grid():
    """(blocks, threads): 8 blocks of 256 threads per multiprocessor (enough
    to hide the latency of a kernel that reads nothing); four one-thread
    blocks under the simulator, where each thread is a Python thread."""
    if _simulated():
        return 4, 1
    return 8 * cuda.get_current_device().MULTIPROCESSOR_COUNT, 256


@cuda.jit
def input_kernel(k0, k1, stride, dys, xs):
    """The inputs of bit patterns ``k * stride``, ``k0 <= k < k1``: ``xs[k -
    k0]`` and its upstream gradient ``dys[k - k0]`` (:func:`dy_bits`)."""
    for k in range(k0 + cuda.grid(1), k1, cuda.gridsize(1)):
        bits = uint32(uint64(k) * uint64(stride) & uint64(0xFFFFFFFF))
        xs[k - k0] = float32_from_bits(bits)
        dys[k - k0] = float32_from_bits(dy_bits(bits))


def _launch_stats(name, k0, k1, stride, outs=None) -> dict:
    blocks, threads = _grid()
    n = blocks * threads
    d_ints = cuda.device_array((n, _NI), np.int64)
    d_floats = cuda.device_array((n, _NF), np.float64)
    given = outs is not None
    if not given:
        outs = cuda.device_array(1, np.float32)
    sweep_kernel(name, given)[blocks, threads](k0, k1, stride, outs, d_ints, d_floats)
    ints, floats = d_ints.copy_to_host(), d_floats.copy_to_host()
    st = empty_stats()
    for j, key in enumerate(_COUNTS):
        st[key] = int(ints[:, j].sum())
    st["output_dtype"] = "float32"
    st["reference_midpoints"] = int(ints[:, 8].sum())
    i = int(np.argmax(floats[:, 0]))
    if floats[i, 0] >= 0:
        st["max_ulp"] = float(floats[i, 0])
        st["worst_output"] = float(floats[i, 1])
        st["worst_reference"] = float(floats[i, 2])
        st["worst_bits"] = int(ints[i, 6])
    first = ints[:, 7][ints[:, 7] >= 0]
    if first.size:
        st["first_mismatch_bits"] = int(np.uint64(first.min()) * np.uint64(stride) % 2**32)
    return st


def sweep_gpu(name: str, stride: int = 1, chunk: int = GPU_CHUNK, progress: bool = True,
              *, func=None, label=None) -> dict:
    """Sweep the float32 GPU kernel of ``name`` over the bit patterns
    ``0, stride, 2*stride, ...`` on the GPU; the same result dict as
    :func:`analysis.sweep_float32.sweep`, plus ``reference_midpoints``.

    ``func``: judge another implementation of ``name`` instead, a callable
    ``func(x)`` (``func(dy, x)`` for gelu_backward) taking float32 numba
    device arrays and returning a float32 device array of the same length
    (anything with ``__cuda_array_interface__``: a PyTorch CUDA tensor, a
    CuPy or JAX array); ``label`` names it in the result (``function``)."""
    from analysis.sweep_stats import FUNCTIONS

    if name not in FUNCTIONS:
        raise ValueError(f"unknown function {name!r}; the GPU sweep judges {', '.join(FUNCTIONS)}")
    if stride < 1 or chunk < 1:
        raise ValueError("stride and chunk must be >= 1")
    n = n_inputs(stride)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n, unit="in", unit_scale=True, desc=f"{name} (GPU)", file=sys.stderr)
    t0 = time.perf_counter()
    total = empty_stats()
    ties = 0
    try:
        for k0 in range(0, n, chunk):
            k1 = min(k0 + chunk, n)
            outs = None
            if func is not None:
                outs = _given_outputs(name, func, k0, k1, stride)
            st = _launch_stats(name, k0, k1, stride, outs)
            ties += st["reference_midpoints"]
            merge_stats(total, st)
            if bar is not None:
                bar.update(k1 - k0)
    finally:
        if bar is not None:
            bar.close()
    cuda.synchronize()
    res = {**finish_row(name, stride, total, time.perf_counter() - t0),
           "reference_midpoints": ties}
    if label is not None:
        res["function"] = label
    return res


def _given_outputs(name, func, k0, k1, stride):
    """``func``'s outputs for the chunk's inputs, as a float32 device array
    (another library may run on a stream of its own: wait for the device)."""
    n = k1 - k0
    dys, xs = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)
    blocks, threads = _grid()
    input_kernel[blocks, threads](k0, k1, stride, dys, xs)
    cuda.synchronize()
    out = func(dys, xs) if name == "gelu_backward" else func(xs)
    if hasattr(out, "block_until_ready"):       # JAX: asynchronous dispatch
        out = out.block_until_ready()
    cuda.synchronize()
    if not hasattr(out, "copy_to_host"):        # not a numba device array
        out = cuda.as_cuda_array(out)
    if out.dtype != np.float32 or out.shape != (n,):
        raise ValueError(f"the function under test returned {out.dtype} {out.shape}, "
                         f"not float32 ({n},)")
    return out


def device_name() -> str:
    """The GPU's name (``"simulator"`` under numba-cuda's simulator)."""
    if _simulated():
        return "simulator"
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)
