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
"""

from gelu_numba.ufuncs import (
    gelu, gelu_backward, gelu_grad, gelu_grad2, ndtr, norm_pdf,
)

__version__ = "0.1.0"

__all__ = ["gelu", "gelu_backward", "gelu_grad", "gelu_grad2", "ndtr",
           "norm_pdf"]
