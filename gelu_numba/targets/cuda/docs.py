"""The interface sections of the GPU functions' docstrings (numpydoc):
parameters, return value and an example, made from a catalog record for
the kernels of :mod:`gelu_numba.gpu` (:func:`kernel_sections`) and the
device functions of :mod:`gelu_numba.gpu.device` (:func:`device_sections`).

The examples are literal blocks, not doctests: a documentation build or a
doctest run has no GPU.  The gelu-numba repository's ``tests/test_gpu.py``
runs them under numba-cuda's simulator.
"""

from gelu_numba import catalog

_ARRAYS = catalog.EXAMPLE_ARRAYS


def _arrays(fn, pad):
    return "\n".join(f"{pad}{p} = cuda.to_device({_ARRAYS[p]})" for p in fn.params
                     if p in _ARRAYS)


def _call(fn, element=False):
    # (inside a kernel, an array's element)
    return ", ".join(catalog.EXAMPLE_ARGUMENTS[p] + ("[i]" if element and p in _ARRAYS else "")
                     for p in fn.params)


def kernel_sections(fn):
    """Parameters, Returns and Examples of ``gelu_numba.gpu.<fn.name>``."""
    call = _call(fn)
    pad = " " * 8
    return f"""
    Parameters
    ----------
    {", ".join(fn.params)} : device array, ndarray or scalar
        Device arrays (numba's, or any object with
        ``__cuda_array_interface__``: CuPy arrays, PyTorch CUDA tensors; not
        copied), host NumPy arrays or scalars (copied to the device);
        float32 or float64, other real dtypes by NumPy's safe casting; any
        shape and strides, broadcast together.  Never written.
    out : device array, optional
        Of the broadcast shape, float32 or float64: the result is written
        there and ``out`` is returned.
    stream : numba stream or 0, optional
        The stream of the launch (0: the default stream).  By default the
        current stream of the first device operand's library (PyTorch's,
        CuPy's), else the default stream.

    Returns
    -------
    device array
        ``out`` when given, else a new array of the loop's dtype of the
        first device operand's library: a PyTorch tensor, a CuPy array,
        else a numba device array.  Nothing is copied back to the host.

    Examples
    --------
    ::

        import numpy as np
        from numba import cuda
        from gelu_numba import gpu

{_arrays(fn, pad)}
{pad}y = gpu.{fn.name}({call})              # a new float32 device array
{pad}gpu.{fn.name}({call}, out=y)           # into y: no allocation
{pad}result = y.copy_to_host()
"""


def device_sections(fn):
    """Parameters, Returns and Examples of
    ``gelu_numba.gpu.device.<fn.name>``."""
    arrays = [p for p in fn.params if p in _ARRAYS]
    call = _call(fn, element=True)
    pad = " " * 8
    return f"""
    Parameters
    ----------
    {", ".join(fn.params)} : float32 or float64
        Scalars inside a ``@cuda.jit`` kernel (integers too, as float64).

    Returns
    -------
    float32 or float64
        All-float32 arguments run the float32 algorithm, anything else the
        float64 one (the precision section of :mod:`gelu_numba.gpu.device`).

    Examples
    --------
    ::

        import numpy as np
        from numba import cuda
        from gelu_numba.gpu import device as gd

        @cuda.jit
        def kernel({", ".join(arrays)}, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = gd.{fn.name}({call})

{_arrays(fn, pad)}
{pad}out = cuda.device_array(7, np.float32)
{pad}kernel[1, 32]({", ".join(arrays)}, out)
{pad}result = out.copy_to_host()
"""
