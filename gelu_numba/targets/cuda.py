"""CUDA target: device functions, elementwise kernels and their launcher.

Everything that knows about numba-cuda's compilation, launch and array API
is in this module (and :mod:`gelu_numba.targets.cuda_soi` for the SOI map),
so a move to another CUDA binding touches these files only; the public
modules :mod:`gelu_numba.gpu` and :mod:`gelu_numba.gpu.device` are loops
over the catalog.  Imported only by them (it needs numba-cuda).

Device functions
    :func:`device_function` turns a catalog record (the same Python kernels
    the CPU ufuncs compile) into a lazily compiled ``@cuda.jit(device=True)``
    function with a precision switch: a CUDA overload of ``choose`` picks
    the float32 kernel when every argument is float32, else the float64
    one, at compile time; under the simulator the same rule applies to the
    argument values.  For the normal-CDF family the float32 kernel is the
    record's ``k32_gpu`` (:mod:`gelu_numba.kernels.normal32_gpu_f32`: float32
    arithmetic, no FP64 instruction), not the CPU's float64-arithmetic one.
    The target-dependent primitives of :mod:`gelu_numba.kernels.primitives`
    compile to ``fma.rn``, ``add.rn``/``mul.rn`` and integer instructions,
    so no formula exists twice.

Which float32 kernel a launch runs
    One line, :meth:`GpuFunction.variant`: on a device with full-rate FP64
    the CPU's float64-arithmetic kernel (``"fp64"``, the better bound); on
    any other, for ``gelu``, ``ndtr``, ``gelu_grad`` and ``gelu_backward``,
    the lean kernel of :mod:`gelu_numba.kernels.lean32` (``"lean"``: one
    table row per element, its table a float32 device array after the
    inputs), and for the rest the device function's (``"f32"``).

Elementwise kernels
    :class:`GpuFunction` is the host-side launcher.  For each input shape
    pattern it generates (once, then cached) a ``@cuda.jit`` kernel with a
    grid-stride loop: contiguous operands of one shape are flattened and run
    through a 1-D loop; anything else (strided views, broadcasting, other
    ranks) through an N-D loop that unravels the flat index over the output
    shape and clamps size-1 input dimensions to 0.  Each loaded element is
    converted to the loop precision (NumPy's safe-casting rule, as on the
    CPU) before the device function sees it.

Launch configuration
    ``THREADS_PER_BLOCK`` threads per block and at most ``BLOCKS_PER_SM``
    blocks per multiprocessor of the current device (``grid-stride``: every
    thread handles ``n / (blocks * threads)`` elements).  Under the CUDA
    simulator (``NUMBA_ENABLE_CUDASIM=1``), where every thread is a Python
    thread, four blocks of one thread.

Fast launches
    A call whose operands (``out`` included) all expose
    ``__cuda_array_interface__`` with one float dtype and one shape,
    C-contiguous, and need no ordering with another stream, is launched
    below numba-cuda's dispatcher (:class:`FastLaunch`): the flat kernel is
    compiled once per dtype and device for 1-D C-contiguous arrays, and each
    call packs its pointers and length into numba's array ABI (per array:
    meminfo, parent, nitems, itemsize, data, shape, strides) and hands them
    to ``cuda.core.launch``, the call numba-cuda itself makes after its
    typing and argument conversion (the host time per call of each path:
    the repository's ``python -m analysis.gpu_throughput``, on the GPU
    results page).  Before its first use on a device each fast launcher runs a probe
    through both paths and compares the bits; a difference (a numba-cuda
    whose ABI moved) disables it with a warning.  Everything else (host
    inputs, scalars, strides, broadcasting, mixed dtypes, a foreign
    stream) takes the general path.  The gelu-numba repository's
    ``tests/test_fast_launch.py`` checks the eligibility rules and, from
    the PTX, the ABI the packing assumes.
"""

import functools
import math
import threading
import warnings
import weakref

import numpy as np
from numba import cuda
from numba.core import config, types
from numba.extending import overload

try:  # numba-cuda's own warning class (numba-cuda >= 0.2x)
    from numba.cuda.core.errors import NumbaPerformanceWarning
except ImportError:  # pragma: no cover
    from numba.core.errors import NumbaPerformanceWarning

