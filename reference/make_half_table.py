"""Generate ``tests/data/half_reference.npz``: GELU and GELU' at every
float16 and bfloat16 input, exact (mpmath) and correctly rounded.

Usage::

    python -m reference.make_half_table [--out PATH]

(about 35 s on one core).  Needs torch, for the two formats' bit patterns.

Method
------
For each format (float16: 11-bit significand, smallest normal 2**-14;
bfloat16: 8 bits, 2**-126) every one of the 65,536 bit patterns whose value
is finite is an input ``x`` (stored as the bits, ``<fmt>_bits``).  For
``gelu`` and ``gelu_grad`` the exact value ``v`` comes from
:mod:`reference.mp` (>= 256 correct bits); stored are

* ``<fmt>_<fn>_hi``: ``v`` rounded to the nearest double, for measuring
  errors (2**-42 of a half ulp is far below what the tests resolve);
* ``<fmt>_<fn>_cr``: the bits of ``v`` correctly rounded to the format (to
  nearest, ties to even, gradual underflow, overflow to inf), decided in
  exact mpmath arithmetic, not through the double (which could round
  twice).

``command`` and ``mpmath_version`` say how the file was made; rerunning the
command reproduces it exactly.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import mpmath
import numpy as np

from reference import mp as _mp

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "half_reference.npz"
COMMAND = "python -m reference.make_half_table"

#: format -> (significand bits p, smallest normal exponent emin, largest
#: finite value); IEEE 754 binary16 and Google's bfloat16
FORMATS = {"float16": (11, -14, 65504.0),
           "bfloat16": (8, -126, float.fromhex("0x1.fep127"))}
FUNCTIONS = ("gelu", "gelu_grad")


def round_to_format(v, fmt):
    """``v`` (mpf or float) rounded to nearest-even in ``fmt``, as a float."""
    p, emin, largest = FORMATS[fmt]
    if isinstance(v, float):  # the reference's special values: exact
        return v
    sign, man, exp, bc = v._mpf_
    if not man:
        return float(v)
    if exp + bc <= emin - p:
        # |v| < 2**(emin - p), half the smallest subnormal: a signed zero
        # (and no 2**-huge integers for the deep tail's exp(-x**2/2))
        return -0.0 if sign else 0.0
    e = max(exp + bc - 1, emin)  # the exponent of v's ulp in fmt, unscaled
    # v / ulp as an exact rational man * 2**shift
    shift = exp - (e - p + 1)
    if shift >= 0:
        n = man << shift
    else:
        q, r = divmod(man, 1 << -shift)
        half = 1 << (-shift - 1)
        n = q + (r > half or (r == half and q & 1))
    value = math.ldexp(n, e - p + 1)
    if value > largest:
        value = math.inf
    return -value if sign else value


def inputs(fmt):
    """The finite values of ``fmt``, as float64, and their bit patterns."""
    import torch

    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    x = bits.view(getattr(torch, fmt)).double().numpy()
    keep = np.isfinite(x)
    return x[keep], bits.numpy()[keep].view(np.uint16)


def to_bits(values, fmt):
    import torch

    t = torch.from_numpy(np.asarray(values, dtype=np.float64))
    return t.to(getattr(torch, fmt)).view(torch.int16).numpy().view(np.uint16)


def build():
    table = {"command": np.array(COMMAND),
             "mpmath_version": np.array(mpmath.__version__)}
    for fmt in FORMATS:
        x, bits = inputs(fmt)
        table[f"{fmt}_bits"] = bits
        for name in FUNCTIONS:
            exact = [getattr(_mp, name)(float(v)) for v in x]
            table[f"{fmt}_{name}_hi"] = np.array([_mp.to_double(v) for v in exact])
            # the rounded values are exact in float64, so to_bits is exact
            table[f"{fmt}_{name}_cr"] = to_bits([round_to_format(v, fmt) for v in exact], fmt)
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    table = build()
    np.savez_compressed(args.out, **table)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) in "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
