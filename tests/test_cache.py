"""Numba's on-disk cache must hit in a new process for every loop.

Numba keys a cached function by its bytecode and the pickle of its closure
variables; a kernel pickled by value (the generated approximations) pickles
differently in every process, which made every process recompile them
(~3 s per loop).  The loops close over the source stamp alone
(gelu_numba.targets.stamp).
"""

import json
import subprocess
import sys

import numpy as np

import pytest

pytestmark = pytest.mark.unit

_SCRIPT = """
import gelu_numba, gelu_numba.approximations, gelu_numba.parallel
from gelu_numba import catalog
from gelu_numba.targets import cpu
from gelu_numba.targets.cpu import parallel
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


# ------------------------------------------------------------ damaged cache

# The processes below start on an empty cache and compile: they run
# norm_pdf, the correctly rounded float32 function whose loops compile
# fastest (the same machinery as gelu's: a fast path, a rounding test and an
# accurate path cached on its own).
NAME = "norm_pdf"

# a user's @njit code first (it compiles the correctly rounded kernel, and
# calls its accurate path, cached on its own), then the serial and parallel
# ufuncs (their loops); hits: of the two loops, and of the accurate path
_RUN = """
import json, sys, warnings
import numba
import numpy as np
import gelu_numba as g, gelu_numba.parallel as gp
from gelu_numba import catalog
from gelu_numba.kernels import rounded32
from gelu_numba.targets import cpu
from gelu_numba.targets.cpu import parallel


@numba.njit
def user(x, out):
    for i in range(x.size):
        out[i] = g.NAME(x[i])


