"""The measured section of the GPU results page (``docs/results/gpu.md``), generated
from the committed results of the last GPU run.

Usage::

    python -m analysis.gpu.docs [--update]

Sources (each made by ``bash analysis/on_gpu.sh`` on a GPU machine and
committed as it came back; :data:`RUN` names the run's files):

* the throughput report (``python -m analysis.gpu.throughput --sizes
  2**20,2**26,2**28 --peers all --accuracy ...``): time, G elements/s and
  the fraction of a device-to-device copy, ours and the peers', at the
  largest size, and the host time per call;
* the exhaustive float32 sweep on the device (``python -m
  analysis.sweep_float32 --device gpu --peers all``): max ulp and inputs
  above 1 ulp beside each kernel;
* the launch-configuration grid (``--tune``): its range per column;
* ``python -m analysis.gpu.torch_cuda``: ``gelu_numba.torch`` against
  ``nn.GELU`` on the device.

``--update`` writes the section between the page's ``gpu-measured:start``
and ``gpu-measured:end`` markers; ``tests/test_docs.py`` fails when the page
is not this output.
"""

import json
import re
import sys
from pathlib import Path

from analysis.common import section_main
from analysis.gpu.throughput import (F32_NARROW_TAG, F32_TAG, HALF_SHARED_TAG, HALF_TAGS,
                                      LEAN_SHARED_TAG, LEAN_SHARED_WIDE, LEAN_TAG, LEAN_WIDE,
                                      OLD_F32_TAG, OLD_LEAN_TAG, WIDE)
from gelu_numba import catalog

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "gpu.md"
MARKERS = ("<!-- gpu-measured:start -->", "<!-- gpu-measured:end -->")
#: the files of the last GPU run (2026-11-26, an H200)
RUN = {"throughput": "benchmarks/results/gpu_throughput_h200.md",
       # (bash analysis/on_gpu.sh half: the 2-byte kernels' columns, when
       # measured after the whole run)
       "half": "benchmarks/results/gpu_throughput_half_h200.md",
       "tune": "benchmarks/results/gpu_tune_h200.md",
       "torch": "benchmarks/results/torch_cuda_h200.md",
       # (python -m analysis.gpu.throughput --sizes 2**20 --functions gelu
       # --peers none: the host time per call, when measured after the
       # whole run)
       "host": "benchmarks/results/gpu_host_h200.md",
       "sweep": "analysis/results/sweep_float32_gpu.json"}
#: the sweep's and throughput's name of a lean kernel, forced
#: (analysis.gpu.peers), before the function's name
LEAN_PEER = "gelu_numba_lean32_"
OURS = catalog.names("exact")
#: the launched float32 kernels as the sweep names them: on a device with
#: full-rate FP64 (this one) gelu_numba.gpu's float32 loops run the
#: float64-arithmetic kernel, which the sweep has as peers (the 2026-11-26
#: run for gelu and gelu_backward only)
SWEPT_AS = {"gelu": "gelu_numba_f64_arith", "gelu_backward": "gelu_numba_f64_arith_backward",
            **{f: f"gelu_numba_f64_arith_{f}" for f in ("gelu_grad", "gelu_grad2", "ndtr",
                                                          "norm_pdf")}}


def tables(text):
    """The markdown tables of ``text``: lists of ``{column: cell}``."""
    out, rows, header = [], None, None
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header, rows = cells, []
            elif not set("".join(cells)) <= set("-: "):
                rows.append(dict(zip(header, cells)))
        elif header is not None:
            out.append(rows)
            header = None
    return out


def table_blocks(text):
    """The markdown tables of ``text``, each as its lines, verbatim."""
    blocks, lines = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            blocks.append("\n".join(lines))
            lines = []
    return blocks


def _read(key):
    return (ROOT / RUN[key]).read_text()


def _size(rows):
    """The largest size of the throughput table, as written (2^28)."""
    return max((r["n"] for r in rows), key=lambda s: int(s.split("^")[1]) if "^" in s else 0)


