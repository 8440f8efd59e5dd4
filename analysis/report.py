"""The report: accuracy and speed of gelu_numba, measured now, in ``reports/``.

Usage::

    python -m analysis.report [--out reports] [--full] [--no-speed]
                              [--update-docs] [--no-progress]

Runs, on a quick default that takes a few minutes on a 2-core machine:

* :mod:`analysis.accuracy` for the six exact functions (the mpmath table,
  with the peers) and a selection of approximations and generalisations
  (every registered one with ``--full``), with its PNGs;
* :mod:`analysis.speed` for ``gelu`` and ``gelu_backward``, float32 and
  float64, 10^2 to 10^7 elements (to 10^8 with ``--full``), with the peers
  and the GPU when one is present, with its PNG;
* the committed exhaustive float32 sweep (``analysis/results/
  sweep_float32_full.json``, all 2**32 inputs; too long to rerun here:
  ``python -m analysis.accuracy --exhaustive``).

It writes ``reports/README.md`` (the summary: tables, plots, the date, the
machine and the commands) beside the files of each part, and prints where.
``--update-docs`` also rewrites the generated section of the site's
``docs/results/report.md`` (between its ``report:start`` and ``report:end`` markers).
"""

from __future__ import annotations

if __name__ == "__main__":
    # gelu_numba.parallel is timed beside PyTorch in this one process: Numba's
    # default 'omp' pool spins after each parallel call and made PyTorch's
    # one-thread calls 40x slower here (7 -> 296 us at n = 100); 'workqueue'
    # does not spin, and this script calls from one Python thread
    import os
    os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import argparse
import datetime
import json
import re
import sys
import time
from pathlib import Path

from analysis import accuracy
from analysis.common import replace_section
from benchmarks.machine import machine_line

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports"
SWEEP = ROOT / "analysis" / "results" / "sweep_float32_full.json"
#: the docs page whose generated section the report rewrites
PAGE = ROOT / "docs" / "results" / "report.md"
#: approximations and generalisations in the quick report (--full: all)
QUICK_OTHERS = ["gelu_tanh", "gelu_tanh_grad", "gelu_sigmoid", "gelu_as26", "gelu_poly6",
                "gelu_rat44", "gelu_general", "silu", "x_cauchy", "lalu"]
MARKERS = ("<!-- report:start -->", "<!-- report:end -->")


def _sweep_table():
    """The committed exhaustive float32 sweep as markdown (or None)."""
    from analysis.sweep_float32 import markdown_table

    if not SWEEP.exists():
        return None
    data = json.loads(SWEEP.read_text())
    m = data.get("machine", {})
    return (markdown_table(data["results"]) + f"\n\n`{data.get('command', '')}` on "
            f"{m.get('cpu', '?')} ({m.get('cpu_count', '?')} cores); committed result, "
            "not rerun by the report.")


