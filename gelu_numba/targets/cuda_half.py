"""CUDA kernels of the 2-byte formats: GELU and the fused backward on float16
and bfloat16 bit patterns, correctly rounded (method and proof:
:mod:`gelu_numba.kernels.half`; the tables: :mod:`gelu_numba.targets.half`).

The forward is one load from a 128 KB table (65,536 uint16 results, kept in
L2 by the hardware): bits in, bits out, 4 bytes of traffic per element.  The
backward decodes ``dy`` by arithmetic, loads GELU'(x) from a 512 KB float64
table, multiplies in float64 and rounds once (:func:`round_float16` /
:func:`round_bfloat16`).  The same scalar code and tables as the CPU loops,
so the results are the CPU's bit for bit.

Operands: contiguous 1-D device arrays of uint16 or int16 (a ``torch``
half tensor ``.view(torch.int16)``; a CuPy float16 array ``.view('u2')``),
of one size; the tables are copied to each device once.
"""

import functools

import numpy as np
from numba import cuda

from gelu_numba.kernels import half as kernels
from gelu_numba.targets import half
from gelu_numba.targets.cuda import launch, launch_config

@cuda.jit
def _lookup(x, table, out):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, stride):
        out[i] = table[np.uint16(x[i])]


@functools.cache
def _backward_kernel(fmt):
    decode, round_ = kernels.FORMATS[fmt]   # (numba-cuda compiles them for the device)

    @cuda.jit
    def backward(dy, x, grad, out):
        start, stride = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, x.size, stride):
            out[i] = round_(decode(np.uint16(dy[i])) * grad[np.uint16(x[i])])
    return backward


@functools.cache
def _device_table(name, fmt, device_id):
    return cuda.to_device(half.table(name, fmt))


def _table(name, fmt):
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
        blocks, threads = launch_config(x.size)
        launch(_lookup, blocks, threads, stream, (x, _table(name, fmt), out))
    return out


def gelu_backward_bits(dy, x, out, fmt, stream=0):
    """``out = dy * GELU'(x)`` on 2-byte bit patterns of ``fmt``, rounded
    once (correctly, at every pair of finite inputs)."""
    dy, x, out = _as_bits(dy), _as_bits(x), _as_bits(out)
    _check(fmt, dy, x, out)
    if x.size:
        blocks, threads = launch_config(x.size)
        launch(_backward_kernel(fmt), blocks, threads, stream,
               (dy, x, _table("gelu_backward", fmt), out))
    return out
