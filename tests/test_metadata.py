"""The project's metadata agree (one version, one license), and CI fails when
its test install fails."""

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


def test_ci_fails_when_the_test_install_fails(tmp_path):
    # .ci/run with every python3 failing at once and a wheel smoke test that
    # passes: an install that cannot reach the package index must fail CI,
    # not leave it green with no test run
    import shutil
    import subprocess
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / ".ci" / "wheel_smoke.sh").write_text("exit 0\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text("#!/bin/sh\necho 'no package index' >&2\nexit 1\n")
    (bin_dir / "python3").chmod(0o755)
    run = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True,
                         text=True, timeout=60,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert run.returncode != 0, run.stdout + run.stderr
    assert "tests: exit 1" in run.stdout