def _overview(result, functions):
    """The compact accuracy table: max ulp (all inputs) per implementation."""
    impls = list(dict.fromkeys(r["implementation"] for r in result["rows"]))
    cells = {(r["function"], r["dtype"], r["implementation"]): r["regions"]["all"]["max_ulp"]
             for r in result["rows"]}
    lines = ["| function | dtype | " + " | ".join(impls) + " |",
             "|---|---|" + "---:|" * len(impls)]
    for name in functions:
        for dt in accuracy.DTYPES:
            if (name, dt, accuracy.PACKAGE) not in cells:
                continue
            row = [accuracy.short_number(cells[(name, dt, i)]) if (name, dt, i) in cells else "—"
                   for i in impls]
            lines.append(f"| `{name}` | {dt} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def build(out=OUT, full=False, speed=True, progress=True):
    """Run the parts and write ``out``; returns (summary markdown, paths)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    names = None if full else list(accuracy.EXACT) + QUICK_OTHERS
    print("accuracy against mpmath ...", file=sys.stderr)
    acc = accuracy.run(names, samples=200 if full else 100, progress=progress)
    paths = accuracy.save(acc, out / "accuracy")
    machine = machine_line(acc["machine"])
    parts = [
        "# gelu-numba report",
        f"Made {stamp} by `python -m analysis.report{' --full' if full else ''}` on {machine}.",
        "## Accuracy: max error in ulps over all inputs",
        "Each implementation on the same inputs: the mpmath reference table for the exact "
        "functions, float32-representable samples against each approximation's own formula "
        "for the others (see [accuracy.md](accuracy/accuracy.md) for the median, absolute "
        "and relative errors, the worst inputs and the regions).  Bounds: below 1 ulp for "
        "the exact functions; for the others as their docstrings state (the Cauchy forms "
        "rest on the C library's atan: 1.5 ulp); inf: a NaN or infinity where the exact value is finite (or the "
        "reverse); —: no such function in that library.",
        _overview(acc, list(accuracy.EXACT)),
        "Approximations and generalisations (implementation error against their own formula; "
        "their approximation error against GELU is in accuracy.md):",
        _overview(acc, [n for n in (names or accuracy.function_names())
                        if n not in accuracy.EXACT]),
        "![float32 errors](accuracy/accuracy_float32.png)",
    ]
    sweep = _sweep_table()
    if sweep:
        parts += ["## Exhaustive float32 sweep (all 2^32 inputs)", sweep]
    if speed:
        from analysis import speed as sp

        print("speed ...", file=sys.stderr)
        settings = dict(sp.QUICK)
        if full:
            settings["sizes"] = [10 ** k for k in range(2, 9)]
        res = sp.run(**settings, progress=progress)
        sdir = out / "speed"
        sdir.mkdir(exist_ok=True)
        (sdir / "speed.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
        (sdir / "speed.md").write_text(sp.markdown(res) + "\n")
        png = sp.plot(res, sdir / "speed.png")
        paths += [sdir / "speed.json", sdir / "speed.md", Path(png)]
        parts += ["## Speed: throughput against array size",
                  "Median of interleaved rounds in one process; fraction: of a copy of the "
                  "same bytes (the memory roofline).  `python -m analysis.speed` for more "
                  "sizes and functions.",
                  sp.header(res).split("\n", 2)[2].strip()]
        parts += [sp.group_table(res, f, d).strip()
                  for f in res["settings"]["functions"] for d in res["settings"]["dtypes"]]
        parts += ["Every measurement: [speed.md](speed/speed.md).", "![speed](speed/speed.png)"]
    parts.append(f"Report made in {time.perf_counter() - t0:.0f} s.")
    summary = "\n\n".join(parts) + "\n"
    (out / "README.md").write_text(summary)
    return summary, [out / "README.md"] + paths


def update_page(summary, page=PAGE, prefix="../../reports/"):
    """Replace the docs page's generated section by ``summary`` (links made
    relative to the page)."""
    body = summary.split("\n", 1)[1].lstrip()        # drop the report's title

    def link(mm):
        # images are shown; other files of the repository are downloads
        # (the site has no page for them)
        image, text, target = mm.group(1), mm.group(2), mm.group(3)
        if image:
            return f"![{text}]({prefix}{target})"
        return f"{{download}}`{text} <{prefix}{target}>`"
    body = re.sub(r"(!?)\[([^\]]*)\]\((?!http)([^)]+)\)", link, body)
    # one level under each section (a summary of an earlier run skips one)
    body = body.replace("\n#### ", "\n### ")
    replace_section(page, MARKERS, body)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m analysis.report",
                                description="Measure accuracy and speed and write reports/.")
    p.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    p.add_argument("--full", action="store_true",
                   help="every approximation and sizes to 10^8 (slower)")
    p.add_argument("--no-speed", action="store_true", help="skip the speed part")
    p.add_argument("--update-docs", action="store_true",
                   help="rewrite the generated section of docs/results/report.md")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    if args.update_docs and args.out.resolve() != OUT.resolve():
        p.error("--update-docs links reports/; use it with the default --out")
    summary, paths = build(args.out, args.full, not args.no_speed, not args.no_progress)
    print(summary)
    for path in paths:
        print(f"wrote {path}")
    if args.update_docs:
        update_page(summary)
        print(f"updated {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
