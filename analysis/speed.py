"""Throughput of the gelu_numba ufuncs against array size, with the peers and
the copy roofline.

Usage::

    python -m analysis.speed [--sizes 1e2,1e3,...,1e8] [--functions gelu,gelu_backward]
        [--dtypes float32,float64] [--rounds 7] [--budget 10] [--min-time 1e-3]
        [--out reports/speed] [--no-plot] [--no-gpu] [--no-peers] [--no-progress]

What it measures
----------------
For every function, dtype and size ``n`` (standard-normal inputs, ``(dy, x)``
for ``gelu_backward``; :func:`benchmarks.peers.inputs`), the time per call
of each implementation of :func:`benchmarks.peers.implementations`:
``gelu_numba`` (the single-threaded ufunc), ``gelu_numba.parallel`` (the
same ufunc on every core, Numba's ``target='parallel'``), and the peers
``numpy/scipy`` (the textbook formulas on ``scipy.special.ndtr``), ``naive
numba`` (the same formulas on libm's ``erf`` in a ``@vectorize``), PyTorch
and JAX (when importable; pinned to one thread).  Every one allocates its
output on each call, as a user's call would.  Reported: the median time per
call, the throughput in G elements/s and in GB/s (bytes = ``(inputs + 1) * n
* itemsize``), and the fraction of the copy roofline.

How
---
Timer ``time.perf_counter``, one process.  Each implementation is called
once (compilation, first page faults), then calibrated: ``calls`` back-to-back
calls per timing so that one timing lasts at least ``--min-time`` (1 ms by
default; thousands of calls at n = 100, one at n = 10^7).  Then ``--rounds``
interleaved rounds: in each round every implementation (the copy included) is
timed once, in an order rotated from round to round, so that the machine's
drift and the other processes hit all of them alike; the time per call is
the median over the rounds (minimum in the JSON).  At large sizes the number
of rounds is cut so that a cell's rounds take about ``--budget`` seconds
(never below 3 rounds, or ``--rounds`` if smaller); the count is reported.
The parallel ufunc shares the process with the PyTorch and JAX thread pools
(idle, one thread each), as in :mod:`benchmarks.targets`; run as a script,
this module selects Numba's ``workqueue`` threading layer (unless
``NUMBA_THREADING_LAYER`` is set), because the default ``omp`` pool spins
after each parallel call and slows PyTorch's calls in the same process.

Roofline: on the CPU, ``np.copy`` of a contiguous array of ``ceil((inputs + 1)
* n / 2)`` elements of the same dtype -- the same bytes read and written as
the function's inputs and output -- with its output allocated on each call,
like the implementations, timed in the same rounds.  The fraction of copy is
``(bytes / time) / (copy bytes / copy time)``, i.e. ``copy time / time`` (the
bytes are equal, up to rounding for odd ``n``).  The copy row's G elements/s
is the function's ``n`` over the copy time: the throughput of a kernel that
costs nothing beyond its memory traffic.  Arrays of a few MB or less stay in
the caches (and the allocator hands back the block just freed), so there the
copy, and the fraction, is against cache bandwidth; from about 10^7 elements
it is against DRAM plus the page faults of a fresh allocation.

GPU (only with a real CUDA device: ``numba.cuda.is_available()``, never the
simulator): ``gelu_numba.gpu``, input and ``out=`` on the device, the kernel
timed with CUDA events around back-to-back launches, by
:func:`analysis.gpu.throughput.measure` (see that module); its fraction is
its bandwidth over that of a device-to-device copy of ``n`` elements timed
the same way.

Writes ``speed.md``, ``speed.json`` (every number and the machine) and
``speed.png`` (G elements/s against n, log-log, one panel per function and
dtype) into ``--out``.  Python API: :func:`run`, :func:`markdown`,
:func:`plot`; :data:`QUICK` is a setting that takes under a minute on a
2-core machine (``run(**QUICK)``).
"""

if __name__ == "__main__":
    # gelu_numba.parallel is timed beside PyTorch in this one process: Numba's
    # default 'omp' pool spins after each parallel call and made PyTorch's
    # one-thread calls 40x slower here (7 -> 296 us at n = 100); 'workqueue'
    # does not spin, and this script calls from one Python thread
    import os
    os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")


