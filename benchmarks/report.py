"""Turn ``pytest benchmarks --benchmark-json=FILE`` output into markdown.

Usage::

    python -m benchmarks.report FILE [> table.md]
    python -m benchmarks.report FILE --out FILE.md   # the tables under a header naming the command

One table per function and dtype: rows are implementations, columns sizes;
each cell is the median throughput in G elements/s and, in brackets, how
many times faster ``gelu_numba`` (single-threaded) is than that row.
"""

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _machine(info):
    cpu = info.get("cpu", {})
    brand = cpu.get("brand_raw") or info.get("processor") or info.get("machine")
    count = cpu.get("count")
    return (f"{brand}, {count} logical cores, {info.get('system', '')} "
            f"{info.get('release', '')}, Python {info.get('python_version', '')}")


def render(data):
    cells = defaultdict(dict)   # (function, dtype) -> {(impl, n): G/s}
    sizes = set()
    for b in data["benchmarks"]:
        e = b["extra_info"]
        gps = e["n"] / b["stats"]["median"] / 1e9
        cells[(e["function"], e["dtype"])][(e["impl"], e["n"])] = gps
        sizes.add(e["n"])
    sizes = sorted(sizes)
    out = [f"Machine: {_machine(data.get('machine_info', {}))}.",
           f"Taken {data.get('datetime', '?')}; median of the rounds; "
           "G elements/s (x: gelu_numba's speed over that row).", ""]
    for (name, dtype), table in sorted(cells.items()):
        impls = []
        for impl, _ in table:
            if impl not in impls:
                impls.append(impl)
        out.append(f"**{name}, {dtype}**")
        out.append("")
        out.append("| implementation | " + " | ".join(f"n = {n:.0e}" for n in sizes) + " |")
        out.append("|---|" + "---:|" * len(sizes))
        for impl in impls:
            row = []
            for n in sizes:
                v = table.get((impl, n))
                ref = table.get(("gelu_numba", n))
                if v is None:
                    row.append("")
                elif impl == "gelu_numba" or ref is None:
                    row.append(f"{v:.3g}")
                else:
                    row.append(f"{v:.3g} ({ref / v:.2g}x)")
            out.append(f"| {impl} | " + " | ".join(row) + " |")
        out.append("")
    return "\n".join(out)


def page(json_file, out):
    """The markdown file ``out`` made of the saved run ``json_file``: a
    header naming the command that makes it, then :func:`render`'s tables.
    Paths inside the repository are named relative to its root."""
    def name(p):
        p = Path(p).resolve()
        return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)
    data = json.loads(Path(json_file).read_text())
    return (f"# CPU benchmarks: {name(json_file)}\n\n"
            f"Made by `python -m benchmarks.report {name(json_file)} --out {name(out)}` "
            "from the pytest-benchmark suite's saved run.\n\n" + render(data).rstrip("\n") + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("json_file")
    parser.add_argument("--out", help="write the tables under a header to this markdown file")
    args = parser.parse_args(argv)
    if args.out:
        Path(args.out).write_text(page(args.json_file, args.out))
        print(f"wrote {args.out}")
    else:
        with open(args.json_file) as fh:
            print(render(json.load(fh)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
