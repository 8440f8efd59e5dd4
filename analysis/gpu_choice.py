"""Generate ``gelu_numba/targets/cuda/choice.py``: the float32 kernel each
measured device launches, chosen from its committed throughput report,
with each kernel's speed and accuracy beside the choice.

Usage::

    python -m analysis.gpu_choice [--update]

On a device with full-rate FP64 two float32 kernels of ``gelu``,
``gelu_grad``, ``gelu_backward`` and ``ndtr`` stay below 1 ulp on all 2^32
inputs: the CPU's float64-arithmetic kernel (``"fp64"``, the better bound)
and the lean float32 kernel (``"lean32"``, fewer instructions).  Which
is faster depends on the device (its FP64 rate, its memory's speed) and on
the function.  For each report ``benchmarks/results/gpu_throughput_*.md``
that timed the kernels as they are now (its float32 rows say
``gpu_throughput.VEC4_MARK``) of a device with full-rate FP64, each
function launches the lean kernel where its row at the largest size is
faster than the float64-arithmetic kernel's by at least
:data:`MARGIN`, else the float64-arithmetic kernel (the better bound is
worth a speed within the runs' noise).  Reports of older kernels choose
nothing: a device without an entry keeps the compute-capability rule
(:func:`gelu_numba.targets.cuda.variants.full_rate_fp64`).

The accuracy beside each: the exhaustive sweeps of the kernels' CPU
compilations (``gelu_numba.figures``'s ``exhaustive32_*`` for the
float64-arithmetic kernels, ``analysis/results/sweep_float32_lean32.json``
for the lean ones), the same operations as the GPU runs.
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "gelu_numba" / "targets" / "cuda" / "choice.py"
REPORTS = ROOT / "benchmarks" / "results"
LEAN_SWEEP = ROOT / "analysis" / "results" / "sweep_float32_lean32.json"
#: the functions with both float32 kernels
FUNCTIONS = ("gelu", "gelu_grad", "gelu_backward", "ndtr")
#: how much faster the lean kernel must run to be launched instead
MARGIN = 0.05
COMMAND = "python -m analysis.gpu_choice --update"


def _rows(text):
    """``{(function row, dtype, size): G elem/s}`` of a throughput report."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0].startswith("`"):
            try:
                out[(cells[0].strip("`"), cells[1], cells[2])] = float(cells[4])
            except ValueError:
                continue
    return out


def _size_key(size):
    base, _, exp = size.partition("^")
    return int(base) ** int(exp or 1)


def choose(text):
    """``(device name, {function: (choice, fp64 G elem/s, lean32 G elem/s,
    size)})`` from the throughput report ``text``; an empty dict where the
    report timed other kernels than today's or the device lacks full-rate
    FP64."""
    from analysis.gpu_throughput import LEAN_TAG, VEC4_MARK
    from gelu_numba.targets.cuda import FULL_RATE_FP64

    head = re.match(r"# GPU throughput: (.*?) \(\d+ SMs, compute capability (\d+)\.(\d+)\)",
                    text)
    if head is None:
        raise ValueError("not a report of python -m analysis.gpu_throughput")
    name, cc = head.group(1), (int(head.group(2)), int(head.group(3)))
    if VEC4_MARK not in text or cc not in FULL_RATE_FP64:
        return name, {}
    rows = _rows(text)
    chosen = {}
    for f in FUNCTIONS:
        sizes = [s for (row, dt, s) in rows if row == f and dt == "float32"
                 and (f"{f} {LEAN_TAG}", dt, s) in rows]
        if not sizes:
            continue
        size = max(sizes, key=_size_key)
        fp64, lean = rows[(f, "float32", size)], rows[(f"{f} {LEAN_TAG}", "float32", size)]
        chosen[f] = ("lean32" if lean >= (1 + MARGIN) * fp64 else "fp64", fp64, lean, size)
    return name, chosen


def accuracy():
    """``{(function, kernel): max ulp}`` from the committed sweeps."""
    from gelu_numba.figures import FIGURES
    lean = {r["function"]: r["max_ulp"] for r in json.loads(LEAN_SWEEP.read_text())["results"]}
    out = {}
    for f in FUNCTIONS:
        out[(f, "fp64")] = float(FIGURES[f"exhaustive32_{f}"])
        out[(f, "lean32")] = lean[f]
    return out


def render():
    """The text of :data:`MODULE`, from every committed report."""
    devices = {}
    for path in sorted(REPORTS.glob("gpu_throughput_*.md")):
        name, chosen = choose(path.read_text())
        if chosen:
            devices[name] = (path.name, chosen)
    ulp = accuracy()
    lines = ["| device (report) | function | launched | float64 arithmetic, G elem/s "
             "| lean, G elem/s | size | float64 arithmetic, max ulp | lean, max ulp |",
             "|---|---|---|---:|---:|---|---:|---:|"]
    for name, (report, chosen) in devices.items():
        for f, (kernel, fp64, lean, size) in chosen.items():
            lines.append(f"| {name} ({report}) | `{f}` | {kernel} | {fp64:g} | {lean:g} | {size} "
                         f"| {ulp[(f, 'fp64')]:.4g} | {ulp[(f, 'lean32')]:.4g} |")
    table = ("\n".join("    " + line for line in lines) if devices else
             "    (no report of the kernels as they are now: every device takes the\n"
             "    compute-capability rule)")
    choice = {name: {f: c[0] for f, c in chosen.items()} for name, (_, chosen) in devices.items()}
    body = "{\n" + "".join(f"    {name!r}: {value!r},\n" for name, value in choice.items()) + "}"
    if not choice:
        body = "{}"
    return f'''"""The float32 kernel each measured device launches (generated by
``{COMMAND}`` from ``benchmarks/results/gpu_throughput_*.md``
and the exhaustive sweeps; do not edit).

On a device with full-rate FP64, ``gelu``, ``gelu_grad``, ``gelu_backward``
and ``ndtr`` each launch their lean float32 kernel where the device's
report timed it faster than the float64-arithmetic kernel at its largest
size by at least the margin ``analysis.gpu_choice.MARGIN``, else the
float64-arithmetic kernel; a device
without an entry (by the name numba-cuda gives it) keeps the
compute-capability rule (:func:`gelu_numba.targets.cuda.variants.full_rate_fp64`).
The analysis module's docstring says why.

{table}
"""

#: device name -> {{function: "fp64" or "lean32"}}
CHOICE = {body}
'''


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m analysis.gpu_choice",
                                description=__doc__.splitlines()[0])
    p.add_argument("--update", action="store_true", help=f"rewrite {MODULE.relative_to(ROOT)}")
    args = p.parse_args(argv)
    text = render()
    if args.update:
        MODULE.write_text(text)
        print(f"wrote {MODULE.relative_to(ROOT)}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
