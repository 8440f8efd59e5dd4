"""What the operators accept, and the errors for the rest.

Dtypes: float32 and float64 (the ufuncs' own) and float16 and bfloat16.
Devices: CPU and CUDA, and meta (shapes only: the fake implementation).
Layouts: dense tensors and nested ones of either layout.  Everything else
raises the exception type ``torch.nn.functional.gelu`` raises for it,
naming what is accepted.
"""

import torch

from gelu_numba import catalog


#: tensor dtypes with a kernel: the ufuncs' own, and the half types that
#: run through float32 elsewhere
NATIVE = (torch.float32, torch.float64)
HALF = (torch.float16, torch.bfloat16)
DTYPES = NATIVE + HALF
DEVICES = ("cpu", "cuda")
#: devices without data: the ops' fake implementation gives the result's
#: shape, dtype and strides (models built under torch.device("meta"))
SHAPE_ONLY = ("meta",)

#: every value of ``approximate`` the package lists: the exact GELU, then
#: the approximations (``catalog.registered`` records add theirs while
#: registered: :func:`gelu_numba.catalog.approximate_keys`)
APPROXIMATE = catalog.APPROXIMATE

ACCEPTED_DTYPES = "float16, bfloat16, float32 or float64"
ACCEPTED_DEVICES = "CPU or CUDA (and meta, shapes only)"
#: dense tensors, and nested ones of either layout (strided nested tensors
#: have layout torch.strided)
LAYOUTS = (torch.strided, torch.jagged)
ACCEPTED_LAYOUTS = "dense (strided) and nested (strided or jagged)"


def check_approximate(approximate):
    """``approximate`` itself, or the error ``torch.nn.functional.gelu``
    raises for it: ``TypeError`` for a non-string, ``RuntimeError`` (with
    the accepted names) for an unknown name."""
    if not isinstance(approximate, str):
        raise TypeError(f"approximate must be a str, one of "
                        f"{', '.join(map(repr, catalog.approximate_keys()))}"
                        f" (got {type(approximate).__name__})")
    try:
        catalog.approximate(approximate)   # (one dict lookup on every call)
    except ValueError as e:
        raise RuntimeError(str(e)) from None
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


def check_pair(dy, x):
    """``gelu_numba::derivative``'s ``RuntimeError`` for a ``dy`` whose
    shape, dtype or device is not ``x``'s."""
    # a strided nested tensor has no shape: its components are checked
    # one by one (nested.by_component)
    same_shape = (dy.is_nested == x.is_nested if strided_nested(x)
                  else dy.shape == x.shape)
    if not same_shape or dy.dtype != x.dtype or dy.device != x.device:
        raise RuntimeError(
            "gelu_numba::derivative: dy and x must have one shape, dtype and "
            f"device (got {_describe(dy)} and {_describe(x)})")


def _describe(t):
    shape = "nested" if strided_nested(t) else tuple(t.shape)
    return f"{shape} {t.dtype} {t.device}"


def strided_nested(t):
    """Whether ``t`` is a nested tensor of the strided layout (a plain
    ``torch.Tensor`` without a shape; jagged ones are a subclass)."""
    return t.is_nested and t.layout == torch.strided
