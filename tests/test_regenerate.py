"""python -m analysis.regenerate: every file made from committed results
is current, and a stale one is found and written anew."""

import pytest

from analysis import figures, regenerate

pytestmark = pytest.mark.tools


def test_every_generated_file_is_current():
    assert regenerate.main(["--check"]) == 0, "run: python -m analysis.regenerate"


def test_a_stale_file_is_reported_then_written(tmp_path, monkeypatch, capsys):
    copy = tmp_path / "figures.py"
    copy.write_text(figures.source().replace("FIGURES = {", "FIGURES = {  # edited by hand", 1))
    monkeypatch.setattr(regenerate, "PARTS", {"figures": (copy, figures.source)})
    assert regenerate.main(["--check"]) == 1
    assert f"out of date: {copy}" in capsys.readouterr().out
    assert "edited by hand" in copy.read_text()           # --check writes nothing
    assert regenerate.main([]) == 0
    assert copy.read_text() == figures.source()
    assert regenerate.main(["--check"]) == 0
