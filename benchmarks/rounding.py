"""What correct rounding would cost the float32 loops: the rounding test of
Ziv's method in the unit-stride element loop, timed beside the loop the
ufuncs run.

Usage::

    python -m benchmarks.rounding [--n 100000] [--rounds 31] [--isa native|avx2]
        [--out FILE]

The float32 kernels (:mod:`gelu_numba.kernels.normal32_cpu_f64`) compute
``y = f(x) (1 + d)`` in float64 with ``|d| < 2**-31.9`` (their error
analysis) and round ``y`` once, on store.  That is the correctly rounded
``f(x)`` unless a float32 rounding boundary (the midpoint of two
neighbouring float32 values) lies within ``|y| 2**-31.9`` of ``y``: a test
that CORE-MATH's float32 functions make before a rare exact fix-up.  Each
row compiles the kernel into the same plain ``@njit`` element loop (one
pinned core, n standard normal inputs times 3, in cache, interleaved
rounds, median ns per element):

* the kernel, rounded on store (the ufuncs' loop without their interleaving);
* plus the test by two roundings, ``float32(y (1 - e)) != float32(y (1 + e))``,
  counted;
* plus the test on the float64 bits: the distance, in the 29 bits that
  float32 drops, from the midpoint (results below 2**-126, float32's
  subnormals, all count as unsure), counted;
* the same with a flag stored per element (what a fix-up pass reads);
* the float64 kernel (double-double, :mod:`gelu_numba.kernels.normal`) on
  the same inputs: what recomputing one element costs, vectorised;
* the ufunc itself, for scale.

``unsure`` is the share of elements each test sends to the fix-up.  Prints
a markdown table headed by the machine and the ISA (``--out``: writes it,
its first line naming this command).
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
from gelu_numba.kernels import normal, normal32_cpu_f64
from gelu_numba.kernels.primitives import inline
from gelu_numba.kernels.primitives.bits32 import float64_bits

#: the tested error: the float32 kernels' proven 2**-31.9, with room for the
#: rounding of the products y (1 -+ e) themselves (2**-53 relative)
E = 2.0**-31.5
#: E in units of the float64 ulp of y's binade, where |y| < 2**(k+1) and the
#: ulp is 2**(k-52): E 2**53, rounded up
K = math.ceil(E * 2.0**53)
#: the float32 rounding drops the 29 low bits of a float64 significand; a
#: midpoint is where they read 2**28.  (bits + 2**28 + K) & MASK is then
#: d + K for bits 2**28 + d: at most 2 K exactly when |d| <= K
MASK = np.uint64((1 << 29) - 1)
SHIFT = np.uint64((1 << 28) + K)
TWO_K = np.uint64(2 * K)
#: |y| below float32's least normal, 2**-126, as float64 bits
SUBNORMAL32 = np.uint64((1023 - 126) << 52)
MAGNITUDE = np.uint64(0x7FFF_FFFF_FFFF_FFFF)
LOWER, UPPER = 1.0 - E, 1.0 + E
FUNCTIONS = ("gelu", "ndtr")


@njit(inline="always")
def unsure_by_roundings(y):
    return np.float32(y * LOWER) != np.float32(y * UPPER)


@njit(inline="always")
def unsure_by_bits(y):
    b = float64_bits(y)
    return (((b + SHIFT) & MASK) <= TWO_K) | (((b & MAGNITUDE) < SUBNORMAL32) & (y != 0.0))


def loops(name):
    """label -> the compiled loop ``(x, out, flags) -> unsure count``."""
    fast = inline(getattr(normal32_cpu_f64, name))
    exact = inline(getattr(normal, name))

    @njit(error_model="numpy")
    def store(x, out, flags):
        for i in range(np.uint64(out.size)):
            out[i] = fast(np.float64(x[i]))
        return 0

    def counted(unsure):
        @njit(error_model="numpy")
        def loop(x, out, flags):
            count = 0
            for i in range(np.uint64(out.size)):
                y = fast(np.float64(x[i]))
                out[i] = y
                count += unsure(y)
            return count
        return loop

    @njit(error_model="numpy")
    def flagged(x, out, flags):
        count = 0
        for i in range(np.uint64(out.size)):
            y = fast(np.float64(x[i]))
            out[i] = y
            f = unsure_by_bits(y)
            flags[i] = f
            count += f
        return count

    @njit(error_model="numpy")
    def float64_kernel(x, out, flags):
        for i in range(np.uint64(out.size)):
            out[i] = exact(x[i])
        return 0

    return {"kernel, rounded on store": store,
            "+ test by two roundings, counted": counted(unsure_by_roundings),
            "+ test on the float64 bits, counted": counted(unsure_by_bits),
            "+ test on the float64 bits, flag stored": flagged,
            "float64 kernel (double-double), float64 in and out": float64_kernel}


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
    flags = np.empty(args.n, np.bool_)
    lines = [f"{machine_line(machine_info())}; ISA: {isa.describe()}.  n = {args.n} "
             f"(standard normal times 3, in cache), one pinned core, {args.rounds} "
             f"interleaved rounds, median ns per element; tested error "
             f"e = 2**{math.log2(E):.1f}.", "",
             "| function | loop | ns/element | unsure |", "|---|---|---:|---:|"]
    for name in FUNCTIONS:
        timed, unsure = {}, {}
        for label, loop in loops(name).items():
            x, out = (x64, out64) if label.startswith("float64") else (x32, out32)
            count = loop(x, out, flags)
            if "test" in label:
                unsure[label] = count / args.n
            timed[label] = (lambda f, a, o: (lambda: f(a, o, flags)))(loop, x, out)
        ufunc = getattr(gelu_numba, name)
        ufunc(x32, out=out32)
        timed["the ufunc (float32)"] = lambda: ufunc(x32, out=out32)
        t = race(timed, args.rounds, rotate=True)
        for label in timed:
            ns = statistics.median(t[label]) / args.n * 1e9
            share = f"{unsure[label]:.2%}" if label in unsure else "-"
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
