"""The registry of device functions, and the kernel variants a launch
chooses from: their device functions and tables, and the device property
that chooses.

Which float32 kernel a launch runs
    One line, :meth:`GpuFunction.variant
    <gelu_numba.targets.cuda.function.GpuFunction.variant>`: on a device
    with full-rate FP64 (:func:`full_rate_fp64`) the CPU's
    float64-arithmetic kernel (``"fp64"``, the better bound), unless that
    device's measurements chose the lean kernel for the function
    (:func:`measured_choice`); on any other,
    for ``gelu``, ``ndtr``, ``gelu_grad`` and ``gelu_backward``, the lean
    kernel of :mod:`gelu_numba.kernels.lean32` (``"lean32"``: one table row
    per element, its table a float32 device array after the inputs), and
    for the rest the device function's (``"gpu32"``).
    :func:`~gelu_numba.targets.cuda.function.gpu_function` gives each
    function the variants its record has.

:class:`~gelu_numba.targets.cuda.function.GpuFunction` reads
:func:`full_rate_fp64` as an attribute of this module at each use, so
that setting it here (the tests) reaches every launch.
"""

import functools

import numpy as np
from numba import cuda

from gelu_numba import catalog
from gelu_numba.targets.cuda.device import device_function
from gelu_numba.targets.cuda.launch import SIMULATOR


@functools.cache
def device(name, full_fp64=False):
    """The device function of catalog function ``name``, built once (the
    object :mod:`gelu_numba.gpu.device` publishes, with its documentation);
    ``full_fp64``: the variant whose float32 kernel computes in float64
    (:func:`~gelu_numba.targets.cuda.device.device_function`)."""
    return device_function(catalog.lookup(name), full_fp64=full_fp64)


#: compute capabilities whose FP64 rate is half the FP32 rate (GP100, GV100,
#: GA100, GH100/GH200, GB100/GB200); every other NVIDIA GPU runs FP64 at
#: 1/32 to 1/64 of FP32
FULL_RATE_FP64 = frozenset({(6, 0), (7, 0), (8, 0), (9, 0), (10, 0)})
_FP64_RATE = {}


@functools.cache
def _device_available():
    return cuda.is_available()


def full_rate_fp64():
    """Whether the current device runs FP64 at half its FP32 rate (never
    under the simulator or without a device), cached per device."""
    if SIMULATOR or not _device_available():   # (no device: PTX compiled ahead)
        return False
    dev = cuda.get_current_device()
    full = _FP64_RATE.get(dev.id)
    if full is None:
        full = _FP64_RATE[dev.id] = tuple(dev.compute_capability) in FULL_RATE_FP64
    return full


_CHOICE = {}
#: the measured choice of the lean kernel with its table in each block's
#: shared memory (:mod:`~gelu_numba.targets.cuda.lean_shared`: the lean
#: kernel's arguments and bits)
LEAN_SHARED = "lean32 shared"


def measured_choice(key):
    """What the current device's measurements chose for ``key``
    (:mod:`~gelu_numba.targets.cuda.choice`, generated from the GPU runs):
    for a catalog function's name, its float32 kernel (``"fp64"``,
    ``"lean32"`` or :data:`LEAN_SHARED`); for ``"gelu float16"`` or
    ``"gelu bfloat16"``, where the 2-byte forward reads its table
    (``"shared"`` memory or ``"l1"``: global memory through L1); for
    ``"launch"``, how the fast launch calls the driver
    (``"cuLaunchKernel"`` or ``"cuda.core"``).  None where nothing was
    chosen (an unmeasured device, the simulator, no device); cached per
    device."""
    if SIMULATOR or not _device_available():
        return None
    dev = cuda.get_current_device()
    chosen = _CHOICE.get(dev.id)
    if chosen is None:
        from gelu_numba.targets.cuda.choice import CHOICE
        device_name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        chosen = _CHOICE[dev.id] = CHOICE.get(device_name, {})
    return chosen.get(key)


@functools.cache
def lean_device(name):
    """The device function of ``name``'s lean float32 kernel (its record's
    ``lean32``: the scalar kernel that takes its table last)."""
    return cuda.jit(device=True)(catalog.lookup(name).lean32[0].py_func)


@functools.cache
def lean_table(name, device_id):
    """``name``'s lean-kernel table (float32) on device ``device_id``."""
    return cuda.to_device(catalog.lookup(name).lean32[1])


@functools.cache
def tabled_device(name):
    """The device function of ``name``'s float64-arithmetic float32 kernel
    in the form that takes its tables as the last argument (its record's
    ``tabled``)."""
    return cuda.jit(device=True)(catalog.lookup(name).tabled[0].py_func)


def device_key():
    # (the simulator's device has no id: one device)
    return getattr(cuda.get_current_device(), "id", 0)


@functools.cache
def coefficients(name, tables, device_id):
    """``tables`` (a tuple of tuples of float64) as one device array on
    device ``device_id``, in order."""
    return cuda.to_device(np.array([c for part in tables for c in part], dtype=np.float64))
