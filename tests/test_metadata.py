"""The project's metadata agree: one version, one license."""

import tomllib
from pathlib import Path

import pytest

import gelu_numba

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def test_version_and_license_are_stated_once_and_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    citation = (ROOT / "CITATION.cff").read_text()
    assert gelu_numba.__version__ == project["version"]
    assert f"\nversion: {project['version']}\n" in citation
    assert project["license"]["text"] == "BSD-3-Clause"
    assert "license: BSD-3-Clause" in citation
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
    assert f"version = {{{project['version']}}}" in (ROOT / "docs" / "citing.md").read_text()
