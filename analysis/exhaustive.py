"""Exhaustive error tables of every GELU we ship and every production GELU
we emulate: all 2**32 float32 inputs, and all float16 and bfloat16 inputs.

Usage::

    python -m analysis.exhaustive [--stride N] [--workers N] [--out DIR]
                                  [--names a,b,...] [--no-progress] [--update]

``--stride 1`` (the default for a committed run) visits every float32 bit
pattern; a larger odd stride samples them evenly (the default run of
``python -m analysis.approximations`` uses one, and says so).  Writes
``float32.json``/``.csv``/``.md`` and ``half.json``/``.csv``/``.md`` to
``--out`` (default ``analysis/results/exhaustive``), each with the command,
the stride, the machine and the time taken.  ``--update --names a,b`` sweeps
only ``a`` and ``b`` and merges their rows into the tables already in
``--out`` (the meta then names both commands).

Entries
-------
``gelu`` (the package's exact float32 GELU), every registry approximation
of :mod:`gelu_numba.approximations` (``tanh``, ``sigmoid``, ``as26``, the
fits), ``half32`` (:func:`gelu_numba.half.gelu_half32`), and every emulation of :mod:`gelu_numba.production`; for each, its
derivative where it has one (ours: the exact derivative of the
approximation; production: the library's own backward at ``dy = 1``),
judged against the exact GELU' (``gelu_grad``).

float32 method
--------------
Bit patterns ``k * stride`` are viewed as float32 in chunks; NaN inputs are
skipped.  The reference is the package's float64 ``gelu`` and
``gelu_grad`` (below 0.75 float64 ulp, checked against mpmath: about 1e-9
of a float32 ulp), computed once per chunk for all entries.  Per entry, in
one compiled pass (:func:`chunk_stats`):

* ``max_ulp``: ``|y - ref| / ulp(ref)``, ulp the float32 spacing at the
  reference (``2**-149`` below ``2**-126``), over the inputs where both are
  finite;
* ``special_mismatches``: an infinite or NaN output where the exact value
  is finite, or the other way (e.g. NaN for x = -inf, inf from an
  overflowing intermediate), with ``special_x``, the smallest |x| where it
  happens; these count as beyond 1 ulp;
* ``over_1ulp``: inputs with more than 1 ulp of error;
* ``correctly_rounded``: outputs equal to the reference rounded to float32;
* ``max_abs``: ``max |y - ref|`` over ``|x| <= 10`` (beyond, ``|y - ref|``
  only measures float32 rounding of large outputs);
* ``max_rel``: ``max |y - ref| / |ref|`` where ``|ref|`` is in float32's
  normal range;
* the tail reach for relative error thresholds ``1e-1, 1e-3, 1e-6``: the
  largest ``x <= -1`` whose relative error is at least the threshold (the
  output is relatively accurate on ``(x, -1]`` and no further), and the
  smallest ``x >= 1`` likewise.  Relative error here is against the exact
  value, so even a correctly rounded float32 result fails ``1e-6`` once
  the result is subnormal (about ``x < -12.9``): the exact ``gelu`` row is
  the format's own limit.

half method
-----------
Every finite float16 and bfloat16 value is an input; the entry's result in
that format (:meth:`gelu_numba.production.Emulation.half_forward`: the
library's own half arithmetic where it has one, else float32 rounded once;
ours: float32 rounded once) is compared bit for bit with the correctly
rounded exact value of ``tests/data/half_reference.npz`` (mpmath; made by
``python -m reference.make_half_table``).  Computing in float32
and rounding once cannot be right at every input: where the exact value is
within a float32 rounding error of a half-precision tie the float32 result
lands on the tie (the exact ``gelu`` row shows the floor this sets).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import csv
import json
import math
import multiprocessing
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from analysis.common import from_json, jsonable
from benchmarks.machine import machine_info

OUT = Path(__file__).resolve().parent / "results" / "exhaustive"
HALF_TABLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "half_reference.npz"
N_PATTERNS = 2**32
CHUNK = 2**22
THRESHOLDS = (1e-1, 1e-3, 1e-6)  # three: _chunk_stats keeps each in a local
ABS_RANGE = 10.0
_NORMAL = 2.0**-126


# ------------------------------------------------------------------ entries


#: gelu_numba.half.gelu_half32 in one line
HALF32_FORMULA = ("x Phi(x), Phi(-a) = exp(-a^2/2) t P_8(t), t = 1/(1 + p a), in float32 "
                  "arithmetic (gelu_numba.kernels.half32)")


#: the native 2-byte loops: a half-table entry only (no float32 function)
HALF_NATIVE = "gelu_half_native"


def _half_native(part, x, fmt):
    """The 2-byte loops of ``part`` ("gelu" or "gelu_grad") on float32
    values of ``fmt``, as float32."""
    import gelu_numba
    from gelu_numba import half
    if fmt == "float16":
        return getattr(gelu_numba, part)(x.astype(np.float16)).astype(np.float32)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    out = getattr(half, f"{part}_bfloat16")(bits)
    return (out.astype(np.uint32) << 16).view(np.float32)


def entries() -> dict:
    """name -> ``(kind, who, formula)`` for every swept entry, in table order:
    the exact gelu, the registry approximations, the production emulations."""
    from gelu_numba.approximations import APPROXIMATIONS
    from gelu_numba.production import PRODUCTION

    from gelu_numba import catalog
    out = {"gelu": ("exact", "gelu_numba.gelu", "x Phi(x), correctly rounded "
                    f"(< {catalog.describe_bound(catalog.EXACT_BOUND[0])} ulp)")}
    for name, r in APPROXIMATIONS.items():
        out[name] = (r.kind, f"gelu_numba.approximations.gelu_{name}", r.description)
    out["half32"] = ("fit (float32 arithmetic, for half formats)", "gelu_numba.half.gelu_half32",
                     HALF32_FORMULA)
    out[HALF_NATIVE] = ("exact (2-byte loops)", "gelu_numba.gelu on float16, "
                        "gelu_numba.half.gelu_bfloat16 (and their gradients)",
                        "the float64 GELU rounded once to the format (gelu_numba.kernels.half_rounding)")
    for name, e in PRODUCTION.items():
        out[name] = ("production", e.runs, e.formula)
    return out


def functions(name: str):
    """``(forward, grad)`` float32 callables of entry ``name`` (grad may be None)."""
    import gelu_numba
    from gelu_numba import approximations
    from gelu_numba.production import PRODUCTION

    if name == "gelu":
        return gelu_numba.gelu, gelu_numba.gelu_grad
    if name == "half32":
        from gelu_numba.half import gelu_half32
        return gelu_half32, None
    if name in approximations.APPROXIMATIONS:
        r = approximations.APPROXIMATIONS[name]
        return r.forward, r.grad
    e = PRODUCTION[name]
    return e.forward, e.grad


# ------------------------------------------------------------ float32 sweep

# stats vector layout
_N_TH = len(THRESHOLDS)
(CHECKED, OVER_1ULP, CORRECT, SPECIAL, MAX_ULP, WORST_ULP_X, MAX_ABS, WORST_ABS_X,
 MAX_REL, WORST_REL_X) = range(10)
SPECIAL_X = 10                # the smallest |x| with a non-finite mismatch
NEG_FAIL = 11                 # _N_TH slots: largest x <= -1 with rel >= threshold
POS_FAIL = NEG_FAIL + _N_TH   # _N_TH slots: smallest x >= 1 with rel >= threshold
N_STATS = POS_FAIL + _N_TH


def empty_stats() -> np.ndarray:
    s = np.zeros(N_STATS)
    s[[MAX_ULP, MAX_ABS, MAX_REL]] = -1.0
    s[[WORST_ULP_X, WORST_ABS_X, WORST_REL_X]] = np.nan
    s[SPECIAL_X] = np.nan
    s[NEG_FAIL:POS_FAIL] = -np.inf
    s[POS_FAIL:] = np.inf
    return s


#: 1/ulp of float32 at a float64 of biased exponent ``eb`` (index): the
#: float32 spacing 2**(e - 23), not below the subnormal spacing 2**-149
_INV_ULP = np.array([2.0 ** -(max(eb - 1023, -126) - 23) for eb in range(2048)])


def chunk_stats(x, y, ref, thresholds, s):
    """Accumulate the statistics of outputs ``y`` (float32) against ``ref``
    (float64) at inputs ``x`` into ``s`` (see :func:`empty_stats`)."""
    _chunk_stats(x, y, ref, ref.view(np.uint64), _INV_ULP, thresholds, s)


@njit(cache=True, error_model="numpy")
def _chunk_stats(x, y, ref, refbits, inv_ulp, thresholds, s):
    # counters and maxima live in locals (registers), not in s, inside the loop
    t0, t1, t2 = thresholds[0], thresholds[1], thresholds[2]
    n0, n1, n2 = s[NEG_FAIL], s[NEG_FAIL + 1], s[NEG_FAIL + 2]
    p0, p1, p2 = s[POS_FAIL], s[POS_FAIL + 1], s[POS_FAIL + 2]
    checked = over = correct = special = 0
    special_x = s[SPECIAL_X]
    max_ulp, ulp_x = s[MAX_ULP], s[WORST_ULP_X]
    max_abs, abs_x = s[MAX_ABS], s[WORST_ABS_X]
    max_rel, rel_x = s[MAX_REL], s[WORST_REL_X]
    for i in range(x.size):
        xi = np.float64(x[i])
        if xi != xi:
            continue
        r = ref[i]
        o = np.float64(y[i])
        checked += 1
        if r != r:
            # the reference is NaN only where the exact value is undefined
            if o != o:
                correct += 1
            else:
                special += 1
                if not abs(xi) >= abs(special_x):   # (NaN: none yet)
                    special_x = xi
            continue
        if math.isinf(r) or math.isinf(o) or o != o:
            if o == r:
                correct += 1
                continue
            # inf or NaN where the exact value is finite (or the other way):
            # counted apart, so that max_ulp stays the finite inputs' maximum
            special += 1
            over += 1
            if not abs(xi) >= abs(special_x):       # (NaN: none yet)
                special_x = xi
            continue
        d = abs(o - r)
        ar = abs(r)
        correct += o == np.float64(np.float32(r))
        err = d * inv_ulp[(refbits[i] >> np.uint64(52)) & np.uint64(0x7FF)]
        over += err > 1.0
        if err > max_ulp:
            max_ulp, ulp_x = err, xi
        if d > max_abs and abs(xi) <= 10.0:
            max_abs, abs_x = d, xi
        normal = ar >= 1.1754943508222875e-38 and ar <= 3.4028234663852886e38
        tail = abs(xi) >= 1.0
        # relative error d/ar, compared as products: no division per element
        if normal and d > max_rel * ar:
            max_rel, rel_x = d / ar, xi
        if d > 0.0 and tail:
            if xi < 0.0:
                if xi > n0 and d >= t0 * ar:
                    n0 = xi
                if xi > n1 and d >= t1 * ar:
                    n1 = xi
                if xi > n2 and d >= t2 * ar:
                    n2 = xi
            else:
                if xi < p0 and d >= t0 * ar:
                    p0 = xi
                if xi < p1 and d >= t1 * ar:
                    p1 = xi
                if xi < p2 and d >= t2 * ar:
                    p2 = xi
    s[NEG_FAIL], s[NEG_FAIL + 1], s[NEG_FAIL + 2] = n0, n1, n2
    s[POS_FAIL], s[POS_FAIL + 1], s[POS_FAIL + 2] = p0, p1, p2
    s[CHECKED] += checked
    s[OVER_1ULP] += over
    s[CORRECT] += correct
    s[SPECIAL] += special
    s[SPECIAL_X] = special_x
    s[MAX_ULP], s[WORST_ULP_X] = max_ulp, ulp_x
    s[MAX_ABS], s[WORST_ABS_X] = max_abs, abs_x
    s[MAX_REL], s[WORST_REL_X] = max_rel, rel_x


def merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Statistics of two disjoint sets of inputs."""
    out = a.copy()
    out[[CHECKED, OVER_1ULP, CORRECT, SPECIAL]] += b[[CHECKED, OVER_1ULP, CORRECT, SPECIAL]]
    for m, w in ((MAX_ULP, WORST_ULP_X), (MAX_ABS, WORST_ABS_X), (MAX_REL, WORST_REL_X)):
        if b[m] > a[m]:
            out[m], out[w] = b[m], b[w]
    if not abs(b[SPECIAL_X]) >= abs(a[SPECIAL_X]) and b[SPECIAL_X] == b[SPECIAL_X]:
        out[SPECIAL_X] = b[SPECIAL_X]
    out[NEG_FAIL:POS_FAIL] = np.maximum(a[NEG_FAIL:POS_FAIL], b[NEG_FAIL:POS_FAIL])
    out[POS_FAIL:] = np.minimum(a[POS_FAIL:], b[POS_FAIL:])
    return out


