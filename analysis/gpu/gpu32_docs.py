"""The exhaustive tables of the float32-arithmetic GPU kernels on the GPU
guide (``docs/guide/gpu.md``), generated from the committed sweeps.

Usage::

    python -m analysis.gpu.gpu32_docs [--update]

Sources: ``analysis/results/sweep_float32_gpu32.json`` (``python -m
analysis.sweep_float32 --kernels gpu32 --workers 2``: the device functions'
float32 kernels, :mod:`gelu_numba.kernels.gpu32`) and
``sweep_float32_lean32.json`` (``--kernels lean32 --functions
gelu,ndtr,gelu_grad,gelu_backward``: the lean kernels, which GPUs with slow
FP64 launch,
:mod:`gelu_numba.kernels.lean32`), each compiled for the CPU, on all 2**32
inputs against ``reference.f64``; rendered by
:func:`analysis.sweep_float32.markdown_table`.  ``--update`` writes them
between the page's ``gpu32:start`` and ``gpu32:end`` markers;
``tests/test_docs.py`` fails when the page is not this output.
"""

import json
import sys
from pathlib import Path

from analysis.common import section_main
from analysis.sweep_float32 import markdown_table

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guide" / "gpu.md"
RESULTS = ROOT / "analysis" / "results"
SWEEPS = (("The device functions' float32-arithmetic kernels (`kernels.gpu32`; "
           "launched for `gelu_grad2` and `norm_pdf` on GPUs with slow FP64)",
           "sweep_float32_gpu32.json"),
          ("The lean kernels, which GPUs with slow FP64 launch (`kernels.lean32`)",
           "sweep_float32_lean32.json"))
MARKERS = ("<!-- gpu32:start -->", "<!-- gpu32:end -->")


def section():
    parts = []
    for title, name in SWEEPS:
        results = json.loads((RESULTS / name).read_text())["results"]
        parts.append(f"{title}, `analysis/results/{name}`:\n\n{markdown_table(results)}\n")
    return "\n".join(parts)


def main(argv=None):
    return section_main(argv, "python -m analysis.gpu.gpu32_docs", __doc__, PAGE, MARKERS, section)


if __name__ == "__main__":
    sys.exit(main())
