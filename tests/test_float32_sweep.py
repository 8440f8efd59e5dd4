"""A strided subset of the exhaustive float32 sweep (the full one is in the README).

Stride 4099 (odd, so every exponent and low mantissa bits are visited) gives
about 1.05 million float32 inputs per function, judged against the
independent float64 reference ``reference.f64``, itself checked
against mpmath in tests/test_reference.py.
"""

import pytest

from analysis.sweep_float32 import FUNCTIONS, sweep

pytestmark = pytest.mark.proof

STRIDE = 4099


@pytest.mark.parametrize("name", FUNCTIONS)
def test_strided_float32_sweep(name):
    stats = sweep(name, stride=STRIDE, progress=False)
    assert stats["checked"] > 1_000_000
    assert stats["max_ulp"] <= 1.0, stats
    assert stats["over_1ulp"] == 0
    assert stats["special_mismatches"] == 0
    assert stats["nan_inputs_bad_output"] == 0
    assert stats["correctly_rounded"] / stats["checked"] > 0.999