def _bits(k0: int, k1: int, stride: int) -> np.ndarray:
    return (np.arange(k0, k1, dtype=np.uint64) * np.uint64(stride)).astype(np.uint32)


def _chunk(job):
    """Statistics of every entry on one chunk: ``{(name, "fwd"|"grad"): stats}``."""
    import gelu_numba

    names, k0, k1, stride = job
    x = _bits(k0, k1, stride).view(np.float32)
    th = np.asarray(THRESHOLDS)
    out = {}
    with np.errstate(all="ignore"):  # signalling NaN patterns raise "invalid"
        x64 = x.astype(np.float64)
        refs = {"fwd": gelu_numba.gelu(x64), "grad": gelu_numba.gelu_grad(x64)}
        y = np.empty_like(x)
        for name in names:
            for part, f in zip(("fwd", "grad"), functions(name)):
                if f is None:
                    continue
                f(x, out=y)
                s = empty_stats()
                chunk_stats(x, y, refs[part], th, s)
                out[(name, part)] = s
    return out


def sweep(names, stride=1, workers=1, chunk=CHUNK, progress=True) -> dict:
    """Sweep ``names`` over float32 bit patterns ``0, stride, 2 stride, ...``;
    ``{(name, part): stats}`` with part ``"fwd"`` or ``"grad"``."""
    if stride < 1 or workers < 1 or chunk < 1:
        raise ValueError("stride, workers and chunk must be >= 1")
    n = -(-N_PATTERNS // stride)
    jobs = [(tuple(names), k, min(k + chunk, n), stride) for k in range(0, n, chunk)]
    total = {}
    bar = None
    with contextlib.ExitStack() as stack:
        if progress:
            from tqdm import tqdm
            bar = stack.enter_context(tqdm(total=n, unit="in", unit_scale=True,
                                           file=sys.stderr, desc="float32"))
        if workers > 1:
            ctx = multiprocessing.get_context("spawn")
            ex = stack.enter_context(concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx))
            results = ex.map(_chunk, jobs)
        else:
            results = map(_chunk, jobs)
        for job, res in zip(jobs, results):
            for key, s in res.items():
                total[key] = merge(total[key], s) if key in total else s
            if bar is not None:
                bar.update(job[2] - job[1])
    return total