x = np.load(sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    yn = np.empty_like(x)
    user(x, yn)
    y, yp = g.NAME(x), gp.NAME(x)
hits = [cpu.REGISTRY.compile(catalog.lookup("NAME"), "f").cache_hits,
        parallel.REGISTRY.compile(catalog.lookup("NAME"), "f").cache_hits,
        sum(rounded32.NAME_accurate.stats.cache_hits.values())]
np.save(sys.argv[2], np.stack([yn, y, yp]))
print(json.dumps({"hits": hits, "warnings": [str(w.message) for w in caught]}))
""".replace("NAME", NAME)


def _exact(x, name=NAME):
    from reference import mp
    return [getattr(mp, name)(float(v)) for v in x]


def _within_bound(values, x, exact):
    from reference import mp
    return max(mp.ulp_error(float(v), e, np.float32) for v, e in zip(values, exact)) < 0.51


# the cached functions a float32 NAME runs (gelu_numba.targets.cpu.loops,
# gelu_numba.targets.cpu.parallel): its element loop, the serial and parallel
# ufunc loops of one input, and the parallel loop's block runner
_FLOAT32 = (f"{NAME}_float32", "ufunc_loop_2_float32", "ufunc_loop_2_float32_parallel",
            "blocks_2_float32")


def _runner(script, x, tmp_path):
    """``run(copies=1)``: ``script`` in ``copies`` fresh processes started
    together on the cache ``tmp_path/cache``,
    its float32 results of :data:`NAME` of ``x`` (every array it saves)
    checked within the stated bound of mpmath; its report, the JSON of its
    last line (a list of them for several copies)."""
    import json
    import os
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    np.save(tmp_path / "x.npy", x)
    exact = _exact(x)

    def run(copies=1):
        started = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "x.npy"),
                                     str(tmp_path / f"y{k}.npy")], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for k in range(copies)]
        reports = []
        for k, proc in enumerate(started):
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            for y in np.atleast_2d(np.load(tmp_path / f"y{k}.npy")):
                assert _within_bound(y, x, exact)
            reports.append(json.loads(out.strip().splitlines()[-1]))
        return reports[0] if copies == 1 else reports
    return run


def test_cold_processes_race_then_a_damaged_entry_is_compiled_afresh_and_written_anew(
        tmp_path):
    # two processes start together on one empty cache directory (beside the
    # other test worker: more processes than CI has cores); each compiles
    # and writes the same entries, and each must compute within the stated
    # bound of mpmath.  Then random bytes in the index files of NAME's
    # float32 element loop, of the serial ufunc loop that calls it and of
    # its accurate path (cached on its own, which a user's @njit code on
    # float32 calls), and in the data files of the parallel ufunc loop and
    # its block runner: the next process computes the right values, warns
    # once a compilation naming the entries, and rewrites them, so that the
    # process after it loads them again without a word
    x = np.linspace(-12, 4, 401).astype(np.float32)
    x[::7] = -13.5      # results below 2**-126: the accurate path's
    run = _runner(_RUN, x, tmp_path)
    cache = tmp_path / "cache"
    run(copies=2)                        # compiled, cache filled
    rng = np.random.default_rng(0)
    damaged = []
    for names, suffix in (((*_FLOAT32[:2], f"{NAME}_accurate"), ".nbi"),
                          (_FLOAT32[2:], ".nbc")):
        damaged += sorted(p for p in cache.rglob(f"*{suffix}")
                          if any(f".{name}-" in p.name for name in names))
    assert len(damaged) == 5, damaged
    for path in damaged:
        path.write_bytes(rng.integers(0, 256, path.stat().st_size or 64,
                                      dtype=np.uint8).tobytes())
    report = run()
    assert report["hits"] == [0, 0, 0]
    # one warning a compiled function, naming every entry it wrote anew
    warned = sorted(report["warnings"])
    assert len(warned) == 4, warned
    assert all("could not be read" in m and ".nbi" in m for m in warned)
    accurate = next(m for m in warned if f"{NAME}'s accurate path" in m)
    assert f".{NAME}_accurate-" in accurate
    element, serial, par = (next(m for m in warned if f"of {name} " in m)
                            for name in _FLOAT32[:3])
    assert f".{NAME}_float32-" in element and ".ufunc_loop_2_float32-" in serial
    assert ".ufunc_loop_2_float32_parallel-" in par and ".blocks_2_float32-" in par
    report = run()                       # written anew: loaded, silently
    assert report == {"hits": [1, 1, 1], "warnings": []}, report


# ------------------------------------------------- a user's cached @njit code

_USER = """
import numba
import gelu_numba as g


@numba.njit(cache=True)
def user(x):
    return g.gelu(x), g.gelu_backward(x, x[::-1])
"""

_CALL = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[3])
import user
x = np.load(sys.argv[1])
y, dy = user.user(x)
np.save(sys.argv[2], y)
np.save(sys.argv[2] + ".dy.npy", dy)
print(json.dumps({"hits": sum(user.user.stats.cache_hits.values())}))
"""


def test_a_users_cached_njit_function_calls_the_element_loops_in_a_later_process(tmp_path):
    # @njit callers call the ufuncs' element loops by a symbol, which a
    # later process must publish before it links the user's code loaded from
    # the cache (unpublished, the process crashes in the call): a
    # user's cache=True function, compiled in one process, loaded from the
    # cache in the next, computes GELU within the stated bound of mpmath
    # both times, and its backward as the product of dy and GELU'
    from reference import mp
    (tmp_path / "user.py").write_text(_USER)
    x = np.linspace(-9, 4, 131).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    exact = _exact(x, "gelu")
    for hits in (0, 1):
        out = subprocess.run([sys.executable, "-c", _CALL, str(tmp_path / "x.npy"),
                              str(tmp_path / "y.npy"), str(tmp_path)], capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        assert json.loads(out.stdout.strip().splitlines()[-1]) == {"hits": hits}
        assert _within_bound(np.load(tmp_path / "y.npy"), x, exact)
        dy = np.load(tmp_path / "y.npy.dy.npy")
        want = [mp.gelu_backward(float(d), float(v)) for d, v in zip(x, x[::-1])]
        assert max(mp.ulp_error(float(v), e, np.float32) for v, e in zip(dy, want)) < 0.51
