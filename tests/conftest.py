"""Shared fixtures: the committed mpmath reference table."""

from pathlib import Path

import numpy as np
import pytest

TABLE = Path(__file__).parent / "data" / "reference_table.npz"


@pytest.fixture(scope="session")
def table():
    """The mpmath reference table (see gelu_numba/reference/make_table.py)."""
    with np.load(TABLE) as data:
        return {k: data[k] for k in data.files}
