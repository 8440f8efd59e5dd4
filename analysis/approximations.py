"""The approximation study: error and speed of every registered
approximation, and of every production GELU we emulate.

Usage::

    python -m analysis.approximations [--out analysis/results/approximations]
                                      [--n 1048576] [--rounds 11] [--samples 120]
                                      [--exhaustive DIR | --stride 4099]

For every entry of :data:`gelu_numba.approximations.APPROXIMATIONS`, for
``half32`` (:func:`gelu_numba.half.gelu_half32`, float32 only: in the table,
the frontier and the half answer, not in ``approximations.csv``) and for
every entry of :data:`gelu_numba.production.PRODUCTION` it prints and saves
(markdown, ``approximations.csv`` for ours, ``production.csv`` for theirs,
two PNGs):

* the float32 error tables of :mod:`analysis.exhaustive`: max ulp against
  the exact GELU, float32 inputs beyond 1 ulp, max abs error on |x| <= 10,
  max relative error on the normal range, where the relative error first
  reaches 1e-1, 1e-3 and 1e-6 in the negative tail, and how many float16
  and bfloat16 inputs give the correctly rounded GELU.  With
  ``--exhaustive DIR`` (default: ``analysis/results/exhaustive`` when it
  holds a stride-1 run of every entry) they come from the committed
  exhaustive run (``python -m analysis.exhaustive``); otherwise from a
  strided sweep (every ``--stride``-th float32 bit pattern), and the table
  says so;
* for ours: max |error| against the exact GELU and where over all real x
  (mpmath, from the registry) and the derivative's;
* the implementation error in ulps against the approximation's own formula
  (mpmath), float32 and float64, on ``--samples`` inputs;
* throughput in G elements/s, float32 (and float64 for ours), on ``--n``
  standard normal elements with a preallocated output (``out=``), timed in
  interleaved rounds side by side with the exact ``gelu`` (median), and the
  speed-up over the exact gelu and over ``gelu_tanh``.  For production
  entries this is the speed of our Numba emulation, not of the library;
* the half-precision answer: the fastest of ours whose float16 (and
  separately bfloat16) results, computed in float32 and rounded once, are
  wrong on no more inputs than the exact gelu's (the double-rounding floor
  of that pipeline; see :mod:`analysis.exhaustive`);
* ``errors.png``: |error| against x (ours; production); ``frontier.png``:
  max abs error (float32 sweep, |x| <= 10) against float32 throughput, with
  the exact gelu, the Pareto frontier and the production emulations marked.
"""

import argparse
import math
import csv
import sys
from pathlib import Path

import mpmath as mp
import numpy as np

from analysis import exhaustive
from benchmarks.machine import machine_info
from benchmarks.targets import medians
from reference import approx

OUT = Path(__file__).resolve().parent / "results" / "approximations"


def throughput(recs, exact, n, rounds, dtype):
    """G elements/s of each forward ufunc and of the exact gelu."""
    x = np.random.default_rng(0).standard_normal(n).astype(dtype)
    out = np.empty_like(x)
    funcs = {"gelu (exact)": lambda: exact(x, out=out)}
    for name, r in recs.items():
        funcs[name] = (lambda f: (lambda: f(x, out=out)))(r.forward)
    t = medians(funcs, rounds)                  # (median, min) seconds
    return {k: n / v[0] / 1e9 for k, v in t.items()}


