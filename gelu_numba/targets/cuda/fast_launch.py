"""Fast launches: a call below numba-cuda's dispatcher.

A call whose operands (``out`` included) all expose
``__cuda_array_interface__`` with one float dtype and one shape,
C-contiguous, and need no ordering with another stream, is launched below
numba-cuda's dispatcher (:class:`FastLaunch`): the flat kernel is compiled
once per dtype and device for 1-D C-contiguous arrays, and each call packs
its pointers and length into numba's array ABI (per array: meminfo,
parent, nitems, itemsize, data, shape, strides) and hands them to
``cuda.core.launch``, the call numba-cuda itself makes after its typing
and argument conversion (the host time per call of each path: the
repository's ``python -m analysis.gpu.throughput``, on the GPU results
page).  Before its first use on a device each fast launcher runs a probe
through both paths and compares the bits (:func:`checked_launcher`); a
difference (a numba-cuda whose ABI moved) disables it with a warning.
Everything else (host inputs, scalars, strides, broadcasting, mixed
dtypes, a foreign stream) takes the general path.  The gelu-numba
repository's ``tests/test_fast_launch.py`` checks the eligibility rules
and, from the PTX, the ABI the packing assumes.

:data:`FAST_LAUNCH` and :class:`FastLaunch` are read as attributes of this
module at each use, so that setting them here (the tests) reaches every
caller.
"""

import ctypes
import math
import threading
import warnings
import weakref

import numpy as np
from numba import cuda
from numba.core import types

from gelu_numba.internals import numba_cuda
from gelu_numba.internals.numba_core import from_dtype
from gelu_numba.targets import dtypes
from gelu_numba.targets.cuda import launch, variants
from gelu_numba.targets.cuda.launch import grid_blocks, sm_count

_FLOAT = dtypes.LOOP_DTYPES

#: the probe of special and ordinary values on which a float launcher must
#: give the general path's bits before its first use (1,027 of them: not a
#: multiple of 4 or 8, so that the loops' tails run too)
PROBE = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -3.5, 7.25, -10.0, 40.0, -40.0, 1e-30, -1e-30,
                  np.inf, -np.inf, np.nan] + list(np.linspace(-8, 8, 1012)))


def checked_launcher(label, build, agrees):
    """The :class:`FastLaunch` that ``build()`` makes, if ``agrees(it)``
    (the general path's bits on a probe); else None, with a
    ``RuntimeWarning`` naming ``label`` and why (numba-cuda internals that
    moved, a kernel-argument ABI that changed)."""
    why = None
    try:
        launcher = build()
        if not agrees(launcher):
            why = ("disagrees with numba-cuda's on a probe (has numba-cuda's "
                   "kernel-argument ABI changed?)")
    except (AttributeError, ImportError, TypeError) as e:
        # (the numba-cuda internals it is built from have moved)
        why = f"cannot be built with this numba-cuda ({type(e).__name__}: {e})"
    if why is None:
        return launcher
    warnings.warn(f"{label}: the fast launch {why}; using numba-cuda's launch",
                  RuntimeWarning, stacklevel=5)
    return None


#: whether calls may take :class:`FastLaunch` (never under the simulator,
#: which has no driver)
FAST_LAUNCH = not launch.SIMULATOR
#: the measured choice (``variants.measured_choice("launch")``) of launches
#: through ``cuLaunchKernel`` (:meth:`FastLaunch.via_driver`) rather than
#: ``cuda.core.launch``
DRIVER_LAUNCH = "cuLaunchKernel"
#: the shared memory a kernel may take without raising its limit
#: (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``), bytes
STATIC_SHARED_BYTES = 48 * 1024
#: ``__cuda_array_interface__`` typestr -> loop of the fast launch
_FAST_LOOPS = {dtype.newbyteorder("<").str: loop for loop, dtype in _FLOAT.items()}


def fast_key(loop):
    """The key of a :class:`FastLaunch` in ``GpuFunction._fast``: the loop,
    the current device and the launch constants."""
    return (loop, current_device_id(), launch.UNROLL, launch.THREADS_PER_BLOCK,
            launch.BLOCKS_PER_SM)


