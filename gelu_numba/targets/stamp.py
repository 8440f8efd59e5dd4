"""The loops' source stamp: a hash of every kernel, table and target file (and
of the XLA FFI layout), :func:`gelu_numba.kernels.stamp.source_stamp`.

Every cached loop of the package (the element loops, the ufunc loops and
the parallel block runners, :func:`gelu_numba.soi_map`'s loop, the XLA FFI
handler) holds this stamp as a closure variable, the key of its cache
entry (why: :mod:`gelu_numba.kernels.stamp`).  A loop is made by the
targets' files as much as by its kernel (the parallel ufunc loop, defined
in ``cpu/ufunc_loop.py``, calls ``cpu/parallel.py``'s block runner), so
editing any of them recompiles.
"""

from gelu_numba.kernels.stamp import source_stamp

#: the stamp of the kernels, the tables, the targets and the XLA FFI layout
#: the JAX handler reads
STAMP = source_stamp("kernels", "tables", "targets", "internals/xla_ffi.py")
