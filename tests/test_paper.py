"""analysis.paper: the offline MNIST experiment, run in its --quick form.

One quick run (2 seeds, 3 epochs, every configuration; a few seconds once
the Numba kernels are in the on-disk cache) into a temporary folder; the
tests check what it wrote, that the runs learned, and that runs of one seed
are paired (same initial weights, batches and dropout masks).
"""

import json
import math
import random
import socket

import numpy as np
import pytest

# torch, scikit-learn and mnist1d are in the test extra: a missing one fails
from analysis import paper

pytestmark = pytest.mark.tools

FILES = ("summary.md", "results.json", "loss_curves.png", "approximations.png")


@pytest.fixture(scope="module")
def quick(tmp_path_factory, worker_id):
    """(output folder, results as read back from results.json).  Under
    pytest-xdist the folder is the run's, not the worker's: a worker that
    takes over some of these tests after another wrote it reads it."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    out = shared / "paper-quick"
    if not (out / "results.json").exists():
        fresh = tmp_path_factory.mktemp("paper")
        assert paper.main(["--quick", "--out", str(fresh), "--no-progress"]) == 0
        try:
            fresh.rename(out)       # (whole, or another worker's is there)
        except OSError:
            pass
        if not (out / "results.json").exists():
            out = fresh
    return out, paper.load(out / "results.json")


def _final_and_initial(runs, key="train_loss"):
    c = paper.curves(runs, key)
    return c[:, -1], c[:, 0]


def test_files_written(quick):
    out, _ = quick
    for name in FILES:
        path = out / name
        assert path.is_file() and path.stat().st_size > 0, name
    for name in ("loss_curves.png", "approximations.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    json.loads((out / "results.json").read_text())       # valid JSON


def test_every_configuration_once(quick):
    _, res = quick
    expected = sorted(paper.configurations(paper.QUICK))
    got = sorted((r["dataset"], r["activation"], r["dropout"], r["seed"]) for r in res["runs"])
    assert got == expected
    # both datasets, the three activations with and without dropout, the four
    # approximations: the study the full run makes, in small
    assert {c[0] for c in got} == set(paper.DATASETS)
    assert {c[1] for c in got} == set(paper.PAPER_ACTIVATIONS) | {
        f"gelu-{a}" for a in paper.APPROXIMATIONS}
    assert {c[2] for c in got} == {0.0, paper.QUICK.dropout}


def test_series_complete_and_finite(quick):
    _, res = quick
    for r in res["runs"]:
        epochs = res["settings"]["epochs"][r["dataset"]]
        for key in ("train_loss", "train_acc", "test_loss", "test_acc"):
            assert len(r[key]) == epochs + 1, (key, r["activation"])
            assert all(math.isfinite(v) for v in r[key]), (key, r["activation"], r[key])
        assert len(r["batch_loss"]) == epochs
        assert all(math.isfinite(v) for v in r["batch_loss"])
        assert all(0 <= v <= 1 for v in r["train_acc"] + r["test_acc"])
        # a fresh 10-class network predicts about uniformly: log loss near ln 10
        assert abs(r["train_loss"][0] - math.log(10)) < 0.2


def test_training_loss_decreases(quick):
    _, res = quick
    for ds in paper.DATASETS:
        for r in res["runs"]:
            if r["dataset"] == ds:
                assert r["train_loss"][-1] < r["train_loss"][0], (ds, r["activation"],
                                                                  r["dropout"], r["seed"])
        # without dropout: down at every epoch, on the mean over seeds
        for act in {r["activation"] for r in res["runs"]}:
            runs = paper.select(res, ds, act, 0.0)
            mean = paper.curves(runs, "train_loss").mean(0)
            assert np.all(np.diff(mean) < 0), (ds, act, mean)


def test_runs_of_one_seed_are_paired(quick):
    """Same seed: the same initial weights and batch order whatever the
    activation or dropout; another seed: others."""
    _, res = quick
    for ds in paper.DATASETS:
        by_seed = {}
        for r in res["runs"]:
            if r["dataset"] == ds:
                by_seed.setdefault(r["seed"], set()).add((r["init_sha256"], r["order_sha256"]))
        assert all(len(h) == 1 for h in by_seed.values()), by_seed
        hashes = [h.pop() for h in by_seed.values()]
        assert len({h[0] for h in hashes}) == len(hashes)
        assert len({h[1] for h in hashes}) == len(hashes)


def test_initial_losses_agree_to_float32_rounding(quick):
    """The initial loss of a seed's approximation run is the exact-GELU run's
    to within float32 rounding for rat44 (max |error| 1e-6), and within the
    approximation's max |error| for the others; seeds differ by far more."""
    _, res = quick
    for ds in paper.DATASETS:
        for dropout in (0.0, paper.QUICK.dropout):   # eval mode: dropout changes nothing
            for act in paper.PAPER_ACTIVATIONS:
                a = [r["train_loss"][0] for r in paper.select(res, ds, act, 0.0)]
                b = [r["train_loss"][0] for r in paper.select(res, ds, act, dropout)]
                assert a == b, (ds, act)
        exact = {r["seed"]: r["train_loss"][0] for r in paper.select(res, ds, "gelu", 0.0)}
        ulp = max(float(np.spacing(np.float32(v))) for v in exact.values())
        for name in paper.APPROXIMATIONS:
            act = f"gelu-{name}"
            err = res["activations"][act]["max_abs_error"]
            for r in paper.select(res, ds, act, 0.0):
                diff = abs(r["train_loss"][0] - exact[r["seed"]])
                assert diff <= err + 4 * ulp, (ds, name, r["seed"], diff)
                if name == "rat44":
                    assert diff <= 4 * ulp, (ds, r["seed"], diff, ulp)
        seeds = sorted(exact.values())
        assert min(np.diff(seeds)) > 100 * ulp, (ds, seeds)


