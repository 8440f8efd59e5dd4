"""Hendrycks & Gimpel's MNIST classification experiment, offline, with
``gelu_numba.torch.GELU``; and whether a GELU approximation changes training.

Usage::

    nice -n 10 python -m analysis.paper [--out reports/paper]   # the full run, ~8 min
    python -m analysis.paper --quick [--out DIR]     # a smoke test, ~15 s
    python -m analysis.paper --from-results reports/paper/results.json
        # trains nothing: rewrites summary.md and the PNGs from the JSON

Options ``--seeds N`` (seeds 0 .. N-1) and ``--epochs E`` (every dataset)
change either run.

Setup (the paper's section 3.1 and Figure 3, and its code
``hendrycks/GELUs/mnist_fcn.py``)
    A fully connected network of 8 hidden layers of 128 units, the
    activation after each, and a linear output layer (9 weight matrices);
    weights N(0, 1) with each unit's incoming weights scaled to unit L2 norm
    and zero biases (the paper code's initialisation); Adam, batch size 128,
    softmax cross-entropy; without dropout and with dropout 0.5 after every
    hidden activation.  Activations: the exact GELU
    (``gelu_numba.torch.GELU()``), ReLU and ELU (``torch.nn``).
    Epochs: the paper trains 50 epochs of MNIST (about 21,500 Adam steps);
    here 50 epochs of digits (600 steps) and 30 of MNIST-1D (960 steps),
    30 to fit the whole run into 8 minutes on one core.
    Learning rate: fixed at 1e-3.  The paper picked one of {1e-3, 1e-4,
    1e-5} per activation on MNIST's validation set; 1e-3 is its code's
    default and Adam's usual one, and with no search and no early stopping
    nothing is chosen on held-out data, so there is no validation split and
    the test set is only reported.
    Per epoch (and at initialisation, epoch 0): the log loss and accuracy on
    the whole training set and on the test set, the network in eval mode
    (with dropout, the loss of the full network, as the paper's code
    records it), and the mean loss of the epoch's minibatches as optimised.

Data (no download; MNIST itself is not on this machine)
    ``digits``: scikit-learn's ``load_digits`` (1,797 8x8 images, 64
    features), a stratified 80/20 split with ``random_state=0`` (1,437
    train, 360 test), each feature standardised with the training set's
    mean and standard deviation (constant border pixels: divided by 1).
    ``mnist1d``: MNIST-1D (Greydanus 2020; 40-sample 1-D digits, 10
    classes), generated locally by ``mnist1d.data.make_dataset`` with the
    package's default arguments (5,000 samples, seed 42, 4,000 train /
    1,000 test, standardised by the generator).  The package's
    ``get_dataset`` would download the published pickle (and write one
    into the working directory); this script never calls it.
    ``make_dataset`` only uses NumPy and SciPy (``tests/test_paper.py``
    runs it with sockets disabled).

The approximation study
    The same networks without dropout on both datasets, with
    ``gelu_numba.torch.GELU(approximate=...)`` for "tanh" (PyTorch's tanh
    form, and the "gelu" of the paper's own ``mnist_fcn.py``), "sigmoid"
    (x sigma(1.702 x)), "poly3" (a crude fit, max |error| 1.1e-3) and
    "rat44" (an accurate one, 1.4e-6), against the exact GELU.  A
    seed fixes the initial weights (a ``torch.Generator`` of its own, so
    they depend on the seed and the shapes only), the order of the batches
    (a NumPy generator) and the dropout masks (``torch.manual_seed``), so a
    run with an approximation and the exact-GELU run of the same seed start
    from identical weights and see identical batches (each run records
    SHA-256 hashes of both; the tests compare them), and their differences
    are paired: per seed, approximation minus exact, then the mean and
    standard deviation of the differences and whether the mean exceeds
    twice its standard error (a rough criterion for "more than seed noise").

Runtime
    Full run: 5 seeds x (2 datasets x 3 activations x 2 dropout settings +
    2 datasets x 4 approximations) = 100 runs; 7 min 52 s wall-clock (465 s
    of training) under ``nice -n 10`` with one PyTorch thread on this
    machine (an Intel Xeon with 2 cores shared with other work; 2.0-4.5 s
    per digits run, 4-9 s per MNIST-1D run, dropout the slower).
    ``--quick``: 2 seeds, 3 epochs of every configuration, MNIST-1D with
    1,000 samples: about 15 s (3.5 s of imports, 8 s of training, 3 s of
    plots).  Both once the Numba kernels are in Numba's on-disk cache: the
    first use of each activation's kernels after a change to the package
    compiles them, 10-30 s each.

Writes into ``--out`` (default ``reports/paper/``; ``--quick`` defaults to
a new temporary folder so that it never overwrites the committed results
unless asked to): ``summary.md``, ``results.json`` (every run's per-epoch
numbers), ``loss_curves.png`` and ``approximations.png``.

PyTorch is imported only by the functions that train, so the notebook
(``notebooks/04_paper.ipynb``) reads the results without importing it.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import random
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from analysis.common import int_arg, jsonable
from benchmarks.machine import machine_info, machine_line

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "paper"

DATASETS = ("digits", "mnist1d")
#: the paper's comparison
PAPER_ACTIVATIONS = ("gelu", "relu", "elu")
#: the approximation study: ``approximate=`` of gelu_numba.torch.GELU
APPROXIMATIONS = ("tanh", "sigmoid", "poly3", "rat44")
LABELS = {"gelu": "GELU (exact)", "relu": "ReLU", "elu": "ELU"}
LABELS.update({f"gelu-{a}": f"GELU {a}" for a in APPROXIMATIONS})
COLORS = {"gelu": "C0", "relu": "C3", "elu": "C2", "gelu-tanh": "C1",
          "gelu-sigmoid": "C4", "gelu-poly3": "C5", "gelu-rat44": "C9"}
METRICS = ("train_loss", "test_loss", "test_acc")


@dataclass(frozen=True)
class Settings:
    """What one invocation trains.

    Attributes
    ----------
    epochs : dict
        Epochs per run, per dataset (the paper: 50 on MNIST).
    seeds : tuple of int
        Seeds; every configuration runs once per seed.
    lr : float
        Adam's learning rate.
    batch_size, width, depth : int
        Batch size, hidden units per layer, hidden layers.
    dropout : float
        The dropout rate of the runs with dropout.
    mnist1d_samples : int
        Samples MNIST-1D is generated with (80 % train).
    approx_dropouts : tuple of float
        Dropout settings of the approximation study.
    """

    epochs: dict = field(default_factory=lambda: {"digits": 50, "mnist1d": 30})
    seeds: tuple = (0, 1, 2, 3, 4)
    lr: float = 1e-3
    batch_size: int = 128
    width: int = 128
    depth: int = 8
    dropout: float = 0.5
    mnist1d_samples: int = 5000
    approx_dropouts: tuple = (0.0,)


FULL = Settings()
# the smallest run that still exercises every configuration and both
# datasets; 1,000 MNIST-1D samples: generating them takes 0.4 s instead of 2 s
QUICK = Settings(epochs={"digits": 3, "mnist1d": 3}, seeds=(0, 1), mnist1d_samples=1000)


# ----------------------------------------------------------------- data


@dataclass
class Dataset:
    """A classification data set as float32/int64 NumPy arrays."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str

    def describe(self) -> dict:
        return {"n_train": len(self.y_train), "n_test": len(self.y_test),
                "n_features": self.x_train.shape[1],
                "n_classes": int(self.y_train.max()) + 1, "source": self.source}


