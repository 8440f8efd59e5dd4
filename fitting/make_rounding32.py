"""Generate ``gelu_numba/tables/rounding32.py``: the float32 inputs whose
exact value lies below the float32 midpoint that the float64 kernel returns.

Usage::

    python -m fitting.make_rounding32 [--out PATH] [--check]

Method
------
The correctly rounded float32 kernels (:mod:`gelu_numba.kernels.rounded32`)
fall back on the float64 kernels of :mod:`gelu_numba.kernels.normal`,
whose value ``y64`` is within 0.5625 float64 ulp of the exact one: its
rounding to float32 is correct unless ``y64`` is itself a float32
midpoint.  This sweep runs each one-argument exact function's float64
ufunc (multithreaded) on all 2**32 float32 bit patterns, finds every input
whose ``y64`` is a midpoint (:func:`midpoints`), and decides on which side
of it the exact value lies (:func:`exact_below`): by mpmath
(:mod:`reference.mp`, at least 256 correct bits), except for GELU at
``|x| < 2**-125``, where ``y64 = x/2`` and the series ``GELU(x) = x/2 +
phi0 x**2 (1 + O(x**2))`` puts the exact value above (the lowest binades'
odd multiples of 2**-149, about 2**24 inputs).  The module lists the
inputs whose exact value is below (their bit patterns, ascending); the
kernels move every other midpoint up.

About 90 s a function on two cores.
"""

import sys
from pathlib import Path

import mpmath
import numpy as np
from numba import njit

from fitting.make_tables import run_generator
from reference import mp as ref

OUT = Path(__file__).resolve().parents[1] / "gelu_numba" / "tables" / "rounding32.py"
#: the one-argument functions with a correctly rounded float32 kernel
FUNCTIONS = ("ndtr", "norm_pdf", "gelu", "gelu_grad", "gelu_grad2")
#: bit patterns a chunk
CHUNK = 1 << 24
_TINY = 2.0**-125


@njit(inline="always")
def is_midpoint(y):
    """Whether float64 ``y`` is a float32 midpoint (half way between
    neighbouring float32 numbers, or the largest and 2**128)."""
    a = abs(y)
    if not a < np.inf:
        return False
    if a >= 2.0**-126:
        return (np.float64(y).view(np.uint64) & np.uint64((1 << 29) - 1)) == np.uint64(1 << 28)
    z = a * 2.0**149
    return z - np.floor(z) == 0.5


@njit
def fill(start, x):
    """``x[i]``: the float32 of bit pattern ``start + i``, as a float64."""
    for i in range(x.size):
        x[i] = np.float64(np.uint32(start + i).view(np.float32))


@njit
def midpoint_indices(y):
    """The indices of the float32 midpoints among the float64 ``y``."""
    hits = np.empty(0, np.int64)
    count = 0
    for i in range(y.size):
        if is_midpoint(y[i]):
            if count == hits.size:
                hits = np.concatenate((hits, np.empty(max(16, count), np.int64)))
            hits[count] = i
            count += 1
    return hits[:count]


def chunks(name, progress=False):
    """Yield ``(start, x, y64)`` over all 2**32 float32 bit patterns in
    chunks: the inputs as float64 and the package's float64 ufunc
    (multithreaded) on them.  The arrays are reused."""
    import gelu_numba.parallel as par

    f = getattr(par, name)
    x, y = np.empty(CHUNK), np.empty(CHUNK)
    for start in range(0, 1 << 32, CHUNK):
        fill(start, x)
        with np.errstate(all="ignore"):
            f(x, out=y)
        yield start, x, y
        if progress and start % (1 << 28) == 0:
            print(f"{name}: {start >> 24}/256", file=sys.stderr, flush=True)


def sweep(name, progress=False):
    """``(bits, y64)``: every float32 bit pattern whose float64 value is a
    float32 midpoint."""
    found, values = [], []
    for start, _, y in chunks(name, progress):
        hit = midpoint_indices(y)
        found.append((start + hit).astype(np.uint32))
        values.append(y[hit])
    return np.concatenate(found), np.concatenate(values)


def exact_below(name, x, y64):
    """Whether the exact value of function ``name`` at float32 ``x`` lies
    below the float32 midpoint ``y64`` (neither is ever equal: the value is
    transcendental for ``x != 0``)."""
    if name == "gelu" and abs(x) < _TINY:
        return False                      # x/2 + phi0 x**2 (1 + O(x**2)) > x/2
    exact = getattr(ref, name)(float(x))
    with mpmath.workprec(ref.BASE_PREC):
        d = mpmath.mpf(exact) - mpmath.mpf(float(y64))
        assert d != 0, (name, x)
        return d < 0


def below(name, progress=False):
    """The sorted bit patterns of :func:`exact_below` inputs, and the number
    of midpoints decided."""
    bits, y64 = sweep(name, progress)
    xs = bits.view(np.float32)
    down = [int(b) for b, x, y in zip(bits, xs, y64) if exact_below(name, x, y)]
    return sorted(down), bits.size


def generate(progress=True):
    """Return the text of the module."""
    lists, counts = {}, {}
    for name in FUNCTIONS:
        lists[name], counts[name] = below(name, progress)
        if progress:
            print(f"{name}: {counts[name]} midpoints, {len(lists[name])} below", file=sys.stderr)
    out = [
        '"""The float32 inputs whose exact value lies below the float32 midpoint',
        "that the float64 kernel returns (GENERATED: do not edit).",
        "",
        "Regenerate in the gelu-numba repository with::",
        "",
        "    python -m fitting.make_rounding32",
        "",
        "For each function, the ascending bit patterns of the float32 inputs ``x``",
        "at which the float64 kernel's value is a float32 midpoint and the exact",
        f"value is below it, decided with mpmath {mpmath.__version__} (see the generator).",
        "At every other such input the exact value is above.  Midpoints among",
        "all 2**32 inputs, by function: "
        + ", ".join(f"{n} {counts[n]}" for n in FUNCTIONS) + ".",
        '"""',
        "",
        "import numpy as np",
        "",
    ]
    for name in FUNCTIONS:
        values = ", ".join(f"0x{b:08X}" for b in lists[name])
        out.append(f"{name.upper()} = np.array([{values}], dtype=np.uint32)")
    out.append("")
    return "\n".join(out)


def main(argv=None):
    return run_generator(generate, OUT, "python -m fitting.make_rounding32",
                         "Regenerate the float32 midpoint decisions of the rounded kernels.", argv)


if __name__ == "__main__":
    sys.exit(main())
