"""The CPU speed targets, measured side by side in one process.

Usage::

    python -m benchmarks.targets [--one-core] [--rounds 9] [--quick] [--isa avx2] [--out FILE]
    python -m benchmarks.targets --layouts [--rounds 15] [--isa avx2]
    python -m benchmarks.targets --jax [--rounds 9] [--out FILE]

Each row is a ratio of two implementations timed in interleaved rounds on
the same arrays (standard normal, output allocated by each call unless the
row says ``out=``), so that
the machine's drift hits both alike: the median of the rounds (minimum of
the per-round ratios in brackets).  Back-to-back calls cycle through
several input sets of the same size (:func:`input_sets`: up to 512, together
at most 4 MiB, in the L2 or L3 cache): called again and again on the same
few thousand values, a kernel with data-dependent branches (libm's ``erf``
and ``erfc`` in the naive formulas) runs faster than on new data, because
the branch predictor learns their outcomes (measured
2026-11-26), while a model's activations differ from call to call.  The branch-free kernels of gelu_numba run at one
speed either way.  ``--one-core`` pins this process to one
core (``os.sched_setaffinity``) for the one-thread rows, as ``taskset -c 0``
would; the parallel rows always run in a separate, unpinned process without
the PyTorch and JAX thread pools.  PyTorch runs with one thread, JAX with one
intra-op thread and ``jax_enable_x64`` (``benchmarks.peers``).  ``--isa
avx2`` runs Numba, PyTorch and oneDNN on their AVX2 code on any x86 machine
(:mod:`benchmarks.isa`).  Prints a markdown table naming the ISA.
``--layouts`` prints the layout table instead (:mod:`benchmarks.layouts`:
strided, reversed, column and transposed views, scalar and broadcast
operands, the PyTorch module's gradient layouts), on one pinned core.
"""

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from benchmarks import isa
from benchmarks.peers import FUNCTIONS, implementations, inputs

SIZES = (10**3, 10**4, 10**5, 10**6, 1 << 24)


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


def medians(funcs, rounds):
    """Interleaved timings after a warm-up call: ``{label: (median, min)}``
    seconds per call."""
    for f in funcs.values():
        f()
    return {k: (statistics.median(v), min(v)) for k, v in race(funcs, rounds).items()}


