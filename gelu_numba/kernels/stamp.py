"""The source stamp of compiled code cached on disk: a hash of the source
files it is made from.

Numba's on-disk cache is invalidated by the modification time of the file
that defines a cached function, not by the files of the functions and
tables it calls.  So every cached function of the package holds a stamp
as a closure variable, and closure variables are part of Numba's cache
key: editing any file it is made from recompiles it.  The stamp is an
``int``: it pickles the same in every process, so the key does too (a
kernel made by a factory would pickle by value, differently in each
process, and never hit).

:data:`KERNELS` stamps the kernels and their tables, all that the cached
accurate paths of :mod:`gelu_numba.kernels.rounded32` are made from;
:data:`gelu_numba.targets.stamp.STAMP` stamps the loops, which the targets'
files make too.
"""

import hashlib
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def source_stamp(*parts):
    """The stamp of ``parts``: folders of the package (every ``.py`` file in
    them) and files, as paths relative to the package."""
    h = hashlib.sha256()
    for part in parts:
        path = _PACKAGE / part
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(file.read_bytes())
    return int.from_bytes(h.digest()[:7], "little")


#: the stamp of the kernels and their tables
KERNELS = source_stamp("kernels", "tables")
