"""JAX target: the XLA FFI handler and the JAX primitive, one module each
(need jax; imported by :mod:`gelu_numba.jax` only).

``ffi``
    The XLA FFI handler that runs the ufuncs' loops on XLA's buffers.
``op``
    The JAX primitive, its transformation rules and its lowering to the
    handler.
"""
