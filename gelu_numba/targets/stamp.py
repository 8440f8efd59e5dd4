"""The source stamp: a hash of every kernel, table and target file (and of the
XLA FFI layout).

Numba's on-disk cache is invalidated by the modification time of the file
that defines a cached function, not by the files of the functions and
tables it calls (nor, for a parallel loop compiled from ``cpu/loops.py``'s
template, by ``parallel.py``, whose block runner it links).  Every cached function of the package (the CPU and
parallel loops, :func:`gelu_numba.soi_map`'s loop) holds this stamp as a
closure variable, and closure variables are part of Numba's cache key, so
editing any kernel or table recompiles.  The stamp is an ``int``: it pickles
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