def row(name: str, part: str, s: np.ndarray) -> dict:
    """One table row from the statistics of ``(name, part)``."""
    def x_or_none(v):
        return None if not math.isfinite(v) else float(v)

    r = {"name": name, "part": part, "checked": int(s[CHECKED]),
         "max_ulp": float(s[MAX_ULP]), "worst_ulp_x": x_or_none(s[WORST_ULP_X]),
         "over_1ulp": int(s[OVER_1ULP]), "correctly_rounded": int(s[CORRECT]),
         "special_mismatches": int(s[SPECIAL]),
         "special_x": None if s[SPECIAL] == 0 else float(s[SPECIAL_X]),
         "max_abs_10": float(s[MAX_ABS]), "worst_abs_x": x_or_none(s[WORST_ABS_X]),
         "max_rel_normal": float(s[MAX_REL]), "worst_rel_x": x_or_none(s[WORST_REL_X])}
    for k, t in enumerate(THRESHOLDS):
        r[f"rel_{t:g}_fails_below"] = x_or_none(s[NEG_FAIL + k])
        r[f"rel_{t:g}_fails_above"] = x_or_none(s[POS_FAIL + k])
    return r


# --------------------------------------------------------------- half sweep


def half_inputs(fmt: str) -> np.ndarray:
    """Every finite ``fmt`` value, as float32, in bit-pattern order."""
    bits = np.arange(2**16, dtype=np.uint32)
    if fmt == "float16":
        x = bits.astype(np.uint16).view(np.float16).astype(np.float32)
    elif fmt == "bfloat16":
        x = (bits << np.uint32(16)).view(np.float32)
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return x[np.isfinite(x)]


