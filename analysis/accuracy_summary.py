"""Accuracy summary of the gelu_numba ufuncs against the mpmath table.

Usage::

    python -m analysis.accuracy_summary [--table PATH] [--out FILE.md]

For each function and dtype: max and median ulp error and the worst input
over the committed mpmath reference table (tests/data/reference_table.npz),
overall and by region, with SciPy's formulas beside the package as a peer.
"""

import argparse
import platform
import sys
from pathlib import Path

import numpy as np
import scipy
import scipy.special as sc

import gelu_numba as g
from gelu_numba.reference.mp import ulp_error_dd

TABLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "reference_table.npz"

REGIONS = {
    "all": lambda x: np.ones(x.shape, bool),
    "core |x|<=5": lambda x: np.abs(x) <= 5,
    "tail x<-5": lambda x: x < -5,
    "x>5": lambda x: x > 5,
    "near x0": lambda x: np.abs(x + 0.7517915246935645) < 1e-3,
    "near ±√2": lambda x: np.abs(np.abs(x) - 2**0.5) < 1e-3,
}


def _scipy_peers():
    def grad(x):
        return sc.ndtr(x) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    return {
        "gelu": lambda x: x * sc.ndtr(x),
        "ndtr": sc.ndtr,
        "norm_pdf": lambda x: np.exp(-x * x / 2) / np.sqrt(2 * np.pi),
        "gelu_grad": grad,
        "gelu_grad2": lambda x: np.exp(-x * x / 2) / np.sqrt(2 * np.pi) * (2 - x * x),
        "gelu_backward": lambda dy, x: dy * grad(x),
    }


def summarize(table):
    rows = []
    peers = _scipy_peers()
    for name in ("gelu", "gelu_grad", "gelu_grad2", "gelu_backward", "ndtr", "norm_pdf"):
        for dtype in (np.float64, np.float32):
            sel = np.ones(table["x"].shape, bool) if dtype == np.float64 else table["is_f32"]
            x = table["x"][sel].astype(dtype)
            dy = table["dy"][sel].astype(dtype)
            hi, lo = table[name + "_hi"][sel], table[name + "_lo"][sel]
            res = table[name + "_res"][sel]
            impls = {"gelu_numba": getattr(g, name), "scipy formula": peers[name]}
            for impl, f in impls.items():
                with np.errstate(all="ignore"):
                    out = f(dy, x) if name == "gelu_backward" else f(x)
                err = ulp_error_dd(np.asarray(out, dtype), hi, lo, dtype, res=res)
                for region, pick in REGIONS.items():
                    m = pick(x.astype(np.float64))
                    if not m.any():
                        continue
                    e = err[m]
                    w = int(np.argmax(e))
                    rows.append((name, dtype.__name__, impl, region, int(m.sum()),
                                 float(e.max()), float(np.median(e)),
                                 float(x[m][w]), float(np.mean(e <= 0.5))))
    return rows


def machine():
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.platform()}, {cpu}, Python {platform.python_version()}, "
            f"numpy {np.__version__}, scipy {scipy.__version__}")


def to_markdown(rows, overall_only=False):
    out = ["| function | dtype | implementation | region | points | max ulp | median ulp | worst x | correctly rounded |",
           "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if overall_only and r[3] != "all":
            continue
        out.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.3g} | "
                   f"{r[6]:.3g} | {r[7]:.9g} | {100 * r[8]:.2f} % |")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m analysis.accuracy_summary",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, default=TABLE, help="mpmath reference table (.npz)")
    parser.add_argument("--out", type=Path, help="also write the markdown here")
    parser.add_argument("--regions", action="store_true", help="break down by region")
    args = parser.parse_args(argv)
    if not args.table.exists():
        parser.error(f"no reference table at {args.table}; make it with "
                     "python -m gelu_numba.reference.make_table")
    with np.load(args.table) as data:
        table = {k: data[k] for k in data.files}
    text = (f"## Accuracy of gelu_numba against mpmath ({table['x'].size} reference points)\n\n"
            + to_markdown(summarize(table), overall_only=not args.regions)
            + f"\n\nulp = ulp of the exact value in the output's format; machine: {machine()}\n"
            f"table: {args.table}\n")
    print(text)
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
