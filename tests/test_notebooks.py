"""The notebooks in ``notebooks/``: present, valid, committed without outputs.

Executing them is nbmake's job (``--nbmake`` in the pytest addopts, with
``notebooks`` in the testpaths); these tests check what is committed.
"""

import ast
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.tools

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
EXPECTED = ["01_quickstart.ipynb", "02_approximations.ipynb", "03_performance.ipynb",
            "04_paper.ipynb"]
ALL = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))


def test_expected_notebooks_exist():
    missing = [name for name in EXPECTED if not (NOTEBOOKS_DIR / name).is_file()]
    assert not missing, f"missing notebooks in {NOTEBOOKS_DIR}: {missing}"


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_valid_nbformat_v4(path):
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    assert nb.nbformat == 4, f"{path.name}: nbformat {nb.nbformat}, expected 4"
    nbformat.validate(nb)  # raises nbformat.ValidationError
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", \
        f"{path.name}: kernelspec should be python3"


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
             and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} have outputs or an execution "
                       "count; clear them (jupyter nbconvert --clear-output --inplace)")


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_first_cell_is_a_markdown_title(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.cells, f"{path.name} is empty"
    first = nb.cells[0]
    assert first.cell_type == "markdown", f"{path.name}: the first cell is {first.cell_type}"
    assert first.source.lstrip().startswith("# "), \
        f"{path.name}: the first cell should start with a '# ' title"


#: the repository's own top-level packages beside ``gelu_numba``: tools that are not shipped
REPOSITORY_PACKAGES = sorted(p.parent.name for p in NOTEBOOKS_DIR.parent.glob("*/__init__.py")
                             if p.parent.name != "gelu_numba")


def imported_modules(source):
    """The top-level names a cell's code imports (IPython's magics and shell lines left out)."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_repository_packages_found():
    # the check below is only as good as this list
    assert {"analysis", "benchmarks", "fitting", "reference"} <= set(REPOSITORY_PACKAGES)


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_imports_only_installed_packages(path):
    # a reader of the site runs the notebooks with the installed package: no
    # repository-only module, no sys.path edit that would find one
    nb = nbformat.read(path, as_version=4)
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    repository = sorted(set().union(*map(imported_modules, code)) & set(REPOSITORY_PACKAGES))
    assert not repository, f"{path.name} imports the repository's {repository}"
    assert not [c for c in code if "sys.path" in c], f"{path.name} edits sys.path"
