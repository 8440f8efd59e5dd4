"""The tensor-to-kernel glue: the package's kernels on PyTorch tensors.

CPU: the NumPy ufuncs of :mod:`gelu_numba` (or the registry's), called on
zero-copy NumPy views of the tensors with ``out=`` a view of the result
tensor's storage, which is allocated by ``empty_like(x)`` (any strides,
including expanded and transposed ones; nothing is copied).  float16 and
bfloat16 on the CPU, for the exact GELU and its fused backward: one pass,
bits in and bits out, correctly rounded (the 2-byte loops of
:mod:`gelu_numba.targets.cpu.half_loops`).

CUDA: the kernels of :mod:`gelu_numba.gpu` on PyTorch's current stream of
the tensor's device; contiguous float32/float64 tensors through the fast
launch (raw pointers,
:meth:`~gelu_numba.targets.cuda.fast_launch.FastLaunch.on_handle`),
others through ``__cuda_array_interface__`` (no host round trip).

Other half-precision calls (CUDA, the approximations, the second
derivative) run through the float32 kernel: one conversion of the inputs
to float32 (exact), the float32 kernel, one final rounding to the tensor's
dtype (round to nearest even).
"""

import functools

import numpy as np
import torch

from gelu_numba import catalog
from gelu_numba.internals.torch_dispatch import current_stream_handle
from gelu_numba.targets import dtypes
from gelu_numba.targets.cpu import numpy_api
from gelu_numba.targets.torch.checks import HALF


def _ufunc(name):
    return _ufunc_of(catalog.lookup(name))


@functools.cache
def _ufunc_of(record):
    # (by record, not by name: a name registered again is another record)
    from gelu_numba.targets import cpu
    return cpu.REGISTRY.get(record)


def _numpy(t):
    # a view of the tensor's storage (the op's inputs never require grad
    # here, but .numpy() refuses tensors flagged so: detach is free)
    return t.detach().numpy()


def _checked(ufunc, *args, **kwargs):
    """A raw ufunc call, then the error of a loop that failed to compile
    (its outputs were NaN: :mod:`gelu_numba.targets.cpu.numpy_api`)."""
    ufunc(*args, **kwargs)
    if numpy_api.FAILED:
        numpy_api.raise_failure()


def _run_cpu(name, args, out):
    _checked(_ufunc(name), *map(_numpy, args), out=_numpy(out))


def _stream(device):
    from numba import cuda

    return cuda.external_stream(torch.cuda.current_stream(device).cuda_stream)


#: torch dtype -> the CUDA kernels' loop
_CUDA_LOOPS = {getattr(torch, dt.name): c for c, dt in dtypes.LOOP_DTYPES.items()}
#: calls that took the fast launch (tests read it: the path is invisible
#: otherwise)
FAST_CUDA_CALLS = [0]


def _launch_fast(launcher, tensors):
    """``launcher`` over contiguous ``tensors`` (inputs, then the output; any
    dtype of the launcher's element size: only their data pointers are
    read) on PyTorch's current stream of their device; that device made
    current only where it is not already (the launch runs in the current
    context)."""
    out = tensors[-1]
    n = out.numel()
    if n:
        index = out.device.index
        pointers = tuple(t.data_ptr() for t in tensors)
        if torch.cuda.current_device() == index:
            launcher.on_handle(pointers, n, current_stream_handle(index))
        else:
            with torch.cuda.device(index):
                launcher.on_handle(pointers, n, current_stream_handle(index))
    FAST_CUDA_CALLS[0] += 1


@functools.cache
def cuda_launcher(name, loop, index):
    """The fast launcher of ``gpu.<name>`` for ``loop`` on device ``index``
    (built, and checked against numba-cuda's launch, once), or None."""
    from numba import cuda

    from gelu_numba.targets.cuda import gpu_function

    with cuda.gpus[index]:
        return gpu_function(name).fast_launcher(loop)


