"""Importing gelu_numba.gpu where numba-cuda itself cannot be imported.

On the H100 image of 2026-11-23 (NumPy 2.5, numba-cuda 0.30.4), ``from numba
import cuda`` raised ``AttributeError: module 'numpy' has no attribute
'row_stack'`` (numba-cuda registers np.row_stack, which NumPy 2.5 removed).
Here NumPy 2.4 is installed, so the failure is injected: a meta-path finder
raises that AttributeError when ``numba.cuda`` is imported, in a fresh
interpreter.
"""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

pytest.importorskip("numba_cuda", reason="the GPU layer needs numba-cuda")

_SCRIPT = r"""
import sys, importlib.abc

class Broken(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numba.cuda":
            raise AttributeError("module 'numpy' has no attribute 'row_stack'")
        return None

sys.meta_path.insert(0, Broken())
try:
    import gelu_numba.gpu
except ImportError as exc:
    print("ImportError:", exc)
    print("cause:", type(exc.__cause__).__name__)
else:
    print("imported")
"""


def test_numba_cuda_failing_under_this_numpy_is_a_clear_import_error():
    import importlib.metadata

    import numpy as np

    run = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "ImportError: gelu_numba.gpu: numba-cuda" in out, out
    assert importlib.metadata.version("numba-cuda") in out
    assert f"NumPy {np.__version__}" in out
    assert "row_stack" in out and "numpy<2.5" in out
    assert "cause: AttributeError" in out
