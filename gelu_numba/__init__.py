"""gelu_numba: accurate and fast GELU kernels as Numba ufuncs.

The functions below are NumPy ufuncs (Numba ``DUFunc``s) with float32 and
float64 loops, usable on arrays and inside ``@njit`` code:

    gelu(x)               x * Phi(x), the exact GELU
    gelu_grad(x)          Phi(x) + x * phi(x)
    gelu_grad2(x)         phi(x) * (2 - x**2)
    gelu_backward(dy, x)  dy * gelu_grad(x), fused
    ndtr(x)               Phi(x), the standard normal CDF
    norm_pdf(x)           phi(x), the standard normal density

All are below 1 ulp of the exact value in float64 and float32.

The paper's generalisations:

    gelu_general(x, mu, sigma)   x * Phi((x - mu)/sigma); sigma = 0: x H(x - mu)
    silu(x), silu_grad(x)        x * F(x), F logistic (the SiLU)
    x_cauchy(x), x_cauchy_grad(x)  x * F(x), F Cauchy
    lalu(x), lalu_grad(x)        x * F(x), F Laplace
    soi_map(x, seed=None, out=None)  the stochastic 0-I map x * Bernoulli(Phi(x))

Approximations (the tanh and sigmoid forms, A&S 7.1.26, fitted polynomials
and rationals) live in :mod:`gelu_numba.approximations`; the tanh and
sigmoid forms are also here as ``gelu_tanh``, ``gelu_sigmoid`` (and
``_grad``).  Names are loaded on first access.
"""

import importlib

__version__ = "0.1.0"

_UFUNCS = ("gelu", "gelu_backward", "gelu_grad", "gelu_grad2", "ndtr",
           "norm_pdf", "gelu_general", "silu", "silu_grad", "x_cauchy",
           "x_cauchy_grad", "lalu", "lalu_grad")
_SOURCES = {name: "gelu_numba.ufuncs" for name in _UFUNCS}
_SOURCES.update({name: "gelu_numba.approximations" for name in
                 ("gelu_tanh", "gelu_tanh_grad", "gelu_sigmoid", "gelu_sigmoid_grad")})
_SOURCES["soi_map"] = "gelu_numba.soi"

__all__ = sorted(_SOURCES)


def __getattr__(name):
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'gelu_numba' has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_SOURCES))
