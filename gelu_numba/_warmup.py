"""Compile every loop into Numba's on-disk cache ahead of use.

A loop is compiled on the first call for its dtype (the docs' first-call page's
first-call table has the times) and loaded from Numba's cache in every
later process.  :func:`warmup` does the compiling up front, for container
images, CI and benchmarks:

    python -m gelu_numba warmup                    # every loop
    python -m gelu_numba warmup --functions gelu gelu_backward
    python -m gelu_numba warmup --jobs 2           # in two processes
    python -m gelu_numba warmup --group exact      # one catalog group's loops

Loops already in the cache are loaded, not compiled, so a second warmup is
quick.  The cache lives where Numba puts it (``__pycache__`` beside the
package, or ``NUMBA_CACHE_DIR``).
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from gelu_numba import catalog
from gelu_numba.targets import dtypes

_CHARS = {dt.name: c for c, dt in dtypes.LOOP_DTYPES.items()}


def tasks(functions=None, dtypes=("float32", "float64")):
    """``[(label, compile)]``: one task per loop of the named public
    functions (all when ``functions`` is None): for each catalog function
    in order, its serial loops (``gelu_numba``,
    ``gelu_numba.approximations``) and its multithreaded ones
    (``gelu_numba.parallel``); then ``soi_map``, the production emulations
    and ``gelu_half32`` (float32 only).  Unknown names raise
    ``ValueError`` listing the known ones."""
    from gelu_numba import production
    from gelu_numba.targets import publish
    out = []
    known = set()
    seen = set()
    for fn in catalog.FUNCTIONS:
        for module, registry in publish.registries():
            if module not in fn.modules or (registry, fn.name) in seen:
                continue
            seen.add((registry, fn.name))
            known.add(fn.name)
            if functions is None or fn.name in functions:
                for dt in dtypes:
                    out.append((f"{registry.home.rsplit('.', 1)[-1]} {fn.name} {dt}",
                                _registry_task(registry, fn, _CHARS[dt])))
    known.add("soi_map")
    if functions is None or "soi_map" in functions:
        for dt in dtypes:
            out.append((f"soi soi_map {dt}", _soi_task(dt)))
    names = [n for name, rec in production.PRODUCTION.items()
             for n in ((name, f"{name}_grad") if rec.grad is not None else (name,))]
    known.update(names + ["gelu_half32"])
    if "float32" in dtypes:  # (float32-only ufuncs)
        for name in names:
            if functions is None or name in functions:
                out.append((f"production {name} float32", _production_task(name)))
        if functions is None or "gelu_half32" in functions:
            out.append(("half gelu_half32 float32", _half_task))
    unknown = sorted(set(functions or ()) - known)
    if unknown:
        raise ValueError(f"unknown function(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(known))}")
    return out


def _registry_task(registry, fn, char):
    return lambda: registry.compile(fn, char)


def _soi_task(dtype):
    def run():
        from gelu_numba.soi import soi_map
        soi_map(np.zeros(1, dtype), seed=0)
    return run


def _production_task(name):
    def run():
        from gelu_numba import production
        production.ufunc(name)(np.zeros(1, np.float32))
    return run


def _half_task():
    from gelu_numba.half import gelu_half32
    gelu_half32(np.zeros(1, np.float32))


def warmup(functions=None, dtypes=("float32", "float64"), progress=True, shard=(0, 1)):
    """Compile (or load from Numba's cache) every loop of ``functions``
    (public names; all when None) for ``dtypes``, one progress line per
    loop on stderr when ``progress``; ``shard=(k, n)`` takes every n-th
    loop from the k-th (how ``--jobs`` splits the work).  Returns the
    number of loops."""
    k, n = shard
    todo = tasks(functions, dtypes)[k::n]
    start = time.perf_counter()
    for i, (label, run) in enumerate(todo, 1):
        t = time.perf_counter()
        run()
        if progress:
            print(f"warmup [{i:>3}/{len(todo)}] {label} ({time.perf_counter() - t:.1f} s)",
                  file=sys.stderr, flush=True)
    if progress:
        print(f"warmup: {len(todo)} loops in {time.perf_counter() - start:.1f} s",
              file=sys.stderr, flush=True)
    return len(todo)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m gelu_numba warmup",
                                description=__doc__.splitlines()[0])
    p.add_argument("--functions", nargs="+", metavar="NAME",
                   help="public function names (default: every loop of the package)")
    p.add_argument("--group", choices=catalog.GROUPS,
                   help="the functions of one catalog group (exact: GELU, its derivatives, "
                        "the fused backward, Phi and phi)")
    p.add_argument("--dtypes", nargs="+", choices=sorted(_CHARS), default=sorted(_CHARS))
    p.add_argument("--jobs", type=int, default=1,
                   help="processes to compile in (default 1; the cache is shared)")
    p.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if args.group:
        args.functions = [*(args.functions or ()), *(f.name for f in catalog.group(args.group))]
    try:
        tasks(args.functions, args.dtypes)  # the names are checked once, here
    except ValueError as error:
        p.error(str(error))
    if args.jobs == 1:
        k, n = (int(v) for v in args.shard.split("/"))
        warmup(args.functions, tuple(args.dtypes), not args.quiet, (k, n))
        return 0
    common = ["--dtypes", *args.dtypes]
    common += ["--functions", *args.functions] if args.functions else []
    common += ["--quiet"] if args.quiet else []
    procs = [subprocess.Popen([sys.executable, "-m", "gelu_numba", "warmup", *common,
                               "--shard", f"{k}/{args.jobs}"], env=os.environ.copy())
             for k in range(args.jobs)]
    codes = [proc.wait() for proc in procs]
    return max(codes)
