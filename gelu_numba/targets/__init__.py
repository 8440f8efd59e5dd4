"""Every piece of Numba and CUDA machinery of the package.

The kernels (:mod:`gelu_numba.kernels`) are mathematics only, the catalog
(:mod:`gelu_numba.catalog`) is data; this package turns a catalog record
into the compiled forms and publishes them, one package per backend:

``cpu``
    The CPU target: the loops (``@cfunc``), the element loops, the ufunc
    loop, the intrinsics, the ufuncs and the ``@njit`` callers, the
    parallel, 2-byte, emulation and SOI loops, one module each.
``cuda``
    The CUDA target: device functions, kernel sources, the launch
    configuration, the launcher and its fast launch, the kernel variants by
    device, and the 2-byte and SOI kernels, one module each (needs
    numba-cuda; imported by :mod:`gelu_numba.gpu` only).
``torch``
    The PyTorch custom operators, their autograd, fake and vmap rules, and
    the tensor-to-kernel glue, one module each (needs torch; imported by
    :mod:`gelu_numba.torch` only).
``jax``
    The XLA FFI handler that runs the ufuncs' loops on XLA's buffers, and
    the JAX primitive with its transformation rules (need jax; imported by
    :mod:`gelu_numba.jax` only).

and the modules they share:

``dtypes``
    The one dtype rule (which loop, float32 or float64, runs for which
    inputs) and its error message.
``stamp``
    The source stamp that keys Numba's on-disk cache to the kernel sources.
``fp_env``
    The floating-point environment every loop and table is built in
    (round to nearest, no flush to zero), whatever the caller's mode.
``half_tables``
    The 2-byte formats' tables and lookup kernels, made from the float64
    ufuncs the caller passes (the CPU and GPU 2-byte loops).
``publish``
    The one way every public module publishes its functions.

Loops are ``@cfunc``, ``@njit`` callers are ``@overload``, pointer
arithmetic is an ``@intrinsic``.  The few private names of NumPy, Numba,
numba-cuda, PyTorch and JAX that the package needs are in
:mod:`gelu_numba.internals`, each with why and a probe.
"""
