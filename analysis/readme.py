"""The README's headline table, generated from the committed results.

Usage::

    python -m analysis.readme [--update]

Rows: the exact functions.  Columns: the stated bound (the catalog), the
float32 maximum over all 2**32 inputs (``analysis/results/
sweep_float32_full.json``, ``python -m analysis.sweep_float32``) where it
was swept, else the mpmath table's (``gelu_numba.measured``), and the
float64 maximum over the mpmath table (``gelu_numba.measured``); then the
exact GELU as PyTorch's CPU default runs it on x86 (oneDNN on AVX-512 and on
AVX2), from the exhaustive study (``analysis/results/exhaustive/
float32.json``).
``--update`` writes the table into the README between its
``headline:start`` and ``headline:end`` markers; ``tests/test_readme.py``
fails when the README's table is not this output.
"""

import json
import sys
from pathlib import Path

from analysis.common import section_main
from gelu_numba import catalog

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SWEEP = ROOT / "analysis" / "results" / "sweep_float32_full.json"
STUDY = ROOT / "analysis" / "results" / "exhaustive" / "float32.json"
MARKERS = ("<!-- headline:start -->", "<!-- headline:end -->")
FUNCTIONS = catalog.names("exact")
#: the peers' rows of the sweep: the exact GELU as PyTorch's CPU default runs it
PEERS = {"onednn_gelu_erf_avx512": "PyTorch `F.gelu`, CPU, AVX-512 (oneDNN)",
         "onednn_gelu_erf_avx2": "PyTorch `F.gelu`, CPU, AVX2 (oneDNN)"}


def _ulps(bound):
    from gelu_numba.catalog import describe_bound
    return describe_bound(bound)


def table():
    from gelu_numba import catalog
    from gelu_numba.measured import MEASURED
    swept = {r["function"]: r for r in json.loads(SWEEP.read_text())["results"]}
    rows = {(r["name"], r["part"]): r for r in json.loads(STUDY.read_text())["rows"]}
    lines = ["| function | stated bound (ulp) | float32 max ulp | float64 max ulp |",
             "|---|---|---:|---:|"]
    for name in FUNCTIONS:
        fn = catalog.lookup(name)
        m32 = (f"{swept[name]['max_ulp']:.4f} (all 2^32 inputs)" if name in swept
               else f"{MEASURED[name][0]:.4f} (mpmath table)")
        lines.append(f"| `{name}` | {_ulps(fn.bound[0])} / {_ulps(fn.bound[1])} | {m32} | "
                     f"{MEASURED[name][1]:.4f} |")
    for peer, label in PEERS.items():
        r = rows[(peer, "fwd")]
        lines.append(f"| {label} | - | {r['max_ulp']:.3g} (all 2^32 inputs; "
                     f"{r['over_1ulp']:,} above 1 ulp) | - |")
    return "\n".join(lines)


def main(argv=None):
    return section_main(argv, "python -m analysis.readme", __doc__, README, MARKERS, table)


if __name__ == "__main__":
    sys.exit(main())