import argparse
import gc
import importlib.util
import json
import math
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from gelu_numba import catalog

FUNCTIONS = catalog.names("exact")
DTYPES = ("float32", "float64")
SIZES = tuple(10 ** k for k in range(2, 9))
NIN = {name: catalog.lookup(name).nin for name in FUNCTIONS}
OUT = Path("reports") / "speed"
COPY = "copy (roofline)"
GPU = "gelu_numba.gpu"
GPU_COPY = "device copy (GPU roofline)"
MAX_SIZE = 10 ** 9

#: A setting for a quick look (under a minute on a 2-core machine).
QUICK = dict(functions=("gelu", "gelu_backward"), dtypes=DTYPES,
             sizes=tuple(10 ** k for k in range(2, 8)), rounds=5, budget=2.0,
             min_time=1e-3)

ROOFLINE = ("np.copy of ceil((inputs + 1) * n / 2) elements (the same bytes as "
            "the function's inputs and output), output allocated on each call "
            "like every implementation here")


# ---------------------------------------------------------------- parsing
def _size(token):
    t = token.strip().replace("_", "")
    if "**" in t or "^" in t:
        base, _, exp = t.partition("**" if "**" in t else "^")
        if not 0 <= int(exp) <= 64:
            raise ValueError(t)
        value = int(base) ** int(exp)
    else:
        v = float(t)
        if not math.isfinite(v) or v != int(v):
            raise ValueError(t)
        value = int(v)
    return value


def parse_sizes(text):
    """``'1e2,1e4,2**20'`` -> ``[100, 10000, 1048576]`` (argparse type)."""
    accepted = ("sizes are positive integers, comma-separated, written like "
                "100, 1e6 or 2**20")
    tokens = [t for t in str(text).split(",") if t.strip()]
    if not tokens:
        raise argparse.ArgumentTypeError(f"{accepted}; got {text!r}")
    sizes = []
    for t in tokens:
        try:
            v = _size(t)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{accepted}; got {t.strip()!r}") from None
        if v < 1 or v > MAX_SIZE:
            raise argparse.ArgumentTypeError(
                f"{accepted}, from 1 to {MAX_SIZE:.0e}; got {t.strip()!r}")
        sizes.append(v)
    return sorted(set(sizes))


def _choices(kind, accepted):
    def parse(text):
        names = [s.strip() for s in str(text).split(",") if s.strip()]
        bad = [s for s in names if s not in accepted]
        if bad or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {kind} {', '.join(map(repr, bad)) or repr(text)}; "
                f"choose from {', '.join(accepted)} (comma-separated)")
        return list(dict.fromkeys(names))
    return parse


parse_functions = _choices("function(s)", FUNCTIONS)
parse_dtypes = _choices("dtype(s)", DTYPES)


def _positive(kind, convert):
    def parse(text):
        try:
            v = convert(text)
        except ValueError:
            v = None
        if v is None or not v > 0 or not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{kind} must be a positive number; got {text!r}")
        return v
    return parse


# ------------------------------------------------------------------ timing
def _autorange(f, min_time):
    """Calls per timing so that a timing lasts >= ``min_time`` seconds, and
    the seconds per call seen while finding it."""
    k = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(k):
            f()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return k, dt / k
        k = min(k * 1000, max(k + 1, math.ceil(k * 1.2 * min_time / max(dt, 1e-7))))


def _row(function, dtype, n, impl, device, times, calls, nbytes, copy):
    med = statistics.median(times)
    row = {"function": function, "dtype": dtype, "n": n, "impl": impl, "device": device,
           "t_median": med, "t_min": min(times), "rounds": len(times), "calls": calls,
           "bytes": nbytes, "gelem_s": n / med / 1e9, "gb_s": nbytes / med / 1e9}
    if copy is not None:
        copy_t, copy_bytes = copy
        row.update(copy_t_median=copy_t, copy_bytes=copy_bytes,
                   copy_gb_s=copy_bytes / copy_t / 1e9,
                   fraction=(nbytes / med) / (copy_bytes / copy_t))
    return row


