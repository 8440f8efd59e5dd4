"""Other libraries' private API, one module per library, each use named.

gelu-numba depends on a few names that its dependencies do not promise to
keep.  Each lives in exactly one module here, with why it is used and what
replaces it if the library changes, and each module's :func:`probe` checks
them (the repository's ``tests/test_internals.py`` runs every probe; the
NumPy one runs at import).  Nothing else in the package touches a private
name of NumPy, Numba, numba-cuda, PyTorch or JAX.

* :mod:`.numpy_ufunc`: NumPy's ufunc C API table;
* :mod:`.numba_core`: Numba's dispatcher class and CPU typing context;
* :mod:`.numba_cuda`: numba-cuda's compiled-kernel handle, current context
  and stream conversion (the fast launch);
* :mod:`.torch_dispatch`: PyTorch's functorch, tracing and dispatch-key
  state (the autograd paths of :mod:`gelu_numba.torch`);
* :mod:`.xla_ffi`: the C layout of XLA's FFI call frame, read from
  compiled code (:mod:`gelu_numba.jax`), checked against jaxlib's header;
* :mod:`.jax_sharding`: JAX's Shardy sharding-rule builder (a sharded
  call of :mod:`gelu_numba.jax` runs shard by shard) and the varying
  manual axes of ``shard_map``;
* :mod:`.jax_dtypes`: JAX's promotion of an elementwise function's
  operands (:mod:`gelu_numba.jax` takes and gives the dtypes
  ``jax.nn.gelu`` does);
* :mod:`.jax_tracing`: the equation a ``jit`` trace records for a value
  (the backward of a sum takes the one value its cotangent broadcasts).

This is the bottom layer: it imports no other module of the package.
"""