def _half_run():
    """The rows and ``(command, date)`` of the 2-byte kernels' own run, or
    ``([], None)`` where there is none or the whole run is newer (its rows
    then hold the kernels as they are)."""
    path = ROOT / RUN["half"]
    if not path.exists():
        return [], None
    text = path.read_text()
    if _command_and_date(text)[1] <= _command_and_date(_read("throughput"))[1]:
        return [], None
    return ([r for r in tables(text)[0] if r["dtype"] in ("bfloat16", "float16")],
            _command_and_date(text))


def _command_and_date(text):
    return re.search(r"`(python -m analysis\.gpu\.throughput[^`]*)`, ([^.]*UTC)", text).groups()


def throughput_table():
    text = _read("throughput")
    rows = tables(text)[0]
    half_rows, _ = _half_run()
    if half_rows:
        rows = [r for r in rows if r["dtype"] not in ("bfloat16", "float16")] + half_rows
    size = _size(rows)
    swept = {r["function"]: r for r in json.loads(_read("sweep"))["results"]}
    at = {(r["function"].strip("`").split("`")[0], r["dtype"]): r for r in rows
          if r["n"] == size}
    dtypes = [d for d in ("float32", "float64", "bfloat16", "float16")
              if any(dt == d for _, dt in at)]
    lines = [f"| {size} elements | " + " | ".join(f"{d} G elem/s | of copy" for d in dtypes)
             + " | float32 max ulp (> 1 ulp), the launched kernel "
             "| float32 max ulp, the device function |",
             "|---|" + "---:|---:|" * len(dtypes) + "---|---|"]

    def cells(name, dt):
        r = at.get((name, dt))
        return f"{r['G elem/s']} | {r['of copy']}" if r else "- | -"

    def ulp(name):
        r = swept.get(name)
        return f"{r['max_ulp']:.4g} ({r['over_1ulp']:,})" if r else "not swept"

    # float32 kernels timed beside the launched ones, ours, forced whatever
    # the device: the device functions' float32-arithmetic kernel (its
    # accuracy: the device function's, from the sweep) and the lean kernel
    # that GPUs with slow FP64 launch (its accuracy: the exhaustive sweep of
    # its CPU compilation; its shared-memory variant has the same bits); the
    # tags of older runs too
    lean_tags = (LEAN_TAG, OLD_LEAN_TAG, LEAN_SHARED_TAG)
    f32_tags = (F32_TAG, OLD_F32_TAG)
    spread = (LEAN_WIDE, LEAN_SHARED_WIDE)
    studied = tuple(sorted({name for name, _ in at if name.endswith(
        lean_tags + f32_tags + HALF_TAGS + (HALF_SHARED_TAG, F32_NARROW_TAG)) or name in spread}))
    lean_path = ROOT / "analysis" / "results" / "sweep_float32_lean32.json"
    lean_swept = ({r["function"]: r for r in json.loads(lean_path.read_text())["results"]}
                  if lean_path.exists() else {})
    # (the lean peers are the lean rows again, timed as peers: not shown)
    peers = sorted({name for name, _ in at if not name.startswith(LEAN_PEER)}
                   - set(OURS) - set(SWEPT_AS.values()) - {WIDE} - set(studied),
                   key=lambda n: (not n.startswith("torch"), n))
    wide = (WIDE,) if any(name == WIDE for name, _ in at) else ()
    for name in OURS + wide + studied + tuple(peers):
        if name in OURS:
            label, launched, device = f"`{name}`", ulp(SWEPT_AS.get(name, "")), ulp(name)
        elif name == WIDE:
            label, launched, device = f"`{name}`", "-", "-"
        elif name.endswith(F32_NARROW_TAG):   # (the launched kernel's bits)
            label, launched, device = f"`{name}`", ulp(SWEPT_AS.get(name.split(" (")[0], "")), "-"
        elif name.endswith(f32_tags):
            # (launched on GPUs with slow FP64 until the lean kernels were:
            # older runs' rows)
            label, launched, device = f"`{name}`", "-", ulp(name.split(" (")[0])
            if name.endswith(OLD_F32_TAG):
                launched, device = device, launched
        elif name.endswith(lean_tags):
            # on the device where the sweep had the lean peer, else the
            # exhaustive sweep of its CPU compilation
            base = name.split(" (")[0]
            r = lean_swept.get(base)
            label, device = f"`{name}`", "-"
            launched = (ulp(LEAN_PEER + base) if LEAN_PEER + base in swept else
                        f"{r['max_ulp']:.4g} ({r['over_1ulp']:,}), its CPU compilation" if r
                        else "not swept")
            if name.endswith(OLD_LEAN_TAG):
                launched, device = device, launched
        elif name in spread or name.endswith(HALF_TAGS + (HALF_SHARED_TAG,)):
            label, launched, device = f"`{name}`", "-", "-"
        else:
            label, launched, device = f"peer `{name}`", ulp(name), "-"
        lines.append(f"| {label} | " + " | ".join(cells(name, d) for d in dtypes)
                     + f" | {launched} | {device} |")
    return size, "\n".join(lines)


