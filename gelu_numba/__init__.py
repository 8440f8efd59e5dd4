"""gelu_numba: accurate and fast GELU kernels as NumPy ufuncs (Numba).

The functions below are NumPy ufuncs with float32 and float64 loops, usable
on arrays (and duck arrays: Dask, xarray, ...) and inside ``@njit`` code:

``gelu(x)``
    ``x * Phi(x)``, the exact GELU
``gelu_grad(x)``
    ``Phi(x) + x * phi(x)``
``gelu_grad2(x)``
    ``phi(x) * (2 - x**2)``
``gelu_backward(dy, x)``
    ``dy * gelu_grad(x)``, fused
``ndtr(x)``
    ``Phi(x)``, the standard normal CDF
``norm_pdf(x)``
    ``phi(x)``, the standard normal density

All are below 1 ulp of the exact value in float64 and float32.

The paper's generalisations:

``gelu_general(x, mu, sigma)``
    ``x * Phi((x - mu)/sigma)``; sigma = 0: ``x H(x - mu)``
``silu(x)``, ``silu_grad(x)``
    ``x * F(x)``, F logistic (the SiLU)
``x_cauchy(x)``, ``x_cauchy_grad(x)``
    ``x * F(x)``, F Cauchy
``lalu(x)``, ``lalu_grad(x)``
    ``x * F(x)``, F Laplace
``soi_map(x, seed=None, out=None)``
    the stochastic 0-I map ``x * Bernoulli(Phi(x))``

Approximations (the tanh and sigmoid forms, A&S 7.1.26, fitted polynomials
and rationals) live in :mod:`gelu_numba.approximations`; the tanh and
sigmoid forms are also here as ``gelu_tanh``, ``gelu_sigmoid`` (and
``_grad``).  Multithreaded ufuncs: :mod:`gelu_numba.parallel`; GPU:
:mod:`gelu_numba.gpu`.

Each loop of a ufunc is compiled on the ufunc's first call for its dtype
(about a second) and loaded from Numba's on-disk cache in later processes;
``warmup()`` (or ``python -m gelu_numba warmup``) compiles them all ahead
of use.  Importing the package changes no global state.
"""

from gelu_numba.targets import publish as _publish

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = _publish.module(__name__, extra={"soi_map": "gelu_numba.soi",
                                                       "warmup": "gelu_numba._warmup"})
