"""Numba's on-disk cache must hit in a new process for every loop.

Numba keys a cached function by its bytecode and the pickle of its closure
variables; a kernel pickled by value (the generated approximations) pickles
differently in every process, which made every process recompile them
(~3 s per loop).  The loops close over the source stamp alone
(gelu_numba.targets.stamp).
"""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

_SCRIPT = """
import gelu_numba, gelu_numba.approximations, gelu_numba.parallel
from gelu_numba import catalog
from gelu_numba.targets import cpu, parallel
for module, registry in ((catalog.TOP, cpu.REGISTRY), (catalog.APPROX, cpu.REGISTRY),
                         (catalog.PARALLEL, parallel.REGISTRY)):
    for fn in catalog.published(module):
        for char in "fd":
            print(registry.home, fn.name, char, registry.compile(fn, char).cache_hits)
"""


def _hits():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         check=True, timeout=1200)
    return [line.split() for line in out.stdout.splitlines()]


def test_every_loop_hits_the_cache_in_a_new_process():
    _hits()  # fills the cache where needed
    second = _hits()
    assert len(second) > 60
    missed = [row for row in second if int(row[3]) == 0]
    assert not missed, missed
