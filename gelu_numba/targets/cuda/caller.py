"""The caller's array library: a new output of its own array type, on its
current stream.

A call whose first device operand is a PyTorch CUDA tensor or a CuPy array
returns, where it allocates the output, that library's array, from that
library's allocator (PyTorch's caching allocator, CuPy's memory pool), and,
where it names no stream, runs on that library's current stream of the
operand's device: what the library's own next operation runs on, so that
``gpu.gelu(t)`` is ordered with it without a synchronisation and its
memory is reused by the library's pool.  Operands of numba-cuda and other
``__cuda_array_interface__`` objects: a numba device array
(:mod:`~gelu_numba.targets.cuda.output_pool`) and the default stream.  A
library's array tells its device: a call whose first device operand is on
another device than numba-cuda's current one runs on the operand's (the interface itself names no device, and a
kernel launched on another device than its data's fails or, with peer
access, reads across the link).  With an explicit ``stream`` the output is
still the library's array, allocated on its current stream: a caller who
launches elsewhere orders the two streams (PyTorch's ``record_stream``),
as with any allocation PyTorch makes for another stream.

The libraries are recognised by the module of the operand's type and are
never imported here: where an operand is one of theirs, its library is
already loaded.
"""

import sys

#: the libraries whose arrays are returned in kind: the top-level module
#: of the array type -> (its array type's name, the CUDA device test)
_LIBRARIES = {"torch": ("Tensor", lambda a: a.is_cuda),
              "cupy": ("ndarray", lambda a: True)}


def library(args):
    """``"torch"`` or ``"cupy"`` where the first device operand of ``args``
    is a PyTorch CUDA tensor or a CuPy array; else None (numba's, another
    ``__cuda_array_interface__`` object, or host operands only)."""
    for a in args:
        kind = type(a)
        entry = _LIBRARIES.get(kind.__module__.partition(".")[0])
        if entry is not None and any(c.__name__ == entry[0] for c in kind.__mro__):
            if entry[1](a):
                return kind.__module__.partition(".")[0]
            continue    # (a PyTorch CPU tensor: a host operand)
        if getattr(a, "__cuda_ndarray__", False) or hasattr(a, "__cuda_array_interface__"):
            return None
    return None


def first_device_operand(lib, args):
    """The first operand of ``args`` that belongs to ``lib``."""
    return next(a for a in args if type(a).__module__.partition(".")[0] == lib
                and _LIBRARIES[lib][1](a))


def device_index(lib, a):
    """The index of the CUDA device that holds ``lib``'s array ``a``."""
    return a.get_device() if lib == "torch" else a.device.id


def current_stream(lib, a):
    """The driver handle of ``lib``'s current stream on the device of its
    array ``a`` (0: the legacy default stream)."""
    if lib == "torch":
        return sys.modules["torch"].cuda.current_stream(a.device).cuda_stream
    return sys.modules["cupy"].cuda.get_current_stream(a.device.id).ptr


def empty(lib, a, shape, dtype):
    """A new C-contiguous array of ``lib`` of ``shape`` and NumPy ``dtype``
    on the device of ``lib``'s array ``a``, from ``lib``'s allocator (on
    its current stream), and its device pointer."""
    if lib == "torch":
        torch = sys.modules["torch"]
        out = torch.empty(shape, dtype=getattr(torch, dtype.name), device=a.device)
        return out, out.data_ptr()
    cupy = sys.modules["cupy"]
    with cupy.cuda.Device(a.device.id):
        out = cupy.empty(shape, dtype)
    return out, out.data.ptr
