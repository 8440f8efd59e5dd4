"""The measured figures in the docstrings come from the committed results:
gelu_numba/figures.py is the generator's output, and the docstrings that
quote them have every placeholder filled."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def test_figures_module_is_the_generators_output():
    from analysis import figures
    committed = Path(figures.OUT).read_text()
    assert committed == figures.source(), "run: python -m analysis.figures --write"


def test_docstrings_quote_the_figures():
    import gelu_numba.half as half
    from gelu_numba.figures import FIGURES
    for name in ("half32_float16", "half32_bfloat16", "half_floor", "half32_max_ulp"):
        assert FIGURES[name] in half.__doc__, name
    assert not re.search(r"<<\w+>>", half.__doc__)
    pytest.importorskip("numba_cuda")
    import gelu_numba.gpu as gpu
    for name in ("gpu32_max_ulp", "gpu32_correctly_rounded", "lean32_max_ulp",
                 "lean32_correctly_rounded"):
        assert FIGURES[name] in gpu.__doc__, name
    assert not re.search(r"<<\w+>>", gpu.__doc__)
