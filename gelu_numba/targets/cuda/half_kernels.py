"""CUDA kernels of the 2-byte formats: GELU and the fused backward on float16
and bfloat16 bit patterns, correctly rounded (method and proof:
:mod:`gelu_numba.kernels.half_rounding`; the tables: :mod:`gelu_numba.targets.half_loops`).

The forward is one load from a 128 KB table (65,536 uint16 results, kept in
L2 by the hardware): bits in, bits out, 4 bytes of traffic per element.  The
backward decodes ``dy`` by arithmetic, loads GELU'(x) from a 512 KB float64
table, multiplies in float64 and rounds once (:func:`round_float16` /
:func:`round_bfloat16`).  The same scalar code and tables as the CPU loops,
so the results are the CPU's bit for bit.

Operands: contiguous 1-D device arrays of uint16 or int16 (a ``torch``
half tensor ``.view(torch.int16)``; a CuPy float16 array ``.view('u2')``),
of one size; the tables are copied to each device once.  Callers that hold
raw pointers (``gelu_numba.torch``) launch through :func:`fast_launcher`:
the same kernels, the table's pointer fixed, no array import.
"""

import functools

import numpy as np
from numba import cuda

from gelu_numba.kernels import half_rounding as kernels
from gelu_numba.targets import half_loops as half
# (modules whose values the tests and tools set: read at each use)
from gelu_numba.targets.cuda import fast_launch, launch
from gelu_numba.targets.cuda.codegen import FLAT_LOOP, flat_fields, generate

# One element of each kernel, as a device function of the bits and the table.
@cuda.jit(device=True)
def _gelu_element(x, table):
    return table[np.uint16(x)]


@functools.cache
def _backward_element(fmt):
    decode, round_ = kernels.FORMATS[fmt]   # (numba-cuda compiles them for the device)

    @cuda.jit(device=True)
    def element(dy, x, grad):
        return round_(decode(np.uint16(dy)) * grad[np.uint16(x)])
    return element


# Grid-stride loops over unsigned indices (uint64 throughout), which Numba
# does not wrap around as it does signed ones (see targets.cuda.codegen.FLAT_LOOP).
@cuda.jit
def lookup_kernel(x, table, out):
    n, step = np.uint64(x.size), np.uint64(cuda.gridsize(1))
    i = np.uint64(cuda.grid(1))
    while i < n:
        out[i] = _gelu_element(x[i], table)
        i += step


@functools.cache
def backward_kernel(fmt):
    element = _backward_element(fmt)

    @cuda.jit
    def backward(dy, x, grad, out):
        n, step = np.uint64(x.size), np.uint64(cuda.gridsize(1))
        i = np.uint64(cuda.grid(1))
        while i < n:
            out[i] = element(dy[i], x[i], grad)
            i += step
    return backward


@functools.cache
def unrolled_kernel(name, fmt):
    """The kernel of ``name`` ("gelu", "gelu_grad", "gelu_backward") on
    ``fmt`` bits in the float kernels' contiguous loop
    (:data:`gelu_numba.targets.cuda.codegen.FLAT_LOOP`): ``UNROLL`` elements per thread
    and trip, all loaded before any is looked up, so that a thread has that
    many loads, then that many table reads, in flight; same arguments and
    bits as the launched kernel.  Not launched: the H200 run of 2026-11-26
    timed the launched 2-byte kernels well below the copy's speed with an
    issue bound far above it (``python -m analysis.gpu_sass --measured``),
    and ``analysis.gpu_throughput`` times this one beside them."""
    nin = 2 if name == "gelu_backward" else 1
    dev = _backward_element(fmt) if nin == 2 else _gelu_element
    return generate(FLAT_LOOP, {"dev": dev, "cast": np.uint16},
                    **flat_fields(nin, launch.UNROLL, passed="table"))


@functools.cache
def _device_table(name, fmt, device_id):
    return cuda.to_device(half.table(name, fmt))


