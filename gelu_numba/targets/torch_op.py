"""PyTorch target: the package's GELU as two ``torch.library`` custom ops.

Everything that knows about PyTorch's operator, autograd and tensor APIs is
here; the public module :mod:`gelu_numba.torch` is the user-facing layer.
Imported only by it (it imports torch).

Operators (namespace ``gelu_numba``)
    ``gelu(Tensor x, str approximate) -> Tensor``
        f(x): the exact GELU (``approximate="none"``) or an approximation
        of :mod:`gelu_numba.approximations`.
    ``derivative(Tensor dy, Tensor x, str approximate, int order) -> Tensor``
        dy * f^(order)(x), for order 1 (the backward pass; for the exact
        GELU the fused ufunc ``gelu_backward``) and every higher order
        for the exact GELU (order 2 ``gelu_grad2``, then phi(x) P_n(x) by
        torch operations in float64: :func:`_gelu_derivative`) and for
        the tanh and sigmoid forms (torch's autograd of the formula in
        float64: :func:`_composite_derivative`).

    Autograd: d gelu/dx = derivative(., x, 1); derivative is linear in dy,
    so d derivative/d dy = derivative(., x, order) and
    d derivative/dx = derivative(. * dy, x, order + 1): every order, for
    every ``approximate``.  ``register_fake`` gives
    ``torch.compile`` the output (``empty_like`` of x: its shape, dtype,
    device and strides), ``register_vmap`` batches by running the
    elementwise op on the batched tensor.  Both ops carry PyTorch's
    ``pointwise`` tag: jagged nested tensors apply them to their values.
    Strided nested tensors have kernels of their own (each component).

Kernels
    CPU: the NumPy ufuncs of :mod:`gelu_numba` (or the registry's), called
    on zero-copy NumPy views of the tensors with ``out=`` a view of the
    result tensor's storage, which is allocated by ``empty_like(x)`` (any
    strides, including expanded and transposed ones; nothing is copied).
    float16 and bfloat16 on the CPU, for the exact GELU and its fused
    backward: one pass, bits in and bits out, correctly rounded (the
    2-byte loops of :mod:`gelu_numba.targets.half`).
    CUDA: the kernels of :mod:`gelu_numba.gpu` on PyTorch's current stream
    of the tensor's device; contiguous float32/float64 tensors through the
    fast launch (raw pointers, :meth:`~gelu_numba.targets.cuda.FastLaunch.on_handle`),
    others through ``__cuda_array_interface__`` (no host round trip).  Other half-precision calls (CUDA, the approximations,
    the second derivative) run through the float32 kernel: one conversion
    of the inputs to float32 (exact), the float32 kernel, one final
    rounding to the tensor's dtype (round to nearest even).
"""

import functools
import warnings

import numpy as np
import torch

from gelu_numba import catalog
from gelu_numba.catalog import APPROX_ERRORS
from gelu_numba.internals import torch_dispatch
from gelu_numba.targets import numpy_api
from gelu_numba.tables.approximations import (
    AS26_A_HI, AS26_Q, FITS_BY_NAME, SIGMOID_BETA, TANH_C2, TANH_K,
)
from gelu_numba.tables.normal_cdf import A_MAX, PHI0_HI

#: tensor dtypes with a kernel: the ufuncs' own, and the half types that
#: run through float32 elsewhere
NATIVE = (torch.float32, torch.float64)
HALF = (torch.float16, torch.bfloat16)
DTYPES = NATIVE + HALF
DEVICES = ("cpu", "cuda")
#: devices without data: the ops' fake implementation gives the result's
#: shape, dtype and strides (models built under torch.device("meta"))
SHAPE_ONLY = ("meta",)

#: every value of ``approximate``: the exact GELU, then the registry
APPROXIMATE = ("none", *APPROX_ERRORS)

ACCEPTED_DTYPES = "float16, bfloat16, float32 or float64"
ACCEPTED_DEVICES = "CPU or CUDA (and meta, shapes only)"
#: dense tensors, and nested ones of either layout (strided nested tensors
#: have layout torch.strided)
LAYOUTS = (torch.strided, torch.jagged)
ACCEPTED_LAYOUTS = "dense (strided) and nested (strided or jagged)"
_LIB = "gelu_numba"

# approximate -> the ufunc names of f, of dy * f' (fused) or f', and of f''
_EXACT = ("gelu", "gelu_backward", "gelu_grad2")


def _names(approximate):
    if approximate == "none":
        return _EXACT
    return (f"gelu_{approximate}", f"gelu_{approximate}_grad", None)


def check_approximate(approximate):
    """``approximate`` itself, or the error ``torch.nn.functional.gelu``
    raises for it: ``TypeError`` for a non-string, ``RuntimeError`` (with
    the accepted names) for an unknown name."""
    if not isinstance(approximate, str):
        raise TypeError(f"approximate must be a str, one of {', '.join(map(repr, APPROXIMATE))}"
                        f" (got {type(approximate).__name__})")
    if approximate not in APPROXIMATE:
        raise RuntimeError(f"approximate must be one of {', '.join(map(repr, APPROXIMATE))}"
                           f" (got {approximate!r})")
    return approximate