def load_digits_data(test_size=0.2, split_seed=0) -> Dataset:
    """scikit-learn's 8x8 digits: a stratified, seeded split, standardised
    with the training set's statistics."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_size,
                                              random_state=split_seed, stratify=y)
    mean, std = x_tr.mean(0), x_tr.std(0)
    std[std == 0] = 1.0          # pixels that are 0 in every training image stay 0
    return Dataset("digits", ((x_tr - mean) / std).astype(np.float32), y_tr.astype(np.int64),
                   ((x_te - mean) / std).astype(np.float32), y_te.astype(np.int64),
                   f"sklearn.datasets.load_digits, stratified {1 - test_size:.0%}/{test_size:.0%} "
                   f"split (random_state={split_seed}), standardised on the training set")


def load_mnist1d(num_samples=5000) -> Dataset:
    """MNIST-1D generated locally by ``mnist1d.data.make_dataset``.

    ``make_dataset`` (not ``get_dataset``, which downloads the published
    pickle) with the package's default arguments but ``num_samples``; it
    standardises the data itself.
    """
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = num_samples
    # make_dataset reseeds the global `random` and NumPy generators with
    # args.seed; put them back so that loading data changes no other stream
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        d = make_dataset(args)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    return Dataset("mnist1d", d["x"].astype(np.float32), d["y"].astype(np.int64),
                   d["x_test"].astype(np.float32), d["y_test"].astype(np.int64),
                   f"mnist1d.data.make_dataset (mnist1d {_version('mnist1d')}), default "
                   f"arguments, num_samples={num_samples}, seed {args.seed}, "
                   f"{args.train_split:.0%} train")


def load_datasets(settings: Settings) -> dict:
    return {"digits": load_digits_data(), "mnist1d": load_mnist1d(settings.mnist1d_samples)}


def _version(module):
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return None


# ------------------------------------------------------------- training


def make_activation(name):
    """A fresh activation module for a name of :data:`LABELS`."""
    from torch import nn

    import gelu_numba.torch as gt

    if name == "gelu":
        return gt.GELU()
    if name.startswith("gelu-"):
        return gt.GELU(approximate=name[len("gelu-"):])
    return {"relu": nn.ReLU, "elu": nn.ELU}[name]()


def make_model(activation, n_in, n_out, settings: Settings, dropout, seed):
    """The paper's network, initialised from ``seed`` alone.

    The weights come from a ``torch.Generator`` of their own, not the global
    one: they depend on the seed and the shapes only, so runs that differ in
    the activation (or dropout) start from the same weights.
    """
    import torch
    from torch import nn

    layers, d = [], n_in
    for _ in range(settings.depth):
        layers += [nn.Linear(d, settings.width), make_activation(activation)]
        if dropout:
            layers.append(nn.Dropout(dropout))
        d = settings.width
    layers.append(nn.Linear(d, n_out))
    model = nn.Sequential(*layers)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in model:
            if isinstance(layer, nn.Linear):
                # mnist_fcn.py: tf.nn.l2_normalize(tf.random_normal([in, out]), 0),
                # i.e. unit norm per output unit (a row of torch's [out, in])
                w = torch.randn(layer.weight.shape, generator=gen)
                layer.weight.copy_(w / w.norm(dim=1, keepdim=True))
                layer.bias.zero_()
    return model


def _evaluate(model, x, y):
    """(log loss, accuracy) of the whole set, eval mode, no gradient."""
    import torch
    import torch.nn.functional as F

    model.eval()
    with torch.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, y).item()
        acc = (logits.argmax(1) == y).double().mean().item()
    return loss, acc


def _param_hash(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


def train(data: Dataset, activation, dropout, seed, settings: Settings, tensors=None):
    """One run: train for ``settings.epochs[data.name]`` epochs and record
    every epoch.

    Parameters
    ----------
    data : Dataset
    activation : str
        A key of :data:`LABELS` (``"gelu"``, ``"relu"``, ``"gelu-rat44"``, ...).
    dropout : float
        Dropout rate after every hidden activation (0: none).
    seed : int
        Fixes the initial weights, the batch order and the dropout masks.
    settings : Settings
    tensors : list of torch.Tensor, optional
        ``data``'s four arrays as tensors (made here if not given).

    Returns
    -------
    dict
        ``dataset``, ``activation``, ``dropout``, ``seed``; per epoch 0 (the
        initial network) .. epochs: ``train_loss``, ``train_acc``,
        ``test_loss``, ``test_acc``; per epoch 1 .. epochs: ``batch_loss``
        (mean over the epoch's minibatches, as optimised: with dropout);
        ``init_sha256`` (the initial parameters), ``order_sha256`` (every
        epoch's batch order), ``seconds``.
    """
    import torch
    import torch.nn.functional as F

    t0 = time.perf_counter()
    if tensors is None:
        tensors = [torch.from_numpy(a) for a in
                   (data.x_train, data.y_train, data.x_test, data.y_test)]
    x_tr, y_tr, x_te, y_te = tensors
    n = len(y_tr)
    model = make_model(activation, x_tr.shape[1], int(y_tr.max()) + 1, settings, dropout, seed)
    init_hash = _param_hash(model)
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    order = np.random.default_rng(seed)     # the batch order: the seed's alone
    order_hash = hashlib.sha256()
    torch.manual_seed(seed)                 # the dropout masks (the only global draws)

    rec = {k: [] for k in ("train_loss", "train_acc", "test_loss", "test_acc", "batch_loss")}

    def record():
        for part, x, y in (("train", x_tr, y_tr), ("test", x_te, y_te)):
            loss, acc = _evaluate(model, x, y)
            rec[f"{part}_loss"].append(loss)
            rec[f"{part}_acc"].append(acc)

    record()
    for _ in range(settings.epochs[data.name]):
        model.train()
        perm = order.permutation(n)
        order_hash.update(perm.tobytes())
        perm = torch.from_numpy(perm)
        total = 0.0
        for i in range(0, n, settings.batch_size):
            idx = perm[i:i + settings.batch_size]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        rec["batch_loss"].append(total / n)
        record()
    return {"dataset": data.name, "activation": activation, "dropout": dropout, "seed": seed,
            **rec, "init_sha256": init_hash, "order_sha256": order_hash.hexdigest(),
            "seconds": time.perf_counter() - t0}


def _warm_up(activations, settings: Settings):
    """One tiny training step per activation, so that no run's time includes
    the first-call costs: loading (or compiling) the activation's kernels and
    PyTorch's own lazy set-up of autograd, Adam and dropout (about 1.5 s
    here, which the first run of the process paid otherwise)."""
    import torch
    import torch.nn.functional as F

    tiny = replace(settings, depth=2, width=8)
    x, y = torch.linspace(-4, 4, 64).reshape(16, 4), torch.arange(16) % 2
    for act in sorted(activations):
        model = make_model(act, 4, 2, tiny, settings.dropout, seed=0)
        opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
        F.cross_entropy(model(x), y).backward()
        opt.step()
        _evaluate(model, x, y)


def configurations(settings: Settings):
    """(dataset, activation, dropout, seed) of every run, the paper's first."""
    for ds in DATASETS:
        for dropout in (0.0, settings.dropout):
            for act in PAPER_ACTIVATIONS:
                for seed in settings.seeds:
                    yield ds, act, dropout, seed
        for dropout in settings.approx_dropouts:
            for approx in APPROXIMATIONS:
                for seed in settings.seeds:
                    yield ds, f"gelu-{approx}", dropout, seed
            if dropout not in (0.0, settings.dropout):     # the exact reference
                for seed in settings.seeds:
                    yield ds, "gelu", dropout, seed


def run(settings: Settings, progress=True) -> dict:
    """Train every configuration; returns the results (see :func:`save`)."""
    import torch

    from gelu_numba.approximations import APPROXIMATIONS as REGISTRY

    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    # one thread: the machine is shared, and at these sizes (128 x 128) more
    # threads mostly add synchronisation
    torch.set_num_threads(1)
    try:
        datasets = load_datasets(settings)
        tensors = {k: [torch.from_numpy(a) for a in (d.x_train, d.y_train, d.x_test, d.y_test)]
                   for k, d in datasets.items()}
        configs = list(configurations(settings))
        _warm_up({act for _, act, _, _ in configs}, settings)
        runs = []
        for i, (ds, act, dropout, seed) in enumerate(configs, 1):
            r = train(datasets[ds], act, dropout, seed, settings, tensors[ds])
            runs.append(r)
            if progress:
                print(f"[{i}/{len(configs)}] {ds} {act} dropout={dropout} seed={seed}: "
                      f"train loss {r['train_loss'][-1]:.3g}, test loss {r['test_loss'][-1]:.3g}, "
                      f"test acc {r['test_acc'][-1]:.3f} ({r['seconds']:.1f} s)",
                      file=sys.stderr, flush=True)
    finally:
        torch.set_num_threads(threads)
    machine = machine_info()
    versions = {m: _version(m) for m in ("torch", "scikit-learn", "mnist1d", "matplotlib")}
    return {
        "settings": asdict(settings),
        "datasets": {k: d.describe() for k, d in datasets.items()},
        "activations": {
            **{a: {"label": LABELS[a], "max_abs_error": 0.0 if a == "gelu" else None,
                   "module": "gelu_numba.torch.GELU()" if a == "gelu" else f"torch.nn.{LABELS[a]}()"}
               for a in PAPER_ACTIVATIONS},
            **{f"gelu-{a}": {"label": LABELS[f"gelu-{a}"],
                             "max_abs_error": REGISTRY[a].max_abs_error,
                             "description": REGISTRY[a].description,
                             "module": f"gelu_numba.torch.GELU(approximate={a!r})"}
               for a in APPROXIMATIONS}},
        "machine": {**machine, **versions},
        "machine_line": (machine_line(machine) + ", " +
                         ", ".join(f"{k} {v}" for k, v in versions.items())),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": time.perf_counter() - t0,
        "runs": runs,
    }


# -------------------------------------------------------------- analysis


def load(path) -> dict:
    """``results.json`` back as written by :func:`save` (non-finite floats,
    stored as strings, become floats again)."""
    def finite(v):
        if isinstance(v, str) and v in ("nan", "inf", "-inf"):
            return float(v)
        if isinstance(v, list):
            return [finite(x) for x in v]
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        return v
    return finite(json.loads(Path(path).read_text()))


def select(results, dataset, activation, dropout):
    """The runs of one configuration, sorted by seed."""
    return sorted((r for r in results["runs"] if r["dataset"] == dataset
                   and r["activation"] == activation and r["dropout"] == dropout),
                  key=lambda r: r["seed"])


def curves(runs, key):
    """(seeds, epochs) array of one per-epoch series."""
    return np.array([r[key] for r in runs], dtype=float)


def paired(results, dataset, activation, dropout, key, reference="gelu"):
    """Per-seed differences ``activation - reference`` of the final ``key``.

    Returns
    -------
    dict
        ``diffs`` (one per seed both have), ``mean``, ``std`` (ddof=1),
        ``se`` (std / sqrt(n)), ``exceeds`` (|mean| > 2 se), ``n``.
    """
    ref = {r["seed"]: r[key][-1] for r in select(results, dataset, reference, dropout)}
    new = {r["seed"]: r[key][-1] for r in select(results, dataset, activation, dropout)}
    d = np.array([new[s] - ref[s] for s in sorted(ref.keys() & new.keys())])
    n = len(d)
    std = float(d.std(ddof=1)) if n > 1 else math.nan
    se = std / math.sqrt(n) if n > 1 else math.nan
    mean = float(d.mean()) if n else math.nan
    return {"diffs": d.tolist(), "mean": mean, "std": std, "se": se, "n": n,
            "exceeds": bool(n > 1 and abs(mean) > 2 * se)}


def _pm(a, fmt):
    a = np.asarray(a, dtype=float)
    s = a.std(ddof=1) if len(a) > 1 else math.nan
    return f"{a.mean():{fmt}} ± {s:{fmt}}"


def _dropouts(results):
    return sorted({r["dropout"] for r in results["runs"]})


def paper_table(results, dataset):
    """Markdown: final training/test loss and test accuracy per activation and
    dropout setting (mean ± std over seeds), and the training time."""
    lines = ["| dropout | activation | train log loss | test log loss | test accuracy (%) "
             "| s per run |", "|---|---|---:|---:|---:|---:|"]
    for dropout in (0.0, results["settings"]["dropout"]):
        for act in PAPER_ACTIVATIONS:
            runs = select(results, dataset, act, dropout)
            if not runs:
                continue
            lines.append(f"| {dropout:g} | {LABELS[act]} "
                         f"| {_pm(curves(runs, 'train_loss')[:, -1], '.2e')} "
                         f"| {_pm(curves(runs, 'test_loss')[:, -1], '.3f')} "
                         f"| {_pm(100 * curves(runs, 'test_acc')[:, -1], '.2f')} "
                         f"| {np.mean([r['seconds'] for r in runs]):.1f} |")
    return "\n".join(lines)


def approx_tables(results, dataset, dropout):
    """Markdown: the approximation study of one dataset and dropout setting:
    absolute numbers (mean ± std over seeds) and the paired differences to
    the exact GELU (mean ± std of the per-seed differences; "yes" where
    |mean| > 2 std/sqrt(n))."""
    acts = ["gelu"] + [f"gelu-{a}" for a in APPROXIMATIONS]
    info = results["activations"]
    absolute = ["| activation | max abs error | train log loss | test log loss "
                "| test accuracy (%) | s per run |", "|---|---:|---:|---:|---:|---:|"]
    diff = ["| activation | Δ train log loss | > 2 SE | Δ test log loss | > 2 SE "
            "| Δ test accuracy (pp) | > 2 SE |", "|---|---:|:-:|---:|:-:|---:|:-:|"]
    for act in acts:
        runs = select(results, dataset, act, dropout)
        if not runs:
            continue
        err = info[act]["max_abs_error"]
        absolute.append(f"| {LABELS[act]} | {err:.2g} "
                        f"| {_pm(curves(runs, 'train_loss')[:, -1], '.2e')} "
                        f"| {_pm(curves(runs, 'test_loss')[:, -1], '.4f')} "
                        f"| {_pm(100 * curves(runs, 'test_acc')[:, -1], '.2f')} "
                        f"| {np.mean([r['seconds'] for r in runs]):.1f} |")
        if act == "gelu":
            continue
        cells = []
        for key, scale, fmt in (("train_loss", 1, "+.2e"), ("test_loss", 1, "+.4f"),
                                ("test_acc", 100, "+.2f")):
            p = paired(results, dataset, act, dropout, key)
            cells += [f"{scale * p['mean']:{fmt}} ± {scale * p['std']:{fmt[1:]}}",
                      "yes" if p["exceeds"] else "no"]
        diff.append(f"| {LABELS[act]} | " + " | ".join(cells) + " |")
    return "\n".join(absolute), "\n".join(diff)


def reading(results):
    """Plain sentences that restate what the tables show."""
    out = []
    for ds in DATASETS:
        for dropout in (0.0, results["settings"]["dropout"]):
            final = {a: curves(select(results, ds, a, dropout), "train_loss")[:, -1]
                     for a in PAPER_ACTIVATIONS}
            if any(len(v) == 0 for v in final.values()):
                continue
            n = len(final["gelu"])
            order = sorted(PAPER_ACTIVATIONS, key=lambda a: final[a].mean())
            ranks = ", ".join(f"{LABELS[a]} {final[a].mean():.2e}" for a in order)
            wins = ", ".join(f"{LABELS[a]} in {int((final['gelu'] < final[a]).sum())} of {n}"
                             for a in PAPER_ACTIVATIONS if a != "gelu")
            acc = {a: 100 * curves(select(results, ds, a, dropout), "test_acc")[:, -1].mean()
                   for a in PAPER_ACTIVATIONS}
            out.append(f"- {ds}, dropout {dropout:g}: mean final training log loss, lowest "
                       f"first: {ranks}.  GELU's was below {wins} seeds (paired: same "
                       f"initial weights and batches).  Mean final test accuracy: "
                       + ", ".join(f"{LABELS[a]} {acc[a]:.2f} %" for a in PAPER_ACTIVATIONS)
                       + ".")
    for ds in DATASETS:
        for dropout in results["settings"]["approx_dropouts"]:
            flagged, largest = [], None
            for a in APPROXIMATIONS:
                act = f"gelu-{a}"
                if not select(results, ds, act, dropout):
                    continue
                for key in METRICS:
                    p = paired(results, ds, act, dropout, key)
                    if p["exceeds"]:
                        k, unit = (100, " pp") if key == "test_acc" else (1, "")
                        flagged.append(f"{a} ({key.replace('_', ' ')}: mean difference "
                                       f"{k * p['mean']:+.3g}{unit}, 2 SE "
                                       f"{2 * k * p['se']:.2g}{unit})")
                p = paired(results, ds, act, dropout, "test_acc")
                if largest is None or abs(p["mean"]) > abs(largest[0]):
                    largest = (p["mean"], a)
            if largest is None:         # no approximation runs for this setting
                continue
            exact = curves(select(results, ds, "gelu", dropout), "train_loss")[:, -1]
            drift = ", ".join(
                f"{a} {relative_drift(results, ds, f'gelu-{a}', dropout).mean():.1e}"
                for a in APPROXIMATIONS if select(results, ds, f"gelu-{a}", dropout))
            spread = (f"; the exact GELU's seed-to-seed spread (std / mean) is "
                      f"{exact.std(ddof=1) / exact.mean():.1e}" if len(exact) > 1 else "")
            out.append(f"- Approximations, {ds}, dropout {dropout:g}: the paired mean "
                       "difference to the exact GELU exceeds twice its standard error for "
                       + ("; ".join(flagged) if flagged else "none of the approximations and "
                          "metrics")
                       + (f".  The largest mean test-accuracy difference is {largest[1]}'s, "
                          f"{100 * largest[0]:+.2f} percentage points" if largest[0] else
                          ".  No approximation changed the mean test accuracy")
                       + ".  Final training loss, "
                       f"mean over seeds of |approximation / exact - 1|: {drift}{spread}.")
    for ds in DATASETS:
        t = {a: np.mean([r["seconds"] for r in select(results, ds, a, 0.0)])
             for a in ("gelu", "relu")}
        if all(np.isfinite(list(t.values()))):
            out.append(f"- Time, {ds}, no dropout: {t['gelu']:.1f} s per run with the exact "
                       f"GELU, {t['relu']:.1f} s with ReLU ({t['gelu'] / t['relu']:.2f}x; "
                       "wall-clock on a shared machine).")
    return "\n".join(out)


def relative_drift(results, dataset, activation, dropout, key="train_loss", epoch=-1):
    """Per seed, |activation / exact GELU - 1| of ``key`` at ``epoch``."""
    ref = {r["seed"]: r[key][epoch] for r in select(results, dataset, "gelu", dropout)}
    return np.array([abs(r[key][epoch] / ref[r["seed"]] - 1)
                     for r in select(results, dataset, activation, dropout) if r["seed"] in ref])


# ----------------------------------------------------------------- plots


def plot_loss_curves(results, path):
    """The paper's Figure 3 per dataset: training (top) and test (bottom)
    log loss against epoch; mean over seeds, band: min to max."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    fig, axes = plt.subplots(2, len(DATASETS), figsize=(6.2 * len(DATASETS), 8.2),
                             squeeze=False, sharex="col")
    for j, ds in enumerate(DATASETS):
        for i, key in enumerate(("train_loss", "test_loss")):
            ax = axes[i][j]
            for dropout, style in ((0.0, "-"), (results["settings"]["dropout"], "--")):
                for act in PAPER_ACTIVATIONS:
                    runs = select(results, ds, act, dropout)
                    if not runs:
                        continue
                    c = curves(runs, key)
                    ep = np.arange(c.shape[1])
                    ax.plot(ep, c.mean(0), style, color=COLORS[act], lw=1.6,
                            label=f"{LABELS[act]}, dropout {dropout:g}")
                    ax.fill_between(ep, c.min(0), c.max(0), color=COLORS[act], alpha=0.15, lw=0)
            ax.set_yscale("log")
            # plain numbers on the minor ticks: a panel that spans less than a
            # decade has no major tick label, and "2 x 10^0" reads badly
            ax.yaxis.set_minor_formatter(ticker.LogFormatter(labelOnlyBase=False,
                                                             minor_thresholds=(1, 0.5)))
            ax.grid(True, which="major", alpha=0.3)
            n = results["datasets"][ds]
            part = "training" if key == "train_loss" else "test"
            ax.set_title(f"{ds} ({n['n_train']} train / {n['n_test']} test): {part} log loss")
            ax.set_ylabel(f"{part} log loss (log scale)")
            if i == 1:
                ax.set_xlabel("epoch")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9)
    nseeds = len(results["settings"]["seeds"])
    fig.suptitle(f"8 x 128 fully connected, Adam lr {results['settings']['lr']:g}, batch "
                 f"{results['settings']['batch_size']}; mean of {nseeds} seeds, band: min–max; "
                 "solid: no dropout, dashed: dropout 0.5", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_approximations(results, path, dropout=0.0):
    """How far each approximation's runs drift from the exact GELU's.

    Rows 1-2: |approximation / exact - 1| of the training and test log loss,
    per epoch, paired by seed (same initial weights and batches), against
    the seed-to-seed spread of the exact GELU (std / mean over seeds); row
    3: the final test accuracy of every run, the same seed joined by a line.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    floor = 1e-9        # where an exact 0 is drawn on the log axis
    fig, axes = plt.subplots(3, len(DATASETS), figsize=(6.2 * len(DATASETS), 11.5),
                             squeeze=False)
    for j, ds in enumerate(DATASETS):
        for i, key in enumerate(("train_loss", "test_loss")):
            ax = axes[i][j]
            ref = curves(select(results, ds, "gelu", dropout), key)
            ep = np.arange(ref.shape[1])
            for a in APPROXIMATIONS:
                act = f"gelu-{a}"
                runs = select(results, ds, act, dropout)
                if not runs:
                    continue
                # relative, not absolute: the losses fall by orders of magnitude,
                # and a magnitude: the signed difference flips sign from epoch to
                # epoch and seed to seed, so its mean says little
                d = np.maximum(np.abs(curves(runs, key) / ref - 1), floor)
                err = results["activations"][act]["max_abs_error"]
                ax.plot(ep, d.mean(0), color=COLORS[act], lw=1.6,
                        label=f"{a} (max |error| {err:.1g})")
                ax.fill_between(ep, d.min(0), d.max(0), color=COLORS[act], alpha=0.12, lw=0)
            if len(ref) > 1:
                ax.plot(ep, ref.std(0, ddof=1) / ref.mean(0), "k--", lw=1.2,
                        label="seed spread of exact GELU (std / mean)")
            ax.set_yscale("log")
            ax.set_ylim(bottom=floor / 2)
            ax.grid(True, which="major", alpha=0.3)
            part = "training" if key == "train_loss" else "test"
            ax.set_title(f"{ds}: {part} log loss, |approximation / exact - 1|")
            ax.set_ylabel(f"relative difference (0 drawn at {floor:g})")
            ax.set_xlabel("epoch")
        ax = axes[2][j]
        acts = ["gelu"] + [f"gelu-{a}" for a in APPROXIMATIONS]
        by_seed = {}
        for k, act in enumerate(acts):
            runs = select(results, ds, act, dropout)
            acc = 100 * curves(runs, "test_acc")[:, -1] if runs else np.array([])
            ax.plot(np.full(len(acc), k), acc, "o", color=COLORS[act], alpha=0.7)
            if len(acc):
                ax.plot([k - 0.25, k + 0.25], [acc.mean()] * 2, color="k", lw=1.5)
            for r, v in zip(runs, acc):
                by_seed.setdefault(r["seed"], []).append((k, v))
        for pts in by_seed.values():        # the pairing: one grey line per seed
            ax.plot(*zip(*pts), color="0.6", lw=0.6, zorder=0)
        ax.set_xticks(range(len(acts)), ["exact"] + list(APPROXIMATIONS))
        ax.set_ylabel("final test accuracy (%)")
        ax.set_title(f"{ds}: final test accuracy per seed (bar: mean; grey: same seed)")
        ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9)
    fig.suptitle(f"GELU approximations against the exact GELU, dropout {dropout:g}; "
                 "same seed: same initial weights and batches; line: mean over seeds, band: "
                 "min–max", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ----------------------------------------------------------------- output


def _epochs_text(results):
    """'50 epochs on digits (600 Adam steps), ...'"""
    s = results["settings"]
    return ", ".join(
        f"{s['epochs'][ds]} epochs on {ds} "
        f"({s['epochs'][ds] * math.ceil(info['n_train'] / s['batch_size'])} Adam steps)"
        for ds, info in results["datasets"].items()) + (
        " (the paper's 50 epochs of MNIST's 55,000 training images are about 21,500 steps)")


def summary(results, command):
    """``summary.md``: setup, command, machine, tables, plots, the reading."""
    s = results["settings"]
    parts = [
        "# Hendrycks & Gimpel's MNIST experiment, offline, with gelu_numba.torch.GELU",
        f"Made {results['date']} by `{command}` in {results['seconds']:.0f} s on "
        f"{results['machine_line']}.",
        "## Setup",
        f"The paper's section 3.1 / Figure 3: a fully connected network of {s['depth']} hidden "
        f"layers of {s['width']} units with the activation after each and a linear output layer, "
        f"the paper code's initialisation (N(0, 1) weights, unit norm per unit; zero biases), "
        f"Adam with a fixed learning rate of {s['lr']:g} (the paper chose one of 1e-3, 1e-4, 1e-5 "
        f"per activation; no search here, so no validation split), batch size "
        f"{s['batch_size']}, " + _epochs_text(results) + ", without dropout and with dropout "
        f"{s['dropout']:g} after every hidden activation; seeds {list(s['seeds'])}.  Losses "
        "and accuracies: whole training and test set, eval mode (no dropout), after each "
        "epoch (\"final\": the last epoch).  MNIST itself is not available offline; instead:",
        "\n".join(f"- `{k}`: {v['n_train']} train / {v['n_test']} test, {v['n_features']} "
                  f"features, {v['n_classes']} classes; {v['source']}."
                  for k, v in results["datasets"].items()),
        "A seed fixes the initial weights, the batch order and the dropout masks, whatever "
        "the activation: runs of the same seed start from identical weights and see identical "
        "batches (SHA-256 of both in `results.json`), so differences between activations are "
        "paired.  Table cells: mean ± standard deviation over seeds.",
        "## The paper's comparison: GELU, ReLU, ELU",
        "![loss curves](loss_curves.png)",
    ]
    for ds in DATASETS:
        parts += [f"### {ds}", paper_table(results, ds)]
    parts += [
        "## Does the approximation matter?",
        "The exact GELU (`gelu_numba.torch.GELU()`) against `GELU(approximate=...)`: "
        + ", ".join(f"`{a}` (max |error| {results['activations'][f'gelu-{a}']['max_abs_error']:.2g}"
                    f": {results['activations'][f'gelu-{a}']['description']})"
                    for a in APPROXIMATIONS)
        + ".  The paper's own MNIST code (`mnist_fcn.py` in hendrycks/GELUs) used the tanh form "
          "as its GELU.  Δ: per seed, approximation minus exact GELU (same initial weights and "
          "batches), "
          "then mean ± standard deviation over seeds; \"> 2 SE\": |mean Δ| exceeds twice its "
          "standard error (std/√n), a rough test of \"more than seed noise\".",
        "![approximations](approximations.png)",
    ]
    for ds in DATASETS:
        for dropout in s["approx_dropouts"]:
            a, d = approx_tables(results, ds, dropout)
            parts += [f"### {ds}, dropout {dropout:g}", a, d]
    parts += ["## Reading", reading(results),
              "Files: `results.json` (every run's per-epoch numbers, hashes and times), "
              "`loss_curves.png`, `approximations.png`.  Times per run are wall-clock on a "
              "shared machine."]
    return "\n\n".join(parts) + "\n"


def save(results, out, command):
    """Write ``results.json``, the two PNGs and ``summary.md`` into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = dict(results, command=command)
    paths = [out / "results.json"]
    paths[0].write_text(json.dumps(jsonable(results), indent=1) + "\n")
    paths.append(plot_loss_curves(results, out / "loss_curves.png"))
    paths.append(plot_approximations(results, out / "approximations.png",
                                     results["settings"]["approx_dropouts"][0]))
    paths.append(out / "summary.md")
    paths[-1].write_text(summary(results, command))
    return paths


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m analysis.paper",
                                description="Hendrycks & Gimpel's MNIST experiment, offline.")
    p.add_argument("--quick", action="store_true",
                   help="2 seeds, 3 epochs, a smaller MNIST-1D (seconds)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"output folder (default {OUT}; with --quick a new temporary folder)")
    p.add_argument("--seeds", type=int_arg, default=None, help="number of seeds (0 .. n-1)")
    p.add_argument("--epochs", type=int_arg, default=None, help="epochs per run, every dataset")
    p.add_argument("--no-progress", action="store_true", help="no line per run")
    p.add_argument("--from-results", type=Path, default=None, metavar="JSON",
                   help="train nothing: rewrite summary.md and the PNGs from this "
                        "results.json (into --out, default: the JSON's folder)")
    args = p.parse_args(argv)
    if args.from_results is not None:
        results = load(args.from_results)
        for path in save(results, args.out or args.from_results.parent, results["command"]):
            print(f"wrote {path}")
        return 0
    settings = QUICK if args.quick else FULL
    if args.seeds is not None:
        settings = replace(settings, seeds=tuple(range(args.seeds)))
    if args.epochs is not None:
        settings = replace(settings, epochs=dict.fromkeys(DATASETS, args.epochs))
    out = args.out
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="paper-quick-")) if args.quick else OUT
    command = "python -m analysis.paper" + (" " + " ".join(argv if argv is not None
                                                            else sys.argv[1:])).rstrip()
    results = run(settings, progress=not args.no_progress)
    for path in save(results, out, command):
        print(f"wrote {path}")
    print(f"{len(results['runs'])} runs in {results['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
