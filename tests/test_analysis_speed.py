"""analysis.speed: the CLI end to end on tiny sizes, the bookkeeping of the
roofline fraction, the plot, argument errors and the GPU gate.  No speed is
asserted: only that the numbers are there, positive and consistent."""

import contextlib
import inspect
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import speed

pytestmark = pytest.mark.tools

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("speed")
    argv = ["--sizes", "1e2,1e3", "--rounds", "2", "--functions", "gelu",
            "--dtypes", "float32", "--no-plot", "--no-gpu", "--no-progress",
            "--out", str(out)]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert speed.main(argv) == 0
    return out, json.loads((out / "speed.json").read_text()), buf.getvalue()


def _expected_impls():
    from benchmarks import peers
    impls = {"gelu_numba", "gelu_numba.parallel", "numpy/scipy", "naive numba",
             speed.COPY}
    if peers.torch is not None:
        impls.add("torch")
    if peers.jax is not None:
        impls.add("jax")
    return impls


def test_cli_writes_md_and_json(cli_run):
    out, res, text = cli_run
    assert (out / "speed.md").exists() and not (out / "speed.png").exists()
    assert res["settings"]["sizes"] == [100, 1000]
    assert res["settings"]["functions"] == ["gelu"]
    assert res["settings"]["dtypes"] == ["float32"]
    assert res["machine"]["cpu"] and res["machine"]["summary"]
    assert res["machine"]["gpu"] is None
    rows = res["rows"]
    assert {r["device"] for r in rows} == {"cpu"}
    for n in (100, 1000):
        got = [r["impl"] for r in rows if r["n"] == n]
        assert sorted(got) == sorted(_expected_impls())      # each exactly once
    for r in rows:
        assert (r["function"], r["dtype"], r["rounds"]) == ("gelu", "float32", 2)
        for key in ("t_median", "t_min", "gelem_s", "gb_s", "fraction", "copy_gb_s"):
            assert math.isfinite(r[key]) and r[key] > 0, (r["impl"], key, r[key])
        assert r["t_min"] <= r["t_median"]
        assert r["calls"] >= 1
        assert r["bytes"] == 2 * r["n"] * 4                  # one input + output, float32
        assert r["gb_s"] == pytest.approx(r["bytes"] / r["t_median"] / 1e9)
        if r["impl"] != speed.COPY:
            assert r["gelem_s"] == pytest.approx(r["n"] / r["t_median"] / 1e9)
    # a 100-element copy takes well under a millisecond: many calls per timing
    copy100 = next(r for r in rows if r["n"] == 100 and r["impl"] == speed.COPY)
    assert copy100["calls"] > 1

    md = (out / "speed.md").read_text()
    assert md.startswith("# gelu_numba throughput against array size")
    assert "### gelu, float32" in md and "| implementation | 10^2 | 10^3 |" in md
    for impl in _expected_impls():
        assert f"\n| {impl} | " in md
        assert f"| gelu | float32 | 10^2 | {impl} |" in md
        assert f"| gelu | float32 | 10^3 | {impl} |" in md
    assert "np.copy" in md and "allocated" in md             # which roofline
    assert "### gelu, float32" in text                   # the table, as it goes
    assert "machine: " in text and "wrote " in text and "speed.json" in text


def test_fraction_is_copy_time_over_time(cli_run):
    _, res, _ = cli_run
    for n in (100, 1000):
        cell = [r for r in res["rows"] if r["n"] == n]
        copy = next(r for r in cell if r["impl"] == speed.COPY)
        assert copy["fraction"] == pytest.approx(1.0)
        assert copy["gelem_s"] == pytest.approx(n / copy["t_median"] / 1e9)
        for r in cell:
            assert r["copy_t_median"] == copy["t_median"]
            assert r["copy_bytes"] == r["bytes"] == copy["bytes"]
            assert r["fraction"] == pytest.approx(copy["t_median"] / r["t_median"])