def check_tensor(name, t, quantized=False):
    """``t`` itself, or the error PyTorch's own ``gelu`` raises for such an
    argument: ``TypeError`` for a non-tensor, ``NotImplementedError`` (a
    ``RuntimeError``) for a dtype or layout without a kernel,
    ``RuntimeError`` for a device.  ``quantized``: quantized tensors are
    accepted (the forward computes on their dequantized values)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor (got {type(t).__name__})")
    if quantized and t.is_quantized:
        return t
    if t.dtype not in DTYPES:
        also = ", or a quantized tensor" if quantized else ""
        raise NotImplementedError(f"{name}: supports {ACCEPTED_DTYPES} tensors{also} "
                                  f"(got {t.dtype})")
    if t.layout not in LAYOUTS:
        raise NotImplementedError(f"{name}: supports {ACCEPTED_LAYOUTS} tensors "
                                  f"(got layout {t.layout})")
    if t.device.type not in DEVICES + SHAPE_ONLY:
        raise RuntimeError(f"{name}: supports {ACCEPTED_DEVICES} tensors "
                           f"(got a tensor on device {t.device.type!r})")
    return t


# ----------------------------------------------------------------- kernels

@functools.cache
def _ufunc(name):
    from gelu_numba import catalog
    from gelu_numba.targets import cpu
    return cpu.REGISTRY.get(catalog.lookup(name))


def _numpy(t):
    # a view of the tensor's storage (the op's inputs never require grad
    # here, but .numpy() refuses tensors flagged so: detach is free)
    return t.detach().numpy()


def _checked(ufunc, *args, **kwargs):
    """A raw ufunc call, then the error of a loop that failed to compile
    (its outputs were NaN: :mod:`gelu_numba.targets.numpy_api`)."""
    ufunc(*args, **kwargs)
    if numpy_api.FAILED:
        numpy_api.raise_failure()


def _run_cpu(name, args, out):
    _checked(_ufunc(name), *map(_numpy, args), out=_numpy(out))


def _stream(device):
    from numba import cuda

    return cuda.external_stream(torch.cuda.current_stream(device).cuda_stream)


#: torch dtype -> the CUDA kernels' loop
_CUDA_LOOPS = {torch.float32: "f", torch.float64: "d"}
#: calls that took the fast launch (tests read it: the path is invisible
#: otherwise)
FAST_CUDA_CALLS = [0]


def _launch_fast(launcher, tensors):
    """``launcher`` over contiguous ``tensors`` (inputs, then the output) on
    PyTorch's current stream of their device."""
    out = tensors[-1]
    n = out.numel()
    if n:
        index = out.device.index
        with torch.cuda.device(index):
            launcher.on_handle(tuple(t.data_ptr() for t in tensors), n,
                               torch.cuda.current_stream(index).cuda_stream)
    FAST_CUDA_CALLS[0] += 1


@functools.cache
def _cuda_launcher(name, loop, index):
    """The fast launcher of ``gpu.<name>`` for ``loop`` on device ``index``
    (built, and checked against numba-cuda's launch, once), or None."""
    from numba import cuda

    from gelu_numba.targets.cuda import gpu_function

    with cuda.gpus[index]:
        return gpu_function(name).fast_launcher(loop)


@functools.cache
def _cuda_half_launcher(name, fmt, index):
    """The fast launcher of the 2-byte kernel of ``name`` on device
    ``index``, or None."""
    from numba import cuda

    from gelu_numba.targets import cuda_half

    with cuda.gpus[index]:
        return cuda_half.fast_launcher(name, fmt)


def _run_cuda(name, args, out):
    """The fast launch where it applies (float32/float64, every tensor
    contiguous: raw pointers, PyTorch's current stream, no numba-cuda
    array import, ~1/6 of the host time of that import on an H100);
    else :mod:`gelu_numba.gpu`'s general path, through
    ``__cuda_array_interface__`` (any strides)."""
    loop = _CUDA_LOOPS.get(out.dtype)
    if loop is not None and out.is_contiguous() and all(a.is_contiguous() for a in args):
        launcher = _cuda_launcher(name, loop, out.device.index)
        if launcher is not None:
            _launch_fast(launcher, [*args, out])
            return
    from numba import cuda

    from gelu_numba.targets.cuda import gpu_function

    with cuda.gpus[out.device.index]:
        gpu_function(name)(*(a.detach() for a in args), out=out.detach(),
                           stream=_stream(out.device))


_RUN = {"cpu": _run_cpu, "cuda": _run_cuda}


def _bits(t):
    """A 2-byte tensor's storage as a NumPy uint16 view (bfloat16 has no
    NumPy dtype)."""
    return t.detach().view(torch.int16).numpy().view(np.uint16)


