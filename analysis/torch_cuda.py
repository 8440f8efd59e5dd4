"""gelu_numba.torch against torch.nn.GELU on a CUDA device: host time per call
and forward + backward time.

Usage::

    python -m analysis.torch_cuda [--device cuda] [--n 2**24] [--rounds 15]
        [--out FILE]

Host time per call: ``calls`` back-to-back forward calls on a 1024-element
tensor already on the device, wall clock on the host divided by ``calls``
(the device's work is tiny; what is left is each library's Python and
launch cost), median over ``rounds``.  Forward + backward: ``y = f(x)``,
``y.backward(dy)`` on ``n`` elements (float32 and bfloat16), timed by CUDA
events around the pair, median over ``rounds``, ours and ``nn.GELU``
interleaved in each round.  The targets on an H100: at most
15 µs of host time per call, forward + backward at most 1.2x ``nn.GELU``
at 2**24 float32.

``--device cpu`` is a dry run of the same code (wall clock instead of
events), for the tests.  Prints a markdown report naming the device, and
writes it to ``--out``.
"""

import argparse
import statistics
import sys
import time
from datetime import datetime, timezone

from analysis.common import int_arg


def _parser():
    p = argparse.ArgumentParser(prog="python -m analysis.torch_cuda",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--n", type=int_arg, default=2**24)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--out", default=None)
    return p


def _timer(device):
    import torch
    if device == "cpu":
        def timed(fn):
            t = time.perf_counter()
            fn()
            return (time.perf_counter() - t) * 1e3
        return timed

    def timed(fn):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)   # ms
    return timed


def _sync(device):
    import torch
    if device == "cuda":
        torch.cuda.synchronize()


def host_us(device, calls, rounds):
    """{name: median host µs per forward call} at 1024 elements."""
    import torch

    import gelu_numba.torch as gt
    x = torch.randn(1024, device=device)
    fns = {"gelu_numba.torch.gelu": gt.gelu, "F.gelu": torch.nn.functional.gelu}
    for fn in fns.values():
        fn(x)
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            _sync(device)
            t = time.perf_counter()
            for _ in range(calls):
                fn(x)
            times[name].append((time.perf_counter() - t) / calls * 1e6)
            _sync(device)
    return {name: statistics.median(v) for name, v in times.items()}


def forward_backward_ms(device, n, dtype, rounds):
    """{name: median ms of forward + backward} on n elements of dtype."""
    import torch

    import gelu_numba.torch as gt
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(n, device=device, generator=gen).to(dtype).requires_grad_()
    dy = torch.randn(n, device=device, generator=gen).to(dtype)
    mods = {"gelu_numba.torch.GELU": gt.GELU(), "nn.GELU": torch.nn.GELU()}

    def step(mod):
        x.grad = None
        mod(x).backward(dy)

    timed = _timer(device)
    for mod in mods.values():
        step(mod)
    times = {name: [] for name in mods}
    for _ in range(rounds):
        for name, mod in mods.items():
            times[name].append(timed(lambda: step(mod)))
    return {name: statistics.median(v) for name, v in times.items()}


def report(args):
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("analysis.torch_cuda: PyTorch sees no CUDA device "
                         "(--device cpu is a dry run)")
    name = (torch.cuda.get_device_name() if args.device == "cuda"
            else f"CPU dry run ({torch.get_num_threads()} threads)")
    lines = [f"# gelu_numba.torch against nn.GELU on {name}", "",
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, torch {torch.__version__}, "
             f"`python -m analysis.torch_cuda --device {args.device} --n {args.n} "
             f"--rounds {args.rounds}`", "",
             "| host time per call (1024 elements) | µs |", "|---|---:|"]
    for fn, us in host_us(args.device, args.calls, args.rounds).items():
        lines.append(f"| `{fn}` | {us:.1f} |")
    lines += ["", f"| forward + backward, n = {args.n} | ours (ms) | nn.GELU (ms) | ratio |",
              "|---|---:|---:|---:|"]
    for dtype in (torch.float32, torch.bfloat16):
        t = forward_backward_ms(args.device, args.n, dtype, args.rounds)
        ours, theirs = t["gelu_numba.torch.GELU"], t["nn.GELU"]
        lines.append(f"| {str(dtype).split('.')[1]} | {ours:.3f} | {theirs:.3f} | "
                     f"{ours / theirs:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = _parser().parse_args(argv)
    text = report(args)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
