"""The pool that new numba outputs come from
(``gelu_numba.targets.cuda.output_pool``).

Without a GPU, with ``cuda.core`` and the driver replaced: on which stream
each output is allocated and on which it will be freed (the legacy default
stream unless it was allocated there; numba's allocation for a non-blocking
stream), that the numba array owns the buffer, and the fallbacks (the
simulator, empty outputs, graph capture, out of memory).

On a GPU (skipped under the simulator, run by ``analysis/on_gpu.sh``): an
output freed after a use on another blocking stream is not handed out again
before that use ends; the pool gives the outputs of contiguous, strided,
scalar and broadcast calls and hands their memory back when they are
dropped; a non-blocking stream's call takes numba's allocation.
"""

import gc
import math
import weakref

import numpy as np
import pytest
from bits import same_bits
from numba import cuda
from numba.core import config

import gelu_numba
from gelu_numba import gpu
from gelu_numba.internals import numba_cuda
from gelu_numba.targets.cuda import fast_launch, output_pool

pytestmark = pytest.mark.gpu
SIMULATOR = bool(config.ENABLE_CUDASIM)


class Stream:
    """A ``cuda.core`` stream: equal by handle, blocking or not."""

    def __init__(self, handle, nonblocking=False):
        self.handle, self.is_nonblocking = handle, nonblocking

    def __eq__(self, other):
        return isinstance(other, Stream) and other.handle == self.handle

    __hash__ = None


LEGACY = Stream(1)


class Buffer:
    """A ``cuda.core`` buffer: frees itself, when the last reference goes,
    on its deallocation stream (recorded in ``freed``)."""

    freed = []

    def __init__(self, pointer, nbytes, stream):
        self.handle, self.nbytes, self.alloc_stream = pointer, nbytes, stream
        self._dealloc = [stream]
        weakref.finalize(self, lambda where=self._dealloc: Buffer.freed.append(
            (pointer, where[0].handle)))

    @property
    def dealloc_stream(self):
        return self._dealloc[0]

    def set_deallocation_stream(self, stream):
        self._dealloc[0] = stream


class Pool:
    def __init__(self, device_id, options):
        self.device_id, self.options = device_id, options
        self.allocations, self.fail = [], []

    def allocate(self, nbytes, *, stream):
        if self.fail:
            raise self.fail.pop(0)
        pointer = 0x10000 * (len(self.allocations) + 1)
        self.allocations.append((nbytes, stream.handle))
        return Buffer(pointer, nbytes, stream)


class Core:
    """What ``output_pool`` reads of ``cuda.core``."""

    LEGACY_DEFAULT_STREAM = LEGACY
    pools = []

    class DeviceMemoryResourceOptions:
        pass

    @staticmethod
    def DeviceMemoryResource(device_id, options):
        pool = Pool(device_id, options)
        Core.pools.append(pool)
        return pool


class NumbaStream:
    """A numba stream (``cuda.stream()``): a handle; weakly referenced."""

    def __init__(self, handle):
        self.handle = handle


@pytest.fixture
def fake(monkeypatch):
    """output_pool over the classes above; records numba's calls."""
    Core.pools, Buffer.freed = [], []
    converted, calls = [], {"device_array": [], "wrapped": [], "synchronize": 0}
    streams = {0: LEGACY}

    def core_stream(stream):
        converted.append(stream)
        return streams[stream if isinstance(stream, int) else stream.handle]

    real_device_array = cuda.device_array

    def device_array(shape, dtype, stream=0):
        calls["device_array"].append((tuple(shape), np.dtype(dtype), stream))
        return real_device_array(shape, dtype)   # (the simulator's)

    def wrapped(interface, owner=None, sync=True):
        calls["wrapped"].append((interface, owner, sync))
        return ("numba array of", owner)

    def synchronize():
        calls["synchronize"] += 1

    monkeypatch.setattr(output_pool, "POOL", True)
    monkeypatch.setattr(output_pool, "_core", [Core])
    monkeypatch.setattr(output_pool, "_pools", {})
    monkeypatch.setattr(output_pool, "_default", {})
    monkeypatch.setattr(output_pool, "_plans", weakref.WeakKeyDictionary())
    monkeypatch.setattr(numba_cuda, "core_stream", core_stream)
    monkeypatch.setattr(fast_launch, "current_device_id", lambda: 0)
    monkeypatch.setattr(cuda, "device_array", device_array)
    monkeypatch.setattr(cuda, "from_cuda_array_interface", wrapped,
                        raising=False)   # (the simulator has none)
    monkeypatch.setattr(cuda, "synchronize", synchronize)
    return streams, converted, calls