def impl_error(rec, formulas, samples):
    """Max ulp error of forward and grad against their own formula."""
    from reference.mp import ulp_error
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(0, 3, samples - samples // 4),
                        rng.uniform(-1.0, -0.5, samples // 4)])
    f, df = formulas
    res = {}
    for dtype in (np.float32, np.float64):
        xd = x.astype(dtype)
        for label, uf, form in (("fwd", rec.forward, f), ("grad", rec.grad, df)):
            y = uf(xd)
            with mp.workdps(50):
                res[f"{label}_{np.dtype(dtype).name}"] = max(
                    ulp_error(float(a), form(float(b)), dtype) for a, b in zip(y, xd))
    return res


class _Half32:
    """gelu_numba.half.gelu_half32 where a registry record is expected."""

    @property
    def forward(self):
        from gelu_numba.half import gelu_half32
        return gelu_half32


def frontier(rows):
    """Names on the Pareto frontier (no other entry both faster and more
    accurate), by float32 throughput and the float32 sweep's max abs error."""
    best = []
    for r in sorted(rows, key=lambda r: -r["gelems_f32"]):
        if not best or r["max_abs_10"] < best[-1]["max_abs_10"]:
            best.append(r)
    return [r["name"] for r in best]


def errors(sweep_dir, names, stride, workers):
    """``(float32 rows by (name, part), half rows by name, meta)``: from the
    committed exhaustive run in ``sweep_dir`` if it is complete (stride 1,
    every name), else from a sweep with ``stride`` run now."""
    import json
    if sweep_dir is not None:
        f32 = json.loads((sweep_dir / "float32.json").read_text())
        half = json.loads((sweep_dir / "half.json").read_text())
        rows = {(r["name"], r["part"]): r for r in f32["rows"]}
        hrows = {r["name"]: r for r in half["rows"]}
        if f32["meta"]["stride"] == 1 and all((n, "fwd") in rows and n in hrows for n in names):
            return rows, hrows, f32["meta"]
        print(f"{sweep_dir}: not a complete stride-1 run of every entry; sweeping "
              f"with stride {stride}", flush=True)
    import time
    t0 = time.perf_counter()
    stats = exhaustive.sweep(names, stride, workers, progress=False)
    rows = {key: exhaustive.row(*key, s) for key, s in stats.items()}
    hrows = {r["name"]: r for r in exhaustive.half_table(names)}
    meta = {"command": f"analysis.exhaustive.sweep(stride={stride})", "stride": stride,
            "inputs": -(-exhaustive.N_PATTERNS // stride), "workers": workers,
            "seconds": time.perf_counter() - t0}
    return rows, hrows, meta


def _sweep_columns(f32, half, name):
    fwd = f32[(name, "fwd")]
    grad = f32.get((name, "grad"))
    h = half[name]
    return {
        "max_ulp_f32": fwd["max_ulp"], "max_ulp_at": fwd["worst_ulp_x"],
        "over_1ulp_f32": fwd["over_1ulp"], "checked_f32": fwd["checked"],
        "max_abs_10": fwd["max_abs_10"], "max_rel_normal": fwd["max_rel_normal"],
        "rel_1e-1_fails_below": fwd["rel_0.1_fails_below"],
        "rel_1e-3_fails_below": fwd["rel_0.001_fails_below"],
        "rel_1e-6_fails_below": fwd["rel_1e-06_fails_below"],
        "grad_max_ulp_f32": None if grad is None else grad["max_ulp"],
        "grad_max_abs_10": None if grad is None else grad["max_abs_10"],
        "float16_wrong": h["float16_gelu_wrong"], "bfloat16_wrong": h["bfloat16_gelu_wrong"],
        "float16_grad_wrong": h["float16_gelu_grad_wrong"],
        "bfloat16_grad_wrong": h["bfloat16_gelu_grad_wrong"],
        "float16_inputs": h["float16_gelu_inputs"], "bfloat16_inputs": h["bfloat16_gelu_inputs"],
    }


def half_answer(rows, exact):
    """For each format, the fastest of ``rows`` (ours) whose results in that
    format are wrong on no more inputs than the exact gelu's, else the one
    with the fewest wrong: ``{fmt: (row, floor)}``."""
    out = {}
    for fmt in ("float16", "bfloat16"):
        floor = exact[f"{fmt}_wrong"]
        at_floor = [r for r in rows if r[f"{fmt}_wrong"] <= floor]
        pick = (max(at_floor, key=lambda r: r["gelems_f32"]) if at_floor
                else min(rows, key=lambda r: (r[f"{fmt}_wrong"], -r["gelems_f32"])))
        out[fmt] = (pick, floor)
    return out


def _pick_text(fmt, pick, floor):
    r = pick
    if r[f"{fmt}_wrong"] <= floor:
        return (f"{fmt}: `{r['name']}` is the fastest approximation that is as right as "
                f"the exact gelu ({r[f'{fmt}_wrong']:,} of {r[f'{fmt}_inputs']:,} inputs "
                f"wrong, the floor of float32-then-round is {floor:,}), "
                f"{r['gelems_f32']:.2f} G elem/s, {r['speedup_vs_gelu_f32']:.2f}x the exact gelu.")
    return (f"{fmt}: none of ours reaches the floor ({floor:,} wrong); the fewest wrong: "
            f"`{r['name']}` with {r[f'{fmt}_wrong']:,} of {r[f'{fmt}_inputs']:,}.")


COLUMNS = ["name", "kind", "max_abs_error", "at_x", "grad_max_abs_error", "grad_at_x",
           "tail_fit_rel_error",
           "max_ulp_f32", "max_ulp_at", "over_1ulp_f32", "checked_f32", "max_abs_10",
           "max_rel_normal", "rel_1e-1_fails_below", "rel_1e-3_fails_below",
           "rel_1e-6_fails_below", "grad_max_ulp_f32", "grad_max_abs_10",
           "float16_wrong", "bfloat16_wrong", "float16_grad_wrong", "bfloat16_grad_wrong",
           "float16_inputs", "bfloat16_inputs",
           "ulp_fwd_float32", "ulp_fwd_float64", "ulp_grad_float32", "ulp_grad_float64",
           "gelems_f32", "gelems_f64", "speedup_vs_gelu_f32", "speedup_vs_tanh_f32"]

PRODUCTION_COLUMNS = ["name", "library", "runs", "formula", "source", "checked",
                      "max_ulp_f32", "max_ulp_at", "over_1ulp_f32", "checked_f32",
                      "max_abs_10", "max_rel_normal", "rel_1e-1_fails_below",
                      "rel_1e-3_fails_below", "rel_1e-6_fails_below",
                      "grad_max_ulp_f32", "grad_max_abs_10",
                      "float16_wrong", "bfloat16_wrong", "float16_grad_wrong",
                      "bfloat16_grad_wrong", "float16_inputs", "bfloat16_inputs",
                      "gelems_f32", "speedup_vs_gelu_f32"]


def _row(rows, name):
    return next((r for r in rows if r["name"] == name), {})


def _g(v, spec=".3g"):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(v, spec)


def _share(wrong, n):
    return "-" if wrong is None else f"{(n - wrong) / n:.2%} ({wrong:,})"


def _error_cells(r):
    return (f"| {_g(r['max_ulp_f32'])} | {r['over_1ulp_f32']:,} | {_g(r['max_abs_10'])} "
            f"| {_g(r['max_rel_normal'])} | {_g(r['rel_1e-1_fails_below'], '.3g')} / "
            f"{_g(r['rel_1e-3_fails_below'], '.3g')} / {_g(r['rel_1e-6_fails_below'], '.3g')} "
            f"| {_share(r['float16_wrong'], r['float16_inputs'])} "
            f"| {_share(r['bfloat16_wrong'], r['bfloat16_inputs'])} ")


_ERROR_HEAD = ("| max ulp (float32) | float32 inputs > 1 ulp | max abs err, \\|x\\| <= 10 "
               "| max rel err (normal range) | rel err reaches 1e-1 / 1e-3 / 1e-6 at x "
               "| float16 exact (wrong) | bfloat16 exact (wrong) ")


def markdown(rows, prod, exact, meta, n, machine, answer):
    sweep = ("all 2^32 float32 inputs (`" + meta["command"] + "`)" if meta["stride"] == 1
             else f"every {meta['stride']}-th float32 bit pattern ({meta['inputs']:,} "
                  "inputs; not exhaustive: `python -m analysis.exhaustive` for all 2^32)")
    lines = [
        "## Ours (`gelu_numba.approximations`)", "",
        "| name | max abs error, all real x (at \\|x\\|) | grad max abs error " + _ERROR_HEAD
        + "| G elem/s f32 | G elem/s f64 | vs exact gelu f32 | vs gelu_tanh f32 |",
        "|" + "---|" * 15]
    for r in rows + [exact]:
        allx = ("< 1 ulp" if r["name"] == "gelu (exact)"
                else "(float32 only)" if r["max_abs_error"] is None
                else f"{r['max_abs_error']:.3g} ({abs(r['at_x']):.3f})")
        gx = ("< 1 ulp" if r["name"] == "gelu (exact)" else _g(r["grad_max_abs_error"]))
        lines.append(f"| {r['name']} | {allx} | {gx} " + _error_cells(r)
                     + f"| {r['gelems_f32']:.2f} | {_g(r.get('gelems_f64'), '.2f')} "
                     f"| {r['speedup_vs_gelu_f32']:.2f}x | {_g(r.get('speedup_vs_tanh_f32'), '.2f')}x |")
    lines += ["", "`half32` is `gelu_numba.half.gelu_half32`: float32 arithmetic, no "
              "float64 loop and no derivative; its tail fit's certified relative error is "
              f"{_g(_row(rows, 'half32').get('tail_fit_rel_error'))} "
              "(gelu_numba/tables/half_fit.py).", "",
              f"Frontier (fastest first, float32 sweep's max abs error): "
              f"{', '.join(frontier(rows))}.", "",
              "## Production GELUs, emulated (`gelu_numba.production`)", "",
              "| name | who runs it " + _ERROR_HEAD + "| backward max ulp | emulation G elem/s |",
              "|" + "---|" * 11]
    for r in prod:
        lines.append(f"| {r['name']} | {r['runs']} " + _error_cells(r)
                     + f"| {_g(r['grad_max_ulp_f32'])} | {r['gelems_f32']:.2f} |")
    lines += ["", "## The cheapest GELU that is right in half precision", ""]
    lines += [f"- {_pick_text(fmt, *answer[fmt])}" for fmt in ("float16", "bfloat16")]
    lines += [
        "", f"Errors: {sweep}; reference: gelu_numba's float64 gelu and gelu_grad "
        "(< 0.75 float64 ulp, checked against mpmath). \"rel err reaches t at x\": the "
        "largest x <= -1 whose relative error is >= t (the result is relatively right "
        "on (x, -1] and no further; even a correctly rounded float32 result reaches "
        "1e-6 once it is subnormal, see the exact row). Half precision: every finite "
        "float16 and bfloat16 input, the result (computed in float32 and rounded once, "
        "or the library's own half arithmetic) against the correctly rounded GELU "
        "(tests/data/half_reference.npz, mpmath).",
        f"Throughput: {n} standard-normal float32 elements, out= preallocated, median of "
        f"interleaved rounds, one thread; production rows time our Numba emulation, not "
        f"the library; machine: {machine['cpu']}, numba {machine['numba']}, "
        f"numpy {machine['numpy']}."]
    return "\n".join(lines) + "\n"


def plots(rows, prod, recs, prod_recs, exact_speed, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from reference import f64

    x = np.linspace(-7, 7, 14001)
    exact = f64.gelu(x)
    x32 = x.astype(np.float32)
    exact32 = f64.gelu(x32)
    fig, axes = plt.subplots(1, 2, figsize=(15, 5.5), sharey=True)
    for ax, group, title in ((axes[0], recs, "ours (float64 evaluation)"),
                             (axes[1], prod_recs, "production, emulated (float32)")):
        for name, r in group.items():
            if group is recs:
                err = np.abs(r.forward(x) - exact)
                ax.semilogy(x, np.maximum(err, 1e-18), lw=1, label=name)
            else:
                with np.errstate(all="ignore"):
                    err = np.abs(r.forward(x32).astype(np.float64) - exact32)
                ax.semilogy(x32, np.maximum(err, 1e-18), lw=0.8, label=name)
        ax.set_xlabel("x")
        ax.set_title(f"|approximation(x) - GELU(x)|: {title}")
        ax.set_ylim(1e-12, 1e-1)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(ncol=2, fontsize=7)
    axes[0].set_ylabel("absolute error")
    fig.tight_layout()
    fig.savefig(out / "errors.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 6))
    front = set(frontier(rows))
    for r in rows:
        on = r["name"] in front
        ax.scatter(r["gelems_f32"], r["max_abs_10"], s=40 if on else 20,
                   color="C3" if on else "C0", zorder=3)
        ax.annotate(r["name"], (r["gelems_f32"], r["max_abs_10"]),
                    textcoords="offset points", xytext=(5, 3), fontsize=8)
    for r in prod:
        ax.scatter(r["gelems_f32"], max(r["max_abs_10"], 1e-12), marker="x", color="C2",
                   zorder=3)
        ax.annotate(r["name"], (r["gelems_f32"], max(r["max_abs_10"], 1e-12)),
                    textcoords="offset points", xytext=(5, -8), fontsize=6, color="C2")
    ax.scatter([], [], marker="x", color="C2", label="production (emulated; speed of the emulation)")
    fr = sorted((r for r in rows if r["name"] in front), key=lambda r: r["gelems_f32"])
    ax.plot([r["gelems_f32"] for r in fr], [r["max_abs_10"] for r in fr],
            color="C3", lw=1, label="frontier (ours)")
    ax.axvline(exact_speed, color="k", ls="--", lw=1,
               label=f"exact gelu ({exact_speed:.2f} G/s, error < 1 ulp)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("float32 throughput (G elements/s, one core, out= preallocated)")
    ax.set_ylabel("max |error| against exact GELU, float32, |x| <= 10")
    ax.set_title("Accuracy against speed")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "frontier.png", dpi=110)
    plt.close(fig)


def build_parser():
    p = argparse.ArgumentParser(prog="python -m analysis.approximations",
                                description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=OUT, help="output folder")
    p.add_argument("--n", type=int, default=2**20, help="elements per timing")
    p.add_argument("--rounds", type=int, default=11, help="interleaved rounds")
    p.add_argument("--samples", type=int, default=120,
                   help="inputs per dtype for the ulp error against mpmath")
    p.add_argument("--exhaustive", type=Path, default=exhaustive.OUT,
                   help="folder of a committed python -m analysis.exhaustive run")
    p.add_argument("--stride", type=int, default=4099,
                   help="float32 sweep stride when no complete exhaustive run is given")
    p.add_argument("--workers", type=int, default=1, help="processes for that sweep")
    p.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    return p


def _write_csv(path, columns, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        w.writerows({k: r.get(k) for k in columns} for r in rows)


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.n < 1000 or args.rounds < 1 or args.samples < 8 or args.stride < 1:
        print("error: --n must be >= 1000, --rounds >= 1, --samples >= 8, --stride >= 1",
              file=sys.stderr)
        return 2
    import gelu_numba as g
    from gelu_numba.approximations import APPROXIMATIONS
    from gelu_numba.production import PRODUCTION

    machine = machine_info()
    print(f"machine: {machine['cpu']} ({machine['cpu_count']} cores), "
          f"numba {machine['numba']}")
    recs = dict(APPROXIMATIONS)
    prod_recs = dict(PRODUCTION)
    names = ["gelu", *recs, "half32", *prod_recs]
    sweep_dir = args.exhaustive if (args.exhaustive / "float32.json").exists() else None
    f32, half, meta = errors(sweep_dir, names, args.stride, args.workers)
    speed = {}
    for dtype in ("float32", "float64"):
        print(f"timing {dtype} ...", flush=True)
        speed[dtype] = throughput(recs if dtype == "float64"
                                  else {**recs, "half32": _Half32(), **prod_recs},
                                  g.gelu, args.n, args.rounds, dtype)
    exact_f32 = speed["float32"]["gelu (exact)"]
    rows = []
    for name, r in recs.items():
        print(f"errors of {name} ...", flush=True)
        ulps = impl_error(r, approx.formulas(name), args.samples)
        rows.append({
            "name": name, "kind": r.kind, "max_abs_error": r.max_abs_error,
            "at_x": r.max_abs_error_at,
            "grad_max_abs_error": r.grad_max_abs_error,
            "grad_at_x": r.grad_max_abs_error_at,
            **_sweep_columns(f32, half, name),
            "ulp_fwd_float32": ulps["fwd_float32"], "ulp_fwd_float64": ulps["fwd_float64"],
            "ulp_grad_float32": ulps["grad_float32"],
            "ulp_grad_float64": ulps["grad_float64"],
            "gelems_f32": speed["float32"][name], "gelems_f64": speed["float64"][name],
            "speedup_vs_gelu_f32": speed["float32"][name] / exact_f32,
            "speedup_vs_tanh_f32": speed["float32"][name] / speed["float32"]["tanh"],
        })
    from gelu_numba.tables import half_fit
    h32 = ({
        "name": "half32", "kind": "fit (float32 arithmetic, for half formats)",
        "max_abs_error": None, "at_x": None, "grad_max_abs_error": None, "grad_at_x": None,
        "tail_fit_rel_error": half_fit.MAX_REL_ERROR,
        **_sweep_columns(f32, half, "half32"),
        "gelems_f32": speed["float32"]["half32"], "gelems_f64": None,
        "speedup_vs_gelu_f32": speed["float32"]["half32"] / exact_f32,
        "speedup_vs_tanh_f32": speed["float32"]["half32"] / speed["float32"]["tanh"],
    })
    exact = {"name": "gelu (exact)", **_sweep_columns(f32, half, "gelu"),
             "gelems_f32": exact_f32, "gelems_f64": speed["float64"]["gelu (exact)"],
             "speedup_vs_gelu_f32": 1.0, "speedup_vs_tanh_f32": exact_f32 / speed["float32"]["tanh"]}
    prod = [{"name": name, "library": e.library, "runs": e.runs, "formula": e.formula,
             "source": e.source, "checked": e.checked, **_sweep_columns(f32, half, name),
             "gelems_f32": speed["float32"][name],
             "speedup_vs_gelu_f32": speed["float32"][name] / exact_f32}
            for name, e in prod_recs.items()]
    # approximations.csv holds the registry's rows; half32 (float32 only, not
    # in the registry) is in the table, the frontier and the half answer
    ours = rows + [h32]
    answer = half_answer(ours, exact)
    args.out.mkdir(parents=True, exist_ok=True)
    md = markdown(ours, prod, exact, meta, args.n, machine, answer)
    print(md)
    (args.out / "approximations.md").write_text(md)
    _write_csv(args.out / "approximations.csv", COLUMNS, rows)
    _write_csv(args.out / "production.csv", PRODUCTION_COLUMNS, prod)
    if not args.no_plots:
        plots(ours, prod, recs, prod_recs, exact_f32, args.out)
    print(f"wrote {args.out}/approximations.md, approximations.csv, production.csv"
          + ("" if args.no_plots else ", errors.png, frontier.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
