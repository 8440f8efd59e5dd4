"""Generate ``gelu_numba/targets/cuda/choice.py``: the kernels each
measured device launches, chosen from its committed throughput reports,
with each kernel's speed and accuracy beside the choice.

Usage::

    python -m analysis.gpu.choice [--update]

On a device with full-rate FP64 two float32 kernels of ``gelu``,
``gelu_grad``, ``gelu_backward`` and ``ndtr`` stay below 1 ulp on all 2^32
inputs: the CPU's float64-arithmetic kernel (``"fp64"``, the better bound)
and the lean float32 kernel (``"lean32"``, fewer instructions).  Which
is faster depends on the device (its FP64 rate, its memory's speed) and on
the function.  For each report ``benchmarks/results/gpu_throughput_*.md``
that timed the kernels as they are now (its float32 rows say
``throughput.VEC4_MARK``) of a device with full-rate FP64, each
function launches the lean kernel where its row at the largest size is
faster than the float64-arithmetic kernel's by at least
:data:`MARGIN`, else the float64-arithmetic kernel (the better bound is
worth a speed within the runs' noise); of the lean kernel's two forms,
its table read through L1 (``"lean32"``) or from a copy in each block's
shared memory (``"lean32 shared"``, the same bits), the faster.  Reports
of older kernels choose nothing: a device without an entry keeps the
compute-capability rule
(:func:`gelu_numba.targets.cuda.variants.full_rate_fp64`).

The 2-byte ``gelu`` of each format likewise reads its 128 KB table from
each block's shared memory (``half_kernels.shared_kernel``) where the
report timed that faster than the launched kernel, which reads it through
L1, by :data:`MARGIN`: the same bits either way, so speed alone decides.
And the fast launch calls the driver through ``cuda.bindings``'
``cuLaunchKernel`` (``FastLaunch.via_driver``) where the report's host
table (or a newer ``gpu_host_*.md``: the newest report decides each
choice) timed it cheaper than ``cuda.core.launch`` by :data:`MARGIN`.

The accuracy beside each: the exhaustive sweeps of the kernels' CPU
compilations (``gelu_numba.figures``'s ``exhaustive32_*`` for the
float64-arithmetic kernels, ``analysis/results/sweep_float32_lean32.json``
for the lean ones), the same operations as the GPU runs.
"""

import json
import re
import sys
from pathlib import Path

from gelu_numba import catalog

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "gelu_numba" / "targets" / "cuda" / "choice.py"
REPORTS = ROOT / "benchmarks" / "results"
LEAN_SWEEP = ROOT / "analysis" / "results" / "sweep_float32_lean32.json"
#: the functions with both float32 kernels (a lean one too)
FUNCTIONS = tuple(f.name for f in catalog.FUNCTIONS if f.lean32 is not None)
#: the 2-byte formats whose forward may read its table from shared memory
HALF_FORMATS = ("bfloat16", "float16")
#: how much faster (or cheaper) an alternative must run to be chosen
MARGIN = 0.05
COMMAND = "python -m analysis.gpu.choice --update"


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


def _pick(rows, base, other, dtype, choices):
    """``(choice, base's G elem/s, other's, size)`` at the largest size
    where both rows ``base`` and ``other`` of ``dtype`` were timed:
    ``choices[1]`` where ``other`` ran faster by :data:`MARGIN`, else
    ``choices[0]``; None where they never were."""
    sizes = [s for (row, dt, s) in rows if row == base and dt == dtype
             and (other, dt, s) in rows]
    if not sizes:
        return None
    size = max(sizes, key=_size_key)
    a, b = rows[(base, dtype, size)], rows[(other, dtype, size)]
    return (choices[1] if b >= (1 + MARGIN) * a else choices[0]), a, b, size


def choose(text):
    """``(device name, {key: (choice, launched's G elem/s, the other's,
    size)})`` from the throughput report ``text``.  Keys: the functions of
    :data:`FUNCTIONS` (``"fp64"`` against the faster of the lean kernel's
    two forms, ``"lean32"`` and ``"lean32 shared"``, its table in shared
    memory: none where the report timed other float32 kernels than
    today's, or the device lacks full-rate FP64); ``"gelu float16"`` and
    ``"gelu bfloat16"`` (the 2-byte forward's table through ``"l1"``
    against in ``"shared"`` memory: same bits, where the report timed
    both); ``"launch"`` (``"cuda.core"`` against ``"cuLaunchKernel"``,
    from the host-time table, in µs per call)."""
    from analysis.gpu.throughput import (
        HALF_SHARED_TAG, HOST_CORE_LAUNCH, HOST_DRIVER_LAUNCH, LEAN_SHARED_TAG, LEAN_TAG,
        VEC4_MARK,
    )
    from gelu_numba.targets.cuda import FULL_RATE_FP64
    from gelu_numba.targets.cuda.variants import LEAN_SHARED

    head = re.match(r"# GPU throughput: (.*?) \(\d+ SMs, compute capability (\d+)\.(\d+)\)",
                    text)
    if head is None:
        raise ValueError("not a report of python -m analysis.gpu.throughput")
    name, cc = head.group(1), (int(head.group(2)), int(head.group(3)))
    rows = _rows(text)
    chosen = {}
    if VEC4_MARK in text and cc in FULL_RATE_FP64:
        for f in FUNCTIONS:
            # the lean kernel's two forms (the same bits): the faster one
            picks = [p for p in (
                _pick(rows, f, f"{f} {LEAN_TAG}", "float32", ("fp64", "lean32")),
                _pick(rows, f, f"{f} {LEAN_SHARED_TAG}", "float32", ("fp64", LEAN_SHARED)))
                if p]
            if picks:
                chosen[f] = max(picks, key=lambda p: (_size_key(p[3]), p[2]))
    for fmt in HALF_FORMATS:
        picked = _pick(rows, "gelu", f"gelu {HALF_SHARED_TAG}", fmt, ("l1", "shared"))
        if picked:
            chosen[f"gelu {fmt}"] = picked
    host = _host_us(text)
    if HOST_CORE_LAUNCH in host and HOST_DRIVER_LAUNCH in host:
        core, driver = host[HOST_CORE_LAUNCH], host[HOST_DRIVER_LAUNCH]
        chosen["launch"] = ("cuLaunchKernel" if driver <= (1 - MARGIN) * core else "cuda.core",
                            core, driver, "µs per call")
    return name, chosen


