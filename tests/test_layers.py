"""The layering the docs state is checked, not described: import-linter's
contracts in pyproject.toml (lazy imports inside functions count)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_are_kept():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[test]'")
    run = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def _private_uses(path, ours):
    """``line: what`` for each private name (one leading underscore) of
    another of ``ours`` modules that ``path`` imports or reads as an
    attribute of an imported module; private modules (``_warmup``) are
    modules, not names, and may be imported."""
    import ast
    tree = ast.parse(path.read_text())
    modules, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ours:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if a.name.startswith("_") and not a.name.startswith("__") and \
                        not (ROOT / (full.replace(".", "/") + ".py")).exists():
                    found.append(f"{node.lineno}: from {node.module} import {a.name}")
                modules[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ours:
                    modules[a.asname or a.name.split(".")[0]] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                and node.value.id in modules):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_reads_another_modules_private_names():
    ours = ("gelu_numba", "analysis", "benchmarks", "reference", "fitting")
    found = [f"{path.relative_to(ROOT)}:{use}"
             for folder in ("gelu_numba", "analysis", "benchmarks")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for use in _private_uses(path, ours)]
    assert not found, "\n".join(found)


def _import_circles(package):
    """The strongly connected components of more than one module in
    ``package``'s import graph (grimp's, as import-linter builds it: lazy
    imports inside functions count)."""
    import grimp
    graph = grimp.build_graph(package, cache_dir=None)
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(root):
        # iterative Tarjan: (module, iterator over what it imports)
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return circles


@pytest.mark.parametrize("package", ["gelu_numba", "analysis", "benchmarks", "reference"])
def test_no_import_circle(package, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    assert _import_circles(package) == []


def test_every_command_the_repository_names_runs_a_module_that_exists():
    # python -m commands in the docs, the results' headers, the scripts and
    # the docstrings: a module moved or renamed leaves none behind (the GPU
    # steps of analysis/on_gpu.sh run only on a GPU machine)
    import re
    ours = ("gelu_numba", "analysis", "benchmarks", "fitting", "reference")
    pattern = re.compile(r"-m ((?:%s)(?:\.\w+)*)" % "|".join(ours))
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    missing, seen = [], 0
    for name in tracked:
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".sh", ".ipynb", ".json", ".csv", ".toml", "") \
                or not path.is_file():
            continue
        for module in set(pattern.findall(path.read_text(errors="replace"))):
            seen += 1
            base = ROOT / module.replace(".", "/")
            if not (base.with_suffix(".py").exists() or (base / "__init__.py").exists()):
                missing.append(f"{name}: {module}")
    assert seen > 100 and not missing, missing


def test_the_package_names_the_exact_functions_only_through_the_catalog():
    # a string naming an exact function (gelu, ndtr, ...) in the package's
    # code is a fact about that function outside its record: the code asks
    # the catalog instead (catalog.GELU, CDF, PDF, a record's links).  Left
    # out: catalog.py itself, the generated table of measured maxima (keyed
    # by name), docstrings, and __all__ (Python identifiers of the module)
    import ast

    from gelu_numba import catalog
    names = set(catalog.names("exact"))
    found = []
    for path in sorted((ROOT / "gelu_numba").rglob("*.py")):
        if path.name in ("catalog.py", "measured.py"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                skip.add(id(body[0].value))  # a docstring
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                skip.update(id(n) for n in ast.walk(node.value))
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
                  for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value in names
                  and id(node) not in skip]
    assert not found, "\n".join(found)
