"""Bit-for-bit comparison of arrays, shared by the tests (importable from
the test modules: pytest puts this folder on sys.path)."""

import numpy as np


def same_bits(a, b):
    """Same dtype, shape and bytes (so NaN payloads and signed zeros too);
    0-d arrays included."""
    a, b = np.asarray(a), np.asarray(b)
    return (a.dtype == b.dtype and a.shape == b.shape
            and np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))
