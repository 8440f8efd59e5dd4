"""Accuracy of every gelu_numba function and approximation against mpmath.

Usage::

    python -m analysis.accuracy [--functions NAMES] [--samples N] [--no-peers]
                                [--no-plots] [--out DIR]
    python -m analysis.accuracy --exhaustive [--functions NAMES] [--stride N]
                                [--chunk N] [--workers N | --scheduler ADDRESS]

Method
------
*The six exact functions* (``gelu``, ``gelu_grad``, ``gelu_grad2``,
``gelu_backward``, ``ndtr``, ``norm_pdf``) are judged on the committed mpmath
reference table ``tests/data/reference_table.npz`` (19 150 inputs over every
region, the exact values as double-doubles; ``python -m
reference.make_table`` makes it), float64 on all inputs and
float32 on those representable in float32.  The peers are computed on the
same inputs: SciPy's formulas (``x * ndtr(x)``, ...), the textbook formulas on
libm's ``erf``/``exp`` in Numba, and PyTorch and JAX when installed (one
thread; ``pip install -e '.[compare]'``).

*The approximations and generalisations* (every entry of
:data:`gelu_numba.approximations.APPROXIMATIONS` and its ``_grad``, ``silu``,
``x_cauchy``, ``lalu`` and their ``_grad``, ``gelu_general`` at mu = 0.25,
sigma = 0.5) are judged against their *own* formula evaluated by mpmath at 50
digits (:mod:`reference.approx`): this is the implementation
error; the approximation error against the exact GELU is the study's
(``python -m analysis.approximations``) and is quoted from the registry.
Inputs: ``--samples`` float32-representable points per region.  Peers:
PyTorch's and JAX's tanh GELU and SiLU when installed.

Errors, per function, dtype, implementation and region (all; core |x| <= 5;
negative tail x < -5; positive side x > 5; within 0.01 of the zero of
GELU' at x0 = -0.75179 and of the zeros of GELU'' at +-sqrt 2): max and
median error in ulps of the exact value in the output's format (the
subnormal spacing below the smallest normal), max absolute error, max
relative error over the results in the normal range, and the worst input
(by ulps).  Plots: ulp error against x, one PNG per dtype.

``--exhaustive`` runs the float32 all-inputs sweep of
:mod:`analysis.sweep_float32` (every one of the 2**32 bit patterns, or every
``--stride``-th) for the chosen functions, in chunks on Dask: a local
cluster of ``--workers`` processes by default, or the existing cluster at
``--scheduler tcp://host:port`` (its workers need gelu_numba and this
repository's ``analysis`` package importable).  The exact functions are
judged against the mpmath-validated float64 reference
:mod:`reference.f64`, the approximations against their own float64
loop (checked against mpmath to 2 float64 ulps in the tests, i.e. ~1e-8
float32 ulp).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import mpmath as mp
import numpy as np

from analysis.common import jsonable
from benchmarks.machine import machine_info, machine_line
from gelu_numba import catalog
from reference.mp import ulp_error_dd

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "tests" / "data" / "reference_table.npz"
OUT = ROOT / "reports" / "accuracy"
EXACT = catalog.names("exact")
DTYPES = ("float32", "float64")
#: zero of GELU' (-0.7517915246935645, Newton on Phi(x) + x phi(x) = 0)
X0 = -0.7517915246935645
#: gelu_general is judged at these parameters
GENERAL_MU, GENERAL_SIGMA = 0.25, 0.5

REGIONS = {
    "all": lambda x: np.ones(x.shape, bool),
    "core |x|<=5": lambda x: np.abs(x) <= 5,
    "tail x<-5": lambda x: x < -5,
    "x>5": lambda x: x > 5,
    "near x0 (GELU'=0)": lambda x: np.abs(x - X0) < 0.01,
    "near ±√2 (GELU''=0)": lambda x: np.abs(np.abs(x) - math.sqrt(2)) < 0.01,
}
PACKAGE = "gelu_numba"
PLOT_XMAX = 1e3


# -------------------------------------------------------------- functions


def _approx_formulas():
    """name -> its mpmath formula (the catalog record's reference), a
    function of one float: the approximations, then the family."""
    import reference

    out = {f.name: reference.lookup(f) for group in ("approximation", "family")
           for f in catalog.group(group) if f.nin == 1}
    general = reference.lookup(catalog.lookup("gelu_general"))
    out["gelu_general"] = lambda x: general(x, GENERAL_MU, GENERAL_SIGMA)
    return out


def function_names():
    """Every function the table can judge: the exact six, then the others."""
    return list(EXACT) + list(_approx_formulas())


def _package_function(name):
    from analysis.sweep_float32 import function_for

    f = function_for(name, False)
    if name == "gelu_general":
        return lambda x: f(x, x.dtype.type(GENERAL_MU), x.dtype.type(GENERAL_SIGMA))
    return f


def _exact_peers(name):
    """label -> f(*arrays) for the peers of one exact function."""
    from benchmarks.peers import implementations

    skip = {PACKAGE, "gelu_numba.parallel", "np.copy (roofline)", "np.add (overhead)"}
    return {label: (lambda make: (lambda *a: np.asarray(make(*a)())))(make)
            for label, make in implementations(name).items() if label not in skip}


def _approx_peers(name):
    """label -> f(x): PyTorch's and JAX's versions of the tanh GELU and SiLU."""
    import benchmarks.peers as p

    peers = {}
    if p.torch is not None:
        t = {"gelu_tanh": lambda v: p.torch.nn.functional.gelu(v, approximate="tanh"),
             "silu": p.torch.nn.functional.silu}
        if name in t:
            peers["torch"] = lambda x, f=t[name]: f(p.torch.from_numpy(x)).numpy()
    if p.jax is not None:
        j = {"gelu_tanh": lambda v: p.jax.nn.gelu(v, approximate=True), "silu": p.jax.nn.silu}
        if name in j:
            fj = p.jax.jit(j[name])
            peers["jax"] = lambda x, f=fj: np.asarray(f(p.jnp.asarray(x)))
    return peers


# ------------------------------------------------------------------ errors


def _stats(x, ulp, abs_err, rel_err):
    """Per-region statistics of one implementation (NaN x excluded)."""
    out = {}
    for region, pick in REGIONS.items():
        m = pick(x)
        if not m.any():
            continue
        e = ulp[m]
        w = int(np.argmax(e))
        out[region] = {"points": int(m.sum()), "max_ulp": float(e.max()),
                       "median_ulp": float(np.median(e)),
                       "max_abs": float(abs_err[m].max()), "max_rel": float(rel_err[m].max()),
                       "worst_x": float(x[m][w])}
    return out


def _dd_errors(out, hi, lo, dtype, res):
    with np.errstate(all="ignore"):
        c = np.asarray(out, np.float64)
        ulp = ulp_error_dd(c, hi, lo, dtype, res=res)
        abs_err = np.abs((c - hi) - lo)
        abs_err = np.where(np.isnan(c) & np.isnan(hi), 0.0,
                           np.where(np.isinf(c) | np.isinf(hi),
                                    np.where(c == hi, 0.0, np.inf), abs_err))
        # relative error of normal results only: below the smallest normal
        # the format itself has no relative accuracy (the ulps measure it)
        rel = np.where(np.abs(hi) >= np.finfo(dtype).tiny, abs_err / np.abs(hi), 0.0)
    return ulp, abs_err, rel


def exact_rows(names, dtypes, peers=True, table=TABLE):
    """Rows for the exact functions on the mpmath reference table."""
    import gelu_numba

    with np.load(table) as data:
        t = {k: data[k] for k in data.files}
    rows = []
    for name in names:
        impls = {PACKAGE: getattr(gelu_numba, name)}
        if peers:
            impls.update(_exact_peers(name))
        for dt in dtypes:
            dtype = np.dtype(dt)
            sel = t["is_f32"] if dt == "float32" else np.ones(t["x"].shape, bool)
            x = t["x"][sel].astype(dtype)
            args = (t["dy"][sel].astype(dtype), x) if name == "gelu_backward" else (x,)
            hi, lo, res = (t[f"{name}_{k}"][sel] for k in ("hi", "lo", "res"))
            for label, f in impls.items():
                with np.errstate(all="ignore"):
                    y = np.asarray(f(*args))
                ulp, a, r = _dd_errors(y.astype(dtype), hi, lo, dtype.type, res)
                rows.append({"function": name, "dtype": dt, "implementation": label,
                             "regions": _stats(x.astype(np.float64), ulp, a, r),
                             "x": x.astype(np.float64), "ulp": ulp})
    return rows


def sample_points(samples, seed=0):
    """float32-representable inputs, ``samples`` per region."""
    rng = np.random.default_rng(seed)
    n = samples
    parts = [
        rng.uniform(-5, 5, n),
        -np.logspace(math.log10(5.0), 4, n),
        np.logspace(math.log10(5.0), 6, n),
        X0 + rng.uniform(-0.01, 0.01, n),
        np.sqrt(2) * np.where(rng.random(n) < 0.5, -1, 1) + rng.uniform(-0.01, 0.01, n),
        [0.0, -0.0, 1e-30, -1e-30, 1e-3, -1e-3],
    ]
    return np.concatenate(parts).astype(np.float32).astype(np.float64)


def approx_rows(names, dtypes, samples, peers=True, progress=False):
    """Rows for the approximations and generalisations, against their formulas."""
    formulas = _approx_formulas()
    x = sample_points(samples)
    rows = []
    bar = _bar(len(names), "mpmath", progress)
    for name in names:
        form = formulas[name]
        with mp.workdps(50):
            hi, lo = _double_double([form(float(v)) for v in x])
        impls = {PACKAGE: _package_function(name)}
        if peers:
            impls.update(_approx_peers(name))
        for dt in dtypes:
            dtype = np.dtype(dt)
            xd = x.astype(dtype)
            for label, f in impls.items():
                with np.errstate(all="ignore"):
                    y = np.asarray(f(xd)).astype(dtype)
                ulp, a, r = _dd_errors(y, hi, lo, dtype.type, None)
                rows.append({"function": name, "dtype": dt, "implementation": label,
                             "regions": _stats(x, ulp, a, r), "x": x, "ulp": ulp})
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return rows


def _double_double(formula_values):
    """hi + lo of mpf values computed at 50 digits (inside the workdps)."""
    hi = np.empty(len(formula_values))
    lo = np.empty(len(formula_values))
    for i, v in enumerate(formula_values):
        hi[i] = float(v)
        lo[i] = float(v - hi[i]) if mp.isfinite(v) else 0.0
    return hi, lo


def _bar(total, desc, progress):
    if not progress:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="fn", file=sys.stderr)


def run(functions=None, dtypes=DTYPES, samples=200, peers=True, progress=True, table=TABLE):
    """Accuracy rows for ``functions`` (default: all).

    Returns a dict with ``rows`` (each: function, dtype, implementation,
    regions -> {points, max_ulp, median_ulp, max_abs, max_rel, worst_x}; and
    the raw ``x``/``ulp`` arrays for the plots), ``machine`` and ``seconds``.
    """
    t0 = time.perf_counter()
    names = function_names() if functions is None else list(functions)
    others = [n for n in names if n not in EXACT]
    rows = exact_rows([n for n in names if n in EXACT], dtypes, peers, table)
    rows += approx_rows(others, dtypes, samples, peers, progress)
    return {"rows": rows, "machine": machine_info(), "samples": samples,
            "seconds": time.perf_counter() - t0}


# ----------------------------------------------------------------- output

_SHORT = ["core |x|<=5", "tail x<-5", "x>5", "near x0 (GELU'=0)", "near ±√2 (GELU''=0)"]


def short_number(v):
    return "—" if v is None else ("inf" if v == math.inf else f"{v:.3g}")


def markdown(result, functions=None):
    """One table: all-input errors, then the max ulp error per region."""
    head = ("| function | dtype | implementation | max ulp | median ulp | max abs err "
            "| max rel err | worst x | " + " | ".join(f"max ulp: {r}" for r in _SHORT) + " |")
    lines = [head, "|" + "---|" * 3 + "---:|" * (5 + len(_SHORT))]
    for row in result["rows"]:
        if functions is not None and row["function"] not in functions:
            continue
        reg = row["regions"]
        a = reg["all"]
        cells = [short_number(reg[r]["max_ulp"]) if r in reg else "—" for r in _SHORT]
        name = f"**{row['implementation']}**" if row["implementation"] == PACKAGE \
            else row["implementation"]
        lines.append(f"| `{row['function']}` | {row['dtype']} | {name} | {short_number(a['max_ulp'])} | "
                     f"{short_number(a['median_ulp'])} | {short_number(a['max_abs'])} | {short_number(a['max_rel'])} | "
                     f"{a['worst_x']:.9g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def approximation_errors():
    """Markdown: the registry's approximation errors against the exact GELU."""
    from gelu_numba.approximations import APPROXIMATIONS
    lines = ["| approximation | max abs error vs GELU | at x | derivative's max abs error vs GELU' |",
             "|---|---:|---:|---:|"]
    for name, r in APPROXIMATIONS.items():
        lines.append(f"| `gelu_{name}` | {r.max_abs_error:.3g} | {r.max_abs_error_at:.4g} | "
                     f"{r.grad_max_abs_error:.3g} |")
    return "\n".join(lines)


def plot(result, out, functions=EXACT):
    """PNG per dtype: ulp error against x for each function and implementation."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    names = [f for f in functions if any(r["function"] == f for r in result["rows"])]
    if not names:
        return paths
    styles = {PACKAGE: ("C0", "o", 3), "numpy/scipy": ("C1", "x", 4), "naive numba": ("C2", "+", 4),
              "torch": ("C3", "^", 4), "jax": ("C4", "v", 4)}
    for dt in DTYPES:
        rows = [r for r in result["rows"] if r["dtype"] == dt and r["function"] in names]
        if not rows:
            continue
        cols = min(3, len(names))
        nrows = -(-len(names) // cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
        for ax, name in zip(axes.flat, names):
            # the peers first, gelu_numba last and on top: its points lie
            # under theirs almost everywhere
            mine = [r for r in rows if r["function"] == name]
            mine.sort(key=lambda r: r["implementation"] == PACKAGE)
            for r in mine:
                c, m, s = styles.get(r["implementation"], ("C5", ".", 3))
                ok = np.abs(r["x"]) <= PLOT_XMAX   # symlog cannot span 1e308
                y = np.clip(np.nan_to_num(r["ulp"][ok], posinf=1e20), 1e-3, 1e20)
                top = r["implementation"] == PACKAGE
                ax.scatter(r["x"][ok], y, s=s * (3 if top else 1), c=c, marker=m,
                           label=r["implementation"], alpha=1.0 if top else 0.5,
                           linewidths=0.6, zorder=3 if top else 2)
            ax.axhline(1.0, color="k", lw=0.8, ls="--")
            ax.set_xscale("symlog", linthresh=1.0)
            ax.set_yscale("log")
            ax.set_title(f"{name} ({dt})")
            ax.set_xlabel(f"x (symmetric log scale; |x| <= {PLOT_XMAX:g} shown)")
            ax.set_ylabel(f"error ({dt} ulps; 1e-3 = exact)")
            ax.legend(fontsize=7, markerscale=2, loc="upper left")
        for ax in list(axes.flat)[len(names):]:
            ax.axis("off")
        fig.suptitle(f"Error against mpmath, {dt} (dashed: 1 ulp)")
        fig.tight_layout()
        path = out / f"accuracy_{dt}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def save(result, out, plots=True):
    """Write accuracy.md, accuracy.json (and the PNGs) into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md = (f"# Accuracy against mpmath\n\n{describe(result)}\n\n" + markdown(result)
          + "\n\nApproximation error of the approximations against the exact GELU "
          "(mpmath, from the registry; `python -m analysis.approximations`):\n\n"
          + approximation_errors() + "\n")
    (out / "accuracy.md").write_text(md)
    slim = {k: v for k, v in result.items() if k != "rows"}
    slim["rows"] = [{k: v for k, v in r.items() if k not in ("x", "ulp")} for r in result["rows"]]
    (out / "accuracy.json").write_text(json.dumps(jsonable(slim), indent=1) + "\n")
    paths = [out / "accuracy.md", out / "accuracy.json"]
    if plots:
        paths += plot(result, out)
    return paths


def describe(result):
    m = result["machine"]
    return (f"Exact functions: the committed mpmath table (`tests/data/reference_table.npz`); "
            f"approximations and generalisations: {result['samples']} float32-representable "
            f"points per region against their own formula in mpmath (50 digits); "
            f"`gelu_general` at mu = {GENERAL_MU}, sigma = {GENERAL_SIGMA}. "
            f"ulp: of the exact value in the output's format; relative errors: of results "
            f"in the normal range. Machine: {machine_line(m)}.")


# ------------------------------------------------- the measured-errors table

MEASURED = Path(__file__).resolve().parents[1] / "gelu_numba" / "measured.py"

_MEASURED_HEADER = '''"""Measured maximum errors of every package function, in ulps of the exact value.

Generated by ``python -m analysis.accuracy --no-peers --no-plots --write-measured``
in the gelu-numba repository,
on {machine} ({date}); do not edit.  The exact functions: every input of
the repository's mpmath table (``tests/data/reference_table.npz``, 19 150
inputs, the float32 ones for float32); the approximations and
generalisations: {samples} float32-representable points per region against
their own formula in mpmath (50 digits), so a sampled maximum.  The
catalog's docstrings quote these figures next to each stated bound; the
repository's ``tests/test_measured.py`` checks that the exact functions'
figures are current and that every figure is within its stated bound.
"""

#: name -> (float32 max ulp, float64 max ulp)
MEASURED = {{
{rows}}}
'''


def write_measured(result, path=MEASURED):
    """Write the package's max ulp errors (``result`` of :func:`run`, with
    both dtypes) as ``gelu_numba/measured.py``."""
    best = {}
    for row in result["rows"]:
        if row["implementation"] == PACKAGE:
            best.setdefault(row["function"], {})[row["dtype"]] = row["regions"]["all"]["max_ulp"]
    rows = "".join(f"    {name!r}: ({v['float32']:.4f}, {v['float64']:.4f}),\n"
                   for name, v in best.items())
    import datetime
    path.write_text(_MEASURED_HEADER.format(
        machine=machine_line(result["machine"]), samples=result["samples"], rows=rows,
        date=datetime.date.today().isoformat()))
    return path


# -------------------------------------------------------------- exhaustive


def exhaustive(functions, stride=1, chunk=None, workers=None, scheduler=None, progress=True):
    """The float32 sweep of :mod:`analysis.sweep_float32` on Dask.

    Parameters
    ----------
    functions : list of str
        Names from :func:`analysis.sweep_float32.sweepable`.
    stride, chunk : int
        Every ``stride``-th bit pattern, ``chunk`` inputs per task.
    workers : int, optional
        Processes of the local cluster (default: the number of cores).
    scheduler : str, optional
        Address of an existing Dask scheduler; then ``workers`` is unused.

    Returns
    -------
    list of dict
        One result per function, as :func:`analysis.sweep_float32.sweep`.
    """
    from distributed import Client, LocalCluster

    from analysis import sweep_float32 as sw

    if scheduler:
        client, cluster = Client(scheduler, timeout="5s"), None
    else:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        where = scheduler or f"local cluster, {len(client.scheduler_info()['workers'])} processes"
        return [dict(sw.sweep(name, stride, chunk or sw.DEFAULT_CHUNK, progress, client=client),
                     cluster=where)
                for name in functions]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# --------------------------------------------------------------------- CLI


def _functions_arg(text):
    known = function_names()
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in known]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown function(s) {', '.join(bad) or '(none)'}; choose from {', '.join(known)}")
    return names