from gelu_numba import catalog
from gelu_numba.internals import numba_cuda
from gelu_numba.internals.numba_core import from_dtype
from gelu_numba.kernels import lean32, normal32_cpu_f64
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import dtypes

#: True when numba-cuda's simulator runs kernels as Python (no GPU needed)
SIMULATOR = bool(config.ENABLE_CUDASIM)

#: threads per block of every elementwise launch
THREADS_PER_BLOCK = 256
#: grid size cap, in blocks per multiprocessor
BLOCKS_PER_SM = 16
#: elements per thread and trip of the contiguous loop (loaded together)
UNROLL = 4

_FLOAT = dtypes.LOOP_DTYPES
#: loop character -> the conversion of each loaded element
CAST = {"f": np.float32, "d": np.float64}
_DEVICE_TEXT = ("a numba device array or an object with "
                "__cuda_array_interface__ (CuPy, PyTorch CUDA tensors, ...)")


# ---------------------------------------------------------------- device side

# choose's Python body serves the simulator; compiled, its CUDA overload
# (typing, with choose's own parameter names, as Numba requires) decides
_SWITCH = """
def choose({args}):
    return pick(({args},))({args})


def typing({args}):
    return k32 if all_float32(({args},)) else k64


def {name}({args}):
    return choose({args})
"""


def _all_float32(tys):
    return all(isinstance(t, types.Float) and t.bitwidth == 32 for t in tys)


# The float64 kernel of a record with an ordinary form (the exact functions,
# gelu_numba.kernels.normal): a warp whose active elements are all in its
# range runs the ordinary form, any other warp the general kernel, so that
# no warp runs both (a per-element choice would diverge and run both where
# a warp mixes the two).  The same bits either way.
_ORDINARY_SWITCH = """
def {name}_float64({args}):
    if warp_all(in_range({args})):
        return ordinary({args})
    return general({args})
"""


def warp_all(p):
    """``p`` on every active lane of the warp (``all_sync`` over
    ``activemask()`` on CUDA); ``p`` itself in Python (the simulator, where
    the choice it makes changes no bit)."""
    return p


@overload(warp_all, target="cuda")
def _warp_all_cuda(p):
    return lambda p: cuda.all_sync(cuda.activemask(), p)


def float64_kernel(fn):
    """The float64 device kernel of catalog record ``fn``: its ordinary form
    for warps all in range where it has one (:data:`_ORDINARY_SWITCH`),
    else ``fn.k64``."""
    if fn.ordinary is None:
        return fn.k64
    in_range, form = fn.ordinary
    scope = {"warp_all": warp_all, "in_range": in_range, "ordinary": inline(form),
             "general": inline(fn.k64)}
    exec(_ORDINARY_SWITCH.format(name=fn.name, args=", ".join(fn.params)), scope)
    return scope[f"{fn.name}_float64"]


def device_function(fn, doc=None, full_fp64=False):
    """A lazily compiled CUDA device function of catalog record ``fn``:
    the float32 kernel for all-float32 arguments, else the float64 one.
    The float32 kernel is the GPU's own where the record has one (float32
    arithmetic), or with ``full_fp64`` the CPU's (float64 arithmetic: the
    better bound, for devices that run FP64 at half their FP32 rate)."""
    args = ", ".join(fn.params)
    k32 = fn.k32 if full_fp64 else (fn.k32_gpu or fn.k32)
    k64 = float64_kernel(fn)

    def pick(values):  # (pure-Python execution: the simulator)
        return k32 if all(isinstance(v, np.float32) for v in values) else k64

    scope = {"pick": pick, "k32": k32, "k64": k64, "all_float32": _all_float32}
    exec(_SWITCH.format(args=args, name=fn.name), scope)
    overload(scope["choose"], target="cuda")(scope["typing"])
    dev = cuda.jit(device=True)(scope[fn.name])
    dev.__name__ = dev.__qualname__ = fn.name
    if doc is not None:
        dev.__doc__ = doc
    return dev


