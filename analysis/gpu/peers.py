"""The GELUs of the libraries users run on the GPU, on numba device arrays:
for the throughput report (:mod:`analysis.gpu.throughput`) and the GPU
sweep (``python -m analysis.sweep_float32 --device gpu --peers ...``).

Each peer is a name, the gelu_numba function it computes (or approximates:
``torch_gelu_tanh`` is judged against the exact GELU, as users who call it
for GELU get it) and a factory that returns ``(call, runs_on_stream)``:
``call(*inputs)`` takes float32/float64 numba device arrays (``(x,)``, or
``(dy, x)`` for gelu_backward), wraps them without a copy
(``__cuda_array_interface__``, or DLPack for JAX), runs the library's
operation as its users call it (a new output array from its own allocator)
and returns the result (an object with ``__cuda_array_interface__``; JAX's
asynchronously: wait with ``block_until_ready()``).  ``runs_on_stream(stream)``
is a context manager that makes the library launch on the numba stream
``stream``, so that CUDA events recorded there time it; JAX has none (it
launches on streams of its own) and is timed by the host around
``block_until_ready``.  A factory raises :class:`Unavailable` where the
library or its GPU support is missing; :func:`available` collects them.

=====================  ========================================================
peer                   operation
=====================  ========================================================
torch_gelu             ``torch.nn.functional.gelu(x)`` (CUDA, erf form)
torch_gelu_tanh        ``torch.nn.functional.gelu(x, approximate="tanh")``
torch_gelu_backward    ``torch.ops.aten.gelu_backward(dy, x)``
jax_gelu               ``jax.jit(lambda v: jax.nn.gelu(v, approximate=False))``
jax_gelu_tanh          ``jax.jit(jax.nn.gelu)`` (JAX's default: tanh form)
cupy_erfc_f64          CuPy ``ElementwiseKernel``: ``x * 0.5 * erfc(-x * 0.7071...)``
                       with double literals (double arithmetic)
cupy_erfcf             the same in float: ``x * 0.5f * erfcf(-x * 0.70710678f)``
=====================  ========================================================

More entries are not libraries: ``gelu_numba_f64_arith`` and
``gelu_numba_f64_arith_backward`` are gelu_numba's float32 ``gelu`` and
``gelu_backward`` in float64 arithmetic (``gelu_numba_f64_arith_<name>``:
the same for ``gelu_grad``, ``gelu_grad2``, ``ndtr`` and ``norm_pdf``, so
that a sweep covers every float32 kernel a device with full-rate FP64
launches; their literal form, the same bits) (the CPU's kernels, 0.508 ulp; the
GPU's until 2026-11-24), launched like ``gelu_numba.gpu``'s (into one output
per shape and dtype, reused: the result of a call is overwritten by the
next; the rows of ``gelu_numba.gpu`` are timed with ``out=`` too). They
answer a question no static count settles: on a GPU whose FP64 runs at half
its FP32 rate (P100, V100, A100, H100), is the float32 kernel in float64
arithmetic as fast as the one in float32 arithmetic? Its SASS has no more
instructions per element of the launched loop (``gelu`` 147.5 against 144,
``gelu_backward`` 163 against 213: ``analysis/gpu/sass.py``) and it is more
accurate; where it is as fast, such devices could be given it.

``gelu_numba_lean32_<name>`` (``gelu``, ``ndtr``, ``gelu_grad``,
``gelu_backward``: the catalog records with ``lean32``) is the float32
kernel devices without full-rate FP64 launch (the lean kernel, its table an
argument), forced whatever the device: the sweep on any GPU covers it.

Written and tested without a GPU (the factories' ``Unavailable`` paths and
the adapters' wiring through the simulator's arrays are all that could
run): the first run on a GPU is its real test.
"""

from __future__ import annotations

import contextlib
import os

from gelu_numba import catalog


class Unavailable(RuntimeError):
    """The peer's library, or its GPU support, is not installed here."""


def _stream_handle(stream) -> int:
    """The CUstream of a numba stream, as an integer."""
    h = getattr(stream, "handle", stream)
    return int(getattr(h, "value", h) or 0)


# ---------------------------------------------------------------- PyTorch

def _torch():
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"PyTorch is not installed ({e})") from None
    if not torch.cuda.is_available():
        raise Unavailable(f"PyTorch {torch.__version__} has no CUDA device here")
    return torch


def _torch_stream(torch):
    def runs_on_stream(stream):
        return torch.cuda.stream(torch.cuda.ExternalStream(_stream_handle(stream)))
    return runs_on_stream


def _torch_tensor(torch, a):
    """A CUDA array as a tensor without a copy; uint16 as bfloat16 (its bit
    patterns: NumPy has no bfloat16)."""
    t = torch.as_tensor(a, device="cuda")
    return t.view(torch.bfloat16) if t.dtype == torch.uint16 else t


def _torch_peer(op):
    def factory():
        torch = _torch()

        def call(*arrays):
            return op(torch, *(_torch_tensor(torch, a) for a in arrays))

        return call, _torch_stream(torch)
    return factory


# -------------------------------------------------------------------- JAX

def _jax_peer(approximate):
    def factory():
        # JAX would take 75 % of the GPU's memory at its first array; numba
        # and PyTorch allocate beside it here
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        try:
            import jax
        except ImportError as e:
            raise Unavailable(f"JAX is not installed ({e})") from None
        try:
            jax.devices("gpu")
        except RuntimeError as e:
            raise Unavailable(f"JAX {jax.__version__} has no GPU backend here ({e})") from None
        torch = _torch()            # JAX reads CUDA memory through DLPack
        f = jax.jit(lambda v: jax.nn.gelu(v, approximate=approximate))

        def call(x):
            # asynchronous: the caller waits with block_until_ready()
            return f(jax.dlpack.from_dlpack(torch.as_tensor(x, device="cuda")))

        return call, None
    return factory


