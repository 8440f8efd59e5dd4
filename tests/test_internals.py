"""Other libraries' private API is confined to gelu_numba.internals, one
module per library, and each module's probe passes with the installed
versions (a library that moved its internals fails here, by name)."""

import importlib
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "gelu_numba"
#: private names of NumPy, Numba, numba-cuda and PyTorch (the extension
#: API Numba documents, numba.core.types/cgutils/errors/config, is public)
PRIVATE = re.compile(r"numpy\._core|numpy\.core\b|_multiarray_umath|numba\.core\.registry|"
                     r"numba\.core\.dispatcher|numba\.np\b|_codelibrary|cudadrv|"
                     r"torch\._C|torch\._functorch")


@pytest.mark.parametrize("name, needs", [("numpy_ufunc", None), ("numba_core", None),
                                         ("torch_dispatch", "torch")])
def test_probe_passes(name, needs):
    if needs:
        pytest.importorskip(needs)
    importlib.import_module(f"gelu_numba.internals.{name}").probe()


def test_numba_cuda_probe_passes_on_the_real_driver_module():
    # the suite may run under numba-cuda's simulator, where the probe has
    # nothing to check: run it where numba imports the real driver module
    # (no GPU is needed for its names)
    import os
    import subprocess
    import sys
    pytest.importorskip("numba_cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    run = subprocess.run([sys.executable, "-c", "from gelu_numba.internals import numba_cuda;"
                          "from numba.core import config; assert not config.ENABLE_CUDASIM;"
                          "numba_cuda.probe(); print('ok')"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == "ok", run.stderr[-2000:]


def test_private_names_only_in_internals():
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "internals":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if "``" in code or code.strip().startswith(('"', "'")):
                continue     # (prose: docstrings that name them)
            if PRIVATE.search(code):
                found.append(f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
