"""New numba outputs from a stream-ordered memory pool.

Why: numba-cuda's ``cuda.device_array`` maps fresh memory with
``cuMemAlloc`` on every call, and frees it with ``cuMemFree``, which waits
for the whole device (numba defers the frees and flushes them ten at a
time).  That is most of the host time of ``gpu.gelu(x)`` on a numba array
without ``out=`` (the host table of the GPU results page), where the
caller's library's own pool (PyTorch's, CuPy's:
:mod:`~gelu_numba.targets.cuda.caller`) costs a few microseconds.

How: one memory pool per device, owned by gelu-numba (``cuda.core``'s
``DeviceMemoryResource`` created with options, so a pool of its own: the
device's default pool, which other libraries share, is not touched).  An
output is allocated on the launch's stream (``cuMemAllocFromPoolAsync``)
and returned as a numba device array that owns the buffer
(``cuda.from_cuda_array_interface(..., owner=buffer)``); when the array
and every view of it are gone, the buffer is freed with ``cuMemFreeAsync``.

Where it is freed, which is what makes it safe: a free must come after
every use of the memory, on whichever stream the caller used it.  Work on
the legacy default stream waits for all work queued before it on every
blocking stream of the context (the default streams, numba's
``cuda.stream()``), so a free queued there follows every use on those
streams, not only on the stream the output was allocated on, which is all
a free on that stream (``cuda.core``'s default) would follow.  Streams
created non-blocking (``CU_STREAM_NON_BLOCKING``: PyTorch's side streams,
CuPy's ``non_blocking=True``, ``cuda.core``'s own) are not ordered with
the legacy stream, so

* a call launched on a non-blocking stream (an external stream) takes
  numba's allocation, as before the pool;
* an output used on a non-blocking stream must be synchronised with before
  it is dropped (the rule of PyTorch's caching allocator,
  ``record_stream``).

The pool keeps the driver's default release threshold (0): the memory it
holds unused goes back to the device at the next synchronisation (of a
stream, an event or the device), so it never holds memory past the
caller's own synchronisation points; between them a freed block is reused
without a driver round trip.

Numba's own allocation (same result, the old cost) where the pool does not
apply: the simulator (no driver), an empty output, a stream under graph
capture, a non-blocking launch stream, and a pool that is out of memory
after one device synchronisation (numba's allocator then frees its
deferred deallocations and retries, or raises).
"""

import importlib
import math
import threading
import weakref

from numba import cuda

from gelu_numba.targets.cuda import fast_launch, launch

#: whether new numba outputs come from the pool (never under the
#: simulator, which has no driver; the tests that replace the driver turn
#: it off); read at each use
POOL = not launch.SIMULATOR

_core = []                              # [the cuda.core module], imported on first use
_pools = {}                             # device id -> its DeviceMemoryResource
_lock = threading.Lock()
_plans = weakref.WeakKeyDictionary()    # numba stream -> its plan (_plan)
_default = {}                           # 0 -> the plan of numba's default stream


def empty(shape, dtype, stream=0):
    """A new C-contiguous numba device array of ``shape`` and NumPy
    ``dtype`` on the current device, for a launch on ``stream`` (0: numba's
    default stream, or a numba stream), and its device pointer (None under
    the simulator)."""
    nbytes = math.prod(shape) * dtype.itemsize
    plan = _plan(stream) if POOL and nbytes else None
    buffer = _allocate(nbytes, plan[0]) if plan else None
    if buffer is None:
        out = cuda.device_array(shape, dtype=dtype, stream=stream)
        pointer = getattr(out, "device_ctypes_pointer", None)   # (the simulator's: none)
        return out, pointer and pointer.value
    if plan[1] is not None:
        buffer.set_deallocation_stream(plan[1])
    pointer = int(buffer.handle)
    interface = {"shape": tuple(shape), "strides": None, "typestr": dtype.str,
                 "data": (pointer, False), "version": 3}
    handle = 0 if isinstance(stream, int) else int(stream.handle or 0)
    if handle:      # (the array's stream, as device_array records it)
        interface["stream"] = handle
    return cuda.from_cuda_array_interface(interface, owner=buffer, sync=False), pointer


def core():
    """The ``cuda.core`` module (imported on first use: it needs the
    driver)."""
    if not _core:
        _core.append(importlib.import_module("cuda.core"))
    return _core[0]


def _plan(stream):
    """``(allocation stream, deallocation stream or None for the same)``,
    ``cuda.core`` streams, for a launch on the numba stream ``stream`` (or
    0: numba's default stream), or None where the pool does not apply (a
    non-blocking stream, or one ``cuda.core`` cannot take)."""
    if isinstance(stream, int):
        if 0 not in _default:
            _default[0] = _plan_of(stream)
        return _default[0]
    try:
        return _plans[stream]
    except (KeyError, TypeError):
        plan = _plan_of(stream)
        try:
            _plans[stream] = plan
        except TypeError:
            pass    # (no weak reference to it: planned again next time)
        return plan


def _plan_of(stream):
    from gelu_numba.internals import numba_cuda

    try:
        stream = numba_cuda.core_stream(stream)
    except (AttributeError, TypeError, ValueError):
        return None
    legacy = core().LEGACY_DEFAULT_STREAM
    if stream == legacy:
        return stream, None
    if stream.is_nonblocking:
        return None
    return stream, legacy


def _allocate(nbytes, stream):
    """A ``cuda.core`` buffer of ``nbytes`` from the current device's pool,
    allocated on the ``cuda.core`` stream ``stream``; None where the pool
    gives none (a stream under graph capture, which ``cuda.core`` refuses;
    out of memory after one device synchronisation, which returns the
    pool's unused memory to the device)."""
    pool = _pool(fast_launch.current_device_id())
    for attempt in range(2):
        try:
            return pool.allocate(nbytes, stream=stream)
        except Exception as e:   # (cuda.core's CUDAError; RuntimeError under capture)
            if attempt or "OUT_OF_MEMORY" not in str(e):
                return None
            cuda.synchronize()
    return None


def _pool(device_id):
    pool = _pools.get(device_id)
    if pool is None:
        with _lock:
            pool = _pools.get(device_id)
            if pool is None:
                options = core().DeviceMemoryResourceOptions()
                pool = _pools[device_id] = core().DeviceMemoryResource(device_id, options)
    return pool
