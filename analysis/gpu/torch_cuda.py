"""gelu_numba.torch against torch.nn.GELU on a CUDA device: host time per call
and forward + backward time.

Usage::

    python -m analysis.gpu.torch_cuda [--device cuda] [--n 2**24] [--rounds 15]
        [--out FILE]

Host time per call: ``calls`` back-to-back forward calls on a 1024-element
tensor already on the device, wall clock on the host divided by ``calls``
(the device's work is tiny; what is left is each library's Python and
launch cost), median over ``rounds``; then, on CUDA, the pieces of one
call of ours the same way (PyTorch's stream and device queries, the output
allocation, the launch itself): where the host time goes.  Forward +
backward: ``y = f(x)``, ``y.backward(dy)`` on ``n`` elements (float32 and
bfloat16), timed by CUDA events around one step (the latency of a lone
step: host time and device time in series) and around ``--steps``
back-to-back steps (per step: the host's launches overlap the device's
work, as in a training loop), medians over ``rounds``, ours and
``nn.GELU`` interleaved in each round.

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
    p = argparse.ArgumentParser(prog="python -m analysis.gpu.torch_cuda",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--n", type=int_arg, default=2**24)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--steps", type=int, default=20,
                   help="back-to-back steps per timed round (default 20)")
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


def host_pieces_us(calls, rounds):
    """[(piece, median host µs)]: the pieces of one CUDA call of ours at
    1024 float32 elements, each timed alone as :func:`host_us` times a
    call."""
    import torch

    import gelu_numba.torch as gt
    from gelu_numba.targets.torch import tensors
    x = torch.randn(1024, device="cuda")
    out = torch.empty_like(x)
    index = x.device.index
    launcher = tensors.cuda_launcher("gelu", "f", index)

    def device_context():
        with torch.cuda.device(index):
            pass
    pieces = [("`gelu_numba.torch.gelu(x)`, the whole call", lambda: gt.gelu(x)),
              ("`torch.empty_like(x)` (the output)", lambda: torch.empty_like(x)),
              ("`torch.cuda.current_stream(i).cuda_stream`",
               lambda: torch.cuda.current_stream(index).cuda_stream),
              ("the raw current stream (what the call reads)",
               lambda: tensors.current_stream_handle(index)),
              ("`torch.cuda.current_device()`", torch.cuda.current_device),
              ("`with torch.cuda.device(i)`", device_context),
              ("`t.data_ptr()` of x and out", lambda: (x.data_ptr(), out.data_ptr()))]
    if launcher is not None:
        handle = tensors.current_stream_handle(index)
        pointers = (x.data_ptr(), out.data_ptr())
        pieces.append(("the fast launch alone (`FastLaunch.on_handle`)",
                       lambda: launcher.on_handle(pointers, 1024, handle)))
        one = launcher.wide if hasattr(launcher, "wide") else launcher   # (16-byte aligned)
        pieces.append(("the same launch through `cuLaunchKernel` (`FastLaunch.via_driver`)",
                       lambda: one.via_driver(pointers, 1024, handle)))
    times = {name: [] for name, _ in pieces}
    for _ in range(rounds):
        for name, fn in pieces:
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - t) / calls * 1e6)
    torch.cuda.synchronize()
    return [(name, statistics.median(v)) for name, v in times.items()]


def forward_backward_ms(device, n, dtype, rounds, steps=1):
    """{name: median ms per forward + backward} on n elements of dtype,
    ``steps`` back-to-back steps per timing."""
    import torch

    import gelu_numba.torch as gt
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(n, device=device, generator=gen).to(dtype).requires_grad_()
    dy = torch.randn(n, device=device, generator=gen).to(dtype)
    mods = {"gelu_numba.torch.GELU": gt.GELU(), "nn.GELU": torch.nn.GELU()}

    def step(mod):
        for _ in range(steps):
            x.grad = None
            mod(x).backward(dy)

    timed = _timer(device)
    for mod in mods.values():
        step(mod)
    times = {name: [] for name in mods}
    for _ in range(rounds):
        for name, mod in mods.items():
            times[name].append(timed(lambda: step(mod)) / steps)
    return {name: statistics.median(v) for name, v in times.items()}


def report(args):
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("analysis.gpu.torch_cuda: PyTorch sees no CUDA device "
                         "(--device cpu is a dry run)")
    name = (torch.cuda.get_device_name() if args.device == "cuda"
            else f"CPU dry run ({torch.get_num_threads()} threads)")
    lines = [f"# gelu_numba.torch against nn.GELU on {name}", "",
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, torch {torch.__version__}, "
             f"`python -m analysis.gpu.torch_cuda --device {args.device} --n {args.n} "
             f"--rounds {args.rounds} --steps {args.steps}`", "",
             "| host time per call (1024 elements) | µs |", "|---|---:|"]
    for fn, us in host_us(args.device, args.calls, args.rounds).items():
        lines.append(f"| `{fn}` | {us:.1f} |")
    if args.device == "cuda":
        lines += ["", "| pieces of one call of ours, float32 (1024 elements) | µs |",
                  "|---|---:|"]
        lines += [f"| {piece} | {us:.1f} |"
                  for piece, us in host_pieces_us(args.calls, args.rounds)]
    lines += ["", f"| forward + backward, n = {args.n} | one step: ours (ms) | nn.GELU (ms) "
              f"| ratio | {args.steps} back-to-back: ours (ms per step) | nn.GELU (ms per step) "
              "| ratio, back-to-back |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for dtype in (torch.float32, torch.bfloat16):
        cells = []
        for steps in (1, args.steps):
            t = forward_backward_ms(args.device, args.n, dtype, args.rounds, steps)
            ours, theirs = t["gelu_numba.torch.GELU"], t["nn.GELU"]
            cells.append(f"{ours:.3f} | {theirs:.3f} | {ours / theirs:.2f}x")
        lines.append(f"| {str(dtype).split('.')[1]} | " + " | ".join(cells) + " |")
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