def table_on_device(name, fmt):
    # (the simulator's device has no id: one device)
    return _device_table(name, fmt, getattr(cuda.get_current_device(), "id", 0))


def _check(fmt, *arrays):
    if fmt not in kernels.FORMATS:
        raise ValueError(f"fmt must be 'float16' or 'bfloat16' (got {fmt!r})")
    n = arrays[0].size
    for a in arrays:
        if np.dtype(a.dtype).itemsize != 2 or np.dtype(a.dtype).kind not in "uif":
            raise TypeError(f"expected 2-byte bit patterns (uint16, int16 or float16), "
                            f"got {a.dtype}")
        if np.dtype(a.dtype) == np.float16 and fmt != "float16":
            raise TypeError(f"a float16 array holds float16 values, not {fmt}: "
                            "pass fmt='float16', or bit patterns as uint16")
        if a.size != n:
            raise ValueError("the operands must have one size")


def _as_bits(a):
    # numba's device arrays as they are; anything else with
    # __cuda_array_interface__ (torch, CuPy) through numba's import
    return a if hasattr(a, "copy_to_host") else cuda.as_cuda_array(a)


def gelu_bits(x, out, fmt, name="gelu", stream=0):
    """``out = f(x)`` on 2-byte bit patterns of ``fmt`` (f: "gelu" or
    "gelu_grad"), correctly rounded."""
    x, out = _as_bits(x), _as_bits(out)
    _check(fmt, x, out)
    if x.size:
        blocks, threads = launch.launch_config(x.size)
        launch.launch(lookup_kernel, blocks, threads, stream,
                      (x, table_on_device(name, fmt), out))
    return out


def gelu_backward_bits(dy, x, out, fmt, stream=0):
    """``out = dy * GELU'(x)`` on 2-byte bit patterns of ``fmt``, rounded
    once (correctly, at every pair of finite inputs)."""
    dy, x, out = _as_bits(dy), _as_bits(x), _as_bits(out)
    _check(fmt, dy, x, out)
    if x.size:
        blocks, threads = launch.launch_config(x.size)
        launch.launch(backward_kernel(fmt), blocks, threads, stream,
                      (dy, x, table_on_device("gelu_backward", fmt), out))
    return out


_FAST = {}


def fast_launcher(name, fmt):
    """The :class:`~gelu_numba.targets.cuda.fast_launch.FastLaunch` of ``name``
    ("gelu", "gelu_grad": :func:`gelu_bits`; "gelu_backward":
    :func:`gelu_backward_bits`) on ``fmt`` bit patterns, for the current
    device and launch constants: operands ``(x, out)`` or ``(dy, x, out)``
    as 2-byte pointers, the table in its place.  Built on first use and
    checked against the general path on every bit pattern; None where
    there is none (the simulator, a launcher that failed its check)."""
    if not fast_launch.FAST_LAUNCH:
        return None
    key = (name, fmt) + fast_launch.fast_key(None)
    try:
        return _FAST[key]
    except KeyError:
        pass
    nin = 2 if name == "gelu_backward" else 1
    kernel = backward_kernel(fmt) if nin == 2 else lookup_kernel
    # (uint16: a pointer has no dtype, and the kernel's stores need no cast)
    patterns = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    if nin == 1:
        def general(xs, out):
            gelu_bits(xs[0], out, fmt, name)
    else:
        def general(xs, out):
            gelu_backward_bits(xs[0], xs[1], out, fmt)
    _FAST[key] = launcher = fast_launch.checked_launcher(
        f"gelu_numba.targets.cuda.half_kernels ({name}, {fmt})",
        lambda: fast_launch.FastLaunch(kernel, nin, None, np.uint16,
                                       {nin: table_on_device(name, fmt)}),
        lambda fast: fast.agrees([patterns[::-1].copy(), patterns][-nin:], general))
    return launcher
