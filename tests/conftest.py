"""Shared fixtures: the committed mpmath reference table; the CUDA set-up;
the test tiers.

Without a usable NVIDIA GPU the GPU tests run under numba-cuda's simulator:
``NUMBA_ENABLE_CUDASIM=1`` must be set before Numba is first imported, so
the check below asks the CUDA driver directly (ctypes), not Numba.  With a
GPU the same tests run on it.  Setting NUMBA_ENABLE_CUDASIM yourself wins.

Tiers: every test is in exactly one of the markers declared in
pyproject.toml (a test module's ``pytestmark``; the notebooks, which nbmake
collects, are ``tools``), so that ``pytest -m unit`` runs the fast tier and
no new test is left out of every tier.
"""

import ctypes
import os
from pathlib import Path

import numpy as np
import pytest

TABLE = Path(__file__).parent / "data" / "reference_table.npz"


def _cuda_device_count():
    """Number of CUDA devices the driver reports (0 without a driver)."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    return 0


if "NUMBA_ENABLE_CUDASIM" not in os.environ and _cuda_device_count() == 0:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


@pytest.fixture(scope="session")
def table():
    """The mpmath reference table (see reference/make_table.py)."""
    with np.load(TABLE) as data:
        return {k: data[k] for k in data.files}


TIERS = ("unit", "proof", "tools", "gpu")


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    wrong = []
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.tools)
        tiers = {m.name for m in item.iter_markers() if m.name in TIERS}
        if len(tiers) != 1:
            wrong.append(f"{item.nodeid}: {sorted(tiers) or 'no tier'}")
    if wrong:
        raise pytest.UsageError("each test needs exactly one tier marker of "
                                f"{', '.join(TIERS)}:\n" + "\n".join(wrong))
