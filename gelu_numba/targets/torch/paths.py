"""Which path a call of the public functions takes.

:func:`apply_gelu` and :func:`apply_derivative` choose, on every call, the
fastest path that works where they run: the kernels themselves (nothing to
record for autograd), the eager Functions (plain tensors in eager mode),
ONNX's own operators under ONNX export, the operators by name under
``torch.compile`` and ``torch.jit.trace``, and else the Functions over the
operators (``torch.func``, dispatch modes, meta and nested tensors, tensor
subclasses).  Quantized tensors: the GELU of the dequantized values,
quantized again.
"""

import torch

from gelu_numba.internals import torch_dispatch
from gelu_numba.targets.torch import autograd
from gelu_numba.targets.torch.autograd import (backward_derivative, backward_gelu,
                                               jvp_derivative, jvp_gelu, save,
                                               save_derivative)
from gelu_numba.targets.torch.checks import check_pair, strided_nested
from gelu_numba.targets.torch.nested import by_component
from gelu_numba.targets.torch.onnx import onnx_gelu
from gelu_numba.targets.torch.ops import derivative_body, derivative_op, gelu_body, gelu_op


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
    (:func:`~gelu_numba.targets.torch.onnx.onnx_gelu`); under
    ``torch.compile`` and ``torch.jit.trace``, the operator itself (Dynamo cannot trace a Function with a ``jvp``;
    the operator is one opaque node with its own Autograd kernel, recorded by
    name); else (the ``torch.func`` transforms, dispatch modes, meta and
    nested tensors, tensor subclasses) the Function over the operator.
    A quantized x: f of its dequantized values, quantized with x's own
    parameters (what ``torch.nn.functional.gelu`` does with one)."""
    if x.is_quantized:
        return requantized(x, apply_gelu(x.dequantize(), approximate))
    if strided_nested(x):
        return by_component(apply_gelu, x, approximate)
    if eager(x):
        if _nothing_to_record(x):
            return gelu_body(x, approximate)
        return EagerGelu.apply(x, approximate)
    if torch.onnx.is_in_onnx_export():
        return onnx_gelu(x, approximate)
    if torch.compiler.is_compiling() or torch.jit.is_tracing():
        # the op by name (an autograd.Function would be a Python call to
        # TorchScript, and the eager kernel's NumPy view a traced constant)
        return gelu_op(x, approximate)
    return autograd.Gelu.apply(x, approximate)


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
    if strided_nested(x):
        check_pair(dy, x)
        return by_component(apply_derivative, dy, x, approximate, order)
    if eager(dy, x):
        if _nothing_to_record(dy, x):
            return derivative_body(dy, x, approximate, order)
        return EagerDerivative.apply(dy, x, approximate, order)
    if torch.onnx.is_in_onnx_export():
        raise RuntimeError("gelu_numba.torch: the GELU derivatives have no ONNX form "
                           "(ONNX has no GELU backward operator); export the forward model")
    if torch.compiler.is_compiling() or torch.jit.is_tracing():
        return derivative_op(dy, x, approximate, order)
    return autograd.Derivative.apply(dy, x, approximate, order)


class EagerGelu(torch.autograd.Function):
    """f(x) calling the kernel directly: eager mode, plain tensors."""

    backward = staticmethod(backward_gelu)
    jvp = staticmethod(jvp_gelu)

    @staticmethod
    def forward(ctx, x, approximate):
        save(ctx, x, approximate, apply_derivative)
        return gelu_body(x, approximate)


class EagerDerivative(torch.autograd.Function):
    """dy * f^(order)(x) calling the kernel directly."""

    backward = staticmethod(backward_derivative)
    jvp = staticmethod(jvp_derivative)

    @staticmethod
    def forward(ctx, dy, x, approximate, order):
        save_derivative(ctx, dy, x, approximate, order, apply_derivative)
        return derivative_body(dy, x, approximate, order)
