"""Digests of every public function's output bits: the proof that a change
of structure changed no result.

    python -m analysis.bit_digest --out A.json [--size N] [--parts ufuncs,production,torch,jax]
    python -m analysis.bit_digest --compare A.json B.json

For each public function (the ufuncs of ``gelu_numba``, ``.parallel``,
``.approximations``, ``.half``, the emulations of ``.production``, ``soi_map``, the
PyTorch ops forward and backward, the JAX functions), each dtype it takes
and each layout users call it with (contiguous, a strided view, a scalar
broadcast against an array, a 0-d call), the SHA-256 of the output's bytes
on ``--size`` inputs (default 10**6): standard normal, spread over
[-40, 40], powers of two across the whole exponent range, subnormals,
zeros, infinities and NaN, in a seeded order.  Run it in two checkouts
(``git worktree add``) and ``--compare`` the files: every digest must match.
"""

import argparse
import hashlib
import json
import sys

import numpy as np

from gelu_numba import catalog


def inputs(dtype, n, seed):
    """``n`` mixed values of ``dtype``, seeded."""
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    k = n // 6
    parts = [rng.standard_normal(k), rng.uniform(-40, 40, k),
             np.ldexp(rng.choice([-1.0, 1.0], k), rng.integers(info.minexp - info.nmant,
                                                                info.maxexp, k)),
             rng.uniform(-1, 1, k) * float(info.tiny),
             rng.standard_normal(k) * 4]
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5])
    x = np.concatenate(parts + [np.resize(special, n - 5 * k)])
    with np.errstate(over="ignore"):
        x = x.astype(dtype)
    rng.shuffle(x)
    return x


def digest(a):
    a = np.ascontiguousarray(np.asarray(a))
    return f"{a.dtype.str}{a.shape}:" + hashlib.sha256(a.tobytes()).hexdigest()[:24]


def _layouts(f, nin, dtype, n):
    """``(layout, output)`` of ``f`` on each layout."""
    xs = [inputs(dtype, n, seed) for seed in range(nin)]
    yield "contiguous", f(*xs)
    yield "strided", f(*[x[::3] for x in xs])
    if nin > 1:
        yield "scalar broadcast", f(dtype(1.5), *xs[1:])
    yield "0-d", f(*[x[:1].reshape(()) for x in xs])


def ufunc_digests(n):
    import importlib
    out = {}
    for fn in catalog.FUNCTIONS:
        for module in fn.modules:
            if module == catalog.GPU:
                continue
            f = getattr(importlib.import_module(module), fn.name)
            for dtype in (np.float32, np.float64) + ((np.float16,) if fn.half and module == catalog.TOP
                                                     else ()):
                for layout, y in _layouts(f, fn.nin, dtype, n):
                    out[f"{module}.{fn.name} {np.dtype(dtype).name} {layout}"] = digest(y)
    import gelu_numba.half as half
    for name in half.__all__:
        f = getattr(half, name)
        if name == "gelu_half32":
            xs = [inputs(np.float32, n, 0)]
        else:
            xs = [(inputs(np.float32, n, s).view(np.uint32) >> 16).astype(np.uint16)
                  for s in range(f.nin)]
        out[f"gelu_numba.half.{name}"] = digest(f(*xs))
    import gelu_numba as g
    for dtype in (np.float32, np.float64):
        out[f"gelu_numba.soi_map {np.dtype(dtype).name}"] = digest(
            g.soi_map(inputs(dtype, n, 0), seed=12345))
    return out


def production_digests(n):
    import gelu_numba.production as production
    out = {}
    for name in production.PRODUCTION:
        f = getattr(production, name)
        out[f"gelu_numba.production.{name}"] = digest(f(inputs(np.float32, n, 0)))
    return out


def torch_digests(n):
    import torch

    import gelu_numba.torch as gt
    out = {}
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        x = torch.from_numpy(inputs(np.float32, n, 0)).to(dtype)
        dy = torch.from_numpy(inputs(np.float32, n, 1)).to(dtype)
        for approximate in gt.APPROXIMATE:
            key = f"torch {approximate} {dtype}"
            out[key + " forward"] = digest(gt.gelu(x, approximate=approximate).float().numpy())
            out[key + " backward"] = digest(gt.gelu_backward(dy, x, approximate=approximate)
                                            .float().numpy())
    return out


def jax_digests(n):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import gelu_numba.jax as gj
    out = {}
    for dtype in (jnp.float32, jnp.float64, jnp.bfloat16, jnp.float16):
        xs = [jnp.asarray(inputs(np.float32, n, s)).astype(dtype) for s in range(3)]
        for fn in catalog.FUNCTIONS:
            f = getattr(gj, fn.name)
            out[f"jax {fn.name} {jnp.dtype(dtype).name}"] = digest(
                np.asarray(f(*xs[:fn.nin]).astype(jnp.float32)))
        g = jax.grad(lambda v: gj.gelu(v).astype(jnp.float32).sum())
        out[f"jax grad(sum(gelu)) {jnp.dtype(dtype).name}"] = digest(
            np.asarray(g(xs[0]).astype(jnp.float32)))
    return out


#: the parts of a digest file
PARTS = {"ufuncs": ufunc_digests, "production": production_digests, "torch": torch_digests,
         "jax": jax_digests}


def compare(a, b):
    """Lines for every key whose digest differs or is missing in one."""
    lines = [f"differs: {k}" for k in sorted(set(a) & set(b)) if a[k] != b[k]]
    lines += [f"only in the first: {k}" for k in sorted(set(a) - set(b))]
    lines += [f"only in the second: {k}" for k in sorted(set(b) - set(a))]
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out")
    p.add_argument("--size", type=int, default=10**6)
    p.add_argument("--parts", default=",".join(PARTS),
                   help=f"comma-separated, of {', '.join(PARTS)} (default: all)")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = p.parse_args(argv)
    if args.compare:
        a, b = (json.load(open(path)) for path in args.compare)
        lines = compare(a, b)
        print("\n".join(lines) or f"all {len(a)} digests match")
        return 1 if lines else 0
    out = {}
    for part in args.parts.split(","):
        if part not in PARTS:
            p.error(f"--parts: {part!r} is not one of {', '.join(PARTS)}")
        out.update(PARTS[part](args.size))
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    print(f"{len(out)} digests -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
