"""Generate the committed mpmath reference table ``tests/data/reference_table.npz``.

Usage::

    python -m reference.make_table [--out PATH] [--workers N]

Method
------
About 20000 finite inputs are drawn with a fixed seed (so the file is
byte-for-byte reproducible for a given mpmath version) in two groups:

* float64 rows (``is_f32`` False): uniform core ``|x| <= 5``; negative tail
  to -40, uniform and log-spaced; large positive ``x`` to 1e3 plus huge
  values up to the largest double (and their negatives); tiny and subnormal
  ``x`` of both signs, log-spaced, including 5e-324 and the smallest normal;
  the neighbourhoods of ``X0`` (zero of GELU') and ``+-sqrt(2)`` (zeros of
  GELU''), i.e. the nearest doubles and +-8 ulps plus 3 random points per
  side at each relative distance 2**-k (k = 2..52); and the underflow
  thresholds, found with mpmath, where ndtr, norm_pdf, gelu, gelu_grad and
  gelu_grad2 cross the smallest normal and half the smallest subnormal
  (e.g. x ~ -38.48, -38.51, -37.53), +-8 ulps and 20 points within 1e-4
  relative.
* float32 rows (``is_f32`` True; ``x`` and ``dy`` exactly representable in
  float32): the same regions with the float32 limits (tail to -16, huge
  values up to the largest float32, tiny values down to 2**-149, relative
  distances 2**-k for k = 2..23, float32 thresholds such as -14.17, -14.36,
  -13.15).

Each row stores the exact values of ndtr, norm_pdf, gelu, gelu_grad,
gelu_grad2 and gelu_backward(dy, x) from :mod:`reference.mp`
(>= 256 correct bits) as double-double pairs ``<name>_hi``, ``<name>_lo``.
``dy`` is uniform in [-3, 3] with about 10 % of rows exactly 1.0. Because
float32 rows hold float32 ``x`` and ``dy``, their exact values are also the
exact values for the float32 inputs.

Accuracy
--------
``hi + lo`` carries about 106 bits (``hi`` correctly rounded, ``lo`` the
correctly rounded remainder); where ``hi`` is subnormal or zero, ``hi + lo``
is still within 2**-1074 * 2**-53 of the exact value. NaN and infinities are
not in the table.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import time
from pathlib import Path

import mpmath
import numpy as np

from reference import mp as _mp

SEED = 20240611
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "reference_table.npz"
COMMAND = "python -m reference.make_table"

# numpy dtype, precision p, smallest normal exponent emin
_GROUPS = {
    "f64": (np.float64, 53, -1022),
    "f32": (np.float32, 24, -126),
}


def _round(v, dtype):
    return np.asarray(v, dtype=np.float64).astype(dtype).astype(np.float64)


def _neighbours(c: float, dtype, n: int = 8) -> list[float]:
    """The value of ``dtype`` nearest to ``c`` and ``n`` neighbours per side."""
    mid = dtype(c)
    out = [float(mid)]
    up = down = mid
    for _ in range(n):
        up = np.nextafter(up, dtype(np.inf))
        down = np.nextafter(down, dtype(-np.inf))
        out += [float(up), float(down)]
    return out


def _around_zero_of(c: float, dtype, p: int, rng) -> list[float]:
    """Points at relative distances 2**-k, k = 2..p-1, on both sides of ``c``."""
    pts = _neighbours(c, dtype)
    for k in range(2, p):
        for side in (-1.0, 1.0):
            d = 2.0**-k * (1.0 + rng.random(3))
            pts += list(_round(c * (1.0 + side * d), dtype))
    return pts


def _thresholds(p: int, emin: int) -> list[float]:
    """x where |f(x)| crosses 2**emin and 2**(emin-p) (half the subnormal step)."""
    out = []
    with mpmath.workprec(160):
        fns = {
            "ndtr": (lambda x: mpmath.ncdf(x), (-1,)),
            "gelu": (lambda x: x * mpmath.ncdf(x), (-1,)),
            "gelu_grad": (lambda x: mpmath.ncdf(x) + x * mpmath.npdf(x), (-1,)),
            "norm_pdf": (lambda x: mpmath.npdf(x), (-1, 1)),
            "gelu_grad2": (lambda x: mpmath.npdf(x) * (2 - x * x), (-1, 1)),
        }
        for level_exp in (emin, emin - p):
            log_level = level_exp * mpmath.log(2)
            # phi(x) = level gives a starting point within ~1 of every root.
            guess = mpmath.sqrt(-2 * (log_level + mpmath.log(mpmath.sqrt(2 * mpmath.pi))))
            for f, signs in fns.values():
                for s in signs:
                    root = mpmath.findroot(
                        lambda x: mpmath.log(abs(f(x))) - log_level, s * guess
                    )
                    out.append(float(root))
    return out


def sample_points(rng) -> tuple[np.ndarray, np.ndarray]:
    """The table's inputs.

    Parameters
    ----------
    rng : numpy.random.Generator

    Returns
    -------
    x : numpy.ndarray of float64
        Finite inputs, float64 group first, each group sorted and unique.
    is_f32 : numpy.ndarray of bool
    """
    x0 = float(_mp.X0)
    r2 = math.sqrt(2.0)
    groups = []
    for name, (dtype, p, emin) in _GROUPS.items():
        f64 = dtype is np.float64
        tail = 39.0 if f64 else 15.0
        n_core = 4000 if f64 else 3500
        pts = [
            rng.uniform(-5.0, 5.0, n_core),
            rng.uniform(-tail, -5.0, 2500 if f64 else 1800),
            -np.geomspace(5.0, tail, 800 if f64 else 500),
            rng.uniform(-tail - 1.0, -tail, 50),
            np.geomspace(5.0, 1e3, 600 if f64 else 400),
            rng.uniform(5.0, 40.0 if f64 else 20.0, 400 if f64 else 300),
        ]
        big = [1e4, 1e5, 1e10, 1e20, 1e30, float(np.finfo(dtype).max)]
        big += [1e100, 1e300] if f64 else [1e38]
        pts.append(np.array(big + [-v for v in big]))
        tiny = float(np.finfo(dtype).smallest_subnormal)
        normal = float(np.finfo(dtype).smallest_normal)
        logspace = np.geomspace(tiny, 1e-2, 500 if f64 else 400)
        specials = [0.0, tiny, normal, float(np.nextafter(dtype(normal), dtype(0))), 1e-45 if not f64 else 5e-324]
        pts += [logspace, -logspace, np.array(specials), -np.array(specials)]
        for c in (x0, r2, -r2):
            pts.append(np.array(_around_zero_of(c, dtype, p, rng)))
        # The float64 GELU thresholds quoted in docs/numerics.md (-38.5123,
        # -37.5266) are not where GELU crosses those levels (-38.5801,
        # -37.6159); keep them anyway, they cost nothing.
        extra = [-38.5123, -37.5266] if f64 else []
        for t in _thresholds(p, emin) + extra:
            pts.append(np.array(_neighbours(t, dtype)))
            pts.append(_round(t * (1.0 + rng.uniform(-1e-4, 1e-4, 20)), dtype))
        x = _round(np.concatenate(pts), dtype)
        x = np.unique(x[np.isfinite(x)])
        groups.append((x, np.full(x.shape, not f64)))
    xs, flags = zip(*groups)
    return np.concatenate(xs), np.concatenate(flags)


def sample_dy(rng, is_f32: np.ndarray) -> np.ndarray:
    """Upstream gradients: uniform in [-3, 3], ~10 % exactly 1.0, float32 on f32 rows."""
    dy = rng.uniform(-3.0, 3.0, is_f32.shape)
    dy[rng.random(is_f32.shape) < 0.1] = 1.0
    return np.where(is_f32, _round(dy, np.float32), dy)


def _dd_res(v):
    """``(hi, lo, res)``: the dd value, and for a float64-subnormal ``hi`` the
    residual ``(v - hi) / 2**-1074`` (there ``lo`` is quantised and useless)."""
    hi, lo = _mp.to_dd(v)
    res = 0.0
    if isinstance(v, mpmath.mpf) and abs(hi) < np.finfo(np.float64).tiny:
        with mpmath.workprec(600):
            res = float(mpmath.ldexp(v - hi, 1074))
    return hi, lo, res


def _row(args):
    x, dy = args
    vals = _mp.evaluate_all(x, dy)
    return [c for name in _mp.FUNCTIONS for c in _dd_res(vals[name])]


def build(workers: int = 1, progress: bool = False) -> dict:
    """Compute the table's arrays.

    Parameters
    ----------
    workers : int
        Processes for the mpmath evaluations (results do not depend on it).
    progress : bool
        Print a progress line to stderr.

    Returns
    -------
    dict of numpy.ndarray
        Keys ``x``, ``dy``, ``is_f32``, ``<name>_hi``, ``<name>_lo``,
        ``provenance``.
    """
    rng = np.random.default_rng(SEED)
    x, is_f32 = sample_points(rng)
    dy = sample_dy(rng, is_f32)
    jobs = list(zip(x.tolist(), dy.tolist()))
    if workers > 1:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            rows = pool.map(_row, jobs, chunksize=256)
    else:
        rows = []
        for i, job in enumerate(jobs):
            rows.append(_row(job))
            if progress and i % 2000 == 0:
                print(f"  {i}/{len(jobs)}", file=sys.stderr)
    vals = np.array(rows, dtype=np.float64)
    out = {"x": x, "dy": dy, "is_f32": is_f32}
    for i, name in enumerate(_mp.FUNCTIONS):
        out[f"{name}_hi"] = vals[:, 3 * i]
        out[f"{name}_lo"] = vals[:, 3 * i + 1]
        out[f"{name}_res"] = vals[:, 3 * i + 2]
    out["provenance"] = np.array(
        f"{COMMAND} (seed {SEED}); mpmath {mpmath.__version__}; "
        f"reference.mp at >= {_mp.BASE_PREC} bits working precision "
        f"(adaptive, >= {_mp.TARGET_BITS} correct bits); values are double-double "
        f"<name>_hi + <name>_lo; where _hi is float64-subnormal, <name>_res = (exact - hi)/2**-1074; gelu_backward = dy * gelu_grad(x)"
    )
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog=COMMAND, description="Write the mpmath reference table (deterministic)."
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output .npz path")
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    t = time.perf_counter()
    table = build(workers=args.workers, progress=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **table)
    n = table["x"].size
    print(
        f"wrote {args.out} ({n} rows, {int(table['is_f32'].sum())} float32, "
        f"{args.out.stat().st_size / 1e6:.2f} MB) in {time.perf_counter() - t:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
