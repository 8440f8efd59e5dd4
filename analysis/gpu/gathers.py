"""The memory a warp's table reads touch, counted without a GPU: for each
table-reading kernel and for standard-normal and 8x-spread data, the
32-byte sectors one warp-wide read touches, and how much of the table the
data touches at all.

Usage::

    python -m analysis.gpu.gathers [--n 2**20] [--seed 0] [--out FILE]

A warp reads one entry per lane; the L1 serves the read in as many passes
as the lanes' addresses fall in distinct 32-byte sectors (1 when they all
share one, 32 when no two do), and a table whose touched lines do not fit
the L1 is re-read from L2.  The inputs are i.i.d., so which elements share
a warp does not matter: each warp is 32 consecutive values of the sample.
Lanes that read nothing (the lean kernels beyond ``A_F32``, where the
limits apply) are left out of their warp's count.  For the tables that fit
shared memory (the 2-byte ``gelu``'s, the lean kernels'), the passes of the
same read from a copy there: 32 banks of 4-byte words, one word per bank
and pass, lanes that read one word sharing it.

The kernels (their indexing, as the GPU code computes it):

* the 2-byte ``gelu`` (``gelu_numba.targets.cuda.half_kernels``): one
  uint16 entry at the input's bit pattern, a 128 KB table;
* the 2-byte ``gelu_backward``: one float64 entry (GELU') at ``x``'s bit
  pattern, a 512 KB table;
* the lean float32 kernels (``gelu_numba.kernels.lean32``): one row of
  ``WIDTH`` float32 coefficients, stored column after column; the row is
  ``floor(4 a)`` below 1, else ``SMALL - 1 + floor(a**2)``, in float32 as
  the kernel rounds it.

Prints a markdown table, and writes it with its command to ``--out``.
"""

import argparse
import sys

import numpy as np

from analysis.common import int_arg

SECTOR = 32     # bytes: the L1's unit of a request
LINE = 128      # bytes: its unit of allocation
WARP = 32
BANKS = 32      # shared memory's banks, 4 bytes wide


def _warp_units(units, active):
    """``(each warp's units sorted, which warps read)``: ``units`` (a
    sector or word per lane, a multiple of 32 lanes, warp after warp), the
    lanes that read nothing (``active`` False) given their warp's first
    reading lane's unit, which adds none."""
    warps = np.asarray(units, dtype=np.int64).reshape(-1, WARP)
    mask = (np.ones_like(warps, dtype=bool) if active is None
            else np.asarray(active, dtype=bool).reshape(-1, WARP))
    first = np.where(mask.any(axis=1), np.argmax(mask, axis=1), 0)
    warps = np.where(mask, warps, warps[np.arange(len(warps)), first][:, None])
    return np.sort(warps, axis=1), mask.any(axis=1)