def _run_cpu_half(name, args, out):
    """One pass, bits in and bits out: the float16 loops of the ufuncs, the
    bfloat16 bit-pattern ufuncs of :mod:`gelu_numba.half`; correctly
    rounded (:mod:`gelu_numba.kernels.half`)."""
    if out.dtype == torch.float16:
        _run_cpu(name, args, out)
    else:
        from gelu_numba.targets.half import bfloat16_ufunc
        _checked(bfloat16_ufunc(f"{name}_bfloat16"), *map(_bits, args), out=_bits(out))


def _run_cuda_half(name, args, out):
    """One pass on the GPU, bits in and bits out: the 2-byte kernels of
    :mod:`gelu_numba.targets.cuda_half` (correctly rounded, the CPU's bits),
    on PyTorch's current stream; through their fast launch (raw pointers)
    where there is one."""
    from numba import cuda

    from gelu_numba.targets import cuda_half
    fmt = "float16" if out.dtype == torch.float16 else "bfloat16"
    bits = [a.detach().contiguous().view(torch.int16).reshape(-1) for a in args]
    target = out.detach().view(torch.int16).reshape(-1)   # (contiguous: a view)
    index = out.device.index
    launcher = _cuda_half_launcher(name, fmt, index)
    if launcher is not None:
        _launch_fast(launcher, [*bits, target])
        return
    with cuda.gpus[index]:
        if name == "gelu":
            cuda_half.gelu_bits(*bits, target, fmt, stream=_stream(out.device))
        else:
            cuda_half.gelu_backward_bits(*bits, target, fmt, stream=_stream(out.device))


def _apply(name, args, out, scale=None):
    """out = name(*args) (times ``scale`` if given), in out's dtype.  Half
    types: on the CPU, the exact GELU and its fused backward in one pass
    (:func:`_run_cpu_half`); else through float32 with one final rounding."""
    run = _RUN[out.device.type]
    if out.dtype in HALF and scale is None and catalog.lookup(name).half and (
            out.device.type == "cpu" or out.is_contiguous()):
        (_run_cpu_half if out.device.type == "cpu" else _run_cuda_half)(name, args, out)
    elif out.dtype in HALF:
        wide = torch.empty_like(out, dtype=torch.float32)
        run(name, [a.float() for a in args], wide)
        if scale is not None:
            wide.mul_(scale.float())
        out.copy_(wide)
    else:
        run(name, args, out)
        if scale is not None:
            out.mul_(scale)
    return out


def _check_pair(dy, x):
    # a strided nested tensor has no shape: its components are checked
    # one by one (_by_component)
    same_shape = (dy.is_nested == x.is_nested if _strided_nested(x)
                  else dy.shape == x.shape)
    if not same_shape or dy.dtype != x.dtype or dy.device != x.device:
        raise RuntimeError(
            "gelu_numba::derivative: dy and x must have one shape, dtype and "
            f"device (got {_describe(dy)} and {_describe(x)})")


def _describe(t):
    shape = "nested" if _strided_nested(t) else tuple(t.shape)
    return f"{shape} {t.dtype} {t.device}"


# ----------------------------------------------------------------- the ops

def gelu_kernel(x, approximate):
    """f(x) into a new tensor (the body of ``gelu_numba::gelu``; no checks)."""
    return _apply(_names(approximate)[0], [x], torch.empty_like(x))


def derivative_kernel(dy, x, approximate, order):
    """dy * f^(order)(x) (the body of ``gelu_numba::derivative``)."""
    _check_pair(dy, x)
    _, first, second = _names(approximate)
    if not (isinstance(order, int) and order >= 1):
        raise RuntimeError(f"gelu_numba::derivative: order must be an int >= 1 (got {order!r})")
    if _by_formula(approximate, order):
        return _formula_derivative(dy, x, approximate, order)
    out = torch.empty_like(x)
    if order == 1 and approximate == "none":
        return _apply(first, [dy, x], out)  # fused: one rounding
    return _apply(first if order == 1 else second, [x], out, scale=dy)


def _by_formula(approximate, order):
    """Whether dy * f^(order)(x) is torch operations (no kernel): from
    order 3 for the exact GELU, from order 2 for the approximations."""
    return order >= 3 or (order == 2 and approximate != "none")


def _formula_derivative(dy, x, approximate, order):
    """dy * f^(order)(x) by torch operations (:func:`_gelu_derivative`,
    :func:`_composite_derivative`).  Called where autograd is on: the
    approximations' derivatives are torch's autograd of the formula."""
    higher = (_gelu_derivative(x, order) if approximate == "none"
              else _composite_derivative(x, approximate, order))
    return dy * higher


@functools.cache
def _hermite_gelu(order):
    """The integer coefficients (ascending powers) of P_n with
    GELU^(n)(x) = phi(x) P_n(x), n >= 2: P_2 = 2 - x**2 and
    P_{n+1} = P_n' - x P_n (phi' = -x phi); P_3 = x**3 - 4x."""
    p = [2, 0, -1]
    for _ in range(order - 2):
        derivative = [k * c for k, c in enumerate(p)][1:] + [0, 0]
        shifted = [0] + p
        p = [a - b for a, b in zip(derivative, shifted)]
    while p and p[-1] == 0:
        p.pop()
    return tuple(p)


