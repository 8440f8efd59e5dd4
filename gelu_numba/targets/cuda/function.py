"""The host side of a package function on the GPU: :class:`GpuFunction`,
and :func:`gpu_function`, the one of each catalog function.

For each input shape pattern a :class:`GpuFunction` generates (once, then
cached) a ``@cuda.jit`` kernel with a grid-stride loop
(:mod:`gelu_numba.targets.cuda.codegen`) around its device function, or
around the float32 kernel that :meth:`GpuFunction.variant` chooses for
the device (:mod:`gelu_numba.targets.cuda.variants`), and launches it on
the operands that :mod:`gelu_numba.targets.cuda.inputs` prepares, or, for
contiguous device arrays, through a :mod:`fast launch
<gelu_numba.targets.cuda.fast_launch>`.
"""

import functools
import math

import numpy as np
from numba import cuda

from gelu_numba import catalog
from gelu_numba.targets import dtypes
# (modules whose values the tests and tools set: read at each use)
from gelu_numba.targets.cuda import (
    caller, fast_launch, launch, lean_shared, output_pool, variants, vector_io,
)
from gelu_numba.targets.cuda.codegen import (
    CAST, ELEMENTWISE, FLAT_LOOP, VEC4_LOOP, flat_fields, flat_layout, generate, loop_fields,
    vec4_fields,
)
from gelu_numba.targets.cuda.fast_launch import (
    PROBE, checked_launcher, fast_key, fast_operands, stream_handle,
)
from gelu_numba.targets.cuda.inputs import (
    broadcast_shape, operands, prepare_inputs, prepare_out,
)
from gelu_numba.targets.cuda.variants import device, lean_device, tabled_device
from gelu_numba.targets.cuda.vector_io import load4, store4

_FLOAT = dtypes.LOOP_DTYPES