@functools.cache
def _cuda_half_launcher(name, fmt, index):
    """The fast launcher of the 2-byte kernel of ``name`` on device
    ``index``, or None."""
    from numba import cuda

    from gelu_numba.targets.cuda import half_kernels as cuda_half

    with cuda.gpus[index]:
        return cuda_half.fast_launcher(name, fmt)


def _run_cuda(name, args, out):
    """The fast launch where it applies (float32/float64, every tensor
    contiguous: raw pointers, PyTorch's current stream, no numba-cuda
    array import, ~1/6 of the host time of that import on an H100);
    else :mod:`gelu_numba.gpu`'s general path, through
    ``__cuda_array_interface__`` (any strides)."""
    loop = _CUDA_LOOPS.get(out.dtype)
    if loop is not None and out.is_contiguous() and all(a.is_contiguous() for a in args):
        launcher = cuda_launcher(name, loop, out.device.index)
        if launcher is not None:
            _launch_fast(launcher, [*args, out])
            return
    from numba import cuda

    from gelu_numba.targets.cuda import gpu_function

    with cuda.gpus[out.device.index]:
        gpu_function(name)(*(a.detach() for a in args), out=out.detach(),
                           stream=_stream(out.device))


_RUN = {"cpu": _run_cpu, "cuda": _run_cuda}


def _bits(t):
    """A 2-byte tensor's storage as a NumPy uint16 view (bfloat16 has no
    NumPy dtype)."""
    return t.detach().view(torch.int16).numpy().view(np.uint16)


def _run_cpu_half(name, args, out):
    """One pass, bits in and bits out: the float16 loops of the ufuncs, the
    bfloat16 bit-pattern ufuncs of :mod:`gelu_numba.half`; correctly
    rounded (:mod:`gelu_numba.kernels.half_rounding`)."""
    if out.dtype == torch.float16:
        _run_cpu(name, args, out)
    else:
        from gelu_numba.targets.cpu.half_loops import bfloat16_ufunc
        _checked(bfloat16_ufunc(f"{name}_bfloat16"), *map(_bits, args), out=_bits(out))


def _run_cuda_half(name, args, out):
    """One pass on the GPU, bits in and bits out: the 2-byte kernels of
    :mod:`gelu_numba.targets.cuda.half_kernels` (correctly rounded, the CPU's bits),
    on PyTorch's current stream; through their fast launch (raw pointers)
    where there is one."""
    from numba import cuda

    from gelu_numba.targets.cuda import half_kernels as cuda_half
    fmt = "float16" if out.dtype == torch.float16 else "bfloat16"
    index = out.device.index
    launcher = _cuda_half_launcher(name, fmt, index)
    # (out is contiguous here: apply_kernel)
    operands = [a if a.is_contiguous() else a.contiguous() for a in args]
    if launcher is not None:
        _launch_fast(launcher, [*operands, out])
        return
    bits = [a.detach().view(torch.int16).reshape(-1) for a in operands]
    target = out.detach().view(torch.int16).reshape(-1)
    with cuda.gpus[index]:
        if name == catalog.GELU:
            cuda_half.gelu_bits(*bits, target, fmt, stream=_stream(out.device))
        else:
            cuda_half.gelu_backward_bits(*bits, target, fmt, stream=_stream(out.device))


def apply_kernel(name, args, out, scale=None):
    """out = name(*args) (times ``scale`` if given), in out's dtype.  Half
    types: on the CPU, the exact GELU and its fused backward in one pass
    (:func:`_run_cpu_half`); else through float32 with one final rounding."""
    run = _RUN[out.device.type]
    if out.dtype in HALF and scale is None and catalog.lookup(name).half and (
            out.device.type == "cpu" or out.is_contiguous()):
        (_run_cpu_half if out.device.type == "cpu" else _run_cuda_half)(name, args, out)
    elif out.dtype in HALF:
        wide = torch.empty_like(out, dtype=torch.float32)
        run(name, [a.float() for a in args], wide)
        if scale is not None:
            wide.mul_(scale.float())
        out.copy_(wide)
    else:
        run(name, args, out)
        if scale is not None:
            out.mul_(scale)
    return out