def _index_code(names, ndims, full, out_ndim, flat):
    """Index expressions of each operand inside the loop over ``i``.

    ``flat``: every operand is a 1-D view of the same length (index ``i``).
    Otherwise ``j0 .. j{D-1}`` are the output's indices; an operand of rank
    ``d`` takes the trailing ``d`` of them, clamped to its extent unless it
    has the output's shape (``full``), which broadcasts size-1 dimensions.
    """
    if flat:
        return [], ["i"] * len(names)
    lines = ["r = i"]
    for k in range(out_ndim - 1, 0, -1):
        lines.append(f"j{k} = r % out.shape[{k}]")
        lines.append(f"r = r // out.shape[{k}]")
    lines.append("j0 = r")
    idx = []
    for name, d, f in zip(names, ndims, full):
        js = [f"j{out_ndim - d + k}" for k in range(d)]
        if not f:
            js = [f"min({j}, {name}.shape[{k}] - 1)" for k, j in enumerate(js)]
        idx.append(", ".join(js))
    return lines, idx


def generate(template, scope, **fields):
    """Compile generated kernel source (a ``@cuda.jit`` function named
    ``kernel``) with ``scope`` as its globals."""
    source = template.format(**fields)
    namespace = dict(scope, cuda=cuda, np=np, math=math)
    exec(compile(source, "<gelu_numba.gpu kernel>", "exec"), namespace)
    return cuda.jit(namespace["kernel"])


_ELEMENTWISE = """
def kernel({args}, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
{unravel}
        out[{out_index}] = dev({loads})
"""


# Contiguous operands: UNROLL elements per thread and trip, all loaded
# before any is computed.  With one 4-byte load in flight per thread, an
# H100 SM (2048 threads) has 8 KiB outstanding, about half of what its share
# of HBM bandwidth times latency needs, and float32 gelu ran at 46 % of a
# copy's bandwidth (analysis/gpu_throughput.py).
# The indices are unsigned (uint64 throughout: a mixed signed/unsigned sum
# would be a float64 in Numba): with a signed index Numba adds the length to
# a negative one, about 5 integer instructions per array and element that
# ptxas cannot drop (python -m analysis.gpu_sass counts the loop; the rows of
# benchmarks/results/gpu_sass_sm90.md are with unsigned indices).
#
# With ``tables`` (a kernel whose coefficient tables are an argument:
# gelu_numba.kernels.normal32_cpu_f64.WITH_TABLES) the kernel takes them as
# one float64 array ``coef`` after the inputs and reads them into a tuple
# before its loop, where ptxas keeps them in registers instead of moving
# each float64 literal into registers for every element.
FLAT_LOOP = """
def kernel({args}, out):
    n = np.uint64(out.size)
    step = np.uint64(cuda.gridsize(1))
    i = np.uint64(cuda.grid(1))
    s0 = np.uint64(0)
{offsets}
{setup}
    while i + s{last} < n:
{loads}
{stores}
        i += s{unroll}
    while i < n:
        out[i] = dev({tail})
        i += step
"""


def flat_fields(nin, unroll, tables=None, passed=None):
    """Fields of :data:`FLAT_LOOP` for ``nin`` inputs.  ``tables``: read into
    registers before the loop (see above); ``passed``: the name of one more
    argument (after the inputs) handed to every call of ``dev`` as it is (a
    table the kernel indexes per element)."""
    names = [f"a{k}" for k in range(nin)]
    pad = " " * 8
    offsets = [f"    s{u} = s{u - 1} + step" for u in range(1, unroll + 1)]
    loads = [f"{pad}v{k}_{u} = cast({n}[i + s{u}])"
             for u in range(unroll) for k, n in enumerate(names)]
    extra, setup, args = "", "", ", ".join(names)
    if tables is not None:
        extra, args = ", t", args + ", coef"
        at, parts = 0, []
        for part in tables:
            parts.append("(" + "".join(f"coef[{at + j}], " for j in range(len(part))) + ")")
            at += len(part)
        setup = "    t = (" + ", ".join(parts) + ",)"
    if passed is not None:
        extra, args = f", {passed}", args + f", {passed}"
    stores = [f"{pad}out[i + s{u}] = dev("
              + ", ".join(f"v{k}_{u}" for k in range(nin)) + extra + ")"
              for u in range(unroll)]
    return {"args": args, "last": unroll - 1, "unroll": unroll,
            "offsets": "\n".join(offsets), "setup": setup, "loads": "\n".join(loads),
            "stores": "\n".join(stores),
            "tail": ", ".join(f"cast({n}[i])" for n in names) + extra}


