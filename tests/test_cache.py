"""Numba's on-disk cache must hit in a new process for every function.

Numba keys a cached function by its bytecode and the pickle of its closure
variables; a kernel pickled by value (the generated approximations) pickles
differently in every process, which made every process recompile them
(~3 s per loop).  The compiled bodies close over the source stamp alone.
"""

import subprocess
import sys

_SCRIPT = """
import hashlib
from numba.core.serialize import dumps
from gelu_numba import catalog
for e in list(catalog.ENTRIES) + list(catalog.APPROX_ENTRIES) + list(catalog.FAMILY_ENTRIES):
    cells = tuple(c.cell_contents for c in (e.kernel.__closure__ or ()))
    assert all(isinstance(c, int) for c in cells), (e.name, cells)
    print(e.name, hashlib.sha256(dumps(cells)).hexdigest())
"""


def _keys():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         check=True)
    return out.stdout.split("\n")


def test_cache_keys_are_the_same_in_every_process():
    first, second = _keys(), _keys()
    assert len(first) > 30
    assert first == second