def _host_run():
    """The text of the host-time run when it is newer than the whole run
    (it then times the host path as it is), else the whole run's."""
    text = _read("throughput")
    path = ROOT / RUN["host"]
    if path.exists():
        host = path.read_text()
        if _command_and_date(host)[1] > _command_and_date(text)[1]:
            return host
    return text


def host_table():
    """``(what, table, (command, date))`` of the host time per call."""
    text = _host_run()
    head = re.search(r"## Host time per call \(([^)]*)\)", text)
    rows = next(t for t in tables(text) if t and "µs per call" in t[0])
    return head.group(1), "\n".join(
        ["| call | µs per call (median) |", "|---|---:|"]
        + [f"| {r['call']} | {r['µs per call']} |" for r in rows]), _command_and_date(text)


def tune_ranges():
    rows = next(t for t in tables(_read("tune")) if t and "unroll" in t[0])
    cols = [c for c in rows[0] if c not in ("unroll", "threads/block", "blocks/SM")]
    out = []
    for c in cols:
        vals = [int(r[c].rstrip("%")) for r in rows]
        out.append(f"{c} {min(vals)}–{max(vals)} %")
    return len(rows), "; ".join(out)


def section():
    text = _read("throughput")
    title = text.splitlines()[0].removeprefix("# GPU throughput: ")
    command, date = _command_and_date(text)
    _, half = _half_run()
    half_note = ("" if half is None else
                 f" The bfloat16 and float16 columns: `{half[0]}`, {half[1]}.")
    size, table = throughput_table()
    host_what, host, (host_command, host_date) = host_table()
    configs, ranges = tune_ranges()
    torch_text = _read("torch")
    torch_head = torch_text.splitlines()[2]
    torch_tables = "\n\n".join(table_blocks(torch_text))
    return "\n".join([
        f"**Measured on an {title}**, {date}, by `bash analysis/on_gpu.sh` (files: "
        + ", ".join(f"{{download}}`{Path(p).name} <../../{p}>`" for p in RUN.values()
                    if (ROOT / p).exists()) + ").",
        "",
        f"Kernel throughput, input and `out=` on the device, CUDA events, median; "
        f"*of copy*: bandwidth over a device-to-device copy of the same bytes "
        f"(`{command}`). Max ulp: all 2^32 float32 inputs on the device against the "
        "float64 GPU kernels; the launched kernel is the float64-arithmetic one on a "
        "device with full-rate FP64 such as this (where the sweep has it), "
        "the device functions of `gelu_numba.gpu.device` compute in float32." + half_note,
        "",
        table,
        "",
        f"Launch configurations ({configs} of them, 2^26 elements, of copy): {ranges}.",
        "",
        f"Host time per call ({host_what}; `{host_command}`, {host_date}):",
        "",
        host,
        "",
        f"`gelu_numba.torch` against `nn.GELU` ({torch_head}):",
        "",
        torch_tables,
    ]) + "\n"


def main(argv=None):
    return section_main(argv, "python -m analysis.gpu.docs", __doc__, PAGE, MARKERS, section)


if __name__ == "__main__":
    sys.exit(main())
