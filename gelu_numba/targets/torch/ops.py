"""The two ``torch.library`` custom operators (namespace ``gelu_numba``)
and the kernels they call.

``gelu(Tensor x, str approximate) -> Tensor``
    f(x): the exact GELU (``approximate="none"``) or an approximation of
    :mod:`gelu_numba.approximations`.
``derivative(Tensor dy, Tensor x, str approximate, int order) -> Tensor``
    dy * f^(order)(x), for order 1 (the backward pass; for the exact GELU
    the fused ufunc ``gelu_backward``) and every higher order for the
    exact GELU (order 2 ``gelu_grad2``, then phi(x) P_n(x) by torch
    operations in float64: :func:`~gelu_numba.targets.torch.formulas.gelu_derivative`) and for
    the tanh and sigmoid forms (torch's autograd of the formula in
    float64: :func:`~gelu_numba.targets.torch.formulas.composite_derivative`).

``register_fake`` gives ``torch.compile`` the output (``empty_like`` of
x: its shape, dtype, device and strides), ``register_vmap`` batches by
running the elementwise op on the batched tensor.  Both ops carry
PyTorch's ``pointwise`` tag: jagged nested tensors apply them to their
values.
"""

import functools

import torch

from gelu_numba import catalog

from gelu_numba.targets.torch.checks import check_approximate, check_pair, check_tensor
from gelu_numba.targets.torch.formulas import composite_derivative, gelu_derivative
from gelu_numba.targets.torch.tensors import apply_kernel


#: the operators' namespace
LIB = "gelu_numba"
#: the operators' names in it: GELU in any ``approximate`` form (named as the
#: catalog's exact GELU), and its derivatives of any order
GELU, DERIVATIVE = catalog.GELU, "derivative"

def _names(approximate):
    """The ufunc names of f, of dy * f' (its fused backward, else f') and of
    f'' (None where the catalog has no record of it), from the catalog's
    derivative links."""
    return _links(catalog.approximate(approximate))


@functools.cache
def _links(f):
    # (by record, not by key: a key registered again is another record)
    return f.name, f.backward or f.derivative, catalog.lookup(f.derivative).derivative


def gelu_body(x, approximate):
    """f(x) into a new tensor (the body of ``gelu_numba::gelu``; no checks)."""
    return apply_kernel(_names(approximate)[0], [x], torch.empty_like(x))


def derivative_body(dy, x, approximate, order):
    """dy * f^(order)(x) (the body of ``gelu_numba::derivative``)."""
    check_pair(dy, x)
    _, first, second = _names(approximate)
    if not (isinstance(order, int) and order >= 1):
        raise RuntimeError(f"gelu_numba::derivative: order must be an int >= 1 (got {order!r})")
    if by_formula(approximate, order):
        return formula_derivative(dy, x, approximate, order)
    out = torch.empty_like(x)
    if order == 1 and approximate == "none":
        return apply_kernel(first, [dy, x], out)  # fused: one rounding
    return apply_kernel(first if order == 1 else second, [x], out, scale=dy)


def by_formula(approximate, order):
    """Whether dy * f^(order)(x) is torch operations (no kernel): from
    order 3 for the exact GELU, from order 2 for the approximations."""
    return order >= 3 or (order == 2 and approximate != "none")


def formula_derivative(dy, x, approximate, order):
    """dy * f^(order)(x) by torch operations (:func:`gelu_derivative`,
    :func:`composite_derivative`).  Called where autograd is on: the
    approximations' derivatives are torch's autograd of the formula."""
    higher = (gelu_derivative(x, order) if approximate == "none"
              else composite_derivative(x, approximate, order))
    return dy * higher


#: elementwise: tools that handle pointwise operators generically apply
#: them to the values (jagged nested tensors; torch.compile's partitioner)
_POINTWISE = (torch.Tag.pointwise,)


@torch.library.custom_op(f"{LIB}::{GELU}", mutates_args=(), tags=_POINTWISE)
def gelu_op(x: torch.Tensor, approximate: str) -> torch.Tensor:
    check_tensor(f"{LIB}::{GELU}", x)
    return gelu_body(x, check_approximate(approximate))


@torch.library.custom_op(f"{LIB}::{DERIVATIVE}", mutates_args=(), tags=_POINTWISE)
def derivative_op(dy: torch.Tensor, x: torch.Tensor, approximate: str,
                  order: int) -> torch.Tensor:
    check_tensor(f"{LIB}::{DERIVATIVE}", x)
    return derivative_body(dy, x, check_approximate(approximate), order)


def _fake_gelu(x, approximate):
    return torch.empty_like(x)


def _fake_derivative(dy, x, approximate, order):
    return torch.empty_like(x)


def register_fake_rules():
    """The operators' fake implementations (``torch.compile``, meta and
    fake tensors): ``empty_like(x)``, x's shape, dtype, device and strides."""
    gelu_op.register_fake(_fake_gelu)
    derivative_op.register_fake(_fake_derivative)


def _batch_first(t, dim, size):
    """t with its batch dimension first (a stride-0 expansion if unbatched)."""
    if dim is None:
        return t.unsqueeze(0).expand(size, *t.shape)
    return t.movedim(dim, 0)


def _vmap_gelu(info, in_dims, x, approximate):
    return gelu_op(x, approximate), in_dims[0]


def _vmap_derivative(info, in_dims, dy, x, approximate, order):
    if in_dims[0] == in_dims[1]:
        return derivative_op(dy, x, approximate, order), in_dims[1]
    dy = _batch_first(dy, in_dims[0], info.batch_size)
    x = _batch_first(x, in_dims[1], info.batch_size)
    return derivative_op(dy, x, approximate, order), 0


def register_vmap_rules():
    """The operators' vmap rules: the elementwise operator on the batched
    tensors (``dy`` and ``x`` brought to one batch dimension first where
    they are batched differently)."""
    gelu_op.register_vmap(_vmap_gelu)
    derivative_op.register_vmap(_vmap_derivative)
