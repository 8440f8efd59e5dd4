"""analysis/on_gpu.sh, the GPU measurements in steps: its bookkeeping (the
steps themselves are the analysis modules, tested on their own)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

SCRIPT = Path(__file__).resolve().parents[1] / "analysis" / "on_gpu.sh"


def _run(tmp_path, *steps, **env):
    e = dict(os.environ, OUT=str(tmp_path / "out"), PYTHON=sys.executable, **env)
    return subprocess.run(["bash", str(SCRIPT), *steps], capture_output=True, text=True,
                          env=e, cwd=SCRIPT.parents[1], timeout=300)


def test_an_unknown_step_is_named_and_counted_and_env_is_logged(tmp_path):
    run = _run(tmp_path, "nonsense")
    # env fails where there is no GPU (no nvidia-smi), passes where there is
    env_failed = "== env: exit 0 " not in run.stdout
    assert run.returncode == 1 + env_failed, run.stdout + run.stderr
    assert "unknown step 'nonsense' (env, sweep, throughput, tune, half, sass, tests, torch, all)" in run.stdout
    assert (tmp_path / "out" / "env.log").exists()
    assert f"on_gpu: {1 + env_failed} step(s) failed" in run.stdout


def test_steps_past_the_total_budget_are_skipped_and_counted(tmp_path):
    run = _run(tmp_path, "sass", "tests", TOTAL_S="10")
    assert run.returncode == 3, run.stdout + run.stderr    # env, sass, tests
    for name in ("env", "sass", "tests"):
        assert f"== {name}: skipped" in run.stdout
        assert "skipped" in (tmp_path / "out" / f"{name}.log").read_text()


def test_torch_cuda_report_dry_run_on_the_cpu(tmp_path):
    # the torch step's measurement, as a dry run of the same code on the CPU
    pytest.importorskip("torch")
    from analysis.gpu import torch_cuda
    out = tmp_path / "torch.md"
    assert torch_cuda.main(["--device", "cpu", "--n", "2**12", "--rounds", "2",
                            "--calls", "5", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| `gelu_numba.torch.gelu` |" in text and "| `F.gelu` |" in text
    assert "| float32 |" in text and "| bfloat16 |" in text


#: GPU-tier modules with nothing a device changes: compiled without one (PTX,
#: SASS), or about this script and the package's import
OFF_DEVICE = {"test_gpu_choice.py", "test_gpu_import.py", "test_gpu_sass.py", "test_on_gpu.py",
              "test_ptx.py"}


def test_the_tests_step_runs_every_gpu_module_that_launches():
    # (a GPU test module left out of the step would never run on a device)
    import re
    script = SCRIPT.read_text()
    step = re.search(r"^        tests\)\n(.*?);;", script, re.S | re.M).group(1)
    listed = set(re.findall(r"tests/(test_\w+\.py)", step))
    gpu = {p.name for p in Path(__file__).parent.glob("test_*.py")
           if "pytest.mark.gpu" in p.read_text()}
    assert listed == gpu - OFF_DEVICE
