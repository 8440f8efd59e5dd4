"""The Sphinx site builds with warnings as errors, its doctests pass, and
the README's generated figures are those of the committed results."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tools

ROOT = Path(__file__).resolve().parents[1]


def test_the_site_builds_without_warnings_and_its_doctests_pass(tmp_path):
    pytest.importorskip("sphinx")
    # the notebooks' execution is nbmake's test (pytest notebooks); here the
    # site is built around them as committed, which keeps the suite's time
    # (the site itself executes them: docs/conf.py).  The doctest builder
    # reads the html build's doctrees instead of parsing every page again.
    options = ["-D", "nb_execution_mode=off", "-d", str(tmp_path / "doctrees")]
    for builder, fresh in (("html", ["-E"]), ("doctest", [])):
        run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                              *fresh, *options, "-b", builder, "docs", str(tmp_path / builder)],
                             cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, (builder, (run.stdout + run.stderr)[-4000:])
    # the math renders offline: MathJax from the site itself, no CDN
    page = (tmp_path / "html" / "notebooks" / "01_quickstart.html").read_text()
    assert "_static/MathJax.js" in page and "cdn.jsdelivr" not in page
    assert (tmp_path / "html" / "_static" / "MathJax.js").is_file()
    # MathJax 2 loads the configuration the script names, else shows raw LaTeX
    config = re.search(r"_static/MathJax\.js\?config=([\w-]+)", page).group(1)
    assert (tmp_path / "html" / "_static" / "config" / f"{config}.js").is_file(), config
    # and reads MyST's formulas (class "math") inside its ignored sections
    assert re.search(r'MathJax\.Hub\.Config\(.*"processClass": "[\w|]*\bmath\b', page), \
        "no MathJax 2 configuration that processes MyST's math"
    # the notebooks' Markdown outputs (tables of results) parsed by a
    # format with tables: myst-nb's default, CommonMark, shows them as text
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert re.search(r'^nb_render_markdown_format = "(myst|gfm)"', conf, re.M)
    # the stylesheet that wraps wide code blocks
    assert "_static/gelu_numba.css" in page and (tmp_path / "html" / "_static" / "gelu_numba.css").is_file()
    # the doctest builder ran the API pages' examples
    output = (tmp_path / "doctest" / "output.txt").read_text()
    assert "0 failures in tests" in output and " tests" in output


def test_readme_headline_is_the_generators_output():
    from analysis import readme
    text = (ROOT / "README.md").read_text()
    start, end = readme.MARKERS
    section = text.split(start, 1)[1].split(end, 1)[0].strip()
    assert section == readme.table().strip(), "run: python -m analysis.readme --update"


def test_readme_is_short_and_has_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    ci = (ROOT / ".ci" / "run").read_text().replace("pip install -q ", "pip install ")
    test_command = ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' "
                    "&& .venv/bin/python -m pytest -q")
    assert test_command in text and test_command in ci
    assert ("python3 -m venv .venv && .venv/bin/pip install -e '.[analysis,compare]' "
            "&& .venv/bin/python -m analysis.report") in text


@pytest.mark.parametrize("generator", ["gpu_docs", "accuracy_docs", "gpu32_docs"])
def test_generated_page_sections_are_the_generators_output(generator):
    import importlib
    gen = importlib.import_module(f"analysis.{generator}")
    text = gen.PAGE.read_text()
    start, end = gen.MARKERS
    section = text.split(start, 1)[1].split(end, 1)[0].strip()
    assert section == gen.section().strip(), f"run: python -m analysis.{generator} --update"