F4 = np.dtype(np.float32)


def test_default_stream_outputs_are_allocated_and_freed_on_the_legacy_stream(fake):
    streams, converted, calls = fake
    out, pointer = output_pool.empty((3, 4), F4, 0)
    (interface, owner, sync), = calls["wrapped"]
    assert out == ("numba array of", owner) and pointer == owner.handle == 0x10000
    assert interface == {"shape": (3, 4), "strides": None, "typestr": "<f4",
                         "data": (0x10000, False), "version": 3}
    assert sync is False        # (nothing to wait for: the launch follows on the stream)
    assert owner.alloc_stream is LEGACY and owner.dealloc_stream is LEGACY
    pool, = Core.pools
    assert pool.allocations == [(48, 1)] and pool.device_id == 0
    assert isinstance(pool.options, Core.DeviceMemoryResourceOptions)  # (a pool of its own)
    output_pool.empty((5,), np.dtype(np.float64), 0)
    assert pool.allocations[-1] == (40, 1)
    assert len(Core.pools) == 1 and converted == [0]     # (planned once)
    assert calls["device_array"] == []


def test_a_blocking_streams_outputs_are_freed_on_the_legacy_stream(fake):
    # a free on the legacy stream follows the work of every blocking stream,
    # so an output used on another one than its own is not freed under it
    streams, converted, calls = fake
    numba_stream = NumbaStream(7)
    streams[7] = Stream(7)
    out, pointer = output_pool.empty((6,), F4, numba_stream)
    (interface, owner, _), = calls["wrapped"]
    assert owner.alloc_stream is streams[7] and owner.dealloc_stream is LEGACY
    assert interface["stream"] == 7         # (the array's stream, as numba records it)
    output_pool.empty((6,), F4, numba_stream)
    assert converted == [numba_stream]      # (planned once per stream)


def test_a_non_blocking_stream_takes_numbas_allocation(fake):
    streams, converted, calls = fake
    streams[9] = Stream(9, nonblocking=True)
    out, pointer = output_pool.empty((6,), F4, NumbaStream(9))
    assert calls["wrapped"] == [] and Core.pools == []
    assert calls["device_array"][0][:2] == ((6,), F4)


def test_where_the_pool_does_not_apply(fake, monkeypatch):
    streams, converted, calls = fake
    output_pool.empty((0, 3), F4, 0)                 # empty
    monkeypatch.setattr(output_pool, "POOL", False)  # the simulator
    output_pool.empty((2,), F4, 0)
    assert len(calls["device_array"]) == 2 and calls["wrapped"] == []
    assert converted == []


def test_out_of_memory_synchronises_once_then_falls_back(fake):
    streams, converted, calls = fake
    output_pool.empty((2,), F4, 0)
    pool, = Core.pools
    oom = Exception("CUDA_ERROR_OUT_OF_MEMORY: out of memory")
    pool.fail = [oom]
    out, pointer = output_pool.empty((2,), F4, 0)    # (the retry succeeds)
    assert calls["synchronize"] == 1 and len(calls["wrapped"]) == 2
    pool.fail = [oom, oom]
    output_pool.empty((2,), F4, 0)
    assert calls["synchronize"] == 2 and len(calls["device_array"]) == 1
    # under graph capture cuda.core refuses: numba's allocation, no wait
    pool.fail = [RuntimeError("cannot perform memory operations on a capturing stream")]
    output_pool.empty((2,), F4, 0)
    assert calls["synchronize"] == 2 and len(calls["device_array"]) == 2


def test_each_device_has_its_pool(fake, monkeypatch):
    output_pool.empty((2,), F4, 0)
    monkeypatch.setattr(fast_launch, "current_device_id", lambda: 1)
    output_pool.empty((2,), F4, 0)
    output_pool.empty((2,), F4, 0)
    assert [p.device_id for p in Core.pools] == [0, 1]
    assert [len(p.allocations) for p in Core.pools] == [1, 2]


def test_the_array_owns_the_buffer(fake):
    # freed when the array goes, not before
    streams, converted, calls = fake
    gc.collect()
    Buffer.freed.clear()        # (the other tests' buffers, gone by now)
    out, pointer = output_pool.empty((4,), F4, 0)
    calls["wrapped"].clear()
    gc.collect()
    assert Buffer.freed == []
    del out
    gc.collect()
    assert Buffer.freed == [(pointer, LEGACY.handle)]


