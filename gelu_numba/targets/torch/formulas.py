"""The GELU's higher derivatives and the approximations as torch operations.

No kernel of the package runs here: these are the formulas of
:mod:`gelu_numba.kernels.formulas` evaluated by PyTorch, in float64 and
rounded once to the tensor's dtype.

* :func:`gelu_derivative`: the exact GELU's derivatives from order 3 on,
  phi(x) P_n(x).
* :func:`composite`: an approximation as a few torch operations (its
  catalog record's formula); its derivatives from order 2 on are torch's
  autograd of that formula (:func:`composite_derivative`), and its ONNX
  subgraph where ONNX has no operator for it.
"""

import functools

import torch

from gelu_numba import catalog
from gelu_numba.kernels import formulas

#: the formulas' operations in torch (a constant as a 0-d tensor of w's
#: dtype: the dynamo ONNX exporter of torch 2.13 with onnxscript 0.7.2
#: writes a float scalar as a float32 constant even in float64 arithmetic,
#: 1.702 becoming 1.7020000219...; a tensor constant keeps its bits)
TORCH = formulas.Ops(where=torch.where, clamp=lambda w, lo=None, hi=None: w.clamp(min=lo, max=hi),
                     tanh=torch.tanh, sigmoid=torch.sigmoid, exp=torch.exp,
                     const=lambda w, value: w.new_tensor(value))


def gelu_derivative(x, order):
    """GELU^(order)(x) for order >= 3, by torch operations in float64
    (rounded once to x's dtype): phi(x) P_n(x).  Not a kernel of this
    package: its accuracy is that of the formula, exp(-x**2/2) with x**2
    rounded (relative error about x**2 2**-53), as for nn.GELU's own
    autograd of these orders."""
    # (no _finite: the formula is the limit's signed zero at +-inf itself)
    return formulas.gelu_derivative(x.double(), order, TORCH).to(x.dtype)


def composite(approximate):
    """Approximation ``approximate`` as a few torch operations, ``f(w)``:
    its catalog record's formula (its derivatives from order 2 on are
    torch's autograd of it in float64, and its ONNX subgraph where ONNX has
    no operator for it)."""
    return functools.partial(catalog.approximate(approximate).formula, ops=TORCH)


def _finite(x, derivative):
    """``derivative(x)`` (an order >= 2, by torch operations) at finite x,
    its limit 0 at +-inf and NaN at NaN.  The formulas only see finite
    values (0 in place of the others): at inf their inf * 0 would be NaN,
    and at NaN the masks of clamp's gradient would give 0."""
    finite = torch.isfinite(x)
    d = derivative(torch.where(finite, x, 0.0))
    return torch.where(finite, d, torch.where(torch.isnan(x), x, 0.0).to(d.dtype))


def composite_derivative(x, approximate, order):
    """f^(order)(x) of an approximation, by torch's autograd of its formula
    (:func:`composite`) in float64 (rounded once to x's dtype): the
    accuracy of the formula's float64 evaluation, as nn.GELU's own
    autograd for "tanh"."""
    formula = composite(approximate)

    def derivative(v):
        with torch.enable_grad():
            w = v.detach().double().requires_grad_()
            d = formula(w)
            for _ in range(order):
                (d,) = torch.autograd.grad(d.sum(), w, create_graph=True)
        return d.detach()
    return _finite(x, derivative).to(x.dtype)