def sectors_per_read(byte_offsets, active=None):
    """Mean distinct 32-byte sectors per warp read: ``byte_offsets`` of
    every lane (a multiple of 32 of them, warp after warp), ``active`` the
    lanes that read (all by default); warps with no active lane left out."""
    ordered, used = _warp_units(np.asarray(byte_offsets, dtype=np.int64) // SECTOR, active)
    distinct = 1 + (np.diff(ordered, axis=1) != 0).sum(axis=1)
    return float(distinct[used].mean()) if used.any() else 0.0


def shared_passes(byte_offsets, active=None):
    """Mean passes of a warp read from a table in shared memory: its 32
    banks serve one 4-byte word each per pass, lanes that read the same
    word share it, so a read takes as many passes as the most distinct
    words any one bank holds; ``active`` as for :func:`sectors_per_read`."""
    ordered, used = _warp_units(np.asarray(byte_offsets, dtype=np.int64) // 4, active)
    fresh = np.concatenate([np.ones((len(ordered), 1), bool),
                            np.diff(ordered, axis=1) != 0], axis=1)
    # distinct words per bank: each distinct word counted once, in its bank
    banks = np.where(fresh, ordered % BANKS, BANKS)
    counts = np.zeros((len(banks), BANKS + 1), np.int64)
    np.add.at(counts, (np.arange(len(banks))[:, None], banks), 1)
    passes = counts[:, :BANKS].max(axis=1)
    return float(passes[used].mean()) if used.any() else 0.0


def touched_kb(byte_offsets, active=None):
    """KB of distinct 128-byte lines the reads touch."""
    lines = np.asarray(byte_offsets, dtype=np.int64) // LINE
    if active is not None:
        lines = lines[np.asarray(active, dtype=bool)]
    return np.unique(lines).size * LINE / 1024


def bfloat16_bits(x):
    """The bfloat16 bit patterns of float64 ``x``, rounded to nearest even
    (through float32, as the format's users convert)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def float16_bits(x):
    return np.asarray(x, dtype=np.float16).view(np.uint16)


def lean_rows(x):
    """``(row, reads)`` of the lean float32 kernels at float32 ``x``: the
    table row as the kernel computes it, and whether it reads one (``|x| <=
    A_F32``, finite)."""
    from gelu_numba.tables import normal_cdf32_lean32 as tab
    a = np.abs(np.asarray(x, dtype=np.float32))
    reads = a <= np.float32(tab.A_F32)
    a = np.where(reads, a, np.float32(0))
    with np.errstate(over="ignore"):
        w = np.where(a < 1, np.float32(4) * a, a * a + np.float32(tab.SMALL - 1))
    return w.astype(np.uint32).astype(np.int64), reads


def rows(n, seed):
    """The report's rows: ``(kernel, table, data, reads per element, mean
    sectors per warp read, touched KB)``."""
    from gelu_numba.tables import normal_cdf32_lean32 as tab
    rng = np.random.default_rng(seed)
    n -= n % WARP
    normal = rng.standard_normal(n)
    out = []
    for data, x in (("standard normal", normal), ("x spread 8x", 8 * normal)):
        for fmt, bits in (("bfloat16", bfloat16_bits(x)), ("float16", float16_bits(x))):
            index = bits.astype(np.int64)
            for kernel, item, what in (("gelu", 2, "uint16 results, 128 KB"),
                                       ("gelu_backward", 8, "float64 GELU', 512 KB")):
                offsets = index * item
                # (a 512 KB table does not fit shared memory's 228 KB)
                shared = shared_passes(offsets) if kernel == "gelu" else None
                out.append((f"`{kernel}` {fmt}", what, data, 1, sectors_per_read(offsets),
                            touched_kb(offsets), shared))
        row, reads = lean_rows(x)
        per_column = [sectors_per_read((k * tab.ROWS + row) * 4, reads)
                      for k in range(tab.WIDTH)]
        every = np.concatenate([(k * tab.ROWS + row) * 4 for k in range(tab.WIDTH)])
        shared = [shared_passes((k * tab.ROWS + row) * 4, reads) for k in range(tab.WIDTH)]
        out.append(("lean float32 (`gelu`, `ndtr`, `gelu_grad`, `gelu_backward`)",
                    f"{tab.WIDTH} float32 columns of {tab.ROWS} rows, "
                    f"{tab.WIDTH * tab.ROWS * 4 / 1024:.1f} KB", data, tab.WIDTH,
                    float(np.mean(per_column)), touched_kb(every, np.tile(reads, tab.WIDTH)),
                    float(np.mean(shared))))
    return out


def report(n, seed):
    lines = ["| kernel | table | data | table reads per element | sectors per warp read "
             "(mean; 1 to 32) | sectors per element | table touched by the sample, KB "
             "| the table in shared memory: passes per warp read (mean; 1 to 32) |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for kernel, table, data, reads, sectors, kb, shared in rows(n, seed):
        lines.append(f"| {kernel} | {table} | {data} | {reads} | {sectors:.1f} | "
                     f"{sectors * reads / WARP:.2f} | {kb:.0f} | "
                     + ("-" if shared is None else f"{shared:.1f}") + " |")
    return "\n".join(lines) + "\n"


#: the docstring's paragraph on what is counted, for the report's header
_METHOD = next(p for p in __doc__.split("\n\n") if p.startswith("A warp")).replace("\n", " ")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m analysis.gpu.gathers",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int_arg, default=2**20, help="sample size (default 2**20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    text = report(args.n, args.seed)
    sys.stdout.write(text)
    if args.out:
        given = " ".join(sys.argv[1:] if argv is None else argv)
        with open(args.out, "w") as fh:
            fh.write("# Table reads of the GPU kernels: sectors per warp read, counted "
                     "without a GPU\n\n"
                     f"`python -m analysis.gpu.gathers {given}` (generated: do not edit); "
                     f"{args.n} values, seed {args.seed}.  " + _METHOD + "\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
