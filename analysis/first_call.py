"""The first call of every public function: cold (empty Numba cache, a
fresh process) and warm (the cache filled, a fresh process).

For each function of ``gelu_numba`` and ``gelu_numba.approximations``, one
fresh process with an empty ``NUMBA_CACHE_DIR`` times, in this order:
``import gelu_numba``, the attribute access (which built both loops before
the loops were compiled lazily), the first call on a float32 array and the
first call on a float64 array; a second fresh process on the cache the first
one filled times the same steps again.  The frontends' rows
(``gelu_numba.torch.gelu``, ``gelu_numba.jax.gelu``) time, after importing
the framework (not counted), the import of the frontend and the first
forward and backward of ``gelu`` on each dtype (torch: ``gt.gelu(x)`` and
its ``backward()``; JAX: ``jax.jit(gj.gelu)`` and ``jax.grad`` of its sum); the
``@njit`` row, after importing Numba (not counted), the import of
``gelu_numba`` and the first call, on each dtype, of an ``@njit`` function
that returns ``gelu`` of its array argument.  Processes run one at a time, pinned
to one core (``os.sched_setaffinity``), so that the figures are not shared
with anything else the machine runs.

    python -m analysis.first_call                       # this checkout
    python -m analysis.first_call --source /path/to/old/checkout --label before

``--source`` times another checkout of the package (its directory is put
first on ``sys.path`` of the timed processes), which is how the "before"
column of the docs' table (``docs/guide/first_call.md``) was measured.  Results go to
``analysis/results/first_call_<label>.json`` and, with ``--table``, the
table comparing the labels found there is printed as Markdown
(``--update-docs`` also writes it into that page, between its
``first-call:start`` and ``first-call:end`` markers).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis.common import replace_section
from benchmarks.machine import machine_info

RESULTS = Path(__file__).resolve().parent / "results"
#: the docs page whose table the generator rewrites
PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "first_call.md"
MARKERS = ("<!-- first-call:start -->", "<!-- first-call:end -->")

# Runs in the timed process (the ufunc frontend): steps and their seconds
# as JSON on stdout.
_PROBE = r"""
import json, os, sys, time
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
t0 = time.perf_counter()
import numpy as np
import gelu_numba
t1 = time.perf_counter()
module = __import__(sys.argv[1], fromlist=["_"])
f = getattr(module, sys.argv[2])
t2 = time.perf_counter()
x32 = np.linspace(-3, 3, 1000, dtype=np.float32)
f(*[x32] * f.nin)
t3 = time.perf_counter()
x64 = x32.astype(np.float64)
f(*[x64] * f.nin)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "access": t2 - t1, "float32": t3 - t2,
                  "float64": t4 - t3, "file": gelu_numba.__file__}))
"""


# The frontends' first call of gelu, in the timed process: the framework
# imported first (its own time, not ours), then gelu_numba's frontend, then
# gelu on float32 and on float64 inputs as a user runs it (torch: forward and
# backward of gt.gelu; JAX: jax.jit(gj.gelu) and jax.grad of its sum).
_FRONTEND = r"""
import json, os, sys, time
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import numpy as np
frontend = sys.argv[1]
t0 = time.perf_counter()
if frontend == "torch":
    import torch
elif frontend == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
else:
    import numba
t1 = time.perf_counter()
if frontend == "torch":
    import gelu_numba.torch as gt
elif frontend == "jax":
    import gelu_numba.jax as gj
else:
    import gelu_numba as g

    @numba.njit
    def user(x):
        return g.gelu(x)
t2 = time.perf_counter()
steps = {"framework": t1 - t0, "import": t2 - t1}
for name, dtype in (("float32", np.float32), ("float64", np.float64)):
    x = np.linspace(-3, 3, 1000, dtype=dtype)
    t = time.perf_counter()
    if frontend == "torch":
        v = torch.tensor(x, requires_grad=True)
        gt.gelu(v).sum().backward()
    elif frontend == "jax":
        jax.block_until_ready(jax.jit(gj.gelu)(x))
        jax.block_until_ready(jax.grad(lambda v: gj.gelu(v).sum())(x))
    else:
        user(x)
    steps[name] = time.perf_counter() - t