def _gelu_derivative(x, order):
    """GELU^(order)(x) for order >= 3, by torch operations in float64
    (rounded once to x's dtype): phi(x) P_n(x).  Not a kernel of this
    package: its accuracy is that of the formula, exp(-x**2/2) with x**2
    rounded (relative error about x**2 2**-53), as for nn.GELU's own
    autograd of these orders."""
    def derivative(v):
        w = v.double()
        return torch.exp(-0.5 * w * w) * PHI0_HI * _horner(w, _hermite_gelu(order))
    return _finite(x, derivative).to(x.dtype)


def _k(w, value):
    """The constant ``value`` as a 0-d tensor of w's dtype.  A Python float
    in these formulas would do in eager mode, but the dynamo ONNX exporter
    (torch 2.13, onnxscript 0.7.2) writes a float scalar as a float32
    constant even in float64 arithmetic (1.702 became 1.7020000219...);
    a tensor constant keeps its float64 bits.  Small integers, halves and
    the fits' L (multiples of 2**-6) are exact either way."""
    return w.new_tensor(value)


def _horner(s, coefficients):
    """sum c_j s**j, at least two coefficients (no zeros_like start: the
    ONNX exporter would fold it into a constant of the traced shape)."""
    c = [_k(s, v) for v in coefficients]
    acc = s * c[-1] + c[-2]
    for cj in reversed(c[:-2]):
        acc = acc * s + cj
    return acc


def _magnitude(w, cap):
    """min(|w|, cap), differentiable at 0 to every order (|w| by a select,
    so that d|w|/dw = 1 at w = 0, not torch.abs's 0: the fits and A&S are
    x/2 + g(|x|) with g'(0) = 0, whose second derivative at 0 is g''(0)
    from both sides, which abs's subgradient 0 would lose).  Clamped where
    the tail is 0 (the fits) or underflows (A&S)."""
    return torch.where(w < 0, -w, w).clamp(max=cap)


def _tail_form(w, cap, tail):
    """x tail (x < 0), x (1 - tail) (x >= 0), where tail >= 0 vanishes from
    x = -cap down.  x is clamped to -cap there (-inf * 0 would be NaN),
    and the select comes before the product: the sign of a zero result is
    the product's (ONNX Runtime's Where returns +0 for a selected -0)."""
    return w.clamp(min=-cap) * torch.where(w < 0, tail, 1 - tail)


def _t_form(fit):
    """The fit's formula (``gelu_numba.kernels.fitted``): x T(|x|) for
    x < 0, x (1 - T(|x|)) for x >= 0, T(a) = (L - a)**2 R(S a - 1) below
    L, 0 from L on."""
    L, S = float(fit["L"]), float(fit["S"])
    p = tuple(float(c) for c in fit["p"])
    q = tuple(float(c) for c in fit["q"])

    def f(w):
        a = _magnitude(w, L)
        s = _k(w, S) * a - 1
        r = _horner(s, p) if len(q) == 1 else _horner(s, p) / _horner(s, q)
        return _tail_form(w, L, (L - a) ** 2 * r)
    return f


def _as26(w):
    """0.5 x (1 + erf(x/sqrt 2)), erf by A&S 7.1.26 (``kernels.erf_as``):
    Phi = K/2 (x < 0), 1 - K/2 (x >= 0), K = t P(t) exp(-x**2/2),
    t = 1/(1 + p|x|/sqrt 2); from |x| = A_MAX on, K/2 underflows."""
    a = _magnitude(w, A_MAX)
    t = 1 / (1 + _k(w, AS26_Q[0]) * a)
    k = t * _horner(t, AS26_A_HI) * torch.exp(-0.5 * a * a)
    return _tail_form(w, A_MAX, 0.5 * k)


#: every approximation as a few torch operations: its derivatives from
#: order 2 on (torch's autograd of the formula in float64) and its ONNX
#: subgraph where ONNX has no operator for it
_COMPOSITE = {
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3))); TANH_C2 = 2 sqrt(2/pi)
    "tanh": lambda w: 0.5 * w * (1 + torch.tanh(
        _k(w, 0.5 * TANH_C2[0]) * (w + _k(w, TANH_K[0]) * w ** 3))),
    # x sigma(1.702 x); below -800 the product underflows to -0 (the
    # factor -800, not -inf: -inf * 0 is NaN)
    "sigmoid": lambda w: w.clamp(min=-800.0) * torch.sigmoid(_k(w, SIGMOID_BETA[0]) * w),
    "as26": _as26,
    **{name: _t_form(fit) for name, fit in FITS_BY_NAME.items()},
}
assert set(_COMPOSITE) == set(APPROX_ERRORS), "an approximation without a torch formula"


