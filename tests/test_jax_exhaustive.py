"""gelu_numba.jax gives the float32 ufunc's bits on every one of the 2^32
float32 inputs (NaN payloads included): XLA's buffers, the handler's
cleared flush-to-zero mode and its loop call change nothing."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import gelu_numba as g  # noqa: E402
import gelu_numba.jax as gj  # noqa: E402

pytestmark = pytest.mark.proof

CHUNK = 1 << 22  # below glibc's largest mmap threshold: buffers are reused, not faulted in anew


def test_every_float32_input_gives_the_ufuncs_bits():
    f = jax.jit(gj.gelu)
    base = np.arange(CHUNK, dtype=np.uint32)
    bits = np.empty(CHUNK, dtype=np.uint32)
    ref = np.empty(CHUNK, dtype=np.float32)
    differ = 0
    for start in range(0, 1 << 32, CHUNK):
        np.add(base, np.uint32(start), out=bits)
        x = bits.view(np.float32)
        with np.errstate(invalid="ignore"):   # the NaN inputs
            g.gelu(x, out=ref)
        ours = np.asarray(f(x))
        differ += int(np.count_nonzero(ours.view(np.uint32) != ref.view(np.uint32)))
    assert differ == 0
