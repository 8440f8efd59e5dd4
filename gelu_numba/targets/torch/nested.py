"""Nested tensors.

Strided nested tensors (``torch.nested.nested_tensor``'s default layout: a
plain ``torch.Tensor`` whose storage has no public flat view): the kernel
on each component, through the operators' NestedTensorCPU and
NestedTensorCUDA kernels here, and the public functions on each component
(:func:`by_component`).  Jagged ones are a subclass that applies a
pointwise operator to its values (the operators' ``pointwise`` tag):
nothing here.
"""

import torch

from gelu_numba.targets.torch.checks import check_pair
from gelu_numba.targets.torch.ops import DERIVATIVE, GELU
from gelu_numba.targets.torch.ops import derivative_body, gelu_body


def by_component(apply, *args):
    """``apply`` on each component of the strided nested tensors in
    ``args``, nested again: autograd's ``Function`` cannot take such a
    tensor (PyTorch 2.13: "NestedTensorImpl doesn't support sizes"), and
    ``unbind`` and ``as_nested_tensor`` are differentiable."""
    tensors = [a.unbind() if isinstance(a, torch.Tensor) else None for a in args]
    parts = [apply(*(a if t is None else t[i] for a, t in zip(args, tensors)))
             for i in range(len(next(t for t in tensors if t is not None)))]
    return torch.nested.as_nested_tensor(parts, layout=torch.strided)


def _nested_gelu(x, approximate):
    return by_component(gelu_body, x, approximate)


def _nested_derivative(dy, x, approximate, order):
    check_pair(dy, x)
    return by_component(derivative_body, dy, x, approximate, order)


def register_kernels(lib):
    """The operators' kernels for strided nested tensors, in ``lib`` (a
    ``torch.library.Library`` of the operators' namespace)."""
    for key in ("NestedTensorCPU", "NestedTensorCUDA"):
        lib.impl(GELU, _nested_gelu, key)
        lib.impl(DERIVATIVE, _nested_derivative, key)
