"""Bit-for-bit comparison of arrays, shared by the tests (importable from
the test modules: pytest puts this folder on sys.path)."""

import numpy as np


def same_bits(a, b):
    """Same dtype, shape and bytes (so NaN payloads and signed zeros too);
    0-d arrays and strided views included."""
    a, b = np.asarray(a), np.asarray(b)
    # (contiguous first: a strided view's reshape can stay a strided view,
    # which has no byte view)
    return (a.dtype == b.dtype and a.shape == b.shape
            and np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                               np.ascontiguousarray(b).reshape(-1).view(np.uint8)))
