"""The approximation study: error and speed of every registered approximation.

Usage::

    python -m analysis.approximations [--out analysis/results/approximations]
                                      [--n 1048576] [--rounds 11] [--samples 120]

For every entry of :data:`gelu_numba.approximations.APPROXIMATIONS` it
prints and saves (markdown, CSV, two PNGs):

* max |error| against the exact GELU and where (mpmath, from the registry),
  the max relative error on [-8, 8] and where (float64 evaluation against the
  mpmath-validated float64 reference ``gelu_numba.reference.f64``), and the
  derivative's max |error| against GELU';
* the implementation error in ulps against the approximation's own formula
  (mpmath), float32 and float64, on ``--samples`` inputs;
* throughput in G elements/s, float32 and float64, on ``--n`` standard normal
  elements with a preallocated output (``out=``), timed in interleaved
  rounds side by side with the exact ``gelu`` (median), and the speed-up
  over the exact gelu and over ``gelu_tanh``;
* ``errors.png``: |error| against x; ``frontier.png``: max |error| against
  float32 throughput, with the exact gelu and the Pareto frontier.
"""

import argparse
import csv
import sys
from pathlib import Path

import mpmath as mp
import numpy as np

from analysis.common import machine_info
from benchmarks.targets import medians
from gelu_numba.reference import approx

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
    from gelu_numba.reference.mp import ulp_error
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


def relative_error(rec):
    from gelu_numba.reference import f64
    x = np.linspace(-8, 8, 64001)
    x = x[x != 0]
    exact = f64.gelu(x)
    rel = np.abs(rec.forward(x) - exact) / np.abs(exact)
    i = int(np.argmax(rel))
    return float(rel[i]), float(x[i])


def frontier(rows):
    """Names on the Pareto frontier (no other entry both faster and more
    accurate), by float32 throughput."""
    best = []
    for r in sorted(rows, key=lambda r: -r["gelems_f32"]):
        if not best or r["max_abs_error"] < best[-1]["max_abs_error"]:
            best.append(r)
    return [r["name"] for r in best]