def _dtypes_arg(text):
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names or any(s not in DTYPES for s in names):
        raise argparse.ArgumentTypeError(f"dtypes must be among {', '.join(DTYPES)}: {text!r}")
    return names


def build_parser():
    from analysis.common import int_arg
    from analysis.sweep_float32 import DEFAULT_CHUNK

    p = argparse.ArgumentParser(
        prog="python -m analysis.accuracy",
        description="Error of every gelu_numba function and approximation against mpmath "
                    "(ulps, absolute, relative; by region; with the peers), or the exhaustive "
                    "float32 sweep on Dask (--exhaustive).")
    p.add_argument("--functions", type=_functions_arg, default=None,
                   help="comma-separated names (default: all; see the module docstring)")
    p.add_argument("--dtypes", type=_dtypes_arg, default=list(DTYPES),
                   help="float32,float64 (default both)")
    p.add_argument("--samples", type=int_arg, default=200,
                   help="points per region for the approximations (default 200)")
    p.add_argument("--no-peers", action="store_true", help="only gelu_numba's own kernels")
    p.add_argument("--no-plots", action="store_true", help="no PNGs")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    p.add_argument("--write-measured", action="store_true",
                   help="also write the package's maxima to gelu_numba/measured.py "
                        "(needs all functions and both dtypes), which the docstrings quote")
    g = p.add_argument_group("exhaustive float32 sweep")
    g.add_argument("--exhaustive", action="store_true",
                   help="sweep float32 bit patterns for --functions (default: the exact six)")
    g.add_argument("--stride", type=int_arg, default=1,
                   help="every stride-th bit pattern (default 1: all 2**32)")
    g.add_argument("--chunk", type=int_arg, default=DEFAULT_CHUNK,
                   help="inputs per Dask task, at most 2**24 (default 2**22, ~0.5 GB each)")
    g.add_argument("--workers", type=int_arg, default=None,
                   help="processes of the local Dask cluster (default: cores)")
    g.add_argument("--scheduler", default=None,
                   help="address of an existing Dask scheduler, e.g. tcp://10.0.0.1:8786")
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    print(f"machine: {machine_line(machine_info())}")
    if args.exhaustive:
        from analysis import sweep_float32 as sw
        if args.chunk > sw.MAX_CHUNK:
            parser.error(f"--chunk must be at most 2**24 = {sw.MAX_CHUNK}")
        names = args.functions or list(EXACT)
        bad = [n for n in names if n not in sw.sweepable()]
        if bad:
            parser.error(f"cannot sweep {', '.join(bad)}; choose from {', '.join(sw.sweepable())}")
        try:
            results = exhaustive(names, args.stride, args.chunk, args.workers,
                                 args.scheduler, not args.no_progress)
        except OSError as exc:  # no scheduler at that address
            parser.error(f"cannot reach the Dask scheduler {args.scheduler!r}: {exc}")
        text = (f"## float32 sweep, stride {args.stride} ({results[0]['cluster']})\n\n"
                + sw.markdown_table(results) + "\n")
        print("\n" + text)
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"sweep_float32_stride{args.stride}.json"
        path.write_text(json.dumps(jsonable({"machine": machine_info(), "results": results}),
                                   indent=2) + "\n")
        print(f"wrote {path}")
        return 0
    result = run(args.functions, args.dtypes, args.samples, not args.no_peers,
                 not args.no_progress)
    print("\n" + describe(result) + "\n")
    print(markdown(result))
    for path in save(result, args.out, plots=not args.no_plots):
        print(f"wrote {path}")
    if args.write_measured:
        if args.functions is not None or len(args.dtypes) != 2:
            parser.error("--write-measured needs every function and both dtypes")
        print(f"wrote {write_measured(result)}")
    print(f"{result['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
