"""The call patterns users write, each against the contiguous call, ours and the peer's.

Usage::

    python -m benchmarks.layouts [--rounds 15] [--isa avx2] [--out FILE]

NumPy rows: a pattern's time over the contiguous call's, for our ufunc and
for NumPy's own ufunc on the same pattern (``np.exp``, or ``np.multiply``
for the two-operand rows): a strided or reversed view, a column of a
C-ordered matrix, a transposed matrix, a scalar or broadcast (stride-0)
operand, a strided output, ``gelu_general`` with scalar parameters.
PyTorch rows: ``gelu_numba.torch.GELU()`` forward and backward through
autograd, over the same step with its two ufunc calls on the same arrays
(the layer's own cost) and over ``nn.GELU()`` (the peer), for a contiguous
gradient, ``y.sum().backward()`` (a stride-0 gradient), the gradient of a
following ``Linear``, a channels-last 4-D tensor, and back-to-back steps
timed in blocks rather than interleaved.

Every ratio comes from one process, pinned to one core
(``os.sched_setaffinity``), interleaved rounds (each round times every
callable once, starting one label later each round), the median of the
per-round ratios (the minimum in brackets); 10^6 elements.  PyTorch runs
one thread.  ``--isa avx2`` runs Numba, PyTorch and oneDNN on their AVX2
code (:mod:`benchmarks.isa`).  ``--out`` writes the Markdown report (its
first lines name this command) instead of printing it.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

from benchmarks import isa

N = 10**6
#: back-to-back calls per timing of the one-element call
CALLS = 20000


def race(funcs, rounds):
    """``{label: [seconds, one per round]}``: interleaved rounds, each
    starting one label later, after one warm-up call of each."""
    labels = list(funcs)
    for f in funcs.values():
        f()
    times = {k: [] for k in labels}
    for r in range(rounds):
        s = r % len(labels)
        for k in labels[s:] + labels[:s]:
            t0 = time.perf_counter()
            funcs[k]()
            times[k].append(time.perf_counter() - t0)
    return times


def ratio(times, a, b):
    """Median and minimum over the rounds of ``times[a] / times[b]``."""
    r = [x / y for x, y in zip(times[a], times[b])]
    return statistics.median(r), min(r)


def _cell(r):
    return f"{r[0]:.2f}x ({r[1]:.2f}x)"


def numpy_rows(rounds):
    """``[(dtype, pattern, ours, peer, target)]`` for the ufunc patterns."""
    import gelu_numba as g
    rows = []
    for dtype in (np.float32, np.float64):
        rng = np.random.default_rng(0)
        x = rng.standard_normal(N).astype(dtype)
        dy = rng.standard_normal(N).astype(dtype)
        x2 = rng.standard_normal(2 * N).astype(dtype)
        wide = rng.standard_normal((N, 4)).astype(dtype)
        square = rng.standard_normal((1000, 1000)).astype(dtype)
        out2 = np.empty(2 * N, dtype)
        mu, sigma = np.zeros(N, dtype), np.ones(N, dtype)
        one = dtype(1.0)
        # (pattern, ours, its contiguous call, peer, the peer's contiguous call, target)
        unary = [
            ("stride 2 (x[::2])", lambda f: f(x2[::2]), "<= 1.5x"),
            ("reversed (x[::-1])", lambda f: f(x[::-1]), "<= 1.5x"),
            ("a column of a C-ordered (10^6, 4) matrix", lambda f: f(wide[:, 1]), "<= 1.5x"),
            ("transposed 1000x1000 (m.T)", lambda f: f(square.T), "<= 1.5x"),
            ("strided output (out=y[::2])", lambda f: f(x, out=out2[::2]), "<= 1.5x"),
        ]
        funcs = {"gelu": lambda: g.gelu(x), "exp": lambda: np.exp(x),
                 "backward": lambda: g.gelu_backward(dy, x),
                 "multiply": lambda: np.multiply(dy, x),
                 "general arrays": lambda: g.gelu_general(x, mu, sigma)}
        for name, call, _ in unary:
            funcs[f"gelu {name}"] = (lambda call=call: call(g.gelu))
            funcs[f"exp {name}"] = (lambda call=call: call(np.exp))
        binary = [("a scalar dy (gelu_backward(1.0, x))", lambda f: f(one, x)),
                  ("a stride-0 dy (np.broadcast_to)", lambda f: f(np.broadcast_to(one, N), x)),
                  ("dy and x strided (stride 2)", lambda f: f(x2[::2], x2[1::2]))]
        for name, call in binary:
            funcs[f"backward {name}"] = (lambda call=call: call(g.gelu_backward))
            funcs[f"multiply {name}"] = (lambda call=call: call(np.multiply))
        funcs["general scalars"] = lambda: g.gelu_general(x, dtype(0.0), dtype(1.0))
        t = race(funcs, rounds)
        label = np.dtype(dtype).name
        for name, _, target in unary:
            rows.append((label, f"gelu, {name}", _cell(ratio(t, f"gelu {name}", "gelu")),
                         _cell(ratio(t, f"exp {name}", "exp")) + " np.exp", target))
        for name, _ in binary:
            target = "<= 1.5x" if "strided" in name else "<= 1.1x"
            rows.append((label, f"gelu_backward, {name}",
                         _cell(ratio(t, f"backward {name}", "backward")),
                         _cell(ratio(t, f"multiply {name}", "multiply")) + " np.multiply",
                         target))
        rows.append((label, "gelu_general(x, 0.0, 1.0) over (x, zeros, ones)",
                     _cell(ratio(t, "general scalars", "general arrays")), "-", "<= 1.1x"))
    return rows


def call_rows(rounds):
    """Per-call cost at one element, nanoseconds: ours and ``np.exp``."""
    import gelu_numba as g
    calls = CALLS
    rows = []
    for dtype in (np.float32, np.float64):
        x = np.ones(1, dtype)
        funcs = {"gelu": lambda: [g.gelu(x) for _ in range(calls)],
                 "exp": lambda: [np.exp(x) for _ in range(calls)]}
        t = race(funcs, rounds)
        ns = {k: statistics.median(v) / calls * 1e9 for k, v in t.items()}
        rows.append((np.dtype(dtype).name, "gelu of a 1-element array, ns per call",
                     f"{ns['gelu']:.0f} ns", f"{ns['exp']:.0f} ns np.exp", "no worse"))
    return rows


def torch_rows(rounds):
    """GELU() forward + backward in the patterns a model runs: over its
    two ufunc calls on the same arrays, and over nn.GELU()."""
    try:
        import torch

        import gelu_numba as g
        import gelu_numba.torch as gt
    except ImportError:  # pragma: no cover - optional peer
        return []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _torch_rows(torch, g, gt, rounds)
    finally:
        torch.set_num_threads(threads)


def _torch_rows(torch, g, gt, rounds):
    gen = torch.Generator().manual_seed(0)
    ours, stock = gt.GELU(), torch.nn.GELU()
    flat = torch.randn(N, generator=gen).requires_grad_()
    dy = torch.randn(N, generator=gen)
    side = round(N ** 0.5)                      # 1000 for 10^6 elements
    square = torch.randn(side, side, generator=gen).requires_grad_()
    linear = torch.nn.Linear(side, side)
    shape = (max(1, N // 102400), 100, 32, 32)  # (10, 100, 32, 32) for 10^6
    nchw = torch.randn(shape, generator=gen).to(
        memory_format=torch.channels_last).requires_grad_()
    d_nchw = torch.randn(shape, generator=gen).to(memory_format=torch.channels_last)

    def step(module, x, backward):
        def f():
            backward(module(x))
            x.grad = None
        return f

    def pair(x, d):
        xn = x.detach().numpy()

        def f():
            g.gelu(xn)
            g.gelu_backward(d() if callable(d) else d, xn)
        return f

    patterns = [
        ("contiguous gradient (y.backward(dy))", flat, lambda y: y.backward(dy),
         pair(flat, dy.numpy())),
        ("y.sum().backward() (a stride-0 gradient)", flat, lambda y: y.sum().backward(),
         pair(flat, lambda: np.broadcast_to(np.float32(1), N))),
        ("channels-last 4-D tensor", nchw, lambda y: y.backward(d_nchw),
         pair(nchw, d_nchw.numpy())),
    ]
    funcs = {}
    for name, x, backward, ufuncs in patterns:
        funcs[f"ours {name}"] = step(ours, x, backward)
        funcs[f"nn {name}"] = step(stock, x, backward)
        funcs[f"pair {name}"] = ufuncs
    for label, module in (("ours", ours), ("nn", stock)):
        funcs[f"{label} linear"] = step(
            lambda v, m=module: linear(m(v)), square, lambda y: y.sum().backward())
    t = race(funcs, rounds)
    rows = []
    for name, *_ in patterns:
        rows.append(("float32", f"GELU() forward+backward, {name}",
                     _cell(ratio(t, f"ours {name}", f"pair {name}")) + " its ufuncs",
                     _cell(ratio(t, f"ours {name}", f"nn {name}")) + " nn.GELU",
                     "<= 1.15x its ufuncs; <= 1.6x nn.GELU"))
    rows.append(("float32", f"a step of GELU() then Linear({side}, {side}), sum().backward()",
                 "-", _cell(ratio(t, "ours linear", "nn linear")) + " nn.GELU", ""))
    # back to back: each callable timed in a block of its own rounds
    blocks = {}
    for label in ("ours", "nn", "pair"):
        key = f"{label} contiguous gradient (y.backward(dy))"
        blocks[label] = race({key: funcs[key]}, rounds)[key]
    rows.append(("float32", "GELU() forward+backward, contiguous gradient, back-to-back blocks",
                 _cell(ratio(blocks, "ours", "pair")) + " its ufuncs",
                 _cell(ratio(blocks, "ours", "nn")) + " nn.GELU",
                 "<= 1.15x its ufuncs; <= 1.6x nn.GELU"))
    return rows


def report(rounds):
    from benchmarks.peers import machine
    rows = numpy_rows(rounds) + call_rows(rounds) + torch_rows(rounds)
    lines = [f"Machine: {machine()}; ISA: {isa.describe()}; one pinned core; {rounds} "
             "interleaved rounds, median (minimum) of the per-round ratios; 10^6 elements.",
             "", "| dtype | pattern | ours: over the contiguous call | the peer: over its "
             "contiguous call | target |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.layouts",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--isa", choices=isa.CHOICES, default="native",
                        help="the ISA Numba, PyTorch and oneDNN run (benchmarks.isa)")
    parser.add_argument("--out", help="write the report here (Markdown)")
    args = parser.parse_args(argv)
    isa.run_as(args.isa, "benchmarks.layouts")
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    text = report(args.rounds)
    if args.out:
        command = " ".join(["python -m benchmarks.layouts", *(argv or sys.argv[1:])])
        header = f"<!-- generated by benchmarks/layouts.py: {command} -->\n\n"
        with open(args.out, "w") as f:
            f.write(header + text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
