"""The source stamp: a hash of every kernel, table and target file (and of the
XLA FFI layout).

Numba's on-disk cache is invalidated by the modification time of the file
that defines a cached function, not by the files of the functions and
tables it calls (nor, for the parallel ufunc loop, defined in
``cpu/ufunc_loop.py``, by ``cpu/parallel.py``, whose block runner it
calls).  Every cached function of the package (the element loops, the
ufunc loops and the parallel block runners, :func:`gelu_numba.soi_map`'s
loop, the XLA FFI handler) holds this stamp as a closure variable, and
closure variables are part of Numba's cache key, so editing any kernel or
table recompiles.  The stamp is an ``int``: it pickles
the same in every process, so the key does too (a kernel made by a factory
would pickle by value, differently in each process, and never hit).
"""

import hashlib
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def source_stamp():
    h = hashlib.sha256()
    for folder in ("kernels", "tables", "targets"):
        for path in sorted((_PACKAGE / folder).rglob("*.py")):
            h.update(path.read_bytes())
    # the XLA FFI layout the JAX handler reads
    h.update((_PACKAGE / "internals" / "xla_ffi.py").read_bytes())
    return int.from_bytes(h.digest()[:7], "little")


STAMP = source_stamp()