def test_gpu_calls_on_numba_arrays_allocate_from_the_pool(fake, monkeypatch):
    # both paths: the fast launch (contiguous) and the general one
    from test_fast_launch import Cai, Recorder

    from gelu_numba.targets import cuda as target

    streams, converted, calls = fake
    monkeypatch.setattr(fast_launch, "FAST_LAUNCH", True)
    monkeypatch.setattr(fast_launch, "FastLaunch", Recorder)
    Recorder.launches, Recorder.built, Recorder.launched_by, Recorder.agree = [], [], [], True
    f = target.GpuFunction("gelu", gpu.gelu.device, 1, "")
    result = f(Cai((5,), "<f8", ptr=0x400))
    (interface, owner, _), = calls["wrapped"]
    assert result == ("numba array of", owner)
    assert Recorder.launches == [("d", (0x400, owner.handle), 5, 0)]


# ------------------------------------------------------------ on a device

needs_device = pytest.mark.skipif(SIMULATOR, reason="the pool needs the CUDA driver; its "
                                  "streams and fallbacks are tested above without one")


def _used(device_id=0):
    """Bytes of the device's gelu-numba pool in use."""
    pool = output_pool._pools.get(device_id)
    return 0 if pool is None else pool.attributes.used_mem_current


@needs_device
@pytest.mark.parametrize("step", [1, 2], ids=["contiguous", "strided"])
def test_outputs_come_from_the_pool_and_go_back(step):
    x = np.linspace(-6, 6, 1 << 16)[::step]
    d = cuda.to_device(np.linspace(-6, 6, 1 << 16))[::step]
    cuda.synchronize()
    before = _used()
    y = gpu.gelu(d)
    assert _used() - before >= x.nbytes
    assert same_bits(y.copy_to_host(), gelu_numba.gelu(x))
    del y
    gc.collect()
    cuda.synchronize()
    assert _used() == before


@needs_device
def test_outputs_of_host_scalars_and_broadcasts_come_from_the_pool():
    # the general path's outputs: a 0-d one (a host scalar) and a broadcast
    before = _used()
    y = gpu.gelu(1.5)
    z = gpu.gelu_backward(np.ones((3, 1)), cuda.to_device(np.linspace(-2, 2, 4)))
    assert y.shape == () and z.shape == (3, 4)
    assert _used() > before
    assert same_bits(y.copy_to_host(), gelu_numba.gelu(np.float64(1.5)))
    assert same_bits(z.copy_to_host(),
                     gelu_numba.gelu_backward(np.ones((3, 1)), np.linspace(-2, 2, 4)))


@cuda.jit
def _slow_copy(src, dst, sleeps):
    # every thread waits ~sleeps ms, then copies: a reader that ends late
    for _ in range(sleeps):
        cuda.nanosleep(1_000_000)
    i = cuda.grid(1)
    if i < src.size:
        dst[i] = src[i]


@needs_device
def test_an_output_read_on_another_stream_is_not_reused_under_it():
    # allocated on s1, read on s2 by a slow kernel, dropped; the next output
    # allocated on s1 may take its memory only after s2's read: a free on
    # s1 alone would let the second call overwrite what s2 still reads
    n = 1 << 20
    x, other = np.linspace(-5, 5, n), np.linspace(3, 9, n)
    dx, dother = cuda.to_device(x), cuda.to_device(other)
    s1, s2 = cuda.stream(), cuda.stream()
    cuda.synchronize()
    y = gpu.gelu(dx, stream=s1)
    first = y.device_ctypes_pointer.value
    copy = cuda.device_array(n)
    s1.synchronize()
    _slow_copy[math.ceil(n / 256), 256, s2](y, copy, 50)
    del y
    gc.collect()
    z = gpu.gelu(dother, stream=s1)
    reused = z.device_ctypes_pointer.value == first
    cuda.synchronize()
    assert same_bits(copy.copy_to_host(), gelu_numba.gelu(x)), (
        "the slow reader saw the next output" + (" (its memory reused)" if reused else ""))
    assert same_bits(z.copy_to_host(), gelu_numba.gelu(other))


@needs_device
def test_a_non_blocking_stream_takes_numbas_allocation_on_the_device():
    from cuda.bindings import driver

    err, handle = driver.cuStreamCreate(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
    assert err == driver.CUresult.CUDA_SUCCESS
    try:
        stream = cuda.external_stream(int(handle))
        x = np.linspace(-3, 3, 4099)
        d = cuda.to_device(x)
        cuda.synchronize()
        before = _used()
        y = gpu.gelu(d, stream=stream)
        stream.synchronize()
        assert _used() == before
        assert same_bits(y.copy_to_host(), gelu_numba.gelu(x))
    finally:
        driver.cuStreamDestroy(handle)