def loop_fields(layout, nin, pad, passed=None):
    """Template fields for ``nin`` inputs ``a0 ..`` and ``out`` laid out as
    ``layout`` (see :func:`operands`): the unravelling lines, the output
    index and each input's converted load.  ``passed``: as in
    :func:`flat_fields`."""
    flat, out_ndim, ndims, full = layout
    names = [f"a{k}" for k in range(nin)]
    lines, idx = _index_code(names + ["out"], ndims + (out_ndim,),
                             full + (True,), out_ndim, flat)
    extra = "" if passed is None else f", {passed}"
    return {"args": ", ".join(names) + extra,
            "unravel": "\n".join(" " * pad + line for line in lines),
            "out_index": idx[-1],
            "loads": ", ".join(f"cast({n}[{j}])" for n, j in zip(names, idx)) + extra}


# ------------------------------------------------------------------ host side

def launch_config(n):
    """``(blocks, threads_per_block)`` for ``n`` elements on the current
    device (a grid-stride loop covers the rest)."""
    if SIMULATOR:
        return max(1, min(4, n)), 1
    return grid_blocks(n, THREADS_PER_BLOCK, _sm_count() * BLOCKS_PER_SM), THREADS_PER_BLOCK


def grid_blocks(n, threads, max_blocks):
    """Blocks of ``threads`` for ``n`` elements: one element per thread up
    to ``max_blocks`` (a grid-stride loop covers the rest), at least one."""
    return max(min(-(-n // threads), max_blocks), 1)


_SMS = {}


def _sm_count():
    """Multiprocessors of the current device (cached per device)."""
    dev = cuda.get_current_device()
    sms = _SMS.get(dev.id)
    if sms is None:
        sms = _SMS[dev.id] = dev.MULTIPROCESSOR_COUNT
    return sms


def launch(kernel, blocks, threads, stream, args):
    if blocks >= 128 and not SIMULATOR:
        kernel[blocks, threads, stream](*args)
        return
    with warnings.catch_warnings():
        # a small array needs few blocks: numba-cuda's low-occupancy warning
        # (below 128 blocks) would fire on every call and says nothing the
        # caller can act on
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        if SIMULATOR:
            # the simulator runs kernels on NumPy scalars, which warn on
            # overflow and invalid operations (the SOI generator's intended
            # uint64 wraparound, inf * 0 in an unused branch); a GPU raises
            # no floating-point exceptions.  The filter is process-wide, so
            # it also covers the simulator's thread per CUDA thread.
            warnings.simplefilter("ignore", RuntimeWarning)
        kernel[blocks, threads, stream](*args)


def _is_device(value):
    # (the simulator's arrays have no __cuda_array_interface__)
    return (getattr(value, "__cuda_ndarray__", False)
            or hasattr(value, "__cuda_array_interface__"))


def _as_device_view(value):
    # a numba device array is used as is: re-importing it through the
    # interface would synchronise on its stream
    if getattr(value, "__cuda_ndarray__", False):
        return value
    return cuda.as_cuda_array(value)


def _check_dtype(fname, dtype):
    dtypes.loop_for(fname, dtype)


def prepare_inputs(fname, args, stream):
    """Device views of the inputs (host arrays and scalars are copied to the
    device) and the loop character ``"f"`` or ``"d"``.

    Python scalars are weak in the loop choice, as in NumPy: ``f(x32, 2.0)``
    runs in float32.
    """
    views, found = [], []
    for a in args:
        if _is_device(a):
            view = _as_device_view(a)
            _check_dtype(fname, view.dtype)
            views.append(view)
            found.append(np.dtype(view.dtype))
            continue
        if type(a) in (float, int, bool):
            found.append(a)
            host = np.asarray(a, dtype=np.float64)
        else:
            if isinstance(a, (list, tuple)) or hasattr(a, "__array__") or np.isscalar(a):
                host = np.asarray(a)
            else:
                raise TypeError(
                    f"{fname}() takes {_DEVICE_TEXT}, a NumPy array or a "
                    f"real scalar; got {type(a).__name__}")
            _check_dtype(fname, host.dtype)
            found.append(host.dtype)
        views.append(cuda.to_device(np.asarray(host, order="C"), stream=stream))
    return views, dtypes.loop_for(fname, *found)


def broadcast_shape(fname, views):
    try:
        return np.broadcast_shapes(*(v.shape for v in views))
    except ValueError:
        shapes = ", ".join(str(v.shape) for v in views)
        raise ValueError(f"{fname}(): input shapes {shapes} do not broadcast "
                         "together") from None


def prepare_out(fname, out, shape, loop, stream):
    """The output as a device view (allocated when ``out`` is None)."""
    if out is None:
        return cuda.device_array(shape, dtype=_FLOAT[loop], stream=stream)
    if not _is_device(out):
        raise TypeError(f"{fname}() out= must be {_DEVICE_TEXT}, got "
                        f"{type(out).__name__} (results stay on the device; "
                        "copy them with .copy_to_host())")
    view = _as_device_view(out)
    if np.dtype(view.dtype).char not in "fd" or not np.can_cast(
            _FLOAT[loop], view.dtype, "same_kind"):
        raise TypeError(f"{fname}() out= must have dtype float32 or float64 "
                        f"that the {_FLOAT[loop]} result casts to, got "
                        f"{view.dtype}")
    if tuple(view.shape) != tuple(shape):
        raise ValueError(f"{fname}() out= has shape {tuple(view.shape)}, "
                         f"the inputs broadcast to {tuple(shape)}")
    return view


def operands(views, dst, shape):
    """The views a kernel runs on, and their layout (part of the kernel's
    cache key): ``(flat, out_ndim, input ndims, input has out's shape)``.

    Operands of one shape, all C- or all F-contiguous, become 1-D views in
    memory order (``flat``); otherwise rank-0 operands become 1-element
    vectors, which the N-D loop broadcasts by clamping.
    """
    n = math.prod(shape)
    order = None
    if all(tuple(v.shape) == tuple(shape) for v in views):
        order = _contiguous_order(views + [dst])
    if order is not None:
        # (1-D operands are used as they are: a reshape costs microseconds)
        views = [v if v.ndim == 1 else v.reshape(n, order=order) for v in views]
        target = dst if dst.ndim == 1 else dst.reshape(n, order=order)
    else:
        views = [v.reshape(1) if v.ndim == 0 else v for v in views]
        target = dst.reshape(1) if dst.ndim == 0 else dst
    layout = (order is not None, target.ndim, tuple(v.ndim for v in views),
              tuple(tuple(v.shape) == tuple(target.shape) for v in views))
    return views, target, layout


def flat_layout(nin):
    """The layout (see :func:`operands`) of ``nin`` inputs and the output
    as 1-D views of one length: the flat loop's."""
    return (True, 1, (1,) * nin, (True,) * nin)


def _contiguous_order(views):
    """``"C"`` or ``"F"`` if every view is contiguous in that order."""
    for order, test in (("C", "is_c_contiguous"), ("F", "is_f_contiguous")):
        if all(getattr(v, test)() for v in views):
            return order
    return None


class GpuFunction:
    """A package function on device arrays (see :mod:`gelu_numba.gpu`).

    ``f(*inputs, out=None, stream=0)``: inputs are device arrays (numba's,
    or anything with ``__cuda_array_interface__``), host NumPy arrays or
    scalars (copied to the device), float32 or float64 (other real dtypes
    follow NumPy's safe casting), any shape and strides, broadcast together.
    Returns a device array (``out`` when given); never copies to the host.
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

    def __call__(self, *args, out=None, stream=0):
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} input"
                            f"{'s' if self.nin > 1 else ''} ({len(args)} given)")
        if FAST_LAUNCH:
            done = self._fast_call(args, out, stream)
            if done is not None:
                return done
        return self._call(args, out, stream)

    def _call(self, args, out, stream):
        """The general path: any operands numba-cuda can import."""
        views, loop = prepare_inputs(self.__name__, args, stream)
        shape = broadcast_shape(self.__name__, views)
        dst = prepare_out(self.__name__, out, shape, loop, stream)
        n = math.prod(shape)
        if n:
            self.launch(views, dst, shape, loop, stream)
        return dst if out is None else out

    def launch(self, views, dst, shape, loop, stream):
        views, target, layout = operands(views, dst, shape)
        blocks, threads = launch_config(math.prod(shape))
        launch(self.kernel(loop, layout), blocks, threads, stream,
               (*views, *self.fixed_arguments(loop, layout).values(), target))

    #: the device function whose float32 kernel computes in float64, for
    #: devices with full-rate FP64 (:func:`full_rate_fp64`), where the record
    #: has a float32-arithmetic one too; a callable, None where it has not
    fp64_device = None
    #: ``(device function, tables)`` of that kernel in the form that takes
    #: its coefficient tables as an argument (the flat kernel's), or None
    fp64_tables = None

    #: the device function of the lean float32 kernel
    #: (:mod:`gelu_numba.kernels.lean32`, its table the last argument),
    #: which devices without full-rate FP64 launch; a callable, or None
    lean = None
    #: a variant to run whatever the device (analysis.gpu_peers' lean
    #: peers), or None: :meth:`variant` chooses by the device
    forced = None

    def variant(self, loop, fp64=None, lean=None):
        """The float32 kernel loop ``loop`` runs: ``"fp64"`` (float64
        arithmetic), ``"lean"``, ``"f32"`` (float32 arithmetic, the device
        function's), or None (not the float32 loop, or a record with one
        float32 kernel).  ``fp64``, ``lean``: force the choice either way
        (analysis.gpu_sass, analysis.gpu_throughput)."""
        if loop != "f" or self.fp64_device is None:
            return None
        if fp64 is None and lean is None and self.forced is not None:
            return self.forced
        if full_rate_fp64() if fp64 is None else fp64:
            return "fp64"
        return "lean" if self.lean is not None and lean is not False else "f32"

    def _fp64(self, loop, fp64=None):
        """Whether loop ``loop`` runs the float64-arithmetic float32 kernel."""
        return self.variant(loop, fp64) == "fp64"

    def tables_argument(self, loop, layout, fp64=None):
        """Whether :meth:`kernel` takes the coefficient tables as an argument
        (one float64 array after the inputs)."""
        return bool(layout[0] and self.fp64_tables is not None and self._fp64(loop, fp64))

    def fixed_arguments(self, loop, layout, fp64=None, lean=None):
        """``{position: device array}``: the arguments of :meth:`kernel`
        beside the operands (the coefficient tables or the lean kernel's
        table, after the inputs), on the current device."""
        if self.tables_argument(loop, layout, fp64):
            return {self.nin: _coefficients(self.__name__, self.fp64_tables[1],
                                            _device_key())}
        if self.variant(loop, fp64, lean) == "lean":
            return {self.nin: _lean_table(self.__name__, _device_key())}
        return {}

    def kernel(self, loop, layout, fp64=None, lean=None):
        """The ``@cuda.jit`` kernel of loop ``loop`` over operands laid out
        as ``layout`` (see :func:`operands`), generated on first use: the
        float32 kernel of :meth:`variant` (its tables or table, where it
        takes them as an argument: :meth:`fixed_arguments`)."""
        variant = self.variant(loop, fp64, lean)
        key = (loop, layout, UNROLL, variant)
        kernel = self._kernels.get(key)
        if kernel is None:
            tables = variant == "fp64" and self.tables_argument(loop, layout, True)
            dev = (self.fp64_tables[0]() if tables else self.fp64_device()
                   if variant == "fp64" else self.lean() if variant == "lean" else self.device)
            scope = {"dev": dev, "cast": CAST[loop]}
            passed = "tab" if variant == "lean" else None
            if tables:
                kernel = generate(FLAT_LOOP, scope, **flat_fields(self.nin, UNROLL,
                                                               self.fp64_tables[1]))
            elif layout[0]:
                kernel = generate(FLAT_LOOP, scope, **flat_fields(self.nin, UNROLL,
                                                               passed=passed))
            else:
                kernel = generate(_ELEMENTWISE, scope,
                                  **loop_fields(layout, self.nin, 8, passed=passed))
            self._kernels[key] = kernel
        return kernel

    def _fast_call(self, args, out, stream):
        """The call below numba-cuda's dispatcher (see :class:`FastLaunch`),
        or None where it does not apply."""
        operands_ = fast_operands(args if out is None else (*args, out),
                                  _stream_handle(stream), writable_last=out is not None)
        if operands_ is None:
            return None
        loop, shape, n, pointers = operands_
        launcher = self._fast_launcher(loop)
        if launcher is None:
            return None
        if out is None:
            out = cuda.device_array(shape, dtype=_FLOAT[loop], stream=stream)
            pointers = (*pointers, out.device_ctypes_pointer.value)
        launcher(pointers, n, stream)
        return out

    def fast_launcher(self, loop):
        """This function's :class:`FastLaunch` for ``loop`` (``"f"`` or
        ``"d"``) on numba's current device, or None where there is none (the
        simulator; a launcher that failed its check).  For callers that hold
        raw device pointers, e.g. :mod:`gelu_numba.targets.torch_op`
        (:meth:`FastLaunch.on_handle`)."""
        return self._fast_launcher(loop) if FAST_LAUNCH else None

    def _fast_launcher(self, loop):
        """This function's :class:`FastLaunch` for ``loop`` on the current
        device and the current launch constants: built and checked on first
        use, None if it failed its check."""
        key = fast_key(loop)
        try:
            return self._fast[key]
        except KeyError:
            pass
        probe = _PROBE.astype(_FLOAT[loop])
        layout = flat_layout(self.nin)
        launcher = checked_launcher(
            f"gelu_numba.gpu.{self.__name__}",
            lambda: FastLaunch(self.kernel(loop, layout), self.nin, loop,
                               fixed=self.fixed_arguments(loop, layout)),
            lambda fast: fast.agrees([probe] * self.nin,
                                     lambda xs, out: self._call(tuple(xs), out, 0)))
        self._fast[key] = launcher
        return launcher


# ------------------------------------------------------------ fast launches

#: the probe of special and ordinary values on which a float launcher must
#: give the general path's bits before its first use
_PROBE = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -3.5, 7.25, -10.0, 40.0, -40.0, 1e-30, -1e-30,
                   np.inf, -np.inf, np.nan] + list(np.linspace(-8, 8, 1009)))


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
FAST_LAUNCH = not SIMULATOR
#: ``__cuda_array_interface__`` typestr -> loop of the fast launch
_FAST_LOOPS = {dtype.newbyteorder("<").str: loop for loop, dtype in _FLOAT.items()}


def fast_key(loop):
    """The key of a :class:`FastLaunch` in ``GpuFunction._fast``: the loop,
    the current device and the launch constants."""
    return (loop, _current_device_id(), UNROLL, THREADS_PER_BLOCK, BLOCKS_PER_SM)


def _stream_handle(stream):
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


def pack_arguments(pointers, n, itemsize, fixed=None):
    """The kernel parameters of the flat loop over 1-D C-contiguous arrays
    of ``n`` elements at ``pointers`` (:func:`pack_array` each), with
    ``fixed``'s packed arrays (a device table, say: ``{position: words}``)
    put in at their positions."""
    args = []
    for p in pointers:
        args += pack_array(p, n, itemsize)
    if fixed:
        for at, words in fixed.items():
            args[7 * at:7 * at] = words
    return args


def _current_device_id():
    return numba_cuda.current_device_id()


def launch_signature(dtype, nin, fixed=None):
    """The kernel signature a :class:`FastLaunch` compiles: ``nin + 1``
    C-contiguous 1-D arrays of ``dtype`` (the inputs, then the output), with
    ``fixed``'s arrays (``{position: dtype}``: the tables passed in every
    launch) inserted at their positions."""
    argtypes = [types.Array(from_dtype(np.dtype(dtype)), 1, "C")] * (nin + 1)
    for at, fixed_dtype in sorted((fixed or {}).items()):
        argtypes.insert(at, types.Array(from_dtype(np.dtype(fixed_dtype)), 1, "C"))
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
    built; grid configurations and the stream
    objects of ``cuda.core`` are cached (weakly, per numba stream; a stream
    that takes no weak reference is converted on each call).

    The driver launches on the calling thread's current context, and a
    thread may have none: PyTorch's autograd workers run the backward with
    no context bound (2.11 on an H200: CUDA_ERROR_INVALID_CONTEXT), where
    numba-cuda's own launch would bind one.  So the first launch on each
    thread binds this device's primary context (``cuda.current_context``,
    as numba-cuda does) if none is current.
    """

    def __init__(self, dispatcher, nin, loop, dtype=None, fixed=None):
        from cuda.core import LaunchConfig, Stream, launch as core_launch

        dtype = np.dtype(_FLOAT[loop] if dtype is None else dtype)
        fixed = fixed or {}
        self._fixed = {at: pack_array(array.device_ctypes_pointer.value, array.size,
                                      array.dtype.itemsize)
                       for at, array in sorted(fixed.items(), key=lambda item: item[0])}
        compiled = dispatcher.compile(launch_signature(
            dtype, nin, {at: array.dtype for at, array in fixed.items()}))
        self._kernel = numba_cuda.kernel_handle(compiled)
        self._itemsize = dtype.itemsize
        self._threads = THREADS_PER_BLOCK
        self._max_blocks = _sm_count() * BLOCKS_PER_SM  # (of this device)
        self._launch = core_launch
        self._config = LaunchConfig
        self._configs = {}
        self._to_core_stream = numba_cuda.core_stream
        self._default_stream = numba_cuda.core_stream(0)
        self._streams = weakref.WeakKeyDictionary()
        self._from_handle = Stream.from_handle
        self._handles = {}
        self._device_id = _current_device_id()
        self._bound = threading.local()

    def _bind(self):
        cuda.current_context(self._device_id)
        self._bound.done = True

    def _grid(self, n):
        blocks = grid_blocks(n, self._threads, self._max_blocks)
        config = self._configs.get(blocks)
        if config is None:
            config = self._configs[blocks] = self._config(grid=blocks, block=self._threads)
        return config

    def on_handle(self, pointers, n, handle):
        """Launch over ``n`` elements at ``pointers`` (inputs, then out) on
        the CUDA stream whose driver handle is the int ``handle`` (PyTorch's
        ``torch.cuda.Stream.cuda_stream``; 0 is the legacy default stream).
        The ``cuda.core`` stream of each handle is made once and kept: the
        caller's streams must outlive it (PyTorch's pool streams do)."""
        if not hasattr(self._bound, "done"):
            self._bind()
        core_stream = self._handles.get(handle)
        if core_stream is None:
            core_stream = self._handles[handle] = self._from_handle(handle)
        self._launch(core_stream, self._grid(n), self._kernel,
                     *pack_arguments(pointers, n, self._itemsize, self._fixed))

    def __call__(self, pointers, n, stream):
        if not hasattr(self._bound, "done"):
            self._bind()
        config = self._grid(n)
        if isinstance(stream, int):  # (0: _stream_handle admits no other int)
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
                     *pack_arguments(pointers, n, self._itemsize, self._fixed))

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