def _finite(x, derivative):
    """``derivative(x)`` (an order >= 2, by torch operations) at finite x,
    its limit 0 at +-inf and NaN at NaN.  The formulas only see finite
    values (0 in place of the others): at inf their inf * 0 would be NaN,
    and at NaN the masks of clamp's gradient would give 0."""
    finite = torch.isfinite(x)
    d = derivative(torch.where(finite, x, 0.0))
    return torch.where(finite, d, torch.where(torch.isnan(x), x, 0.0).to(d.dtype))


def _composite_derivative(x, approximate, order):
    """f^(order)(x) of an approximation, by torch's autograd of its formula
    (:data:`_COMPOSITE`) in float64 (rounded once to x's dtype): the
    accuracy of the formula's float64 evaluation, as nn.GELU's own
    autograd for "tanh"."""
    def derivative(v):
        with torch.enable_grad():
            w = v.detach().double().requires_grad_()
            d = _COMPOSITE[approximate](w)
            for _ in range(order):
                (d,) = torch.autograd.grad(d.sum(), w, create_graph=True)
        return d.detach()
    return _finite(x, derivative).to(x.dtype)


#: elementwise: tools that handle pointwise operators generically apply
#: them to the values (jagged nested tensors; torch.compile's partitioner)
_POINTWISE = (torch.Tag.pointwise,)


@torch.library.custom_op(f"{_LIB}::gelu", mutates_args=(), tags=_POINTWISE)
def gelu_op(x: torch.Tensor, approximate: str) -> torch.Tensor:
    check_tensor("gelu_numba::gelu", x)
    return gelu_kernel(x, check_approximate(approximate))


@torch.library.custom_op(f"{_LIB}::derivative", mutates_args=(), tags=_POINTWISE)
def derivative_op(dy: torch.Tensor, x: torch.Tensor, approximate: str,
                  order: int) -> torch.Tensor:
    check_tensor("gelu_numba::derivative", x)
    return derivative_kernel(dy, x, check_approximate(approximate), order)


@gelu_op.register_fake
def _(x, approximate):
    return torch.empty_like(x)


@derivative_op.register_fake
def _(dy, x, approximate, order):
    return torch.empty_like(x)


# The backward and jvp formulas, written once for three callers: the ops'
# own Autograd kernels (below: torch.ops.gelu_numba.* are differentiable;
# the public functions call the ops under torch.compile),
# the autograd.Functions over the ops that the public functions use under
# torch.func (PyTorch 2.13's register_autograd refuses torch.func
# transforms, pytorch/pytorch#168393: "it must override the setup_context
# staticmethod"), and the eager autograd.Functions, which call the kernels
# without the custom-op dispatcher (about 20 us per op call in Python, and
# 15 us more for an autograd.Function with setup_context: four times
# nn.GELU's whole forward + backward at 100 elements).  ctx.derivative is
# the differentiable dy * f^(order)(x) of the caller's kind.

def _save(ctx, x, approximate, derivative):
    ctx.save_for_backward(x)
    ctx.save_for_forward(x)
    ctx.approximate, ctx.derivative = approximate, derivative


def _backward_gelu(ctx, grad):
    (x,) = ctx.saved_tensors
    return ctx.derivative(grad, x, ctx.approximate, 1), None


def _one_forward_level():
    """Refuse forward mode over forward mode (nested ``torch.func.jvp``,
    ``jacfwd`` of ``jacfwd``).  PyTorch 2.13 runs an autograd.Function's
    jvp rule with the outer forward levels off: through three nested jvps
    the derivative came out exactly zero, silently.  Forward over reverse
    (``hessian``) and reverse over anything are not affected."""
    if torch_dispatch.jvp_levels() > 1:
        raise RuntimeError(
            "gelu_numba.torch: forward mode over forward mode (nested jvp, jacfwd of "
            "jacfwd) is not supported; take the higher derivatives in reverse mode "
            "(jacrev, torch.autograd.grad) or forward over reverse (torch.func.hessian)")


def _jvp_gelu(ctx, x_t, approximate_t):
    # forward mode: the tangent times f'(x), fused like the backward
    _one_forward_level()
    (x,) = ctx.saved_tensors
    return ctx.derivative(x_t, x, ctx.approximate, 1)


def _save_derivative(ctx, dy, x, approximate, order, derivative):
    ctx.save_for_backward(dy, x)
    ctx.save_for_forward(dy, x)
    ctx.approximate, ctx.order, ctx.derivative = approximate, order, derivative


def _jvp_derivative(ctx, dy_t, x_t, approximate_t, order_t):
    # d[dy f^(k)(x)] = dy_t f^(k)(x) + dy x_t f^(k+1)(x)
    _one_forward_level()
    dy, x = ctx.saved_tensors
    out = None
    if dy_t is not None:
        out = ctx.derivative(dy_t, x, ctx.approximate, ctx.order)
    if x_t is not None:
        term = ctx.derivative(dy * x_t, x, ctx.approximate, ctx.order + 1)
        out = term if out is None else out + term
    return out


