"""Every piece of Numba and CUDA machinery of the package.

The kernels (:mod:`gelu_numba.kernels`) are mathematics only, the catalog
(:mod:`gelu_numba.catalog`) is data; this package turns a catalog record
into the compiled forms and publishes them:

``dtypes``
    The one dtype rule (which loop, float32 or float64, runs for which
    inputs) and its error message.
``stamp``
    The source stamp that keys Numba's on-disk cache to the kernel sources.
``numpy_api``
    A ``numpy.ufunc`` from compiled loops, through NumPy's C API.
``cpu``
    A package: the loops (``@cfunc``), the element loops, the ufunc
    loop's source template, the intrinsics, the ufuncs and the ``@njit``
    callers, one module each.
``bound``, ``operands``
    A plain loop function bound to one kernel under a name of its own;
    tuples of a loop's operands.
``parallel``
    The multithreaded loops and ufuncs.
``cuda``
    A package: device functions, kernel sources, the launch configuration,
    the launcher and its fast launch, the kernel variants by device, and
    the 2-byte and SOI kernels, one module each (needs numba-cuda;
    imported by :mod:`gelu_numba.gpu` only).
``torch``
    A package: the PyTorch custom operators, their autograd, fake and vmap
    rules, and the tensor-to-kernel glue, one module each (needs torch;
    imported by :mod:`gelu_numba.torch` only).
``half_loops``
    The 2-byte loops (float16 and bfloat16, correctly rounded).
``half_tables``
    Their tables and lookup kernels, made from the float64 ufuncs the
    caller passes.
``fp_env``
    The floating-point environment every loop and table is built in
    (round to nearest, no flush to zero), whatever the caller's mode.
``soi_loop``
    The loop of the stochastic 0-I map.
``jax_ffi``, ``jax_op``
    The XLA FFI handler that runs the ufuncs' loops on XLA's buffers, and
    the JAX primitive with its transformation rules (need jax; imported by
    :mod:`gelu_numba.jax` only).
``emulated``
    float32-only ufuncs (the production emulations, ``gelu_half32``).
``publish``
    The one way every public module publishes its functions.

Loops are ``@cfunc``, ``@njit`` callers are ``@overload``, pointer
arithmetic is an ``@intrinsic``.  The few private names of NumPy, Numba,
numba-cuda, PyTorch and JAX that the package needs are in
:mod:`gelu_numba.internals`, each with why and a probe.
"""
