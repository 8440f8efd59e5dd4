"""benchmarks.rounding: the table names the machine and every part of the
correctly rounded kernels it times, and the rounding test's share is the
share of unsure elements among the inputs it times."""

import numpy as np
import pytest

from benchmarks import rounding
from gelu_numba.kernels import rounded32

pytestmark = pytest.mark.tools


def test_the_counted_loop_counts_the_unsure_elements():
    # the loop's count against the test applied element by element to the
    # fast path's values (float32 subnormal results among them), with the
    # unsure inputs the benchmark finds
    for name in rounding.FUNCTIONS:
        found = rounding.unsure_inputs(name, 3)
        x = np.concatenate([np.linspace(-15, 6, 3001), [0.0, -14.0, 1e-40],
                            found]).astype(np.float32)
        out = np.empty_like(x)
        fast = getattr(rounded32, f"{name}_fast")
        assert all(rounded32.unsure(fast(np.float64(v))) for v in found)
        assert len(set(found.tolist())) == 3 and (found >= 1).all()
        want = sum(bool(rounded32.unsure(fast(np.float64(v)))) for v in x)
        assert want >= 3
        assert rounding.loops(name)["fast path + rounding test, counted"](x, out) == want


def test_the_table_names_the_machine_and_every_loop():
    # (in a process of its own: the benchmark pins itself to one core)
    import subprocess
    import sys
    text = subprocess.run([sys.executable, "-m", "benchmarks.rounding", "--n", "4096",
                           "--rounds", "2"], capture_output=True, text=True, check=True,
                          timeout=600).stdout
    assert "ISA:" in text and "cores" in text
    for name in rounding.FUNCTIONS:
        for label in (*rounding.loops(name), rounding.UFUNC, rounding.SPARSE):
            assert f"| {name} | {label} |" in text