def _backward_derivative(ctx, grad):
    dy, x = ctx.saved_tensors
    d_dy = d_x = None
    if ctx.needs_input_grad[0]:
        d_dy = ctx.derivative(grad, x, ctx.approximate, ctx.order)
    if ctx.needs_input_grad[1]:
        d_x = ctx.derivative(grad * dy, x, ctx.approximate, ctx.order + 1)
    return d_dy, d_x, None, None


class Gelu(torch.autograd.Function):
    """f(x): an ``autograd.Function`` over ``gelu_numba::gelu``, for
    torch.compile and torch.func."""

    generate_vmap_rule = True
    backward = staticmethod(_backward_gelu)
    jvp = staticmethod(_jvp_gelu)

    @staticmethod
    def forward(x, approximate):
        return gelu_op(x, approximate)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _save(ctx, *inputs, Derivative.apply)


class Derivative(torch.autograd.Function):
    """dy * f^(order)(x): an ``autograd.Function`` over
    ``gelu_numba::derivative``, for torch.compile and torch.func."""

    generate_vmap_rule = True
    backward = staticmethod(_backward_derivative)
    jvp = staticmethod(_jvp_derivative)

    @staticmethod
    def forward(dy, x, approximate, order):
        return derivative_op(dy, x, approximate, order)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _save_derivative(ctx, *inputs, Derivative.apply)


# The operators' own Autograd kernels.  custom_op's register_autograd
# takes a backward only: its generated autograd.Function has no jvp, so
# forward mode through torch.ops.gelu_numba.gelu gave a tangent of None
# (zeros), silently.  These kernels do what the generated one does
# (redispatch below Autograd, inside an autograd.Function), with the jvp.
# Under torch.func, PyTorch 2.13 refuses such a Function (it needs
# setup_context, which it does not run inside a kernel): a jvp transform
# of the bare operator raises there instead of giving zeros (the public
# functions run torch.func through Gelu and Derivative above).

def _below_autograd(op, keyset, *args):
    return torch_dispatch.redispatch_below_autograd(op._opoverload, keyset, *args)


def _no_functorch_autograd(name):
    if torch_dispatch.autograd_transform_levels():
        raise RuntimeError(
            f"{name}: torch.func's grad, vjp, jacrev, jvp, jacfwd and hessian of the "
            "operator itself are not supported (PyTorch 2.13 runs a custom operator's "
            "autograd kernel under them only through an autograd.Function with "
            "setup_context, which a kernel cannot be); call gelu_numba.torch.gelu or "
            "gelu_backward, which support them")


class _GeluKernel(torch.autograd.Function):
    """gelu_numba::gelu's Autograd kernel: f(x) with backward and jvp."""

    @staticmethod
    def forward(ctx, keyset, x, approximate):
        _save(ctx, x, approximate, Derivative.apply)
        return _below_autograd(gelu_op, keyset, x, approximate)

    @staticmethod
    def backward(ctx, grad):
        return (None, *_backward_gelu(ctx, grad))

    @staticmethod
    def jvp(ctx, keyset_t, x_t, approximate_t):
        return _jvp_gelu(ctx, x_t, approximate_t)


class _DerivativeKernel(torch.autograd.Function):
    """gelu_numba::derivative's Autograd kernel."""

    @staticmethod
    def forward(ctx, keyset, dy, x, approximate, order):
        _save_derivative(ctx, dy, x, approximate, order, Derivative.apply)
        if _by_formula(approximate, order):
            # torch operations, which need the Autograd keys that the
            # redispatch below turns off
            _check_pair(dy, x)
            return _formula_derivative(dy, x, approximate, order)
        return _below_autograd(derivative_op, keyset, dy, x, approximate, order)

    @staticmethod
    def backward(ctx, grad):
        return (None, *_backward_derivative(ctx, grad))

    @staticmethod
    def jvp(ctx, keyset_t, dy_t, x_t, approximate_t, order_t):
        return _jvp_derivative(ctx, dy_t, x_t, approximate_t, order_t)


def _gelu_autograd(keyset, x, approximate):
    if _strided_nested(x):
        return _by_component(apply_gelu, x, approximate)
    _no_functorch_autograd("gelu_numba::gelu")
    return _GeluKernel.apply(keyset, x, approximate)


def _derivative_autograd(keyset, dy, x, approximate, order):
    if _strided_nested(x):
        _check_pair(dy, x)
        return _by_component(apply_derivative, dy, x, approximate, order)
    _no_functorch_autograd("gelu_numba::derivative")
    return _DerivativeKernel.apply(keyset, dy, x, approximate, order)


# Strided nested tensors (torch.nested.nested_tensor's default layout: a
# plain torch.Tensor whose storage has no public flat view): the kernel on
# each component.  Jagged ones are a subclass that applies a pointwise
# operator to its values (the ops' pointwise tag).

def _nested_gelu(x, approximate):
    return _by_component(gelu_kernel, x, approximate)


def _nested_derivative(dy, x, approximate, order):
    _check_pair(dy, x)
    return _by_component(derivative_kernel, dy, x, approximate, order)


