"""The analysis scripts: accuracy (table, regions, exhaustive sweep on Dask) and the report.

Expected values come from mathematics: the package is within its 1-ulp
bound, SciPy's ``x * ndtr(x)`` loses everything to underflow in the float64
tail, the regions partition the inputs; the sweep's statistics are checked
against the committed float32 sweep's bound.
"""

import json
import math
import re

import numpy as np
import pytest

from analysis import accuracy, report
from gelu_numba import catalog

pytestmark = pytest.mark.tools


@pytest.fixture(scope="module")
def small():
    return accuracy.run(["gelu", "ndtr", "gelu_tanh", "silu_grad"], samples=16, progress=False)


def _row(result, name, dtype, impl):
    (row,) = [r for r in result["rows"] if (r["function"], r["dtype"], r["implementation"])
              == (name, dtype, impl)]
    return row["regions"]


def test_package_within_its_bound(small):
    for name in ("gelu", "ndtr", "gelu_tanh", "silu_grad"):
        for dt in ("float32", "float64"):
            reg = _row(small, name, dt, accuracy.PACKAGE)
            assert reg["all"]["max_ulp"] <= (1.0 if name in accuracy.EXACT else 2.0), (name, dt)
            assert reg["all"]["median_ulp"] <= 0.5
            assert reg["all"]["max_rel"] <= 2.0 ** -23


def test_scipy_formula_fails_in_the_float64_tail(small):
    # x * ndtr(x) underflows where x * Phi(x) is still a normal double
    reg = _row(small, "gelu", "float64", "numpy/scipy")
    assert reg["tail x<-5"]["max_ulp"] > 1e6
    assert reg["core |x|<=5"]["max_ulp"] < 1e3


def test_regions_partition_the_inputs(small):
    for row in small["rows"]:
        reg = row["regions"]
        parts = sum(reg[r]["points"] for r in ("core |x|<=5", "tail x<-5", "x>5") if r in reg)
        finite = int(np.sum(np.isfinite(row["x"])))
        assert parts == finite <= reg["all"]["points"]


def test_markdown_has_a_row_per_implementation(small):
    md = accuracy.markdown(small)
    assert md.count("\n") + 1 == 2 + len(small["rows"])
    assert "| `gelu_tanh` | float32 | **gelu_numba** |" in md


def test_cli_writes_table_json_and_plots(tmp_path, capsys):
    assert accuracy.main(["--functions", "gelu,gelu_poly6", "--samples", "8", "--no-peers",
                          "--no-progress", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "accuracy.json").read_text())
    assert {r["function"] for r in data["rows"]} == {"gelu", "gelu_poly6"}
    for dt in ("float32", "float64"):
        assert (tmp_path / f"accuracy_{dt}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("argv,needle", [
    (["--functions", "nope"], "choose from"),
    (["--dtypes", "float16"], "float32, float64"),
    (["--samples", "0"], "must be >= 1"),
    (["--exhaustive", "--functions", "gelu_general"], "cannot sweep"),
    (["--exhaustive", "--chunk", str(2**25)], "at most 2**24"),
])
def test_bad_arguments_are_clear_errors(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        accuracy.main(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_exhaustive_sweep_on_a_local_cluster_and_on_a_given_scheduler(tmp_path):
    from distributed import LocalCluster

    names = ["gelu", "gelu_tanh"]
    stride = 2**20 + 7                         # 4096 inputs of every sign and magnitude
    local = accuracy.exhaustive(names, stride=stride, chunk=1024, workers=1, progress=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        remote = accuracy.exhaustive(names, stride=stride, chunk=1500,
                                     scheduler=cluster.scheduler_address, progress=False)
    for a, b in zip(local, remote):
        # chunking and the cluster change nothing
        for key in ("checked", "max_ulp", "worst_input", "correctly_rounded", "over_1ulp"):
            assert a[key] == b[key], key
        assert a["checked"] == math.ceil(2**32 / stride) - a["nan_inputs"]
        # the stated bound, plus the float64 reference's own error (below
        # 2**-28 float32 ulp)
        assert a["max_ulp"] <= catalog.lookup("gelu").bound[0] + 2**-28
        assert a["special_mismatches"] == 0
    assert remote[0]["cluster"] == cluster.scheduler_address


def test_unreachable_scheduler_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as exc:
        accuracy.main(["--exhaustive", "--functions", "gelu", "--stride", "2**30",
                       "--scheduler", "tcp://127.0.0.1:9", "--no-progress"])
    assert exc.value.code == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err


def test_report_without_speed_and_readme_update(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "QUICK_OTHERS", ["gelu_tanh"])
    summary, paths = report.build(tmp_path, speed=False, progress=False)
    assert (tmp_path / "README.md").read_text() == summary
    assert (tmp_path / "accuracy" / "accuracy_float32.png").exists()
    # the package column comes first: below 1 ulp, where every peer's is far above
    row = re.search(r"^\| `gelu` \| float32 \| ([^|]+) \|", summary, re.M)
    assert row and float(row.group(1)) < 1
    assert "4278190082" in summary                    # the committed exhaustive sweep
    readme = tmp_path / "R.md"
    readme.write_text(f"intro\n{report.MARKERS[0]}\nold\n{report.MARKERS[1]}\nafter\n")
    report.update_page(summary, readme)
    text = readme.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("after\n")
    assert "](../../reports/accuracy/accuracy_float32.png)" in text
    # other files of the repository are the site's downloads, not dead links
    assert "{download}`accuracy.md <../../reports/accuracy/accuracy.md>`" in text


def test_approximation_study_script_runs(tmp_path):
    from analysis import approximations as study
    from gelu_numba.approximations import APPROXIMATIONS
    assert study.main(["--n", "4096", "--rounds", "1", "--samples", "8",
                       "--no-plots", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "approximations.md").read_text()
    assert "| tanh | 0.000473" in md and "Frontier" in md
    rows = (tmp_path / "approximations.csv").read_text().splitlines()
    assert len(rows) == 1 + len(APPROXIMATIONS)
    assert study.main(["--n", "10"]) == 2          # a clear error, no traceback
