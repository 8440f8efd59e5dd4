"""Sphinx configuration of the gelu-numba site.

Build (warnings are errors; the API pages are generated from the catalog at
each build, by ``docs/_ext/gelu_api.py``)::

    python -m sphinx -W -b html docs docs/_build/html
    python -m sphinx -W -b doctest docs docs/_build/doctest

The notebooks are committed without outputs and executed by the build (the
test suite executes them too, through nbmake).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent / "_ext"))

import gelu_numba  # noqa: E402

project = "gelu-numba"
author = "the gelu-numba developers"
copyright = "2026, the gelu-numba developers"
version = release = gelu_numba.__version__

extensions = [
    "myst_nb",              # Markdown (MyST) pages and the notebooks
    "numpydoc",             # NumPy-style docstrings
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "gelu_api",             # the API reference, generated from the catalog
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
# executed at each build, so that the site shows their outputs and plots; a
# cell that raises fails the build
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
# the notebooks' Markdown outputs (tables of committed results) parsed as
# MyST, which has tables, not CommonMark, which shows them as text
nb_render_markdown_format = "myst"
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "notebooks/README.md"]
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
# MathJax from the docs extra's jupyter-server-mathjax wheel (MathJax 2.7),
# copied into the site: the math renders offline
import jupyter_server_mathjax  # noqa: E402

html_static_path = [str(Path(jupyter_server_mathjax.__file__).parent / "static"), "_static"]
html_css_files = ["gelu_numba.css"]
mathjax_path = "MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
# MyST marks its sections tex2jax_ignore and its formulas class "math", and
# writes that as MathJax 3 options, which MathJax 2 does not read: the same
# rule in MathJax 2's words
myst_update_mathjax = False
mathjax2_config = {"tex2jax": {
    "inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
    "processRefs": False, "processEnvironments": False,
    "ignoreClass": "tex2jax_ignore|mathjax_ignore|document",
    "processClass": "tex2jax_process|mathjax_process|math|output_area"}}
html_theme = "pydata_sphinx_theme"
html_title = f"gelu-numba {release}"
html_theme_options = {"show_toc_level": 2, "navigation_with_keys": False}
# the doctests import the package as installed (the checkout, editable)
doctest_global_setup = "import numpy as np"