def _half_reference():
    with np.load(HALF_TABLE) as t:
        return {k: t[k] for k in t.files}


def half_table(names) -> list[dict]:
    """For each entry and format: how many of the format's finite inputs
    give the correctly rounded GELU (and GELU', where the entry has a
    derivative: float32 result rounded once)."""
    from gelu_numba.kernels.emulated.formats import to_format
    from gelu_numba.production import PRODUCTION

    ref = _half_reference()
    rows = []
    for name in names:
        fwd, grad = (True, True) if name == HALF_NATIVE else functions(name)
        r = {"name": name}
        for fmt in ("float16", "bfloat16"):
            x = half_inputs(fmt)
            bits = (x.view(np.uint32) >> 16) if fmt == "bfloat16" else x.astype(np.float16).view(np.uint16)
            order = np.argsort(ref[f"{fmt}_bits"])
            pos = np.searchsorted(ref[f"{fmt}_bits"][order], bits.astype(ref[f"{fmt}_bits"].dtype))
            idx = order[pos]
            for part, f in (("gelu", fwd), ("gelu_grad", grad)):
                if f is None:
                    r[f"{fmt}_{part}_wrong"] = None
                    continue
                with np.errstate(all="ignore"):
                    if name == HALF_NATIVE:
                        y = _half_native(part, x, fmt)
                    elif part == "gelu" and name in PRODUCTION:
                        y = PRODUCTION[name].half_forward(x, fmt)
                    else:
                        y = to_format(f(x), fmt)
                cr = _cr_values(ref[f"{fmt}_{part}_cr"][idx], fmt)
                # == : the table stores GELU(-0) as +0; signed zeros compare equal
                same = (y == cr) | (np.isnan(y) & np.isnan(cr))
                wrong = np.flatnonzero(~same)
                r[f"{fmt}_{part}_wrong"] = int(wrong.size)
                r[f"{fmt}_{part}_inputs"] = int(x.size)
                r[f"{fmt}_{part}_first_wrong"] = [float(v) for v in x[wrong[:5]]]
        rows.append(r)
    return rows