def test_one_seed_reproduces_a_run_exactly(quick):
    """Training twice with one seed (dropout on) gives the same numbers: the
    dropout masks are seeded too."""
    data = paper.load_digits_data()
    settings = paper.Settings(epochs={"digits": 1}, seeds=(0,))
    a, b = (paper.train(data, "gelu", 0.5, 3, settings) for _ in range(2))
    a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_paired_statistics(quick):
    _, res = quick
    for ds in paper.DATASETS:
        for key in paper.METRICS:
            p = paper.paired(res, ds, "gelu-sigmoid", 0.0, key)
            ref = [r[key][-1] for r in paper.select(res, ds, "gelu", 0.0)]
            new = [r[key][-1] for r in paper.select(res, ds, "gelu-sigmoid", 0.0)]
            d = np.subtract(new, ref)
            assert p["n"] == len(paper.QUICK.seeds)
            assert p["diffs"] == pytest.approx(d.tolist())
            assert p["mean"] == pytest.approx(d.mean())
            assert p["se"] == pytest.approx(d.std(ddof=1) / math.sqrt(len(d)))
            assert p["exceeds"] == (abs(d.mean()) > 2 * d.std(ddof=1) / math.sqrt(len(d)))


def test_summary_has_the_tables(quick):
    out, res = quick
    text = (out / "summary.md").read_text()
    assert "python -m analysis.paper --quick" in text
    assert res["machine_line"] in text
    for ds in paper.DATASETS:
        assert f"### {ds}" in text
    for label in paper.LABELS.values():
        assert f"| {label} |" in text, label
    assert "](loss_curves.png)" in text and "](approximations.png)" in text


def test_quick_never_writes_the_committed_results(quick, monkeypatch, tmp_path):
    """--quick without --out goes to a new temporary folder, not reports/paper."""
    _, res = quick
    monkeypatch.setattr(paper, "run", lambda settings, progress=True: res)
    monkeypatch.setattr(paper.tempfile, "mkdtemp", lambda prefix="": str(tmp_path / "q"))
    written = []
    monkeypatch.setattr(paper, "save", lambda results, out, command: written.append(out) or [])
    assert paper.main(["--quick", "--no-progress"]) == 0
    assert written == [tmp_path / "q"]


def test_mnist1d_generates_offline(monkeypatch):
    """make_dataset builds MNIST-1D with the network cut off and leaves the
    global random generators as they were."""
    def refuse(*args, **kwargs):
        raise OSError("network access in a test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    np.random.seed(123)
    random.seed(123)
    before = np.random.random(), random.random()
    np.random.seed(123)
    random.seed(123)
    data = paper.load_mnist1d(200)
    assert (np.random.random(), random.random()) == before
    assert data.x_train.shape == (160, 40) and data.x_test.shape == (40, 40)
    assert set(np.unique(data.y_train)) <= set(range(10))
    assert data.x_train.dtype == np.float32 and np.isfinite(data.x_train).all()