def plots(rows, recs, exact_speed, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from gelu_numba.reference import f64

    x = np.linspace(-7, 7, 14001)
    exact = f64.gelu(x)
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for name, r in recs.items():
        err = np.abs(r.forward(x) - exact)
        ax.semilogy(x, np.maximum(err, 1e-18), lw=1, label=name)
    ax.set_xlabel("x")
    ax.set_ylabel("|approximation(x) - GELU(x)|  (float64 evaluation)")
    ax.set_title("Absolute error of the GELU approximations")
    ax.set_ylim(1e-12, 1e-1)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(ncol=3, fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "errors.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 5.5))
    front = set(frontier(rows))
    for r in rows:
        on = r["name"] in front
        ax.scatter(r["gelems_f32"], r["max_abs_error"], s=40 if on else 20,
                   color="C3" if on else "C0", zorder=3)
        ax.annotate(r["name"], (r["gelems_f32"], r["max_abs_error"]),
                    textcoords="offset points", xytext=(5, 3), fontsize=8)
    fr = sorted((r for r in rows if r["name"] in front), key=lambda r: r["gelems_f32"])
    ax.plot([r["gelems_f32"] for r in fr], [r["max_abs_error"] for r in fr],
            color="C3", lw=1, label="frontier")
    ax.axvline(exact_speed, color="k", ls="--", lw=1,
               label=f"exact gelu ({exact_speed:.2f} G/s, error < 1 ulp)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("float32 throughput (G elements/s, one core, out= preallocated)")
    ax.set_ylabel("max |error| against exact GELU over all real x")
    ax.set_title("Accuracy against speed")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "frontier.png", dpi=110)
    plt.close(fig)


COLUMNS = ["name", "kind", "max_abs_error", "at_x", "max_rel_error_8", "rel_at_x",
           "grad_max_abs_error", "grad_at_x", "ulp_fwd_float32", "ulp_fwd_float64",
           "ulp_grad_float32", "ulp_grad_float64", "gelems_f32", "gelems_f64",
           "speedup_vs_gelu_f32", "speedup_vs_tanh_f32"]


def markdown(rows, exact_f32, exact_f64, n, machine):
    head = ("| name | max abs error | at \\|x\\| | max rel error on [-8, 8] | at x "
            "| grad max abs error | impl. ulp f32/f64 (fwd; grad) "
            "| G elem/s f32 | G elem/s f64 | vs exact gelu f32 | vs gelu_tanh f32 |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['max_abs_error']:.3g} | {abs(r['at_x']):.3f} "
            f"| {r['max_rel_error_8']:.3g} | {r['rel_at_x']:.2f} "
            f"| {r['grad_max_abs_error']:.3g} "
            f"| {r['ulp_fwd_float32']:.2f}/{r['ulp_fwd_float64']:.2f}; "
            f"{r['ulp_grad_float32']:.2f}/{r['ulp_grad_float64']:.2f} "
            f"| {r['gelems_f32']:.2f} | {r['gelems_f64']:.2f} "
            f"| {r['speedup_vs_gelu_f32']:.2f}x | {r['speedup_vs_tanh_f32']:.2f}x |")
    lines.append(f"| gelu (exact) | < 1 ulp | | | | | 0.50 | {exact_f32:.2f} "
                 f"| {exact_f64:.2f} | 1.00x | |")
    lines.append("")
    lines.append(f"Throughput: {n} standard-normal elements, out= preallocated, "
                 f"median of interleaved rounds, one thread; machine: "
                 f"{machine['cpu']}, numba {machine['numba']}, numpy {machine['numpy']}.")
    lines.append(f"Frontier (fastest first): {', '.join(frontier(rows))}.")
    return "\n".join(lines) + "\n"


def build_parser():
    p = argparse.ArgumentParser(prog="python -m analysis.approximations",
                                description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=OUT, help="output folder")
    p.add_argument("--n", type=int, default=2**20, help="elements per timing")
    p.add_argument("--rounds", type=int, default=11, help="interleaved rounds")
    p.add_argument("--samples", type=int, default=120,
                   help="inputs per dtype for the ulp error against mpmath")
    p.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.n < 1000 or args.rounds < 1 or args.samples < 8:
        print("error: --n must be >= 1000, --rounds >= 1, --samples >= 8",
              file=sys.stderr)
        return 2
    import gelu_numba as g
    from gelu_numba.approximations import APPROXIMATIONS

    machine = machine_info()
    print(f"machine: {machine['cpu']} ({machine['cpu_count']} cores), "
          f"numba {machine['numba']}")
    recs = dict(APPROXIMATIONS)
    speed = {}
    for dtype in ("float32", "float64"):
        print(f"timing {dtype} ...", flush=True)
        speed[dtype] = throughput(recs, g.gelu, args.n, args.rounds, dtype)
    rows = []
    for name, r in recs.items():
        print(f"errors of {name} ...", flush=True)
        ulps = impl_error(r, approx.formulas(name), args.samples)
        rel, rel_at = relative_error(r)
        rows.append({
            "name": name, "kind": r.kind, "max_abs_error": r.max_abs_error,
            "at_x": r.max_abs_error_at, "max_rel_error_8": rel, "rel_at_x": rel_at,
            "grad_max_abs_error": r.grad_max_abs_error,
            "grad_at_x": r.grad_max_abs_error_at,
            "ulp_fwd_float32": ulps["fwd_float32"], "ulp_fwd_float64": ulps["fwd_float64"],
            "ulp_grad_float32": ulps["grad_float32"],
            "ulp_grad_float64": ulps["grad_float64"],
            "gelems_f32": speed["float32"][name], "gelems_f64": speed["float64"][name],
            "speedup_vs_gelu_f32": speed["float32"][name] / speed["float32"]["gelu (exact)"],
            "speedup_vs_tanh_f32": speed["float32"][name] / speed["float32"]["tanh"],
        })
    args.out.mkdir(parents=True, exist_ok=True)
    md = markdown(rows, speed["float32"]["gelu (exact)"], speed["float64"]["gelu (exact)"],
                  args.n, machine)
    print(md)
    (args.out / "approximations.md").write_text(md)
    with open(args.out / "approximations.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows({k: r[k] for k in COLUMNS} for r in rows)
    if not args.no_plots:
        plots(rows, recs, speed["float32"]["gelu (exact)"], args.out)
    print(f"wrote {args.out}/approximations.md, approximations.csv"
          + ("" if args.no_plots else ", errors.png, frontier.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