def test_api_backward_odd_size_and_plot(tmp_path, cli_run):
    """Two inputs: 3 n elements of traffic, a copy of ceil(3 n / 2) elements;
    the fraction compares bandwidths.  markdown() and plot() on the result
    and on the CLI's JSON."""
    res = speed.run(functions=["gelu_backward"], dtypes=["float64"], sizes=[101],
                    rounds=1, gpu=False, peers=False, progress=False, min_time=1e-4)
    json.dumps(res)                                         # JSON-able
    rows = res["rows"]
    assert [r["impl"] for r in rows] == ["gelu_numba", "gelu_numba.parallel", speed.COPY]
    copy = rows[-1]
    assert copy["bytes"] == 2 * 152 * 8
    for r in rows[:-1]:
        assert r["bytes"] == 3 * 101 * 8
        assert r["fraction"] == pytest.approx(
            (r["bytes"] / r["t_median"]) / (copy["bytes"] / copy["t_median"]))
    md = speed.markdown(res)
    assert "### gelu_backward, float64" in md and "| gelu_numba | " in md
    for results, name in ((res, "a.png"), (cli_run[1], "b.png")):
        path = speed.plot(results, tmp_path / "sub" / name)
        assert Path(path).read_bytes()[:8] == PNG and Path(path).stat().st_size > 10_000


@pytest.mark.parametrize("argv,words", [
    (["--sizes", "foo"], ["'foo'", "1e6", "2**20"]),
    (["--sizes", "0"], ["'0'", "positive"]),
    (["--sizes", "1e2,-5"], ["'-5'", "positive"]),
    (["--sizes", "1.5"], ["'1.5'", "integers"]),
    (["--functions", "nope"], ["'nope'", *speed.FUNCTIONS]),
    (["--functions", "gelu,silu"], ["'silu'", "gelu_backward", "norm_pdf"]),
    (["--dtypes", "float16"], ["'float16'", "float32", "float64"]),
    (["--rounds", "0"], ["--rounds", "positive"]),
    (["--budget", "x"], ["--budget", "positive"]),
])
def test_bad_arguments(argv, words, capsys):
    with pytest.raises(SystemExit) as exc:
        speed.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: python -m analysis.speed" in err
    for w in words:
        assert w in err, (w, err)


def test_parse_sizes():
    assert speed.parse_sizes("1e2, 2**10,1000,100") == [100, 1000, 1024]
    assert speed.parse_sizes("10^3") == [1000]


def test_help_runs_as_module():
    proc = subprocess.run([sys.executable, "-m", "analysis.speed", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for flag in ("--sizes", "--functions", "--dtypes", "--rounds", "--budget", "--out",
                 "--no-plot", "--no-gpu", "--no-peers", "--no-progress"):
        assert flag in proc.stdout


def test_quick_setting():
    """QUICK is what the report calls: gelu and gelu_backward, both dtypes,
    10^2..10^7, and run() accepts it."""
    inspect.signature(speed.run).bind(**speed.QUICK)
    assert list(speed.QUICK["functions"]) == ["gelu", "gelu_backward"]
    assert list(speed.QUICK["dtypes"]) == ["float32", "float64"]
    assert list(speed.QUICK["sizes"]) == [10 ** k for k in range(2, 8)]


def test_gpu_gate():
    """Never the simulator: without a real device the GPU is skipped by
    default and gpu=True is refused."""
    from numba import config
    if not config.ENABLE_CUDASIM and speed.gpu_available():
        pytest.skip("a real CUDA device is present")
    assert speed.gpu_available() is False
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        speed.run(functions=["gelu"], dtypes=["float32"], sizes=[10], rounds=1,
                  gpu=True, progress=False)


def test_gpu_rows_under_simulator():
    """The conversion of analysis.gpu.throughput's rows (a dry run in the
    simulator): the kernel row's fraction is its bandwidth over the device
    copy's, and the copy row's G elem/s is n at copy bandwidth."""
    pytest.importorskip("numba_cuda")
    from numba import config
    if not config.ENABLE_CUDASIM:
        pytest.skip("needs the simulator (tests/conftest.py sets it without a GPU)")
    rows = speed._Gpu(rounds=1, batch=1).rows("gelu_backward", "float64", 64)
    kernel, copy = rows
    assert (kernel["impl"], copy["impl"]) == (speed.GPU, speed.GPU_COPY)
    assert kernel["bytes"] == 3 * 64 * 8 and copy["bytes"] == 2 * 64 * 8
    assert kernel["fraction"] == pytest.approx(kernel["gb_s"] / copy["gb_s"])
    assert copy["gelem_s"] == pytest.approx(
        copy["gb_s"] * 1e9 / (3 * 8) / 1e9)
    for r in rows:
        assert math.isfinite(r["t_median"]) and r["t_median"] > 0