_IMPL = torch.library.Library(_LIB, "IMPL")
with warnings.catch_warnings():
    # custom_op registered a backward-only kernel at definition: replaced
    warnings.filterwarnings("ignore", "(?s).*Overriding a previously registered kernel")
    torch_dispatch.replace_kernel(_IMPL, "gelu", _gelu_autograd, "Autograd")
    torch_dispatch.replace_kernel(_IMPL, "derivative", _derivative_autograd, "Autograd")
for _key in ("NestedTensorCPU", "NestedTensorCUDA"):
    _IMPL.impl("gelu", _nested_gelu, _key)
    _IMPL.impl("derivative", _nested_derivative, _key)


class EagerGelu(torch.autograd.Function):
    """f(x) calling the kernel directly: eager mode, plain tensors."""

    backward = staticmethod(_backward_gelu)
    jvp = staticmethod(_jvp_gelu)

    @staticmethod
    def forward(ctx, x, approximate):
        _save(ctx, x, approximate, apply_derivative)
        return gelu_kernel(x, approximate)


class EagerDerivative(torch.autograd.Function):
    """dy * f^(order)(x) calling the kernel directly."""

    backward = staticmethod(_backward_derivative)
    jvp = staticmethod(_jvp_derivative)

    @staticmethod
    def forward(ctx, dy, x, approximate, order):
        _save_derivative(ctx, dy, x, approximate, order, apply_derivative)
        return derivative_kernel(dy, x, approximate, order)


def eager(*tensors):
    """True where the eager Functions apply: no compilation, tracing or
    export under way (``torch.jit.trace``, the legacy ONNX exporter, which
    traces), no torch.func transform active, no ``TorchDispatchMode``
    (``make_fx``, ``torch.func.linearize``, ``FakeTensorMode``, logging and
    FLOP-counting modes, selective checkpointing: a mode sees the operators
    a call dispatches, and the eager Functions dispatch none of GELU's),
    plain dense tensors with data only (not subclasses, whose
    ``__torch_dispatch__`` must see the operator; not meta, not nested,
    not the batched tensors of autograd's own vmap, ``is_grads_batched``).
    Only cheap tests: it runs on every eager call
    (the slower ONNX-export test is left to :func:`apply_gelu`)."""
    return (not torch.compiler.is_compiling()
            and not torch_dispatch.functorch_active()
            and not torch_dispatch.tracing()
            and not torch_dispatch.dispatch_mode_active()
            and all(type(t) is torch.Tensor and not t.is_meta and not t.is_nested
                    and not _legacy_batched(t) for t in tensors))


_legacy_batched = torch_dispatch.is_legacy_batched


def _nothing_to_record(*tensors):
    """True where an eager Function would record nothing: no input needs a
    gradient (or grad mode is off) and no forward-mode level is open (a
    dual tensor needs no grad, yet its tangent is carried by the Function
    alone, under ``no_grad`` too).  There the kernel is called as it is:
    the same result, without autograd.Function's cost."""
    return (not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))
            and not torch_dispatch.dual_level_active())


def apply_gelu(x, approximate):
    """Differentiable f(x), by the fastest path that works where it runs:
    the eager Function on plain tensors; under ONNX export, ONNX's Gelu
    (:func:`onnx_gelu`); under ``torch.compile`` and ``torch.jit.trace``,
    the operator itself (Dynamo cannot trace a Function with a ``jvp``;
    the operator is one opaque node with its own Autograd kernel, recorded by
    name); else (the ``torch.func`` transforms, dispatch modes, meta and
    nested tensors, tensor subclasses) the Function over the operator.
    A quantized x: f of its dequantized values, quantized with x's own
    parameters (what ``torch.nn.functional.gelu`` does with one)."""
    if x.is_quantized:
        return requantized(x, apply_gelu(x.dequantize(), approximate))
    if _strided_nested(x):
        return _by_component(apply_gelu, x, approximate)
    if eager(x):
        if _nothing_to_record(x):
            return gelu_kernel(x, approximate)
        return EagerGelu.apply(x, approximate)
    if torch.onnx.is_in_onnx_export():
        return onnx_gelu(x, approximate)
    if torch.compiler.is_compiling() or torch.jit.is_tracing():
        # the op by name (an autograd.Function would be a Python call to
        # TorchScript, and the eager kernel's NumPy view a traced constant)
        return gelu_op(x, approximate)
    return Gelu.apply(x, approximate)


def _strided_nested(t):
    return t.is_nested and t.layout == torch.strided


def _by_component(apply, *args):
    """``apply`` on each component of the strided nested tensors in
    ``args``, nested again: autograd's ``Function`` cannot take such a
    tensor (PyTorch 2.13: "NestedTensorImpl doesn't support sizes"), and
    ``unbind`` and ``as_nested_tensor`` are differentiable."""
    tensors = [a.unbind() if isinstance(a, torch.Tensor) else None for a in args]
    parts = [apply(*(a if t is None else t[i] for a, t in zip(args, tensors)))
             for i in range(len(next(t for t in tensors if t is not None)))]
    return torch.nested.as_nested_tensor(parts, layout=torch.strided)


