"""The speed targets of issue 3, measured side by side in one process.

Usage::

    python -m benchmarks.targets [--n 16777216] [--rounds 15]

Every ratio compares implementations timed in interleaved rounds on the same
arrays (standard normal, ``n`` elements, output allocated by each call), so
that the machine's drift hits all of them alike; each time is the median of
the rounds (minimum in brackets).  Prints a markdown report.
"""

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

from benchmarks import peers
from benchmarks.peers import FUNCTIONS, implementations, inputs


def race(funcs, rounds, calls=None, rotate=False):
    """Interleaved rounds: in each, every function is timed once, over
    ``calls[label]`` back-to-back calls (default 1); ``rotate`` starts each
    round one label later, so that drift hits all alike.  Returns
    ``{label: [seconds per call, one per round]}``."""
    labels = list(funcs)
    times = {k: [] for k in labels}
    for r in range(rounds):
        s = r % len(labels) if rotate else 0
        for k in labels[s:] + labels[:s]:
            f, c = funcs[k], 1 if calls is None else calls[k]
            t0 = time.perf_counter()
            for _ in range(c):
                f()
            times[k].append((time.perf_counter() - t0) / c)
    return times


def _race(funcs, rounds):
    """Interleaved timings after a warm-up call: ``{label: (median, min)}``
    seconds per call."""
    for f in funcs.values():
        f()
    return {k: (statistics.median(v), min(v)) for k, v in race(funcs, rounds).items()}


def _ratio(t, a, b):
    """How many times faster a is than b (median; minimum)."""
    return f"{t[b][0] / t[a][0]:.2f}x ({t[b][1] / t[a][1]:.2f}x)"


_PARALLEL_CODE = """
import sys, numpy as np, gelu_numba as g, gelu_numba.parallel as gp
from benchmarks.targets import _race
n, rounds = int(sys.argv[1]), int(sys.argv[2])
for dtype in ("float32", "float64"):
    x = np.random.default_rng(0).standard_normal(n).astype(dtype)
    t = _race({"single": lambda: g.gelu(x), "parallel": lambda: gp.gelu(x)}, rounds)
    print(dtype, t["single"][0] / t["parallel"][0], t["single"][1] / t["parallel"][1])
"""


def _parallel_ratios(n, rounds):
    """parallel/single speed-ups, measured in a process without the torch
    and JAX thread pools (which, idle or not, compete for the two cores)."""
    out = subprocess.run([sys.executable, "-c", _PARALLEL_CODE, str(n), str(rounds)],
                         check=True, capture_output=True, text=True).stdout
    return {line.split()[0]: tuple(map(float, line.split()[1:]))
            for line in out.strip().splitlines()}


def _import_time(reps=5):
    code = ("import time; t=time.perf_counter(); import numpy as np; "
            "import gelu_numba as g; g.gelu(np.ones(8, np.float32)); "
            "print(time.perf_counter()-t)")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    vals = []
    for _ in range(reps):
        out = subprocess.run([sys.executable, "-c", code], check=True,
                             capture_output=True, text=True).stdout
        vals.append(float(out))
    return statistics.median(vals), min(vals)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.targets",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    n, rounds = args.n, args.rounds
    print(f"Machine: {peers.machine()}; n = {n}, {rounds} interleaved rounds.\n")
    print("| target | measured: median (minimum) | goal |")
    print("|---|---|---|")
    rows = []
    for dtype in ("float32", "float64"):
        impl = implementations("gelu")
        arrays = inputs("gelu", np.dtype(dtype), n)
        labels = [k for k in ("gelu_numba", "torch", "jax", "np.copy (roofline)")
                  if k in impl]
        t = _race({k: impl[k](*arrays) for k in labels}, rounds)
        goal = ">= 3x" if dtype == "float32" else ">= 4x"
        if "torch" in t:
            rows.append((f"{dtype} gelu vs PyTorch, 1 thread", _ratio(t, "gelu_numba", "torch"), goal))
        if "jax" in t:
            rows.append((f"{dtype} gelu vs JAX, 1 thread", _ratio(t, "gelu_numba", "jax"),
                         ">= 2x" if dtype == "float32" else ""))
    for dtype, (med, mn) in _parallel_ratios(n, rounds).items():
        rows.append((f"{dtype} gelu, parallel (2 threads) vs 1 thread "
                     "(separate process)", f"{med:.2f}x ({mn:.2f}x)", ">= 1.7x"))
    impl = implementations("gelu_backward")
    arrays = inputs("gelu_backward", np.dtype("float32"), n)
    labels = [k for k in ("gelu_numba", "torch") if k in impl]
    t = _race({k: impl[k](*arrays) for k in labels}, rounds)
    if "torch" in t:
        rows.append(("float32 gelu_backward vs aten.gelu_backward, 1 thread",
                     _ratio(t, "gelu_numba", "torch"), ">= 3x"))
    impl = implementations("gelu")
    for n_small in (1, 1000):
        small = inputs("gelu", np.dtype("float32"), n_small)
        t = _race({k: impl[k](*small) for k in ("gelu_numba", "np.add (overhead)")},
                  rounds * 2000)
        rows.append((f"n = {n_small} float32: gelu time / np.add time",
                     f"{t['gelu_numba'][0] / t['np.add (overhead)'][0]:.2f} "
                     f"({t['gelu_numba'][1] / t['np.add (overhead)'][1]:.2f}); "
                     f"{t['gelu_numba'][0] * 1e6:.2f} vs "
                     f"{t['np.add (overhead)'][0] * 1e6:.2f} us per call",
                     "<= 2 (per-call overhead)" if n_small == 1 else ""))
    med, mn = _import_time()
    rows.append(("warm `import gelu_numba` + first call", f"{med:.2f} s ({mn:.2f} s)", "<= 1 s"))
    for r in rows:
        print("| " + " | ".join(r) + " |")

    print("\nThroughput as a fraction of `np.copy` (the memory roofline, "
          "output allocated), one thread:\n")
    print("| function | float32 G/s | of copy | float64 G/s | of copy |")
    print("|---|---:|---:|---:|---:|")
    for name in FUNCTIONS:
        cells = []
        for dtype in ("float32", "float64"):
            impl = implementations(name)
            arrays = inputs(name, np.dtype(dtype), n)
            t = _race({k: impl[k](*arrays) for k in ("gelu_numba", "np.copy (roofline)")},
                      max(3, rounds // 3))
            gps = n / t["gelu_numba"][0] / 1e9
            frac = t["np.copy (roofline)"][0] / t["gelu_numba"][0]
            cells += [f"{gps:.3f}", f"{100 * frac:.0f} %"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