def _cr_values(bits, fmt):
    bits = np.asarray(bits)
    if fmt == "float16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


# ---------------------------------------------------------------- reporting


def _g(v, spec=".3g"):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(v, spec)


def float32_markdown(rows, meta) -> str:
    head = ("| entry | part | max ulp | at x | inputs > 1 ulp | correctly rounded "
            "| inf/NaN mismatches (smallest \\|x\\|) "
            "| max abs err (\\|x\\| <= 10) | max rel err (normal) "
            "| rel err >= 1e-3 from x <= | rel err >= 1e-6 from x <= |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        share = r["correctly_rounded"] / r["checked"] if r["checked"] else math.nan
        lines.append(
            f"| {r['name']} | {r['part']} | {_g(r['max_ulp'])} | {_g(r['worst_ulp_x'])} "
            f"| {r['over_1ulp']:,} | {share:.4%} "
            f"| {r['special_mismatches']:,} ({_g(r['special_x'])}) | {_g(r['max_abs_10'])} "
            f"| {_g(r['max_rel_normal'])} | {_g(r['rel_0.001_fails_below'])} "
            f"| {_g(r['rel_1e-06_fails_below'])} |")
    lines += ["", _meta_line(meta)]
    return "\n".join(lines) + "\n"


def half_markdown(rows, meta) -> str:
    lines = ["| entry | float16 GELU wrong | bfloat16 GELU wrong | float16 GELU' wrong "
             "| bfloat16 GELU' wrong |", "|---|---|---|---|---|"]
    for r in rows:
        def cell(fmt, part):
            w = r.get(f"{fmt}_{part}_wrong")
            return "-" if w is None else f"{w:,} of {r[f'{fmt}_{part}_inputs']:,}"
        lines.append(f"| {r['name']} | {cell('float16', 'gelu')} | {cell('bfloat16', 'gelu')} "
                     f"| {cell('float16', 'gelu_grad')} | {cell('bfloat16', 'gelu_grad')} |")
    lines += ["", _meta_line(meta)]
    return "\n".join(lines) + "\n"


def _meta_line(meta):
    if meta["inputs"] == 0:  # the half table
        what = "every finite float16 and bfloat16 input"
    else:
        what = (f"stride {meta['stride']} ({meta['inputs']:,} float32 bit patterns), "
                f"{meta['workers']} workers")
    return (f"Command: `{meta['command']}`; {what}; {meta['seconds']:.0f} s on "
            f"{meta['machine']['cpu']}.")


def write(out: Path, stem: str, rows, md: str, meta):
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.md").write_text(md)
    (out / f"{stem}.json").write_text(json.dumps(jsonable({"meta": meta, "rows": rows}),
                                                 indent=1) + "\n")
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / f"{stem}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def build_parser():
    p = argparse.ArgumentParser(prog="python -m analysis.exhaustive",
                                description=__doc__.split("\n")[0])
    p.add_argument("--stride", type=int, default=1,
                   help="distance between float32 bit patterns (1: all 2**32; "
                        "use an odd stride to sample)")
    p.add_argument("--workers", type=int, default=multiprocessing.cpu_count())
    p.add_argument("--names", default=None, help="comma-separated entries (default: all)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-float32", action="store_true", help="only the half tables")
    p.add_argument("--update", action="store_true",
                   help="merge the rows of --names into the tables already in --out "
                        "(same stride), keeping the other entries' rows")
    return p


def merged(out: Path, stem: str, rows, meta, order):
    """``(rows, meta)``: ``rows`` merged into the run saved in ``out/stem.json``
    (its rows for other entries kept, in registry order ``order``; the meta
    says both commands)."""
    old = from_json(json.loads((out / f"{stem}.json").read_text()))
    if old["meta"]["stride"] != meta["stride"]:
        raise SystemExit(f"error: --update: {out / stem}.json has stride "
                         f"{old['meta']['stride']}, this run {meta['stride']}")
    swept = {r["name"] for r in rows}
    keep = [r for r in old["rows"] if r["name"] not in swept]
    rank = {n: i for i, n in enumerate(order)}
    rows = sorted(keep + list(rows), key=lambda r: (rank.get(r["name"], len(rank)),
                                                     r.get("part", "")))
    meta = dict(meta, command=f"{old['meta']['command']}, then {meta['command']}",
                seconds=old["meta"]["seconds"] + meta["seconds"])
    return rows, meta


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    known = entries()
    names = list(known) if args.names is None else args.names.split(",")
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"error: unknown entries {unknown}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    if args.stride < 1 or args.workers < 1:
        print("error: --stride and --workers must be >= 1", file=sys.stderr)
        return 2
    command = "python -m analysis.exhaustive " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    machine = machine_info()
    t0 = time.perf_counter()
    half = half_table(names)
    meta = {"command": command.strip(), "stride": args.stride, "inputs": 0,
            "workers": 1, "machine": machine, "seconds": time.perf_counter() - t0}
    if args.update:
        half, meta = merged(args.out, "half", half, meta, list(known))
    write(args.out, "half", half, half_markdown(half, meta), meta)
    print(half_markdown(half, meta))
    if args.no_float32:
        return 0
    t0 = time.perf_counter()
    names = [n for n in names if n != HALF_NATIVE]   # (no float32 function)
    if not names:
        return 0
    stats = sweep(names, args.stride, args.workers, progress=not args.no_progress)
    rows = [row(n, p, stats[(n, p)]) for n in names for p in ("fwd", "grad") if (n, p) in stats]
    meta = {"command": command.strip(), "stride": args.stride,
            "inputs": -(-N_PATTERNS // args.stride), "workers": args.workers,
            "machine": machine, "seconds": time.perf_counter() - t0}
    if args.update:
        rows, meta = merged(args.out, "float32", rows, meta, list(known))
    md = float32_markdown(rows, meta)
    write(args.out, "float32", rows, md, meta)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