def requantized(q, y):
    """y quantized with the scheme and parameters of the quantized q."""
    scheme = q.qscheme()
    if scheme == torch.per_tensor_affine:
        return torch.quantize_per_tensor(y, q.q_scale(), q.q_zero_point(), q.dtype)
    if scheme == torch.per_channel_affine:
        return torch.quantize_per_channel(y, q.q_per_channel_scales(),
                                          q.q_per_channel_zero_points(),
                                          q.q_per_channel_axis(), q.dtype)
    raise NotImplementedError("gelu_numba.torch: supports quantized tensors of the "
                              f"per_tensor_affine and per_channel_affine schemes (got {scheme})")


def apply_derivative(dy, x, approximate, order):
    """Differentiable dy * f^(order)(x), chosen as :func:`apply_gelu`.  The
    eager Functions' backward and jvp call it, so that they choose again
    when they run: a batched backward (``is_grads_batched``,
    ``jacobian(vectorize=True)``) runs under vmap, where the eager kernel
    cannot see the batched tensors' data."""
    if _strided_nested(x):
        _check_pair(dy, x)
        return _by_component(apply_derivative, dy, x, approximate, order)
    if eager(dy, x):
        if _nothing_to_record(dy, x):
            return derivative_kernel(dy, x, approximate, order)
        return EagerDerivative.apply(dy, x, approximate, order)
    if torch.onnx.is_in_onnx_export():
        raise RuntimeError("gelu_numba.torch: the GELU derivatives have no ONNX form "
                           "(ONNX has no GELU backward operator); export the forward model")
    if torch.compiler.is_compiling() or torch.jit.is_tracing():
        return derivative_op(dy, x, approximate, order)
    return Derivative.apply(dy, x, approximate, order)


# ------------------------------------------------------------------- ONNX

#: ``approximate`` values that ONNX's ``Gelu`` operator computes (opset 20;
#: earlier opsets get PyTorch's Erf or Tanh subgraph)
ONNX_APPROXIMATE = ("none", "tanh")


def onnx_gelu(x, approximate):
    """What ``torch.onnx.export`` records for f(x).

    "none" and "tanh": ``F.gelu``, which both exporters write as ONNX's
    ``Gelu`` (or its formula before opset 20); an ONNX runtime then computes
    its own GELU, not this package's kernel (its accuracy is the runtime's:
    see the production study's ONNX Runtime rows).  Every other
    approximation: the subgraph of its formula (:data:`_COMPOSITE`:
    Where, Clip, Mul, Div, Exp, Sigmoid ...) evaluated in float64 and cast
    back to x's dtype once, so that a float32 or half model computes the
    formula rounded once, within an ulp of this package's kernel (float64
    models: within a few float64 ulps of the formula, the plain float64
    evaluation; the kernel's is double-double)."""
    if approximate in ONNX_APPROXIMATE:
        return torch.nn.functional.gelu(x, approximate=approximate)
    return _COMPOSITE[approximate](x.double()).to(x.dtype)


def _onnx_gelu_node(x, approximate: str = "none"):
    """The onnxscript translation of ``gelu_numba::gelu`` (for
    :func:`onnx_translation_table`): ONNX's ``Gelu`` (opset 20)."""
    from onnxscript import opset20 as op
    if approximate not in ONNX_APPROXIMATE:
        raise RuntimeError(
            f"gelu_numba.torch: approximate={approximate!r} has no ONNX operator, and an "
            "exported program holds gelu_numba::gelu itself, not its formula: export the "
            "nn.Module (torch.onnx.export(model, args, dynamo=True)), which writes the "
            "formula's subgraph")
    return op.Gelu(x, approximate=approximate)


def onnx_translation_table():
    """``custom_translation_table`` for ``torch.onnx.export`` of a
    ``torch.export.ExportedProgram`` that holds ``gelu_numba::gelu``
    (exporting the module itself needs none).  Needs onnxscript."""
    return {torch.ops.gelu_numba.gelu.default: _onnx_gelu_node}


# ------------------------------------------------------------------- vmap

def _batch_first(t, dim, size):
    """t with its batch dimension first (a stride-0 expansion if unbatched)."""
    if dim is None:
        return t.unsqueeze(0).expand(size, *t.shape)
    return t.movedim(dim, 0)


@gelu_op.register_vmap
def _(info, in_dims, x, approximate):
    return gelu_op(x, approximate), in_dims[0]


@derivative_op.register_vmap
def _(info, in_dims, dy, x, approximate, order):
    if in_dims[0] == in_dims[1]:
        return derivative_op(dy, x, approximate, order), in_dims[1]
    dy = _batch_first(dy, in_dims[0], info.batch_size)
    x = _batch_first(x, in_dims[1], info.batch_size)
    return derivative_op(dy, x, approximate, order), 0
