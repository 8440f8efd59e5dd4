"""How far the H100 issue bound of :mod:`analysis.gpu.sass` is from the
kernels' measured speed: the float32 kernels that were timed on an H100
(2026-11-22, ``benchmarks/results/gpu_throughput_h100.md``, committed in
``a297bd8``) counted the way :mod:`analysis.gpu.sass` counts today's.

Usage::

    python -m analysis.gpu.sass_calibration [--commit a297bd8]

It checks the commit out in a temporary git worktree, compiles that tree's
launched kernel (its flat grid-stride loop, ``gelu_numba/gpu/target.py``)
for float32 with that tree's device functions, counts the loop per element
with this tree's :func:`analysis.gpu.sass.loop_body`, and sets the bound
beside the 2^26-element float32 rows of the measured table.  Needs git and
the repository's history, and the test extra's ptxas and cuobjdump; no GPU.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEASURED = ROOT / "benchmarks" / "results" / "gpu_throughput_h100.md"
FUNCTIONS = ("gelu", "gelu_backward", "gelu_grad", "ndtr")

# run inside the old tree (its gelu_numba first on sys.path); prints
# "name per-element fp64-per-element"
_COUNT = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("gpu_sass", sys.argv[1])
gs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gs)
gs.without_a_driver()
from numba import cuda, float32
from gelu_numba import gpu
from gelu_numba.gpu import target as t
for name in sys.argv[2:]:
    f = getattr(gpu, name)
    k = t._generate(t._FLAT, {"dev": f.device, "cast": t._CAST["f"]},
                    **t._flat_fields(f.nin, t.UNROLL))
    ptx, _ = cuda.compile_ptx(k.py_func, (float32[::1],) * (f.nin + 1), cc=(9, 0))
    body = gs.loop_body(gs._sass(ptx)[0])
    fp64 = sum(1 for op, _ in body if gs._FP64.match(op))
    print(name, len(body) / t.UNROLL, fp64 / t.UNROLL)
"""


def measured(text: str, size: str = "2^26") -> dict:
    """``{function: G elements/s}`` of the float32 rows at ``size`` in the
    measured throughput table."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[1:3] == ["float32", size]:
            out[cells[0].strip("`")] = float(cells[4])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.gpu.sass_calibration",
                                description=__doc__.splitlines()[0])
    p.add_argument("--commit", default="a297bd8",
                   help="the commit whose kernels the measured table timed")
    args = p.parse_args(argv)
    from analysis.gpu.sass import issue_bound

    rates = measured(MEASURED.read_text())
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "tree")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", tree,
                        args.commit], check=True, capture_output=True)
        try:
            run = subprocess.run([sys.executable, "-c", _COUNT,
                                  str(ROOT / "analysis" / "gpu" / "sass.py"), *FUNCTIONS],
                                 env=dict(env, PYTHONPATH=tree), cwd=tmp,
                                 capture_output=True, text=True, check=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tree],
                           capture_output=True)
    print(f"float32 kernels of {args.commit}, launched loop per element (sm_90), against "
          f"the H100 measurement ({MEASURED.relative_to(ROOT)}, 2^26 elements)\n")
    print("| function | loop per element | its FP64 | issue bound, G elem/s "
          "| measured, G elem/s | measured / bound |")
    print("|---|---|---|---|---|---|")
    for line in run.stdout.splitlines():
        m = re.fullmatch(r"(\w+) ([\d.]+) ([\d.]+)", line.strip())
        if not m:
            continue
        name, per, fp64 = m.group(1), float(m.group(2)), float(m.group(3))
        bound = issue_bound(per, fp64)
        print(f"| `{name}` | {per:g} | {fp64:g} | {bound:.0f} | {rates[name]:g} "
              f"| {rates[name] / bound:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