# ------------------------------------------------------------- registries

@functools.cache
def device(name, full_fp64=False):
    """The device function of catalog function ``name``, built once (the
    object :mod:`gelu_numba.gpu.device` publishes, with its documentation);
    ``full_fp64``: the variant whose float32 kernel computes in float64
    (:func:`device_function`)."""
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


@functools.cache
def gpu_function(name):
    """The :class:`GpuFunction` of catalog function ``name``, built once (the
    object :mod:`gelu_numba.gpu` publishes, with its documentation)."""
    fn = catalog.lookup(name)
    f = GpuFunction(name, device(name), fn.nin, None)
    if fn.k32_gpu is not None:  # (a float32 kernel of each arithmetic)
        f.fp64_device = functools.partial(device, name, True)
        tabled = normal32_cpu_f64.WITH_TABLES.get(fn.k32)
        if tabled is not None:
            f.fp64_tables = (functools.partial(_tabled_device, name), tabled[1])
        if name in lean32.NAMES:
            f.lean = functools.partial(_lean_device, name)
    return f


def _lean_kernel(name):
    """``(core, table)`` of ``name``'s lean float32 kernel: the scalar
    kernel that takes its table as the last argument, and the table."""
    return lean32.WITH_TABLE[getattr(lean32, name)]


@functools.cache
def _lean_device(name):
    """The device function of ``name``'s lean float32 kernel."""
    return cuda.jit(device=True)(_lean_kernel(name)[0].py_func)


@functools.cache
def _lean_table(name, device_id):
    """``name``'s lean-kernel table (float32) on device ``device_id``."""
    return cuda.to_device(_lean_kernel(name)[1])


@functools.cache
def _tabled_device(name):
    """The device function of ``name``'s float64-arithmetic float32 kernel
    in the form that takes its tables as the last argument."""
    core, _ = normal32_cpu_f64.WITH_TABLES[catalog.lookup(name).k32]
    return cuda.jit(device=True)(core.py_func)


def _device_key():
    # (the simulator's device has no id: one device)
    return getattr(cuda.get_current_device(), "id", 0)


@functools.cache
def _coefficients(name, tables, device_id):
    """``tables`` (a tuple of tuples of float64) as one device array on
    device ``device_id``, in order."""
    return cuda.to_device(np.array([c for part in tables for c in part], dtype=np.float64))
