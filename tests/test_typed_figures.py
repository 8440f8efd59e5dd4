"""No measured figure is typed by hand where a user reads it: the guide, the
README and the package's docstrings insert their figures from committed
results (generated blocks between ``<!-- name:start -->`` and
``<!-- name:end -->``, ``{include}``d result files, ``<<name>>``
placeholders of :mod:`gelu_numba.figures`).

A figure is a number with a unit of error, time, share or ratio (ulp, ns,
µs, ms, s, %, G/s, x).  Not figures: the constants of a method and its
stated bounds ("below 1 ulp", "a bound of 0.5 + 2**-7 ulp": claims the
tests check, not measurements), and the numbers inside formulas
(``x·σ(1.702x)``).
"""

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]

FIGURE = re.compile(r"(?<![\w.*^/~-])(\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?)\s?"
                    r"(ulp|ns|µs|us|ms|s|%|G/s|GB/s|TB/s|G elem/s|x)(?![\w/(])")
#: the words before a number (in the 60 characters before it) that make it
#: a stated bound or a threshold, not a measurement
BOUND = re.compile(r"\b(bounds?|below|at most|within|documented|states?|stated|about|near|"
                   r"above|plus|up to|less than)\b", re.I)
GENERATED = re.compile(r"<!-- ([\w-]+):start -->.*?<!-- \1:end -->", re.S)


def typed_figures(text):
    """The figures of ``text`` outside generated blocks, each with a little
    context."""
    text = GENERATED.sub("", text)
    found = []
    for m in FIGURE.finditer(text):
        before = text[max(0, m.start() - 60):m.start()]
        after = text[m.end():m.end() + 1]
        if m.group(2) == "ulp" and (BOUND.search(before)
                                    or re.match(r"\s*(below|above)\b", text[m.end():])):
            continue  # a bound, or a constant's distance ("1 ulp below the nearest")
        if m.group(2) == "x" and (m.group(0) != m.group(1) + "x" or after in ")]*³²"
                                  or before.rstrip()[-1:] in "-+*/=(·"):
            continue  # in a formula (1.702x, 4x, 0.044715 x**3) or a shape (7 x 32)
        if m.group(2) == "s" and not text[m.start():m.end()].endswith(" s"):
            continue  # "2s" is an index, not seconds
        found.append(" ".join((before + m.group(0)).split()))
    return found


def _docstrings(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield doc


def _sources():
    for path in sorted((ROOT / "docs" / "guide").glob("*.md")) + [ROOT / "README.md"]:
        yield path.relative_to(ROOT), path.read_text()
    for path in sorted((ROOT / "gelu_numba").rglob("*.py")):
        if "tables" not in path.parts:
            for doc in _docstrings(path):
                yield path.relative_to(ROOT), doc


def test_no_typed_figures_where_users_read():
    found = [f"{name}: ...{figure}" for name, text in _sources() for figure in typed_figures(text)]
    assert found == [], "\n".join(found)


def test_the_rule_finds_figures_and_passes_bounds_and_formulas():
    assert typed_figures("took 30 ms for 2**20; 1.41x the exact gelu; 99.8 % identical; "
                         "measured max 0.5033 ulp") != []
    assert len(typed_figures("30 ms; 1.41x faster; 99.8 % same; max 0.5033 ulp")) == 4
    assert typed_figures("below 1 ulp; a bound of 0.5 + 2**-7 ulp; x·σ(1.702x); "
                         "the states w[2s], w[2s + 1]; (7 x 32 floats)") == []
    assert typed_figures("<!-- t:start -->\n30 ms\n<!-- t:end -->") == []
