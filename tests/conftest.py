"""Shared fixtures: the committed mpmath reference table; the CUDA set-up.

Without a usable NVIDIA GPU the GPU tests run under numba-cuda's simulator:
``NUMBA_ENABLE_CUDASIM=1`` must be set before Numba is first imported, so
the check below asks the CUDA driver directly (ctypes), not Numba.  With a
GPU the same tests run on it.  Setting NUMBA_ENABLE_CUDASIM yourself wins.
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
