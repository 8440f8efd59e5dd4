"""The exhaustive float32 table of the accuracy page (``docs/accuracy.md``),
generated from the committed sweep.

Usage::

    python -m analysis.accuracy_docs [--update]

Source: ``analysis/results/sweep_float32_full.json`` (``python -m
analysis.sweep_float32 --workers 2 --out analysis/results/
sweep_float32_full.json``: all 2**32 inputs of each float32 ufunc against
``reference.f64``), rendered by :func:`analysis.sweep_float32.markdown_table`.
``--update`` writes it between the page's ``sweep32:start`` and
``sweep32:end`` markers; ``tests/test_docs.py`` fails when the page is not
this output.
"""

import json
import sys
from pathlib import Path

from analysis.common import section_main
from analysis.sweep_float32 import markdown_table

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "accuracy.md"
SWEEP = ROOT / "analysis" / "results" / "sweep_float32_full.json"
MARKERS = ("<!-- sweep32:start -->", "<!-- sweep32:end -->")


def section():
    return markdown_table(json.loads(SWEEP.read_text())["results"]) + "\n"


def main(argv=None):
    return section_main(argv, "python -m analysis.accuracy_docs", __doc__, PAGE, MARKERS,
                        section)


if __name__ == "__main__":
    sys.exit(main())