def measure_cpu(name, dtype, n, rounds, budget, min_time, peers=True):
    """Rows for one (function, dtype, size) cell: every implementation and
    the copy, timed in interleaved rounds."""
    from benchmarks import peers as bp
    from benchmarks.targets import race
    dt = np.dtype(dtype)
    arrays = bp.inputs(name, dt, n)
    nin = NIN[name]
    impl = bp.implementations(name)
    labels = ["gelu_numba", "gelu_numba.parallel"]
    if peers:
        labels += [k for k in impl if k not in labels and not k.startswith("np.")]
    funcs = {k: impl[k](*arrays) for k in labels}
    m = math.ceil((nin + 1) * n / 2)
    src = np.random.default_rng(1).standard_normal(m).astype(dt)
    funcs[COPY] = lambda: np.copy(src)
    calls, per_call = {}, {}
    for k, f in funcs.items():
        f()                                   # compile, first page faults
        calls[k], per_call[k] = _autorange(f, min_time)
    round_s = sum(calls[k] * per_call[k] for k in funcs)
    r = max(min(3, rounds), min(rounds, int(budget // round_s) if round_s > 0 else rounds))
    times = race(funcs, r, calls, rotate=True)
    item = dt.itemsize
    copy = (statistics.median(times[COPY]), 2 * m * item)
    rows = [_row(name, dtype, n, k, "cpu", times[k], calls[k], (nin + 1) * n * item, copy)
            for k in funcs if k != COPY]
    crow = _row(name, dtype, n, COPY, "cpu", times[COPY], calls[COPY], 2 * m * item, copy)
    crow["gelem_s"] = n / crow["t_median"] / 1e9   # the function's n at copy speed
    rows.append(crow)
    del funcs, arrays, src
    gc.collect()
    return rows


def gpu_available():
    """True with a real CUDA device (never under NUMBA_ENABLE_CUDASIM)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return False
    if importlib.util.find_spec("numba_cuda") is None:
        return False
    try:
        from numba import config, cuda
        return not config.ENABLE_CUDASIM and bool(cuda.is_available())
    except Exception:  # pragma: no cover - broken driver or toolkit
        return False


class _Gpu:
    """GPU timings through analysis.gpu.throughput.measure, one call per
    (function, size), both dtypes (cached)."""

    def __init__(self, rounds, batch):
        from numba import cuda

        from analysis.gpu import throughput as gpu_throughput
        from gelu_numba import gpu
        self.cuda, self.gpu, self.gt = cuda, gpu, gpu_throughput
        self.rounds, self.batch = rounds, batch
        self.info = gpu_throughput.device_info(cuda)
        self._cache = {}

    def rows(self, name, dtype, n):
        if (name, n) not in self._cache:
            self._cache[(name, n)] = self.gt.measure([name], [n], self.rounds, self.batch,
                                                     self.cuda, self.gpu)
        out = []
        for g in self._cache[(name, n)]:
            if g["dtype"] != dtype:
                continue
            item = np.dtype(dtype).itemsize
            nbytes = (NIN[name] + 1) * n * item
            copy_bytes = 2 * n * item
            copy_t = copy_bytes / (g["copy_gb_s"] * 1e9)
            times = [g["t_median"]]
            row = _row(name, dtype, n, GPU, "gpu", times, self.batch, nbytes,
                       (copy_t, copy_bytes))
            row.update(t_min=g["t_min"], rounds=self.rounds, fraction=g["fraction"])
            crow = _row(name, dtype, n, GPU_COPY, "gpu", [copy_t], self.batch, copy_bytes,
                        (copy_t, copy_bytes))
            crow["gelem_s"] = copy_bytes / nbytes * n / copy_t / 1e9
            crow["rounds"] = self.rounds
            out += [row, crow]
        return out


def machine(gpu_info=None):
    """The machine (benchmarks.peers.machine and its dict) and the threads."""
    import numba

    from benchmarks.machine import machine_info
    from benchmarks import peers as bp
    info = dict(machine_info())
    info["summary"] = bp.machine()
    info["numba_threads"] = numba.get_num_threads()
    info["numba_layer"] = numba.threading_layer()
    info["torch"] = None if bp.torch is None else bp.torch.__version__
    info["jax"] = None if bp.jax is None else bp.jax.__version__
    info["gpu"] = gpu_info
    return info


def run(functions=("gelu", "gelu_backward"), dtypes=DTYPES, sizes=SIZES, rounds=7,
        gpu=None, peers=True, progress=True, budget=10.0, min_time=1e-3, batch=20,
        on_group=None):
    """Measure; return a JSON-able dict (``machine``, ``settings``, ``rows``).

    ``gpu``: None measures the GPU when a real CUDA device is present, True
    requires one (RuntimeError otherwise), False skips it.  ``peers``: False
    times only gelu_numba, gelu_numba.parallel and the copy.  ``budget``:
    seconds of timed rounds per (function, dtype, size) cell at large sizes;
    ``min_time``: seconds per timing; ``batch``: GPU launches per timing.
    ``on_group(results, function, dtype)`` is called as each function x
    dtype finishes (the CLI prints its table then).
    """
    functions = list(functions)
    dtypes = [np.dtype(d).name for d in dtypes]
    sizes = [int(n) for n in sizes]
    bad = [f for f in functions if f not in FUNCTIONS] + [d for d in dtypes if d not in DTYPES]
    if bad or not functions or not dtypes or not sizes:
        raise ValueError(f"unknown {bad}; functions from {FUNCTIONS}, dtypes from {DTYPES}")
    if min(sizes) < 1 or rounds < 1:
        raise ValueError("sizes and rounds must be positive")
    if gpu is None:
        gpu = gpu_available()
    elif gpu and not gpu_available():
        raise RuntimeError("no CUDA GPU here (or the simulator is on)")
    t_start = time.perf_counter()
    g = _Gpu(rounds, batch) if gpu else None
    results = {
        "machine": machine(g.info if g else None),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "settings": {"functions": functions, "dtypes": dtypes, "sizes": sizes,
                     "rounds": rounds, "budget_s": budget, "min_time_s": min_time,
                     "gpu": bool(gpu), "gpu_batch": batch if gpu else None,
                     "peers": bool(peers), "timer": "time.perf_counter",
                     "roofline": ROOFLINE},
        "rows": [],
    }
    cells = [(f, d, n) for f in functions for d in dtypes for n in sizes]
    from tqdm import tqdm
    bar = tqdm(cells, desc="speed", unit="cell", file=sys.stderr, disable=not progress,
               dynamic_ncols=True)
    for f, d, n in bar:
        bar.set_postfix_str(f"{f} {d} n={n:.0e}")
        results["rows"] += measure_cpu(f, d, n, rounds, budget, min_time, peers)
        if g is not None:
            results["rows"] += g.rows(f, d, n)
        if on_group is not None and n == sizes[-1]:
            on_group(results, f, d)
    bar.close()
    results["wall_s"] = time.perf_counter() - t_start
    return results


# ------------------------------------------------------------------ report
def _size_label(n):
    k = round(math.log10(n))
    if 10 ** k == n:
        return f"10^{k}"
    if n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n)


def _seconds(t):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def _pct(x):
    return f"{100 * x:.0f}%" if x >= 0.095 else f"{100 * x:.2g}%"


def _impls(rows):
    order = []
    for r in rows:
        if r["impl"] not in order:
            order.append(r["impl"])
    return order


def group_table(results, function, dtype):
    """Markdown: implementations x sizes, G elements/s (fraction of copy)."""
    rows = [r for r in results["rows"] if r["function"] == function and r["dtype"] == dtype]
    sizes = sorted({r["n"] for r in rows})
    cell = {(r["impl"], r["n"]): r for r in rows}
    lines = [f"### {function}, {dtype}", "",
             "G elements/s (fraction of the copy roofline: the CPU copy for CPU rows, "
             "the device copy for the GPU)", "",
             "| implementation | " + " | ".join(_size_label(n) for n in sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for impl in _impls(rows):
        vals = []
        for n in sizes:
            r = cell.get((impl, n))
            if r is None:
                vals.append("")
            elif impl in (COPY, GPU_COPY):
                vals.append(f"{r['gelem_s']:.3g}")
            else:
                vals.append(f"{r['gelem_s']:.3g} ({_pct(r['fraction'])})")
        lines.append(f"| {impl} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"


def header(results):
    m, s = results["machine"], results["settings"]
    gpu = m.get("gpu")
    if gpu:
        gpu_line = (f"GPU: {gpu['name']} ({gpu['sms']} SMs, compute capability {gpu['cc']}); "
                    f"kernel time from CUDA events around {s['gpu_batch']} back-to-back "
                    "launches, input and `out=` on the device, against a device-to-device "
                    "copy (`analysis.gpu.throughput.measure`).")
    else:
        gpu_line = "GPU: not measured (no CUDA device, or disabled)."
    missing = [p for p in ("torch", "jax") if m.get(p) is None]
    peers = ("peers: " + ("not measured (--no-peers)" if not s["peers"] else
                          "numpy/scipy, naive numba" + "".join(
                              f", {p}" for p in ("torch", "jax") if m.get(p)) +
                          (f" ({', '.join(missing)} not installed)" if missing else "")))
    return "\n".join([
        "# gelu_numba throughput against array size", "",
        f"Machine: {m['summary']}; {m['numba_threads']} Numba threads for "
        f"`gelu_numba.parallel` (threading layer {m.get('numba_layer', '?')}).  {gpu_line}", "",
        f"Taken {results['date']}.  Standard-normal inputs; every CPU implementation "
        "allocates its output on each call.  Time per call: median of "
        f"{s['rounds']} interleaved rounds (fewer, never below {min(3, s['rounds'])}, where "
        f"a cell's rounds would exceed {s['budget_s']:g} s; counts in the full table), "
        "one process, "
        f"`{s['timer']}`, each timing at least {s['min_time_s'] * 1e3:g} ms of "
        "back-to-back calls.  Roofline: " + ROOFLINE + "; fraction of copy = "
        "(bytes / time) / (copy bytes / copy time) = copy time / time.  Bytes = "
        "(inputs + 1) · n · itemsize.  The copy row's G elements/s is the "
        f"function's n over the copy time.  {peers}.", ""])


def markdown(results):
    """The report: one table per function x dtype, then every measurement."""
    out = [header(results)]
    s = results["settings"]
    for f in s["functions"]:
        for d in s["dtypes"]:
            out.append(group_table(results, f, d))
    out += ["## All measurements", "",
            "| function | dtype | n | implementation | time per call | G elem/s | GB/s "
            "| of copy | rounds × calls |",
            "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in results["rows"]:
        out.append(f"| {r['function']} | {r['dtype']} | {_size_label(r['n'])} | {r['impl']} "
                   f"| {_seconds(r['t_median'])} | {r['gelem_s']:.3g} | {r['gb_s']:.3g} "
                   f"| {_pct(r['fraction'])} | {r['rounds']} × {r['calls']} |")
    if "wall_s" in results:
        out += ["", f"Wall time of the run: {results['wall_s']:.1f} s."]
    return "\n".join(out) + "\n"


def plot(results, path):
    """G elements/s against n, log-log, one panel per function x dtype."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s, m = results["settings"], results["machine"]
    panels = [(f, d) for f in s["functions"] for d in s["dtypes"]]
    ncols = len(s["dtypes"])
    nrows = len(s["functions"])
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 4.2 * nrows + 1.2),
                             squeeze=False, sharex=True)
    impls = _impls(results["rows"])
    colors = {}
    styles = {COPY: dict(color="k", ls="--", lw=1.5), GPU_COPY: dict(color="0.5", ls="--", lw=1.5)}
    for impl in impls:
        if impl not in styles:
            colors[impl] = f"C{len(colors) % 10}"
            styles[impl] = dict(color=colors[impl], ls="-", lw=1.5, marker="o", ms=3.5)
    handles = {}
    for ax, (f, d) in zip(axes.flat, panels):
        rows = [r for r in results["rows"] if r["function"] == f and r["dtype"] == d]
        for impl in impls:
            pts = sorted((r["n"], r["gelem_s"]) for r in rows if r["impl"] == impl)
            if pts:
                (line,) = ax.plot(*zip(*pts), label=impl, **styles[impl])
                handles.setdefault(impl, line)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{f}, {d}")
        ax.set_ylabel("throughput (G elements/s)")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("array size n (elements)")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    cpu = f"{m['cpu']}, {m['cpu_count']} cores"
    gpu = f"; GPU {m['gpu']['name']}" if m.get("gpu") else ""
    fig.suptitle(f"gelu_numba throughput against array size ({cpu}{gpu})\n"
                 "median of interleaved rounds; CPU outputs allocated per call; "
                 "dashed: copy of the same bytes")
    fig.legend(list(handles.values()), list(handles), loc="lower center",
               ncol=min(5, len(handles)), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.06 + 0.02 * (len(handles) > 5), 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------- CLI
def build_parser():
    p = argparse.ArgumentParser(
        prog="python -m analysis.speed",
        description="Throughput of gelu_numba (single thread, parallel, GPU when present) "
                    "and its peers against array size, as G elements/s and as a fraction "
                    "of the copy roofline.  Writes speed.md, speed.json, speed.png.")
    p.add_argument("--sizes", type=parse_sizes, default=list(SIZES), metavar="LIST",
                   help="array sizes, comma-separated, e.g. 1e2,1e4,1e6 or 2**20 "
                        "(default 1e2,1e3,...,1e8)")
    p.add_argument("--functions", type=parse_functions, default=["gelu", "gelu_backward"],
                   metavar="LIST", help=f"any of {', '.join(FUNCTIONS)} "
                                        "(default gelu,gelu_backward)")
    p.add_argument("--dtypes", type=parse_dtypes, default=list(DTYPES), metavar="LIST",
                   help="float32, float64 or both (default float32,float64)")
    p.add_argument("--rounds", type=_positive("--rounds", int), default=7,
                   help="interleaved rounds per cell (default 7)")
    p.add_argument("--budget", type=_positive("--budget", float), default=10.0,
                   help="seconds of timed rounds per (function, dtype, size) cell; "
                        "fewer rounds (not below 3) at large sizes (default 10)")
    p.add_argument("--min-time", type=_positive("--min-time", float), default=1e-3,
                   help="seconds per timing; small sizes take many calls (default 1e-3)")
    p.add_argument("--batch", type=_positive("--batch", int), default=20,
                   help="GPU launches per CUDA-event timing (default 20)")
    p.add_argument("--out", type=Path, default=OUT, help="output folder (default reports/speed)")
    p.add_argument("--no-plot", action="store_true", help="skip speed.png")
    p.add_argument("--no-gpu", action="store_true", help="skip the GPU even if present")
    p.add_argument("--no-peers", action="store_true",
                   help="only gelu_numba, gelu_numba.parallel and the copy")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    progress = not args.no_progress

    def emit(text):
        if progress:
            from tqdm import tqdm
            tqdm.write(text)
        else:
            print(text, flush=True)

    first = []

    def on_group(results, f, d):
        if not first:
            emit(header(results))
            first.append(True)
        emit(group_table(results, f, d))

    results = run(functions=args.functions, dtypes=args.dtypes, sizes=args.sizes,
                  rounds=args.rounds, gpu=False if args.no_gpu else None,
                  peers=not args.no_peers, progress=progress, budget=args.budget,
                  min_time=args.min_time, batch=args.batch, on_group=on_group)
    args.out.mkdir(parents=True, exist_ok=True)
    written = [args.out / "speed.md", args.out / "speed.json"]
    written[0].write_text(markdown(results))
    written[1].write_text(json.dumps(results, indent=1) + "\n")
    if not args.no_plot:
        written.append(plot(results, args.out / "speed.png"))
    m = results["machine"]
    print(f"machine: {m['summary']}" + (f"; GPU {m['gpu']['name']}" if m["gpu"] else "; no GPU"))
    print(f"wrote {', '.join(map(str, written))} ({results['wall_s']:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
