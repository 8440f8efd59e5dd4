"""Autograd of the two operators: backward and jvp rules, and the
``autograd.Function`` classes that carry them.

d gelu/dx = derivative(., x, 1); derivative is linear in dy, so
d derivative/d dy = derivative(., x, order) and d derivative/dx =
derivative(. * dy, x, order + 1): every order, for every ``approximate``.

The same rules serve three kinds of Function: the operators' own Autograd
kernels (:func:`register_kernels`), :class:`Gelu` and :class:`Derivative`
over the operators (``torch.compile`` and ``torch.func``), and the eager
Functions of :mod:`~gelu_numba.targets.torch.paths`, which call the kernels
without the custom-op dispatcher (eager mode, plain tensors).  Forward
mode over forward mode, and ``torch.func``'s differentiating transforms of
the bare operators, raise (PyTorch 2.13 would give zeros or cannot run
them).
"""

import warnings

import torch

from gelu_numba.internals import torch_dispatch
from gelu_numba.targets.torch.checks import check_pair, strided_nested
from gelu_numba.targets.torch.nested import by_component
from gelu_numba.targets.torch.ops import (DERIVATIVE, GELU, by_formula, derivative_op,
                                         formula_derivative, gelu_op)


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

def save(ctx, x, approximate, derivative):
    ctx.save_for_backward(x)
    ctx.save_for_forward(x)
    ctx.approximate, ctx.derivative = approximate, derivative


def backward_gelu(ctx, grad):
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


def jvp_gelu(ctx, x_t, approximate_t):
    # forward mode: the tangent times f'(x), fused like the backward
    _one_forward_level()
    (x,) = ctx.saved_tensors
    return ctx.derivative(x_t, x, ctx.approximate, 1)


def save_derivative(ctx, dy, x, approximate, order, derivative):
    ctx.save_for_backward(dy, x)
    ctx.save_for_forward(dy, x)
    ctx.approximate, ctx.order, ctx.derivative = approximate, order, derivative


def jvp_derivative(ctx, dy_t, x_t, approximate_t, order_t):
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


def backward_derivative(ctx, grad):
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
    backward = staticmethod(backward_gelu)
    jvp = staticmethod(jvp_gelu)

    @staticmethod
    def forward(x, approximate):
        return gelu_op(x, approximate)

    @staticmethod
    def setup_context(ctx, inputs, output):
        save(ctx, *inputs, Derivative.apply)


class Derivative(torch.autograd.Function):
    """dy * f^(order)(x): an ``autograd.Function`` over
    ``gelu_numba::derivative``, for torch.compile and torch.func."""

    generate_vmap_rule = True
    backward = staticmethod(backward_derivative)
    jvp = staticmethod(jvp_derivative)

    @staticmethod
    def forward(dy, x, approximate, order):
        return derivative_op(dy, x, approximate, order)

    @staticmethod
    def setup_context(ctx, inputs, output):
        save_derivative(ctx, *inputs, Derivative.apply)


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
        save(ctx, x, approximate, Derivative.apply)
        return _below_autograd(gelu_op, keyset, x, approximate)

    @staticmethod
    def backward(ctx, grad):
        return (None, *backward_gelu(ctx, grad))

    @staticmethod
    def jvp(ctx, keyset_t, x_t, approximate_t):
        return jvp_gelu(ctx, x_t, approximate_t)


class _DerivativeKernel(torch.autograd.Function):
    """gelu_numba::derivative's Autograd kernel."""

    @staticmethod
    def forward(ctx, keyset, dy, x, approximate, order):
        save_derivative(ctx, dy, x, approximate, order, Derivative.apply)
        if by_formula(approximate, order):
            # torch operations, which need the Autograd keys that the
            # redispatch below turns off
            check_pair(dy, x)
            return formula_derivative(dy, x, approximate, order)
        return _below_autograd(derivative_op, keyset, dy, x, approximate, order)

    @staticmethod
    def backward(ctx, grad):
        return (None, *backward_derivative(ctx, grad))

    @staticmethod
    def jvp(ctx, keyset_t, dy_t, x_t, approximate_t, order_t):
        return jvp_derivative(ctx, dy_t, x_t, approximate_t, order_t)


def register_kernels(lib, apply_gelu, apply_derivative):
    """The operators' Autograd kernels above, in ``lib`` (a
    ``torch.library.Library`` of the operators' namespace), in place of
    custom_op's own.  A strided nested tensor goes component by component
    through ``apply_gelu`` and ``apply_derivative``, the public functions'
    paths (:mod:`~gelu_numba.targets.torch.paths`)."""
    def _gelu_autograd(keyset, x, approximate):
        if strided_nested(x):
            return by_component(apply_gelu, x, approximate)
        _no_functorch_autograd("gelu_numba::gelu")
        return _GeluKernel.apply(keyset, x, approximate)

    def _derivative_autograd(keyset, dy, x, approximate, order):
        if strided_nested(x):
            check_pair(dy, x)
            return by_component(apply_derivative, dy, x, approximate, order)
        _no_functorch_autograd("gelu_numba::derivative")
        return _DerivativeKernel.apply(keyset, dy, x, approximate, order)

    with warnings.catch_warnings():
        # custom_op registered a backward-only kernel at definition: replaced
        warnings.filterwarnings("ignore", "(?s).*Overriding a previously registered kernel")
        torch_dispatch.replace_kernel(lib, GELU, _gelu_autograd, "Autograd")
        torch_dispatch.replace_kernel(lib, DERIVATIVE, _derivative_autograd, "Autograd")
