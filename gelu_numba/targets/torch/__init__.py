"""PyTorch target: the package's GELU as two ``torch.library`` custom ops,
``gelu_numba::gelu`` and ``gelu_numba::derivative``.

Everything that knows about PyTorch's operator, autograd and tensor APIs is
here; the public module :mod:`gelu_numba.torch` is the user-facing layer.
Imported only by it (it imports torch).  Inside this package ``import
torch`` is PyTorch itself (imports are absolute).

``checks``
    The dtypes, devices and layouts accepted, and the errors for the rest.
``tensors``
    The tensor-to-kernel glue: ufuncs on NumPy views (CPU), kernel
    launches on PyTorch's stream (CUDA), the half-precision paths.
``formulas``
    The higher exact derivatives and the approximations as torch
    operations.
``ops``
    The two custom operators, their fake and vmap rules and their bodies.
``autograd``
    Backward and jvp rules, the ``autograd.Function`` classes and the
    operators' own Autograd kernels.
``nested``
    Strided nested tensors, component by component.
``paths``
    Which path a call of the public functions takes (eager kernels,
    Functions, the operators, ONNX), and quantized tensors.
``onnx``
    The ONNX export of the GELU.

Importing the package defines the operators and registers all their
kernels.
"""

import torch

from gelu_numba.targets.torch import autograd, nested, ops, paths
from gelu_numba.targets.torch.checks import APPROXIMATE, check_approximate, check_tensor
from gelu_numba.targets.torch.tensors import FAST_CUDA_CALLS
from gelu_numba.targets.torch.onnx import onnx_translation_table
from gelu_numba.targets.torch.ops import gelu_body
from gelu_numba.targets.torch.paths import apply_derivative, apply_gelu

__all__ = ["APPROXIMATE", "apply_derivative", "apply_gelu", "check_approximate",
           "check_tensor", "onnx_translation_table", "FAST_CUDA_CALLS", "gelu_body"]

# Importing ops defined the operators.  Their other kernels are registered
# here, once, in one place, so that the order (fake rules, Autograd kernels,
# nested-tensor kernels, vmap rules) does not hang on the order of imports.
ops.register_fake_rules()
# (a module attribute: a Library's registrations end when it is collected)
_IMPL = torch.library.Library(ops.LIB, "IMPL")
autograd.register_kernels(_IMPL, paths.apply_gelu, paths.apply_derivative)
nested.register_kernels(_IMPL)
ops.register_vmap_rules()