def _host_us(text):
    """``{call: µs per call}`` of a report's host-time table."""
    out = {}
    for line in text.split("## Host time per call", 1)[-1].splitlines() if (
            "## Host time per call" in text) else ():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3:
            try:
                out[cells[0]] = float(cells[1])
            except ValueError:
                continue
    return out


def _stamp(text):
    """A report's date, ``YYYY-MM-DD HH:MM`` (an undated one sorts first)."""
    found = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d) UTC", text)
    return found.group(1) if found else ""


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
    """The text of :data:`MODULE`, from every committed report (a device's
    reports merged: the whole run's and the 2-byte kernels' own)."""
    devices, when = {}, {}
    for path in sorted([*REPORTS.glob("gpu_throughput_*.md"), *REPORTS.glob("gpu_host_*.md")]):
        text = path.read_text()
        name, chosen = choose(text)
        for key, picked in chosen.items():
            # (a key timed by several reports of a device: the newest)
            if _stamp(text) >= when.get((name, key), ""):
                when[(name, key)] = _stamp(text)
                devices.setdefault(name, {})[key] = (path.name, *picked)
    ulp = accuracy()
    lines = ["| device | function | launched | float64 arithmetic, G elem/s "
             "| lean (its faster form), G elem/s | size | float64 arithmetic, max ulp "
             "| lean, max ulp | report |",
             "|---|---|---|---:|---:|---|---:|---:|---|"]
    halves = ["| device | 2-byte forward | its table in | through L1, G elem/s "
              "| in shared memory, G elem/s | size | report |",
              "|---|---|---|---:|---:|---|---|"]
    launches = ["| device | fast launch through | `cuda.core.launch`, µs per call "
                "| `cuLaunchKernel`, µs per call | report |", "|---|---|---:|---:|---|"]
    for name, chosen in devices.items():
        for key, (report, kernel, a, b, size) in chosen.items():
            if key == "launch":
                launches.append(f"| {name} | {kernel} | {a:g} | {b:g} | {report} |")
            elif key in FUNCTIONS:
                lines.append(f"| {name} | `{key}` | {kernel} | {a:g} | {b:g} | {size} "
                             f"| {ulp[(key, 'fp64')]:.4g} | {ulp[(key, 'lean32')]:.4g} "
                             f"| {report} |")
            else:
                halves.append(f"| {name} | `{key}` | {kernel} | {a:g} | {b:g} | {size} "
                              f"| {report} |")
    parts = [t for t in (lines, halves, launches) if len(t) > 2]
    table = ("\n\n".join("\n".join("    " + line for line in t) for t in parts) if parts else
             "    (no report of the kernels as they are now: every device takes the\n"
             "    compute-capability rule and the 2-byte kernels read their tables\n"
             "    through L1)")
    choice = {name: {key: c[1] for key, c in chosen.items()} for name, chosen in devices.items()}
    body = "{\n" + "".join(f"    {name!r}: {value!r},\n" for name, value in choice.items()) + "}"
    if not choice:
        body = "{}"
    return f'''"""The kernels each measured device launches (generated by
``{COMMAND}`` from ``benchmarks/results/gpu_throughput_*.md``
and the exhaustive sweeps; do not edit).

On a device with full-rate FP64, ``gelu``, ``gelu_grad``, ``gelu_backward``
and ``ndtr`` each launch their lean float32 kernel (the faster of its two
forms: its table through L1, or in shared memory) where the device's
report timed it faster than the float64-arithmetic kernel at its largest
size by at least the margin ``analysis.gpu.choice.MARGIN``, else the
float64-arithmetic kernel; a device without an entry (by the name
numba-cuda gives it) keeps the compute-capability rule
(:func:`gelu_numba.targets.cuda.variants.full_rate_fp64`).  The 2-byte
``gelu`` of each format reads its table from shared memory where that ran
faster by the same margin (the same bits either way), else through L1.
The fast launch calls the driver through ``cuLaunchKernel`` where the
host-time table found it cheaper than ``cuda.core.launch`` by the margin.
The analysis module's docstring says why.

{table}
"""

#: device name -> {{function: "fp64", "lean32" or "lean32 shared",
#: "gelu <format>": "l1" or "shared", "launch": "cuda.core" or "cuLaunchKernel"}}
CHOICE = {body}
'''


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m analysis.gpu.choice",
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