def _calls(n):
    """Back-to-back calls per timing, so that a timing lasts >~ 1 ms."""
    return max(1, 10**6 // max(n, 1))


def speedup(a, b, rounds, n):
    """How many times faster ``a`` is than ``b`` (both zero-argument
    callables), over interleaved rounds: ``(median, minimum)`` of the
    per-round ratios."""
    a(), b()
    c = _calls(n)
    t = race({"a": a, "b": b}, rounds, {"a": c, "b": c}, rotate=True)
    ratios = [tb / ta for ta, tb in zip(t["a"], t["b"])]
    return statistics.median(ratios), min(ratios)


#: the input sets of a size, together at most this many bytes (per array)
ROTATION_BYTES = 1 << 22
#: and at most this many sets
ROTATION_SETS = 512


def input_sets(name, dtype, n):
    """Distinct inputs of ``n`` elements (seeds 0, 1, ...): as many as fit
    :data:`ROTATION_BYTES` per array, at most :data:`ROTATION_SETS`, at
    least one."""
    k = max(1, min(ROTATION_SETS, ROTATION_BYTES // (n * np.dtype(dtype).itemsize)))
    return [inputs(name, dtype, n, seed=s) for s in range(k)]


def cycling(calls):
    """One zero-argument callable that runs ``calls`` in turn, one per call."""
    if len(calls) == 1:
        return calls[0]
    it = itertools.cycle(calls)
    return lambda: next(it)()


def _size(n):
    if n == 1 << 24:
        return "2^24"
    p = round(np.log10(n))
    return f"10^{p}" if n == 10**p and n >= 10 else str(n)


def _cell(r):
    return f"{r[0]:.2f}x ({r[1]:.2f}x)"


def one_thread_rows(rounds, sizes):
    """``[(what, size, measured, target), ...]`` for the one-thread targets."""
    rows = []

    def vs(name, dtype, n, peer, ours="gelu_numba"):
        impl = implementations(name)
        if peer not in impl:
            return None
        sets = input_sets(name, np.dtype(dtype), n)
        return speedup(cycling([impl[ours](*a) for a in sets]),
                       cycling([impl[peer](*a) for a in sets]), rounds, n)

    for name in ("gelu", "gelu_backward"):
        for n in (10**5, 1 << 24):
            r = vs(name, "float64", n, "jax")
            if r:
                rows.append((f"float64 {name} vs JAX", _size(n), _cell(r), ">= 1.0x (stretch)"))
    for name in FUNCTIONS:
        for n in sizes:
            r = vs(name, "float64", n, "naive numba")
            rows.append((f"float64 {name} vs naive Numba (libm erf/exp)", _size(n),
                         _cell(r), ">= 1.2x"))
    for name in ("gelu", "gelu_backward"):
        r = vs(name, "float32", 1 << 24, "torch")
        if r:
            rows.append((f"float32 {name} vs PyTorch", "2^24", _cell(r), ">= 1.5x"))
    # the ceiling of that ratio: a kernel with no arithmetic at all, which
    # still allocates, faults in and writes its output and reads its input
    r = vs("gelu", "float32", 1 << 24, "torch", ours="np.copy (roofline)")
    if r:
        rows.append(("float32 np.copy (no arithmetic: the ceiling) vs PyTorch gelu", "2^24",
                     _cell(r), "(the ceiling of the row above)"))
    # a kernel against a kernel: each side writes into an output of its own,
    # allocated once (a new output a call would time the allocator too)
    for name, n, target in (("gelu", 10**5, ">= 1.0x"), ("gelu", 10**6, ">= 1.0x"),
                            ("gelu_backward", 10**5, ">= 1.2x")):
        r = _into_outputs(name, n, rounds)
        if r:
            rows.append((f"float32 {name} vs PyTorch, out= on both sides", _size(n), _cell(r),
                         target))
    # the time of gelu against a copy of the same array (the memory ceiling)
    r = vs("gelu", "float32", 1 << 24, "np.copy (roofline)")
    rows.append(("float32 gelu vs np.copy of the same array (<= 1.3x a copy's time)", "2^24",
                 _cell(r), ">= 0.77x"))
    return rows


#: PyTorch's overloads writing into a given output, and the name of that
#: output's argument, by our function's name
_TORCH_INTO = {"gelu": ("gelu", "out", "out"),
               "gelu_backward": ("gelu_backward", "grad_input", "grad_input")}


def _into_outputs(name, n, rounds):
    """Our float32 ``name`` against PyTorch's, each with an output of its
    own allocated once (``out=``; PyTorch's ``_TORCH_INTO`` overload), on
    the same input sets; None without PyTorch."""
    torch, _ = _torch_modules()
    if torch is None:  # pragma: no cover - optional peer
        return None
    import gelu_numba as g
    packet, overload, keyword = _TORCH_INTO[name]
    op = getattr(getattr(torch.ops.aten, packet), overload)
    sets = input_sets(name, np.dtype(np.float32), n)
    ours, theirs = [], []
    for arrays in sets:
        out = np.empty(n, np.float32)
        tensors = [torch.from_numpy(a) for a in arrays]
        into = torch.empty(n, dtype=torch.float32)
        ours.append(lambda a=arrays, o=out: getattr(g, name)(*a, out=o))
        theirs.append(lambda t=tensors, o=into: op(*t, **{keyword: o}))
    return speedup(cycling(ours), cycling(theirs), rounds, n)


def _forward_backward(module, x, dy):
    def f():
        module(x).backward(dy)
        x.grad = None
    return f


def _ufunc_pair(x, dy):
    import gelu_numba as g

    xn, dyn = x.detach().numpy(), dy.numpy()

    def f():
        g.gelu(xn)
        g.gelu_backward(dyn, xn)
    return f


def _torch_modules():
    """``(torch, gelu_numba.torch)``, or ``(None, None)`` without PyTorch."""
    try:
        import torch

        import gelu_numba.torch as gt
    except ImportError:  # pragma: no cover - optional peer
        return None, None
    return torch, gt


def module_rows(rounds, sizes=(10**2, 10**4, 10**6)):
    """gelu_numba.torch.GELU() against torch.nn.GELU(), forward + backward
    through autograd (the target: cost <= 1.1x, a speed ratio >=
    0.91x, at 10^6 float32), and against the two ufunc calls it makes (the
    cost of the PyTorch layer itself)."""
    torch, gt = _torch_modules()
    if torch is None:  # pragma: no cover - optional peer
        return []
    rows = []
    for dtype in (torch.float32, torch.float64):
        name = str(dtype).removeprefix("torch.")
        for n in sizes:
            gen = torch.Generator().manual_seed(0)
            x = torch.randn(n, dtype=dtype, generator=gen).requires_grad_()
            dy = torch.randn(n, dtype=dtype, generator=gen)
            ours = _forward_backward(gt.GELU(), x, dy)
            r = speedup(ours, _forward_backward(torch.nn.GELU(), x, dy), rounds, n)
            target = ">= 0.91x (cost <= 1.1x)" if (name, n) == ("float32", 10**6) else ""
            rows.append((f"{name} GELU() forward+backward vs nn.GELU()", _size(n),
                         _cell(r), target))
            r = speedup(ours, _ufunc_pair(x, dy), rounds, n)
            rows.append((f"{name} GELU() forward+backward vs its two ufunc calls "
                         "(gelu, gelu_backward)", _size(n), _cell(r), "(1x: no overhead)"))
    return rows


def half_rows(rounds, sizes=(10**5, 1 << 24)):
    """bfloat16 and float16 tensors through gelu_numba.torch (one pass, bits
    in and out, correctly rounded) against F.gelu and aten.gelu_backward
    (the target: forward >= 1.0x)."""
    torch, gt = _torch_modules()
    if torch is None:  # pragma: no cover - optional peer
        return []
    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        name = str(dtype).removeprefix("torch.")
        for n in sizes:
            gen = torch.Generator().manual_seed(0)
            x = torch.randn(n, generator=gen).to(dtype)
            dy = torch.randn(n, generator=gen).to(dtype)
            r = speedup(lambda: gt.gelu(x), lambda: torch.nn.functional.gelu(x), rounds, n)
            rows.append((f"{name} tensor gelu vs F.gelu", _size(n), _cell(r), ">= 1.0x"))
            r = speedup(lambda: gt.gelu_backward(dy, x),
                        lambda: torch.ops.aten.gelu_backward(dy, x), rounds, n)
            rows.append((f"{name} tensor gelu_backward vs aten.gelu_backward", _size(n),
                         _cell(r), ""))
    return rows


def _jax_modules():
    """``(jax, gelu_numba.jax)``, or ``(None, None)`` without JAX."""
    try:
        import jax

        import gelu_numba.jax as gj
    except ImportError:  # pragma: no cover - optional peer
        return None, None
    return jax, gj


def jax_rows(rounds):
    """gelu_numba.jax against jax.nn.gelu(approximate=False), both jitted,
    float32, on device arrays (each call blocks until its result is ready):
    the forward at 2^24 and 10^5, the per-call cost at 10^3, the call's
    cost around the ufunc's loop at 10^5, and the forward + backward at
    10^6, as ``jax.grad`` of the sum and as a ``vjp`` with a cotangent
    array."""
    jax, gj = _jax_modules()
    if jax is None:  # pragma: no cover - optional peer
        return []

    def exact(v):
        return jax.nn.gelu(v, approximate=False)

    def ready(f, sets):
        return cycling([(lambda a=a: f(a).block_until_ready()) for a in sets])

    rows = []
    for n, target in ((1 << 24, ">= 1.5x"), (10**5, ">= 1.0x"), (10**3, ">= 1.0x (per call)")):
        sets = [jax.device_put(a) for (a,) in input_sets("gelu", np.dtype(np.float32), n)]
        r = speedup(ready(jax.jit(gj.gelu), sets), ready(jax.jit(exact), sets), rounds, n)
        rows.append(("float32 gelu_numba.jax.gelu vs jax.nn.gelu(approximate=False), jit",
                     _size(n), _cell(r), target))
    # what the custom call adds around the loop: the same inputs through
    # the ufunc's loop with out= (no output to allocate, no dispatch)
    import gelu_numba as g
    n = 10**5
    arrays = [a for (a,) in input_sets("gelu", np.dtype(np.float32), n)]
    out = np.empty(n, np.float32)
    r = speedup(ready(jax.jit(gj.gelu), [jax.device_put(a) for a in arrays]),
                cycling([(lambda a=a: g.gelu(a, out=out)) for a in arrays]), rounds, n)
    rows.append(("float32 the call around the loop: jit(gelu_numba.jax.gelu) vs the ufunc "
                 "on the same inputs with out=", _size(n), _cell(r), ">= 0.91x (cost <= 10%)"))
    n = 10**6
    sets = [jax.device_put(a) for (a,) in input_sets("gelu", np.dtype(np.float32), n)]

    def grad(f):
        return jax.jit(jax.grad(lambda v: f(v).sum()))
    r = speedup(ready(grad(gj.gelu), sets), ready(grad(exact), sets), rounds, n)
    rows.append(("float32 forward+backward (grad of the sum) vs jax.nn.gelu(approximate=False)",
                 _size(n), _cell(r), ">= 1.0x"))

    # the backward a layer sees: a cotangent array from the layer above, not
    # the broadcast of a sum's 1 (which XLA fuses into its own GELU's loop)
    def backward(f):
        return jax.jit(lambda v, ct: jax.vjp(f, v)[1](ct)[0])
    cts = [jax.device_put(np.random.default_rng(100 + k).standard_normal(n).astype(np.float32))
           for k in range(len(sets))]
    pairs = list(zip(sets, cts))

    def ready2(f):
        return cycling([(lambda a=a, c=c: f(a, c).block_until_ready()) for a, c in pairs])
    r = speedup(ready2(backward(gj.gelu)), ready2(backward(exact)), rounds, n)
    rows.append(("float32 forward+backward (vjp with a cotangent array) vs "
                 "jax.nn.gelu(approximate=False)", _size(n), _cell(r), ""))

    # the patterns beyond one contiguous operand: a scalar cotangent
    # broadcast against x (the vjp of 2.5 * gelu), and a 0-d call eagerly,
    # without jit (what a user's scalar costs)
    scale = np.float32(2.5)
    r = speedup(ready2(jax.jit(lambda v, ct: gj.gelu_backward(scale, v))),
                ready2(jax.jit(lambda v, ct: jax.vjp(exact, v)[1](jax.numpy.full_like(v, scale))[0])),
                rounds, n)
    rows.append(("float32 backward with a scalar cotangent (broadcast) vs "
                 "jax.nn.gelu(approximate=False)'s vjp", _size(n), _cell(r), ""))
    x0 = jax.device_put(np.float32(-0.7))
    # (timed as if 10^3 elements: 10^3 eager calls a timing, not 10^6)
    r = speedup(lambda: gj.gelu(x0).block_until_ready(),
                lambda: exact(x0).block_until_ready(), rounds, 10**3)
    rows.append(("float32 gelu of a 0-d array, eager (no jit), per call, vs "
                 "jax.nn.gelu(approximate=False)", "1", _cell(r), ""))
    return rows


_PARALLEL_CODE = """
import sys, numpy as np, gelu_numba as g, gelu_numba.parallel as gp
from benchmarks.targets import speedup
rounds = int(sys.argv[1])
for dtype in ("float32", "float64"):
    for n in map(int, sys.argv[2:]):
        x = np.random.default_rng(0).standard_normal(n).astype(dtype)
        r = speedup(lambda: gp.gelu(x), lambda: g.gelu(x), rounds, n)
        print(dtype, n, r[0], r[1])
"""

PARALLEL_SIZES = (1, 10, 100, 10**3, 10**4, 3 * 10**4, 65536, 10**5, 2 * 10**5,
                  10**6, 1 << 24)


def parallel_rows(rounds, sizes=PARALLEL_SIZES):
    """parallel/serial speed-ups of gelu, measured in a separate process
    that does not import torch or JAX (whose thread pools, idle or not,
    compete for the cores)."""
    out = subprocess.run([sys.executable, "-c", _PARALLEL_CODE, str(rounds)]
                         + [str(n) for n in sizes],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.strip().splitlines():
        dtype, n, med, mn = line.split()
        n = int(n)
        target = ">= 1.8x" if n == 1 << 24 else ">= 0.9x"
        rows.append((f"{dtype} gelu, gelu_numba.parallel ({os.cpu_count()} cores) "
                     "vs serial", _size(n), _cell((float(med), float(mn))), target))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.targets",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--one-core", action="store_true",
                        help="pin this process to one core for the one-thread rows")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true",
                        help="sizes 10^3 and 10^5 only for the naive-Numba rows")
    parser.add_argument("--isa", choices=isa.CHOICES, default="native",
                        help="the ISA Numba, PyTorch and oneDNN run (benchmarks.isa)")
    parser.add_argument("--layouts", action="store_true",
                        help="the layout table alone: every call pattern against the "
                             "contiguous call, ours and the peer's (benchmarks.layouts)")
    parser.add_argument("--jax", action="store_true",
                        help="the gelu_numba.jax rows alone, on one pinned core")
    parser.add_argument("--out", help="write the table here (Markdown), its first line naming "
                        "this command (the targets table, or with --jax the JAX rows)")
    args = parser.parse_args(argv)
    isa.run_as(args.isa, "benchmarks.targets")
    if args.jax:
        from benchmarks.peers import machine
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        rows = jax_rows(args.rounds)
        text = (f"Machine: {machine()}; ISA: {isa.describe()}; one pinned core; "
                f"{args.rounds} interleaved rounds, median (minimum) of the per-round speed "
                "ratios (the peer's time over ours: above 1, ours is faster).\n\n"
                + _markdown(rows))
        _write(args.out, argv, text)
        print(text)
        return 0
    if args.layouts:
        from benchmarks import layouts
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(layouts.report(args.rounds))
        return 0
    from benchmarks.peers import machine
    sizes = (10**3, 10**5) if args.quick else SIZES
    # the parallel rows first: their process inherits this one's affinity
    rows = parallel_rows(args.rounds)
    if args.one_core:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rows += one_thread_rows(args.rounds, sizes)
    rows += module_rows(args.rounds)
    rows += half_rows(args.rounds)
    rows += jax_rows(args.rounds)
    pin = "one pinned core" if args.one_core else "unpinned"
    text = (f"Machine: {machine()}; ISA: {isa.describe()}; one-thread rows on {pin}; "
            f"{args.rounds} interleaved rounds, median (minimum) of the per-round speed "
            "ratios.\n\n" + _markdown(rows))
    _write(args.out, argv, text)
    print(text, end="")
    return 0


def _write(out, argv, text):
    """``text`` into file ``out`` (if given) under a line naming the command."""
    if out:
        command = " ".join(["python -m benchmarks.targets", *(argv or sys.argv[1:])])
        with open(out, "w") as f:
            f.write(f"<!-- generated by benchmarks/targets.py: {command} -->\n\n{text}")


def _markdown(rows):
    return ("| what | n | measured | target |\n|---|---|---|---|\n"
            + "".join("| " + " | ".join(r) + " |\n" for r in rows))


if __name__ == "__main__":
    sys.exit(main())
