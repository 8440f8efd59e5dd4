"""CUDA target: device functions, elementwise kernels and their launcher.

Everything that knows about numba-cuda's compilation, launch and array API
is in this package, so a move to another CUDA binding touches these files
only; the public modules :mod:`gelu_numba.gpu` and
:mod:`gelu_numba.gpu.device` are loops over the catalog.  Imported only by
them (it needs numba-cuda).

``device``
    Device functions: a catalog record as a ``@cuda.jit(device=True)``
    function with a float32/float64 switch.
``codegen``
    The kernel source templates (the contiguous and the N-D grid-stride
    loops) and their fields.
``launch``
    The launch configuration and the launch of a compiled kernel.
``inputs``
    The operands of a call as device views, its loop, output and layout.
``fast_launch``
    The launch below numba-cuda's dispatcher for contiguous device arrays,
    and the probe that checks it.
``output_pool``
    New numba outputs from a stream-ordered memory pool.
``function``
    :class:`GpuFunction`, the host side of a package function, and
    :func:`gpu_function`, the one of each catalog function.
``variants``
    The registry of device functions, and the float32 kernel variants by
    device with their tables.
``choice``
    The float32 kernel each measured device launches (generated from the
    GPU runs by ``python -m analysis.gpu.choice --update``).
``half_kernels``
    The 2-byte kernels (float16 and bfloat16 bit patterns).
``soi_kernel``
    The kernels of the stochastic 0-I map.
``docs``
    The parameters, return value and example of each GPU function's
    docstring.

The names below are those that code outside the package reads.  Values
that tests and tools set (``FAST_LAUNCH``, ``FastLaunch``, ``UNROLL``,
``THREADS_PER_BLOCK``, ``BLOCKS_PER_SM``, ``full_rate_fp64``) are read
from their own modules at each use, so they must be set there, not here.
"""

from gelu_numba.targets.cuda.codegen import CAST, FLAT_LOOP, flat_fields, flat_layout, generate
from gelu_numba.targets.cuda.device import device_function, float64_kernel
from gelu_numba.targets.cuda.fast_launch import (
    FAST_LAUNCH, FastLaunch, fast_key, fast_operands, launch_signature, pack_arguments,
    stream_handle,
)
from gelu_numba.targets.cuda.function import GpuFunction, gpu_function
from gelu_numba.targets.cuda.launch import (
    BLOCKS_PER_SM, SIMULATOR, THREADS_PER_BLOCK, UNROLL, launch_config,
)
# (the function ``device`` takes the place of the submodule of that name as
# an attribute of this package: import that module's names from
# gelu_numba.targets.cuda.device itself)
from gelu_numba.targets.cuda.variants import FULL_RATE_FP64, device, full_rate_fp64

__all__ = [
    "BLOCKS_PER_SM", "CAST", "FAST_LAUNCH", "FLAT_LOOP", "FULL_RATE_FP64", "FastLaunch",
    "GpuFunction", "SIMULATOR", "THREADS_PER_BLOCK", "UNROLL", "device", "device_function",
    "fast_key", "fast_operands", "flat_fields", "flat_layout", "float64_kernel",
    "full_rate_fp64", "generate", "gpu_function", "launch_config", "launch_signature",
    "pack_arguments", "stream_handle",
]