def stream_handle(stream):
    """The driver handle of a launch stream (``0`` or a numba stream), or
    None for anything else (which takes the general path)."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return 0 if stream == 0 else None
    handle = getattr(stream, "handle", None)
    if handle is None or not hasattr(stream, "__cuda_stream__"):
        return None
    return int(handle)


def fast_operands(arrays, stream_handle, writable_last=False):
    """``(loop, shape, n, data pointers)`` if ``arrays`` can take the fast
    launch, else None.

    Each must expose ``__cuda_array_interface__`` (version 2 or 3) with the
    same shape and the same float32 or float64 typestr, be C-contiguous
    (``strides`` None or equal to the C strides), have no mask and, where it
    names a stream, need no synchronisation with the launch stream
    (``stream_handle``: its own handle, or the legacy and per-thread default
    streams, 1 and 2, when the launch is on a default stream, which those
    order themselves with).  ``writable_last``: the last array is ``out``
    and must not be read-only.  Anything else is for the general path,
    which imports through numba-cuda (and synchronises on a foreign
    stream, as the interface asks).
    """
    if stream_handle is None:
        return None
    typestr = shape = None
    pointers = []
    for a in arrays:
        try:
            cai = a.__cuda_array_interface__
        except AttributeError:
            return None
        if cai.get("mask") is not None:
            return None
        if typestr is None:
            typestr, shape = cai["typestr"], tuple(cai["shape"])
            if typestr not in _FAST_LOOPS:
                return None
        elif cai["typestr"] != typestr or tuple(cai["shape"]) != shape:
            return None
        strides = cai.get("strides")
        if strides is not None and tuple(strides) != _c_strides(shape, int(typestr[2:])):
            return None
        s = cai.get("stream")
        if s is not None and s != stream_handle and not (
                stream_handle in (0, 1, 2) and s in (1, 2)):
            return None
        pointers.append(cai["data"][0])
    if writable_last and cai["data"][1]:
        return None
    n = math.prod(shape)
    if n == 0:
        return None
    return _FAST_LOOPS[typestr], shape, n, tuple(pointers)


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def pack_array(pointer, n, itemsize):
    """The kernel parameters of one 1-D C-contiguous array of ``n``
    elements at ``pointer``: numba's array data model, ``(meminfo, parent,
    nitems, itemsize, data, shape[0], strides[0])``, each a pointer-sized
    integer (as numba-cuda's own ``_Kernel.launch`` passes them); meminfo
    and parent are null on the device."""
    return (0, 0, n, itemsize, pointer, n, itemsize)


def pack_arguments(pointers, n, itemsize, fixed=None, lanes=None):
    """The kernel parameters of the flat loop over 1-D C-contiguous arrays
    of ``n`` elements at ``pointers`` (:func:`pack_array` each), with
    ``fixed``'s packed arrays (a device table, say: ``{position: words}``)
    put in at their positions.  ``lanes``: each operand comes first as
    8-byte words of ``lanes`` elements (its first ``n // lanes`` words),
    then as itself (the 2-byte kernels'
    :func:`~gelu_numba.targets.cuda.half_kernels.wide_operands`)."""
    args = []
    for p in pointers:
        if lanes:
            args += pack_array(p, n // lanes, 8)
        args += pack_array(p, n, itemsize)
    if fixed:
        per = 14 if lanes else 7
        for at, words in fixed.items():
            args[per * at:per * at] = words
    return args


def current_device_id():
    """The id of numba-cuda's current device: where a launch runs."""
    return numba_cuda.current_device_id()


def launch_signature(dtype, nin, fixed=None, lanes=None):
    """The kernel signature a :class:`FastLaunch` compiles: ``nin + 1``
    C-contiguous 1-D arrays of ``dtype`` (the inputs, then the output), with
    ``fixed``'s arrays (``{position: dtype}``: the tables passed in every
    launch) inserted at their positions; with ``lanes``, each operand is a
    uint64 array (its words) and then itself (:func:`pack_arguments`)."""
    one = [types.Array(from_dtype(np.dtype(dtype)), 1, "C")]
    if lanes:
        one.insert(0, types.Array(types.uint64, 1, "C"))
    argtypes = one * (nin + 1)
    for at, fixed_dtype in sorted((fixed or {}).items()):
        argtypes.insert(at * len(one), types.Array(from_dtype(np.dtype(fixed_dtype)), 1, "C"))
    return tuple(argtypes)


class FastLaunch:
    """The flat kernel of one function, dtype and device, launched through
    ``cuda.core.launch`` with arguments packed by :func:`pack_arguments`.

    Built from numba-cuda's compiled kernel for the signature
    ``(array(dtype, 1d, C),) * (nin + 1)`` (dtype: the loop's, or
    ``dtype``), the one its dispatcher compiles for contiguous 1-D device
    arrays (with ``fixed``'s device arrays, a table say, at their
    positions: ``{position: array}``), with the launch constants
    (``UNROLL``, ``THREADS_PER_BLOCK``, ``BLOCKS_PER_SM``) of the time it is
    built (``lanes``: the 2-byte kernels' wide form, each operand passed as
    its 8-byte words and its elements, :func:`pack_arguments`, the grid
    sized for one thread per word; ``threads`` per block, at most
    ``blocks_per_sm`` blocks per SM and ``shared_bytes`` of dynamic shared
    memory per block where the kernel asks for other than the launch
    constants: the 2-byte forward with its table in shared memory); grid
    configurations and the stream objects of ``cuda.core`` are cached
    (weakly, per numba stream; a stream that takes no weak reference is
    converted on each call).

    The driver launches on the calling thread's current context, and a
    thread may have none: PyTorch's autograd workers run the backward with
    no context bound (2.11 on an H200: CUDA_ERROR_INVALID_CONTEXT), where
    numba-cuda's own launch would bind one.  So the first launch on each
    thread binds this device's primary context (``cuda.current_context``,
    as numba-cuda does) if none is current.
    """

    def __init__(self, dispatcher, nin, loop, dtype=None, fixed=None, lanes=None,
                 threads=None, blocks_per_sm=None, shared_bytes=0):
        from cuda.core import LaunchConfig, Stream, launch as core_launch

        dtype = np.dtype(_FLOAT[loop] if dtype is None else dtype)
        fixed = fixed or {}
        self._fixed = {at: pack_array(array.device_ctypes_pointer.value, array.size,
                                      array.dtype.itemsize)
                       for at, array in sorted(fixed.items(), key=lambda item: item[0])}
        compiled = dispatcher.compile(launch_signature(
            dtype, nin, {at: array.dtype for at, array in fixed.items()}, lanes))
        if shared_bytes > STATIC_SHARED_BYTES:
            numba_cuda.allow_dynamic_shared(compiled, shared_bytes)
        if shared_bytes:
            self._shared_bytes, self._shmem = shared_bytes, {"shmem_size": shared_bytes}
        self._driver = variants.measured_choice("launch") == DRIVER_LAUNCH
        self._lanes = lanes
        self._kernel = numba_cuda.kernel_handle(compiled)
        self._itemsize = dtype.itemsize
        self._threads = threads or launch.THREADS_PER_BLOCK
        # (of this device)
        self._max_blocks = sm_count() * (blocks_per_sm or launch.BLOCKS_PER_SM)
        self._launch = core_launch
        self._config = LaunchConfig
        self._configs = {}
        self._to_core_stream = numba_cuda.core_stream
        self._default_stream = numba_cuda.core_stream(0)
        self._streams = weakref.WeakKeyDictionary()
        self._from_handle = Stream.from_handle
        self._handles = {}
        self._device_id = current_device_id()
        self._bound = threading.local()

    def _bind(self):
        cuda.current_context(self._device_id)
        self._bound.done = True

    def _blocks(self, n):
        if self._lanes:   # (one thread per word; the first threads take the rest)
            n = max(n // self._lanes, 1)
        return grid_blocks(n, self._threads, self._max_blocks)

    #: dynamic shared memory per block, bytes, and as LaunchConfig's argument
    _shared_bytes, _shmem = 0, {}

    def _grid(self, n):
        blocks = self._blocks(n)
        config = self._configs.get(blocks)
        if config is None:
            config = self._configs[blocks] = self._config(grid=blocks, block=self._threads,
                                                          **self._shmem)
        return config

    def on_handle(self, pointers, n, handle):
        """Launch over ``n`` elements at ``pointers`` (inputs, then out) on
        the CUDA stream whose driver handle is the int ``handle`` (PyTorch's
        ``torch.cuda.Stream.cuda_stream``; 0 is the legacy default stream).
        The ``cuda.core`` stream of each handle is made once and kept: the
        caller's streams must outlive it (PyTorch's pool streams do)."""
        if self._driver:
            return self.via_driver(pointers, n, handle)
        if not hasattr(self._bound, "done"):
            self._bind()
        core_stream = self._handles.get(handle)
        if core_stream is None:
            core_stream = self._handles[handle] = self._from_handle(handle)
        self._launch(core_stream, self._grid(n), self._kernel,
                     *pack_arguments(pointers, n, self._itemsize, self._fixed, self._lanes))

    def __call__(self, pointers, n, stream):
        if self._driver:
            return self.via_driver(pointers, n, 0 if isinstance(stream, int)
                                   else int(stream.handle or 0))
        if not hasattr(self._bound, "done"):
            self._bind()
        config = self._grid(n)
        if isinstance(stream, int):  # (0: stream_handle admits no other int)
            core_stream = self._default_stream
        else:
            try:
                core_stream = self._streams[stream]
            except (KeyError, TypeError):
                core_stream = self._to_core_stream(stream)
                try:
                    self._streams[stream] = core_stream
                except TypeError:
                    pass  # (no weak reference to it, as to cuda.core's own streams)
        self._launch(core_stream, config, self._kernel,
                     *pack_arguments(pointers, n, self._itemsize, self._fixed, self._lanes))

    #: whether every launch goes through :meth:`via_driver` (where the
    #: device's measurements found ``cuLaunchKernel`` the cheaper call)
    _driver = False

    def via_driver(self, pointers, n, handle=0):
        """The same launch as :meth:`on_handle`, through ``cuda.bindings``'
        ``cuLaunchKernel`` instead of ``cuda.core.launch``: the packed words
        written into a buffer this thread keeps (:class:`PackedParameters`),
        whose pointer array is the ``kernelParams``.  Every launch takes it
        on a device whose host-time measurements found it the cheaper call
        (:func:`~gelu_numba.targets.cuda.variants.measured_choice` of
        ``"launch"``); ``analysis.gpu.throughput`` times both."""
        if not hasattr(self._bound, "done"):
            self._bind()
        words = pack_arguments(pointers, n, self._itemsize, self._fixed, self._lanes)
        packed = getattr(self._bound, "packed", None)
        if packed is None or packed.count != len(words):
            packed = self._bound.packed = PackedParameters(len(words))
        packed.set(words)
        if self._cu_launch is None:
            from cuda.bindings import driver
            self._cu_launch, self._cu_success = driver.cuLaunchKernel, driver.CUresult.CUDA_SUCCESS
        err, = self._cu_launch(self._kernel.handle, self._blocks(n), 1, 1, self._threads, 1, 1,
                               self._shared_bytes, handle, packed.address, 0)
        if err != self._cu_success:
            raise RuntimeError(f"cuLaunchKernel: {err!r}")

    _cu_launch = None

    def agrees(self, inputs, general):
        """Whether this launcher and ``general(device_inputs, out)`` (the
        general path) give the same bits on the host arrays ``inputs`` (of
        one size and dtype, which the output takes)."""
        xs = [cuda.to_device(a) for a in inputs]
        fast, slow = cuda.device_array_like(xs[0]), cuda.device_array_like(xs[0])
        self(tuple(x.device_ctypes_pointer.value for x in xs) + (fast.device_ctypes_pointer.value,),
             xs[0].size, 0)
        general(xs, slow)
        return fast.copy_to_host().tobytes() == slow.copy_to_host().tobytes()


class PackedParameters:
    """``count`` kernel parameters of 8 bytes each (:func:`pack_arguments`'
    words) in one buffer, and the array of pointers to each that
    ``cuLaunchKernel`` takes as ``kernelParams`` (at ``address``); the
    driver copies the values at the launch, so the buffer is reused."""

    def __init__(self, count):
        self.count = count
        self.words = (ctypes.c_uint64 * count)()
        base = ctypes.addressof(self.words)
        self.pointers = (ctypes.c_void_p * count)(*(base + 8 * i for i in range(count)))
        self.address = ctypes.addressof(self.pointers)

    def set(self, words):
        self.words[:] = words


def aligned(addresses, alignment):
    """Whether every one of the device ``addresses`` is a multiple of
    ``alignment`` bytes (a PyTorch, CuPy or numba allocation is, for 8 and
    16; a view that starts at another element may not be)."""
    return all(p % alignment == 0 for p in addresses)


class AlignedLaunch:
    """Two :class:`FastLaunch` of one function: ``wide`` (a kernel whose
    vector loads need every operand on an ``alignment``-byte boundary)
    where every pointer is, else ``narrow``."""

    def __init__(self, wide, narrow, alignment):
        self.wide, self.narrow, self.alignment = wide, narrow, alignment

    def __call__(self, pointers, n, stream):
        (self.wide if aligned(pointers, self.alignment) else self.narrow)(pointers, n, stream)

    def on_handle(self, pointers, n, handle):
        (self.wide if aligned(pointers, self.alignment) else self.narrow).on_handle(
            pointers, n, handle)

    def agrees(self, inputs, general):
        return self.wide.agrees(inputs, general) and self.narrow.agrees(inputs, general)
