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
    record's ``k32_gpu`` (:mod:`gelu_numba.kernels.normal_f32`: float32
    arithmetic, no FP64 instruction), not the CPU's float64-arithmetic one.
    The target-dependent primitives of :mod:`gelu_numba.kernels.primitives`
    compile to ``fma.rn``, ``add.rn``/``mul.rn`` and integer instructions,
    so no formula exists twice.

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
"""

import math
import warnings

import numpy as np
from numba import cuda
from numba.core import config, types
from numba.extending import overload

try:  # numba-cuda's own warning class (numba-cuda >= 0.2x)
    from numba.cuda.core.errors import NumbaPerformanceWarning
except ImportError:  # pragma: no cover
    from numba.core.errors import NumbaPerformanceWarning

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


def device_function(fn, doc=None):
    """A lazily compiled CUDA device function of catalog record ``fn``:
    the float32 kernel for all-float32 arguments, else the float64 one."""
    args = ", ".join(fn.params)
    # float32: the GPU's own kernel where the record has one (float32
    # arithmetic; the CPU's computes in float64)
    k32 = fn.k32_gpu or fn.k32

    def pick(values):  # (pure-Python execution: the simulator)
        return k32 if all(isinstance(v, np.float32) for v in values) else fn.k64

    scope = {"pick": pick, "k32": k32, "k64": fn.k64, "all_float32": _all_float32}
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
_FLAT = """
def kernel({args}, out):
    n = out.size
    step = cuda.gridsize(1)
    i = cuda.grid(1)
    while i + {last} * step < n:
{loads}
{stores}
        i += {unroll} * step
    while i < n:
        out[i] = dev({tail})
        i += step
"""


def _flat_fields(nin, unroll):
    names = [f"a{k}" for k in range(nin)]
    pad = " " * 8
    loads = [f"{pad}v{k}_{u} = cast({n}[i + {u} * step])"
             for u in range(unroll) for k, n in enumerate(names)]
    stores = [f"{pad}out[i + {u} * step] = dev("
              + ", ".join(f"v{k}_{u}" for k in range(nin)) + ")"
              for u in range(unroll)]
    return {"args": ", ".join(names), "last": unroll - 1, "unroll": unroll,
            "loads": "\n".join(loads), "stores": "\n".join(stores),
            "tail": ", ".join(f"cast({n}[i])" for n in names)}


def loop_fields(layout, nin, pad):
    """Template fields for ``nin`` inputs ``a0 ..`` and ``out`` laid out as
    ``layout`` (see :func:`operands`): the unravelling lines, the output
    index and each input's converted load."""
    flat, out_ndim, ndims, full = layout
    names = [f"a{k}" for k in range(nin)]
    lines, idx = _index_code(names + ["out"], ndims + (out_ndim,),
                             full + (True,), out_ndim, flat)
    return {"args": ", ".join(names),
            "unravel": "\n".join(" " * pad + line for line in lines),
            "out_index": idx[-1],
            "loads": ", ".join(f"cast({n}[{j}])" for n, j in zip(names, idx))}


# ------------------------------------------------------------------ host side

def launch_config(n):
    """``(blocks, threads_per_block)`` for ``n`` elements on the current
    device (a grid-stride loop covers the rest)."""
    if SIMULATOR:
        return max(1, min(4, n)), 1
    blocks = min(-(-n // THREADS_PER_BLOCK), _sm_count() * BLOCKS_PER_SM)
    return max(blocks, 1), THREADS_PER_BLOCK


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

    def __repr__(self):
        return f"<gelu_numba.gpu.{self.__name__}>"

    def __call__(self, *args, out=None, stream=0):
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} input"
                            f"{'s' if self.nin > 1 else ''} ({len(args)} given)")
        views, loop = prepare_inputs(self.__name__, args, stream)
        shape = broadcast_shape(self.__name__, views)
        dst = prepare_out(self.__name__, out, shape, loop, stream)
        n = math.prod(shape)
        if n:
            self.launch(views, dst, shape, loop, stream)
        return dst if out is None else out

    def launch(self, views, dst, shape, loop, stream):
        views, target, layout = operands(views, dst, shape)
        key = (loop, layout, UNROLL)
        kernel = self._kernels.get(key)
        if kernel is None:
            scope = {"dev": self.device, "cast": CAST[loop]}
            if layout[0]:
                kernel = generate(_FLAT, scope, **_flat_fields(self.nin, UNROLL))
            else:
                kernel = generate(_ELEMENTWISE, scope,
                                  **loop_fields(layout, self.nin, 8))
            self._kernels[key] = kernel
        blocks, threads = launch_config(math.prod(shape))
        launch(kernel, blocks, threads, stream, (*views, target))