print(json.dumps(steps))
"""

#: the frontends :data:`_FRONTEND` times, and their rows' names in the table
FRONTENDS = {"torch": "gelu_numba.torch.gelu", "jax": "gelu_numba.jax.gelu",
             "njit": "gelu_numba.gelu in @njit"}


def functions():
    """``[(module, name)]``: every public ufunc of gelu_numba and
    gelu_numba.approximations, each once (its home module)."""
    import gelu_numba
    import gelu_numba.approximations as approx
    out, seen = [], set()
    for module in (gelu_numba, approx):
        for name in module.__all__:
            f = getattr(module, name)
            if hasattr(f, "nin") and name not in seen and name != "soi_map":
                seen.add(name)
                out.append((module.__name__, name))
    return out


def time_one(module, name, source=None):
    """``{"cold": steps, "warm": steps}`` for one function (``module`` one
    of :data:`FRONTENDS`: that frontend's gelu)."""
    args = [_FRONTEND, module] if module in FRONTENDS else [_PROBE, module, name]
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory(prefix="first_call_") as cache:
        env["NUMBA_CACHE_DIR"] = cache
        out = {}
        for run in ("cold", "warm"):
            proc = subprocess.run([sys.executable, "-c", *args], env=env,
                                  cwd=cache, capture_output=True, text=True, timeout=600,
                                  check=True)
            out[run] = json.loads(proc.stdout.strip().splitlines()[-1])
        return out


def table(labels):
    """Markdown: per function, first call (access + float32 call) and the
    second dtype's first call, cold, for each label; then the warm figures."""
    data = {lab: json.loads((RESULTS / f"first_call_{lab}.json").read_text()) for lab in labels}
    names = list(data[labels[0]]["functions"])
    head = ["function"] + [f"{lab}: first call (float32)" for lab in labels] + \
           [f"{lab}: then float64" for lab in labels] + [f"{lab}: warm cache" for lab in labels]
    rows = []
    for lab in labels:
        m = data[lab]["machine"]
        rows.append(f"- {lab}: {data[lab]['source']}, measured {data[lab].get('date', '?')} on "
                    f"{m['cpu']} ({m['cpu_count']} cores), numba {m['numba']}, numpy {m['numpy']}")
    rows += ["", "| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for name in names:
        cells = [f"`{name}`"]
        for key in ("first", "second", "warm"):
            for lab in labels:
                r = data[lab]["functions"].get(name)
                if r is None:
                    cells.append("—")
                    continue
                run = r["warm" if key == "warm" else "cold"]
                first = _own(run) + run["float32"]
                value = {"first": first, "second": run["float64"],
                         "warm": first + run["float64"]}[key]
                cells.append(f"{value:.2f} s")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _own(steps):
    """The package's part of a first call before the float32 call: the
    attribute access of a ufunc, the import of a frontend (which imports
    gelu_numba; the framework's own import is not counted)."""
    return steps["access"] if "access" in steps else steps["import"]


def _describe(source):
    """The checkout timed, as its git commit where it has one."""
    where = source or Path(__file__).resolve().parents[1]
    try:
        rev = subprocess.run(["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        return f"commit {rev}"
    except (OSError, subprocess.CalledProcessError):
        return str(where)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m analysis.first_call",
                                description=__doc__.splitlines()[0])
    p.add_argument("--source", type=Path, help="time this checkout instead (its root folder)")
    p.add_argument("--label", default="after", help="results file label (default: after)")
    p.add_argument("--functions", nargs="+",
                   help=f"only these (names of functions, or of the frontends "
                        f"{', '.join(FRONTENDS)}; default: all)")
    p.add_argument("--table", nargs="+", metavar="LABEL",
                   help="print the table of these saved labels and exit")
    p.add_argument("--update-docs", action="store_true",
                   help="with --table: write the table into docs/guide/first_call.md too")
    args = p.parse_args(argv)
    if args.table:
        text = table(args.table)
        print(text)
        if args.update_docs:
            made = (f"Made by `python -m analysis.first_call --table {' '.join(args.table)} "
                    "--update-docs`.")
            replace_section(PAGE, MARKERS, f"{text}\n\n{made}\n")
        return 0
    todo = [(m, n) for m, n in functions() if not args.functions or n in args.functions]
    todo += [(f, row) for f, row in FRONTENDS.items()
             if not args.functions or f in args.functions]
    result = {"machine": machine_info(), "source": _describe(args.source),
              "date": time.strftime("%Y-%m-%d"), "functions": {}}
    for module, name in todo:
        r = time_one(module, name, args.source)
        result["functions"][name] = r
        c, w = r["cold"], r["warm"]
        print(f"{name:>22}: import {c['import']:.2f} s, first call "
              f"{_own(c) + c['float32']:.2f} s, then float64 {c['float64']:.2f} s; "
              f"warm {_own(w) + w['float32']:.2f} s", flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"first_call_{args.label}.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
