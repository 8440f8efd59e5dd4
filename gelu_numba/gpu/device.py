"""Scalar CUDA device functions, for use inside your own ``@cuda.jit`` kernels.

Every function of the package is here under its own name (``gelu``,
``gelu_grad``, ``gelu_grad2``, ``gelu_backward``, ``ndtr``, ``norm_pdf``,
``gelu_general``, the family ``silu``, ``x_cauchy``, ``lalu`` and their
``_grad``, and every approximation ``gelu_tanh``, ``gelu_poly14``, ... with
its ``_grad``), as a numba-cuda device function compiled from the same
scalar kernel as the CPU ufunc (:mod:`gelu_numba.catalog`).  They are
compiled on first use for the argument types of the call.

Precision
---------
All-float32 arguments run the float32 algorithm; anything else (float64,
integers, a mix) the float64 one, which returns float64, below 1 ulp.  For
``gelu``, ``gelu_grad``, ``gelu_grad2``, ``gelu_backward``, ``ndtr`` and
``norm_pdf`` the float32 algorithm computes in float32 arithmetic and
returns float32, below <<gpu32_bound>> ulp (:mod:`gelu_numba.kernels.gpu32`).
For the other functions it computes in float64, as on the CPU, and returns
that float64 value: rounded to float32 (by storing it in a float32 array,
or with ``numpy.float32(...)``) it is the float32 result, below 1 ulp;
unrounded it is even closer to the exact value.

Example
-------
::

    import numpy as np
    from numba import cuda
    from gelu_numba.gpu import device as gd

    @cuda.jit
    def bias_gelu(x, b, out):
        # out = GELU(x + b), b broadcast along the rows
        i, j = cuda.grid(2)
        if i < x.shape[0] and j < x.shape[1]:
            out[i, j] = gd.gelu(x[i, j] + b[j])

    x = cuda.to_device(np.random.randn(1024, 768).astype(np.float32))
    b = cuda.to_device(np.zeros(768, np.float32))
    out = cuda.device_array_like(x)
    bias_gelu[(64, 48), (16, 16)](x, b, out)

The gelu-numba repository's ``tests/test_gpu.py`` runs this example.
"""

from gelu_numba import catalog
from gelu_numba.targets import cuda as _cuda
from gelu_numba.targets import publish as _publish
from gelu_numba.targets.cuda.docs import device_sections as _sections

__doc__ = __doc__.replace("<<gpu32_bound>>", f"{catalog.GPU32_BOUND}")

_PRECISION = """
    Scalar arguments.  All float32 runs the float32 algorithm: for the six
    normal-family functions it returns float32 (float32 arithmetic), for
    the others the float64 value whose rounding to float32 is the result;
    anything else runs the float64 one.  See :mod:`gelu_numba.gpu.device`.
"""

def _documented(fn):
    dev = _cuda.device(fn.name)
    dev.__doc__ = (f"{fn.name}({', '.join(fn.params)})  (CUDA device function)\n"
                   f"{fn.doc}\n{_PRECISION}{_sections(fn)}")
    return dev


__getattr__, __dir__, __all__ = _publish.module(__name__, records=catalog.GPU,
                                                factory=_documented)