# ------------------------------------------------------------------- CuPy

_CUPY_BODY = {
    "cupy_erfc_f64": "y = x * 0.5 * erfc(-x * 0.7071067811865476)",
    "cupy_erfcf": "y = x * 0.5f * erfcf(-x * 0.70710678f)",
}


def _cupy_peer(name):
    def factory():
        try:
            import cupy
        except ImportError as e:
            raise Unavailable(f"CuPy is not installed ({e})") from None
        kernel = cupy.ElementwiseKernel("float32 x", "float32 y", _CUPY_BODY[name], name)

        def call(x):
            return kernel(cupy.asarray(x))

        def runs_on_stream(stream):
            return cupy.cuda.ExternalStream(_stream_handle(stream))

        return call, runs_on_stream
    return factory


def _gelu_numba_peer(function, lean32=False):
    """gelu_numba.gpu's ``function`` as it runs float32 on another device:
    in float64 arithmetic (devices with full-rate FP64), or (``lean32``) the
    lean kernel (devices without), whatever this device's FP64 rate."""
    def factory():
        import dataclasses

        from numba import cuda

        from gelu_numba import catalog
        from gelu_numba.targets.cuda import GpuFunction, device_function, gpu_function

        if lean32:
            gf = gpu_function.__wrapped__(function)    # (a fresh one)
            gf.forced = "lean32"
        else:
            # the record without its GPU kernel: device_function then compiles
            # the float32 kernel in float64 arithmetic (k32) for float32 inputs
            fn = dataclasses.replace(catalog.lookup(function), gpu32=None)
            gf = GpuFunction(f"{function}_f64_arith", device_function(fn), fn.nin,
                             f"{function}, float32 in float64 arithmetic")
        current = [0]
        outs = {}

        def call(*arrays):
            # one output per shape and dtype, reused (and overwritten by the
            # next call): the kernel is what is compared, as in the rows of
            # gelu_numba.gpu, which are timed with out=
            x = arrays[-1]
            key = (x.shape, x.dtype.str)
            if key not in outs:
                outs.clear()
                outs[key] = cuda.device_array(x.shape, x.dtype)
            return gf(*arrays, out=outs[key], stream=current[0])

        @contextlib.contextmanager
        def runs_on_stream(stream):
            current[0] = stream
            try:
                yield
            finally:
                current[0] = 0

        return call, runs_on_stream
    return factory


_BOTH = ("float32", "float64")
_F32 = ("float32",)
_TORCH = _BOTH + ("bfloat16", "float16")
#: peer -> (the gelu_numba function it is judged as, its dtypes, factory)
PEERS = {
    "torch_gelu": ("gelu", _TORCH, _torch_peer(lambda t, x: t.nn.functional.gelu(x))),
    "torch_gelu_tanh": ("gelu", _TORCH, _torch_peer(
        lambda t, x: t.nn.functional.gelu(x, approximate="tanh"))),
    "torch_gelu_backward": ("gelu_backward", _TORCH, _torch_peer(
        lambda t, dy, x: t.ops.aten.gelu_backward(dy, x))),
    "jax_gelu": ("gelu", _F32, _jax_peer(False)),
    "jax_gelu_tanh": ("gelu", _F32, _jax_peer(True)),
    "cupy_erfc_f64": ("gelu", _F32, _cupy_peer("cupy_erfc_f64")),
    "cupy_erfcf": ("gelu", _F32, _cupy_peer("cupy_erfcf")),
    "gelu_numba_f64_arith": ("gelu", _F32, _gelu_numba_peer("gelu")),
    "gelu_numba_f64_arith_backward": ("gelu_backward", _F32, _gelu_numba_peer("gelu_backward")),
    **{f"gelu_numba_f64_arith_{f}": (f, _F32, _gelu_numba_peer(f))
       for f in catalog.names("exact") if f not in ("gelu", "gelu_backward")},
    **{f"gelu_numba_lean32_{f.name}": (f.name, _F32, _gelu_numba_peer(f.name, lean32=True))
       for f in catalog.group("exact") if f.lean32 is not None},
}


class Peer:
    """An available peer: ``function`` (the gelu_numba name), ``dtypes``,
    ``call(*arrays)`` and ``stream(numba_stream)`` (a context manager)."""

    def __init__(self, name, function, dtypes, call, runs_on_stream):
        self.name, self.function, self.dtypes = name, function, dtypes
        self.call, self._runs_on_stream = call, runs_on_stream
        self.nin = 2 if function == "gelu_backward" else 1

    def stream(self, stream):
        """Launch on the numba ``stream`` (a null context for JAX, which
        launches on its own streams: time it from the host)."""
        if self._runs_on_stream is None:
            return contextlib.nullcontext()
        return self._runs_on_stream(stream)

    @property
    def event_timed(self) -> bool:
        return self._runs_on_stream is not None


def available(names=None) -> tuple[dict, dict]:
    """``({peer: Peer}, {peer: why not})`` for ``names`` (default: all)."""
    ok, missing = {}, {}
    for name in names or PEERS:
        if name not in PEERS:
            raise ValueError(f"unknown peer {name!r}; choose from {', '.join(PEERS)}")
        func, dtypes, factory = PEERS[name]
        try:
            call, runs_on_stream = factory()
        except Unavailable as e:
            missing[name] = str(e)
        else:
            ok[name] = Peer(name, func, dtypes, call, runs_on_stream)
    return ok, missing