class GpuFunction:
    """A package function on device arrays (see :mod:`gelu_numba.gpu`).

    ``f(*inputs, out=None, stream=None)``: inputs are device arrays
    (numba's, or anything with ``__cuda_array_interface__``), host NumPy
    arrays or scalars (copied to the device), float32 or float64 (other real
    dtypes follow NumPy's safe casting), any shape and strides, broadcast
    together.  Returns a device array (``out`` when given; else one of the
    first device operand's library, :mod:`~gelu_numba.targets.cuda.caller`);
    never copies to the host.  ``stream`` None: the current stream of that
    library (PyTorch's, CuPy's), else the default stream.
    """

    def __init__(self, name, dev, nin, doc):
        self.__name__ = self.__qualname__ = name
        self.__doc__ = doc
        self.device = dev
        self.nin = nin
        self._kernels = {}
        self._fast = {}

    def __repr__(self):
        return f"<gelu_numba.gpu.{self.__name__}>"

    def __call__(self, *args, out=None, stream=None):
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} input"
                            f"{'s' if self.nin > 1 else ''} ({len(args)} given)")
        lib = caller.library(args)
        owner = caller.first_device_operand(lib, args) if lib else None
        if lib:
            index = caller.device_index(lib, owner)
            if index != fast_launch.current_device_id():
                # (the operand's device made numba-cuda's current for the call)
                with cuda.gpus[index]:
                    return self(*args, out=out, stream=stream)
        handle = None   # (the library's current stream, where it is the launch's)
        if stream is None:
            if lib:
                handle = caller.current_stream(lib, owner)
            stream = 0
        if fast_launch.FAST_LAUNCH:
            done = self._fast_call(args, out, stream, handle, lib, owner)
            if done is not None:
                return done
        return self._call(args, out, stream, handle, lib, owner)

    def _call(self, args, out, stream, handle=None, lib=None, owner=None):
        """The general path: any operands numba-cuda can import."""
        if handle:
            stream = cuda.external_stream(handle)
        views, loop = prepare_inputs(self.__name__, args, stream)
        shape = broadcast_shape(self.__name__, views)
        result = out
        if out is None and lib:
            result, _ = caller.empty(lib, owner, shape, np.dtype(_FLOAT[loop]))
        dst = prepare_out(self.__name__, result, shape, loop, stream)
        n = math.prod(shape)
        if n:
            self.launch(views, dst, shape, loop, stream)
        return dst if result is None else result

    def launch(self, views, dst, shape, loop, stream):
        views, target, layout = operands(views, dst, shape)
        blocks, threads = launch.launch_config(math.prod(shape))
        launch.launch(self.kernel(loop, layout), blocks, threads, stream,
                      (*views, *self.fixed_arguments(loop, layout).values(), target))

    #: the device function whose float32 kernel computes in float64, for
    #: devices with full-rate FP64 (:func:`~gelu_numba.targets.cuda.variants.full_rate_fp64`),
    #: where the record has a float32-arithmetic one too; a callable, None
    #: where it has not
    fp64_device = None
    #: ``(device function, tables)`` of that kernel in the form that takes
    #: its coefficient tables as an argument (the flat kernel's), or None
    fp64_tables = None

    #: the device function of the lean float32 kernel
    #: (:mod:`gelu_numba.kernels.lean32`, its table the last argument),
    #: which devices without full-rate FP64 launch; a callable, or None
    lean32 = None
    #: a variant to run whatever the device (analysis.gpu.peers' lean
    #: peers), or None: :meth:`variant` chooses by the device
    forced = None

    def variant(self, loop, fp64=None, lean32=None):
        """The float32 kernel loop ``loop`` runs: ``"fp64"`` (float64
        arithmetic), ``"lean32"``, ``"gpu32"`` (float32 arithmetic, the device
        function's), or None (not the float32 loop, or a record with one
        float32 kernel).  On a device with full-rate FP64, ``"fp64"`` unless
        the device's measurements chose the lean kernel
        (:func:`~gelu_numba.targets.cuda.variants.measured_choice`; both
        below 1 ulp); elsewhere ``"lean32"`` where the record has one.
        ``fp64``, ``lean32``: force the choice either way
        (analysis.gpu.sass, analysis.gpu.throughput)."""
        if loop != "f" or self.fp64_device is None:
            return None
        if fp64 is None and lean32 is None and self.forced is not None:
            return self.forced
        if variants.full_rate_fp64() if fp64 is None else fp64:
            # (the measured devices' choice, where both kernels are below 1 ulp)
            if fp64 is None and lean32 is None and self.lean32 is not None:
                chosen = variants.measured_choice(self.__name__)
                return "lean32" if chosen in ("lean32", variants.LEAN_SHARED) else "fp64"
            return "fp64"
        return "lean32" if self.lean32 is not None and lean32 is not False else "gpu32"

    def _fp64(self, loop, fp64=None):
        """Whether loop ``loop`` runs the float64-arithmetic float32 kernel."""
        return self.variant(loop, fp64) == "fp64"

    def tables_argument(self, loop, layout, fp64=None):
        """Whether :meth:`kernel` takes the coefficient tables as an argument
        (one float64 array after the inputs)."""
        return bool(layout[0] and self.fp64_tables is not None and self._fp64(loop, fp64))

    def fixed_arguments(self, loop, layout, fp64=None, lean32=None):
        """``{position: device array}``: the arguments of :meth:`kernel`
        beside the operands (the coefficient tables or the lean kernel's
        table, after the inputs), on the current device."""
        if self.tables_argument(loop, layout, fp64):
            return {self.nin: variants.coefficients(self.__name__, self.fp64_tables[1],
                                                    variants.device_key())}
        if self.variant(loop, fp64, lean32) == "lean32":
            return {self.nin: variants.lean_table(self.__name__, variants.device_key())}
        return {}

    def kernel(self, loop, layout, fp64=None, lean32=None, vec4=False):
        """The ``@cuda.jit`` kernel of loop ``loop`` over operands laid out
        as ``layout`` (see :func:`~gelu_numba.targets.cuda.inputs.operands`),
        generated on first use: the float32 kernel of :meth:`variant` (its
        tables or table, where it takes them as an argument:
        :meth:`fixed_arguments`).  ``vec4``: the float32 flat loop with
        16-byte loads and stores (:data:`~gelu_numba.targets.cuda.codegen.VEC4_LOOP`:
        same arguments and bits; its operands' data 16-byte aligned), which
        the fast launch takes where every operand is; for the lean kernel
        on a device whose measurements chose its table in shared memory,
        :func:`gelu_numba.targets.cuda.lean_shared.kernel`."""
        variant = self.variant(loop, fp64, lean32)
        if vec4 and not (loop == "f" and layout[0]):
            raise ValueError("16-byte loads are for the float32 loop on contiguous operands")
        # (the lean kernel with its table in shared memory, where the
        # device's measurements chose it: the same arguments and bits)
        shared = (vec4 and variant == "lean32" and fp64 is None and lean32 is None
                  and variants.measured_choice(self.__name__) == variants.LEAN_SHARED)
        key = (loop, layout, launch.UNROLL, variant, vec4, shared)
        kernel = self._kernels.get(key)
        if kernel is None and shared:
            kernel = self._kernels[key] = lean_shared.kernel(self.__name__)
        if kernel is None:
            tables = variant == "fp64" and self.tables_argument(loop, layout, True)
            dev = (self.fp64_tables[0]() if tables else self.fp64_device()
                   if variant == "fp64" else self.lean32() if variant == "lean32" else self.device)
            scope = {"dev": dev, "cast": CAST[loop], "load4": load4, "store4": store4}
            passed = "tab" if variant == "lean32" else None
            template = VEC4_LOOP if vec4 else FLAT_LOOP

            def fields(tables=None, passed=None):
                if vec4:
                    return vec4_fields(self.nin, tables, passed)
                return flat_fields(self.nin, launch.UNROLL, tables, passed)

            if tables:
                kernel = generate(template, scope, **fields(self.fp64_tables[1]))
            elif layout[0]:
                kernel = generate(template, scope, **fields(passed=passed))
            else:
                kernel = generate(ELEMENTWISE, scope,
                                  **loop_fields(layout, self.nin, 8, passed=passed))
            self._kernels[key] = kernel
        return kernel

    def compiled(self):
        """``[(loop, layout, variant, vec4, shared, kernel), ...]``: the
        kernels :meth:`kernel` has generated so far (``shared``: the lean
        kernel's table in shared memory), for the tools that read their
        registers."""
        return [(loop, layout, variant, vec4, shared, kernel)
                for (loop, layout, _unroll, variant, vec4, shared), kernel
                in self._kernels.items()]

    def _fast_call(self, args, out, stream, handle=None, lib=None, owner=None):
        """The call below numba-cuda's dispatcher (see
        :class:`~gelu_numba.targets.cuda.fast_launch.FastLaunch`), or None
        where it does not apply."""
        operands_ = fast_operands(args if out is None else (*args, out),
                                  stream_handle(stream) if handle is None else handle,
                                  writable_last=out is not None)
        if operands_ is None:
            return None
        loop, shape, n, pointers = operands_
        launcher = self._fast_launcher(loop)
        if launcher is None:
            return None
        if out is None:
            if lib:
                out, pointer = caller.empty(lib, owner, shape, np.dtype(_FLOAT[loop]))
            else:
                out, pointer = output_pool.empty(shape, np.dtype(_FLOAT[loop]), stream)
            pointers = (*pointers, pointer)
        if handle:
            launcher.on_handle(pointers, n, handle)
        else:
            launcher(pointers, n, stream)
        return out

    def fast_launcher(self, loop):
        """This function's
        :class:`~gelu_numba.targets.cuda.fast_launch.FastLaunch` for
        ``loop`` (``"f"`` or ``"d"``) on numba's current device (float32:
        an :class:`~gelu_numba.targets.cuda.fast_launch.AlignedLaunch` of the
        loops of 16-byte and 4-byte loads, chosen by the pointers' alignment),
        or None where there is none (the simulator; a launcher that failed
        its check).  For callers that hold raw device pointers, e.g.
        :mod:`gelu_numba.targets.torch.tensors` (``on_handle``)."""
        return self._fast_launcher(loop) if fast_launch.FAST_LAUNCH else None

    def _fast_launcher(self, loop):
        """This function's launcher (:meth:`fast_launcher`) for ``loop`` on
        the current device and the current launch constants: built and
        checked on first use (both loops, for float32), None if it failed
        its check."""
        key = fast_key(loop)
        try:
            return self._fast[key]
        except KeyError:
            pass
        probe = PROBE.astype(_FLOAT[loop])
        layout = flat_layout(self.nin)

        def build():
            fixed = self.fixed_arguments(loop, layout)
            flat = fast_launch.FastLaunch(self.kernel(loop, layout), self.nin, loop, fixed=fixed)
            if loop != "f":
                return flat
            # float32: 16-byte loads and stores where every operand allows
            return fast_launch.AlignedLaunch(
                fast_launch.FastLaunch(self.kernel(loop, layout, vec4=True), self.nin, loop,
                                       fixed=fixed), flat, vector_io.ALIGNMENT)

        launcher = checked_launcher(
            f"gelu_numba.gpu.{self.__name__}", build,
            lambda fast: fast.agrees([probe] * self.nin,
                                     lambda xs, out: self._call(tuple(xs), out, 0)))
        self._fast[key] = launcher
        return launcher


@functools.cache
def gpu_function(name):
    """The :class:`GpuFunction` of catalog function ``name``, built once (the
    object :mod:`gelu_numba.gpu` publishes, with its documentation)."""
    fn = catalog.lookup(name)
    f = GpuFunction(name, device(name), fn.nin, None)
    if fn.gpu32 is not None:  # (a float32 kernel of each arithmetic)
        f.fp64_device = functools.partial(device, name, True)
        if fn.tabled is not None:
            f.fp64_tables = (functools.partial(tabled_device, name), fn.tabled[1])
        if fn.lean32 is not None:
            f.lean32 = functools.partial(lean_device, name)
    return f
