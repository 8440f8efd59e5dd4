"""What correct rounding costs the float32 loops: each part of the
correctly rounded kernels (:mod:`gelu_numba.kernels.rounded32`) timed in the
unit-stride element loop, beside the ufunc that assembles them.

Usage::

    python -m benchmarks.rounding [--n 100000] [--rounds 31] [--isa native|avx2]
        [--out FILE]

Each row compiles one part into the same plain ``@njit`` element loop (one
pinned core, n standard normal inputs times 3, in cache, interleaved
rounds, median ns per element):

* the float32 kernel in float64 arithmetic on its own tables
  (:mod:`gelu_numba.kernels.normal32_cpu_f64`, 2**-31.9: not correctly
  rounded), rounded on store: what the ufunc ran before the rounding test;
* the correctly rounded kernels' fast path (the same kernel on tables two
  degrees higher, below :data:`~gelu_numba.kernels.rounded32.E`), rounded on
  store;
* plus the rounding test (:func:`~gelu_numba.kernels.rounded32.unsure`),
  counted: what the ufunc's blocks run;
* the float64 kernel (double-double, :mod:`gelu_numba.kernels.normal`): the
  accurate path, here vectorised on every element;
* the ufunc itself: fast path, test and the rare accurate path, in blocks;
* the ufunc on the same inputs with one in a thousand replaced by an input
  the test finds unsure (:func:`unsure_inputs`): the cost of sparse unsure
  elements, one block (``gelu_numba.targets.cpu.loops.ROUNDED_BLOCK``) in
  1000/ROUNDED_BLOCK holding one.

``unsure`` counts the elements the test sends to the accurate path, of n.
Prints a markdown table headed by the machine and the ISA (``--out``: writes
it, its first line naming this command).
"""

import argparse
import math
import os
import statistics
import sys

import numpy as np
from numba import njit

from benchmarks import isa
from benchmarks.machine import machine_info, machine_line
from benchmarks.targets import race
from gelu_numba.kernels import normal, normal32_cpu_f64, rounded32
from gelu_numba.kernels.primitives import inline

FUNCTIONS = ("gelu", "ndtr")
#: the ufunc's row
UFUNC = "the ufunc (correctly rounded)"
#: the ufunc's row on inputs with sparse unsure elements
SPARSE = "the ufunc, one input in 1000 unsure"


def loops(name):
    """label -> the compiled loop ``(x, out) -> unsure count``."""
    plain = inline(getattr(normal32_cpu_f64, name))
    fast = getattr(rounded32, f"{name}_fast")
    accurate = inline(getattr(normal, name))

    def stored(kernel):
        @njit(error_model="numpy")
        def loop(x, out):
            for i in range(np.uint64(out.size)):
                out[i] = kernel(np.float64(x[i]))
            return 0
        return loop

    @njit(error_model="numpy")
    def counted(x, out):
        count = 0
        for i in range(np.uint64(out.size)):
            y = fast(np.float64(x[i]))
            out[i] = y
            count += rounded32.unsure(y)
        return count

    return {"float32 kernel, own tables (2**-31.9), rounded on store": stored(plain),
            f"fast path (2**{math.log2(rounded32.E):g}), rounded on store": stored(fast),
            "fast path + rounding test, counted": counted,
            "float64 kernel (double-double), float64 in and out": stored(accurate)}


def unsure_inputs(name, count):
    """The first ``count`` float32 inputs from 1 upwards whose fast path
    the rounding test finds unsure (about one in 2**17)."""
    fast = getattr(rounded32, f"{name}_fast")

    @njit
    def scan(count):
        found = np.empty(count, np.float32)
        k, bits = 0, np.uint32(0x3F800000)
        while k < count:
            x = np.uint32(bits).view(np.float32)
            if rounded32.unsure(fast(np.float64(x))):
                found[k] = x
                k += 1
            bits += np.uint32(1)
        return found

    return scan(count)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.rounding",
                                description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--isa", choices=isa.CHOICES, default="native",
                   help="the ISA Numba compiles for (benchmarks.isa)")
    p.add_argument("--out", help="write the report here (Markdown)")
    args = p.parse_args(argv)
    isa.run_as(args.isa, "benchmarks.rounding")
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import gelu_numba
    x32 = (np.random.default_rng(0).standard_normal(args.n) * 3).astype(np.float32)
    x64 = x32.astype(np.float64)
    out32, out64 = np.empty_like(x32), np.empty_like(x64)
    lines = [f"{machine_line(machine_info())}; ISA: {isa.describe()}.  n = {args.n} "
             f"(standard normal times 3, in cache), one pinned core, {args.rounds} "
             f"interleaved rounds, median ns per element.", "",
             "| function | loop | ns/element | unsure |", "|---|---|---:|---:|"]
    for name in FUNCTIONS:
        timed, unsure = {}, {}
        for label, loop in loops(name).items():
            x, out = (x64, out64) if label.startswith("float64") else (x32, out32)
            count = loop(x, out)
            if "test" in label:
                unsure[label] = count
            timed[label] = (lambda f, a, o: (lambda: f(a, o)))(loop, x, out)
        ufunc = getattr(gelu_numba, name)
        sparse = x32.copy()
        sparse[::1000] = unsure_inputs(name, 1)[0]
        ufunc(x32, out=out32)
        timed[UFUNC] = (lambda f: (lambda: f(x32, out=out32)))(ufunc)
        timed[SPARSE] = (lambda f: (lambda: f(sparse, out=out32)))(ufunc)
        t = race(timed, args.rounds, rotate=True)
        for label in timed:
            ns = statistics.median(t[label]) / args.n * 1e9
            share = f"{unsure[label]} of {args.n}" if label in unsure else "-"
            lines.append(f"| {name} | {label} | {ns:.2f} | {share} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        command = " ".join(["python -m benchmarks.rounding", *(argv or sys.argv[1:])])
        with open(args.out, "w") as f:
            f.write(f"<!-- generated by benchmarks/rounding.py: {command} -->\n\n{text}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
