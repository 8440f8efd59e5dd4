"""Sphinx configuration of the gelu-numba site.

Build (warnings are errors; the API pages are generated from the catalog at
each build, by ``docs/_ext/gelu_api.py``)::

    python -m sphinx -W -b html docs docs/_build/html
    python -m sphinx -W -b doctest docs docs/_build/doctest

The notebooks are rendered as committed (the test suite executes them).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "gelu-numba"
author = "the gelu-numba developers"
copyright = "2026, the gelu-numba developers"

extensions = [
    "myst_nb",              # Markdown (MyST) pages and the notebooks
    "numpydoc",             # NumPy-style docstrings
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "gelu_api",             # the API reference, generated from the catalog
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "notebooks/README.md"]
# the lab notes link files of the repository outside the site, and keep the
# README's heading levels
suppress_warnings = ["myst.xref_missing", "myst.header"]
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
html_theme = "alabaster"
html_title = "gelu-numba"
# the doctests import the package as installed (the checkout, editable)
doctest_global_setup = "import numpy as np"
