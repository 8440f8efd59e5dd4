"""Exhaustive (or strided) float32 accuracy sweep of the gelu_numba kernels.

Usage::

    python -m analysis.sweep_float32 [--functions gelu,gelu_grad,...]
        [--stride N] [--chunk 2**22] [--workers N] [--out results.json]
        [--kernels cpu|gpu32|lean32|plain32] [--device cpu|gpu [--peers all|NAMES]]
        [--no-progress] [--self-test]

Method
------
The float32 bit patterns ``k*stride`` for ``k = 0, 1, ...`` below 2**32
(``stride`` 1 = all 2**32 inputs, both signs, subnormals, zeros and
infinities) are viewed as float32 and processed in chunks of ``--chunk``
inputs, so memory stays bounded (about 130 bytes per input: ~0.5 GB per
process at the default 2**22). Strides that are powers of two only ever see significands with trailing zero bits; use an
odd stride (e.g. 997) for an unbiased sample.

Each chunk is fed to ``gelu_numba.<name>`` (a ufunc-like callable on
float32 arrays) and to :mod:`reference.f64`, a float64 reference
validated against mpmath to better than 1e-12 relative (about 1e-5 float32
ulp). For each function the sweep reports the number of non-NaN inputs
checked, the maximum error in float32 ulps (``ulp_error_dd`` of
:mod:`reference.mp`: ulp of the reference value, the float32
subnormal spacing below 2**-126), the worst input (value and bit pattern),
the share of outputs equal to the float64 reference rounded to float32 (the
correctly rounded share; it can only be misjudged where the exact value lies
within ~1e-12 relative of a rounding midpoint), and the number of NaN/inf
mismatches (NaN or infinity on one side only, or infinities of opposite
sign). NaN bit patterns are not part of the error statistics; they are
counted separately and their outputs must be NaN.

``gelu_backward(dy, x)`` is swept with one pseudo-random float32 ``dy`` per
input, a fixed function of the input's bit pattern (a multiplicative hash;
``|dy|`` in [0.25, 4), random sign and significand; see :func:`dy_for_bits`),
so the product's rounding is exercised and the result does not depend on
stride or chunking. (``dy = 1`` would only repeat ``gelu_grad``.)

``--device gpu`` runs the sweep on the GPU instead (:mod:`analysis.gpu.sweep`):
the GPU's float32 kernels against its float64 kernels, the same statistics,
the inputs generated on the device; ``--chunk`` and ``--workers`` do not
apply.  ``--peers all`` (or names from :data:`analysis.gpu.peers.PEERS`)
also sweeps the GELUs of PyTorch, JAX and CuPy on the same inputs, judged
against the same float64 kernels (those not installed are named, not
swept).

``--self-test`` sweeps the reference rounded to float32 against the
reference itself: it checks the machinery and must report <= 0.5 ulp and a
100 % correctly rounded share; it says nothing about the kernels.

Accuracy
--------
Reported ulp errors are exact to about 1e-5 ulp (the reference's error).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

from analysis.common import int_arg, jsonable  # noqa: F401 (re-exported names)
from benchmarks.machine import machine_info, machine_line  # noqa: F401 (re-exported names)
from analysis.sweep_stats import (  # noqa: F401 (names of this module's interface)
    FUNCTIONS, N_PATTERNS, dy_bits, dy_for_bits, empty_stats, finish_row, merge_stats, n_inputs,
)
from reference import f64 as _ref
from reference.mp import ulp_error_dd

DEFAULT_CHUNK = 2**22
MAX_CHUNK = 2**24


# ------------------------------------------------------------------ inputs


def _bits(k0: int, k1: int, stride: int) -> np.ndarray:
    return (np.arange(k0, k1, dtype=np.uint64) * np.uint64(stride)).astype(np.uint32)


# --------------------------------------------------------------- callables


class _RoundedReference:
    """The f64 reference rounded to float32 (picklable, for --self-test)."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args):
        with np.errstate(over="ignore"):
            return np.asarray(getattr(_ref, self.name)(*args)).astype(np.float32)


#: what a sweep judges: the CPU ufuncs, or the GPU's float32 kernels
#: compiled for the CPU (the same IEEE operations in the same order, so the
#: same bits: see gelu_numba.kernels.gpu32): float32 arithmetic, or (plain32)
#: the float64-arithmetic kernel GPUs with full-rate FP64 run
KERNELS = ("cpu", "gpu32", "lean32", "plain32")


def gpu32_function(name: str):
    """The GPU's float32 kernel of ``name`` (``catalog`` record's
    ``gpu32``) as a float32-only ufunc on the CPU."""
    from gelu_numba import catalog
    from gelu_numba.targets.cpu import emulated

    fn = catalog.lookup(name)
    if fn.gpu32 is None:
        raise ValueError(f"{name} has no GPU float32 kernel of its own")
    return emulated.ufunc(f"gpu32_{name}", fn.gpu32, fn.nin, __name__,
                          f"The GPU's float32 {name} kernel, on the CPU.", _by_ufunc_name,
                          accepted="float32 (the GPU's float32 kernel)")


def plain32_function(name: str):
    """The float32 kernel in float64 arithmetic without the rounding test
    (the record's ``k32``, :mod:`gelu_numba.kernels.normal32_cpu_f64`),
    which GPUs with full-rate FP64 run, as a float32-only ufunc on the CPU."""
    from gelu_numba import catalog
    from gelu_numba.targets.cpu import emulated

    fn = catalog.lookup(name)
    return emulated.ufunc(f"plain32_{name}", fn.k32, fn.nin, __name__,
                          f"The float64-arithmetic float32 {name} kernel, on the CPU.",
                          _by_ufunc_name, accepted="float32 (the plain float32 kernel)")


def _by_ufunc_name(ufunc_name: str):
    # (pickling: the ufunc gpu32_<name>, lean32_<name> or plain32_<name> again)
    for prefix, make in (("lean32_", lean32_function), ("plain32_", plain32_function)):
        if ufunc_name.startswith(prefix):
            return make(ufunc_name.removeprefix(prefix))
    return gpu32_function(ufunc_name.removeprefix("gpu32_"))


def lean32_function(name: str):
    """The lean float32-arithmetic kernel of ``name``
    (:mod:`gelu_numba.kernels.lean32`) as a float32-only ufunc on the CPU."""
    from gelu_numba import catalog
    from gelu_numba.kernels import lean32
    from gelu_numba.targets.cpu import emulated

    if catalog.lookup(name).lean32 is None:
        lean = [f.name for f in catalog.FUNCTIONS if f.lean32 is not None]
        raise ValueError(f"no lean float32 kernel of {name!r}; there is one of "
                         f"{', '.join(lean)}")
    return emulated.ufunc(f"lean32_{name}", getattr(lean32, name), catalog.lookup(name).nin,
                          __name__,
                          f"The lean float32 {name} kernel, on the CPU.", _by_ufunc_name,
                          accepted="float32 (the lean float32 kernel)")


def function_for(name: str, self_test: bool, kernels: str = "cpu"):
    if self_test:
        return _RoundedReference(name)
    if kernels == "gpu32":
        return gpu32_function(name)
    if kernels == "lean32":
        return lean32_function(name)
    if kernels == "plain32":
        return plain32_function(name)
    import gelu_numba
    from gelu_numba import approximations

    f = getattr(gelu_numba, name, None) or getattr(approximations, name, None)
    if f is None:
        raise AttributeError(f"gelu_numba has no function {name!r}")
    return f


def sweepable() -> list[str]:
    """Names the sweep can judge: the exact six (against the f64 reference),
    then the one-argument approximations and the x F(x) family (against their
    own float64 loop, which the tests check against mpmath to 2 ulps)."""
    from gelu_numba import catalog

    return list(FUNCTIONS) + [f.name for group in ("approximation", "family")
                              for f in catalog.group(group) if f.nin == 1]


def _reference(name: str):
    if name in FUNCTIONS:
        return getattr(_ref, name)
    f64 = function_for(name, False)
    return lambda *a: f64(*(np.asarray(v, np.float64) for v in a))


# ------------------------------------------------------------------- chunks


def _chunk_stats(name, func, k0, k1, stride) -> dict:
    bits = _bits(k0, k1, stride)
    x = bits.view(np.float32)
    args = (dy_for_bits(bits), x) if name == "gelu_backward" else (x,)
    with np.errstate(all="ignore"):
        out = np.asarray(func(*args))
        ref = np.asarray(_reference(name)(*args), dtype=np.float64)
    st = empty_stats()
    st["output_dtype"] = str(out.dtype)
    if out.shape != x.shape:
        raise ValueError(f"{name} returned shape {out.shape} for input {x.shape}")
    out64 = out.astype(np.float64)

    nan_in = np.isnan(x)
    st["nan_inputs"] = int(nan_in.sum())
    st["nan_inputs_bad_output"] = int((nan_in & ~np.isnan(out64)).sum())

    keep = ~nan_in
    o, r, b = out64[keep], ref[keep], bits[keep]
    st["checked"] = int(o.size)
    o_nan, r_nan = np.isnan(o), np.isnan(r)
    o_inf, r_inf = np.isinf(o), np.isinf(r)
    mismatch = (o_nan != r_nan) | (o_inf != r_inf) | (o_inf & r_inf & (o != r))
    st["special_mismatches"] = int(mismatch.sum())
    if mismatch.any():
        st["first_mismatch_bits"] = int(b[np.argmax(mismatch)])

    with np.errstate(all="ignore"):
        r32 = r.astype(np.float32).astype(np.float64)
        same = (o == r32) | (o_nan & r_nan)
    st["correctly_rounded"] = int(same.sum())

    err = ulp_error_dd(o, r, np.zeros_like(r), np.float32)
    err = np.where(mismatch, -1.0, err)  # mismatches are reported separately
    st["over_1ulp"] = int((err > 1.0).sum())
    if err.size:
        i = int(np.argmax(err))
        if err[i] >= 0:
            st["max_ulp"] = float(err[i])
            st["worst_bits"] = int(b[i])
            st["worst_output"] = float(o[i])
            st["worst_reference"] = float(r[i])
    return st


def _worker(job):
    name, self_test, kernels, k0, k1, stride = job
    return k1 - k0, _chunk_stats(name, function_for(name, self_test, kernels), k0, k1, stride)


def sweep(
    func_name: str,
    stride: int = 1,
    chunk: int = DEFAULT_CHUNK,
    progress: bool = True,
    *,
    workers: int = 1,
    self_test: bool = False,
    kernels: str = "cpu",
    func=None,
    client=None,
) -> dict:
    """Sweep float32 bit patterns ``0, stride, 2*stride, ...`` for one function.

    Parameters
    ----------
    func_name : str
        One of :func:`sweepable` (:data:`FUNCTIONS` with ``self_test``);
        selects the reference and, unless ``func`` or ``self_test`` is given,
        the kernel ``gelu_numba.<func_name>``.
    stride : int
        Distance between bit patterns (1 = all 2**32).
    chunk : int
        Inputs per chunk (bounds memory: about 130 bytes per input).
    progress : bool
        Show a tqdm progress bar.
    workers : int, keyword-only
        Processes (spawned; each imports gelu_numba). Only with ``func``
        left as None.
    self_test : bool, keyword-only
        Sweep the reference rounded to float32 instead of the kernel.
    kernels : {"cpu", "gpu32", "lean32", "plain32"}, keyword-only
        ``"gpu32"``, ``"lean32"``: judge a GPU float32 kernel in float32
        arithmetic, ``"plain32"`` the one in float64 arithmetic (each
        compiled for the CPU) instead of the CPU ufunc.
    func : callable, optional, keyword-only
        Callable to judge instead of the kernel (``func(x)``, or
        ``func(dy, x)`` for gelu_backward); single-process only.
    client : distributed.Client, optional, keyword-only
        Run the chunks as tasks of this Dask client's cluster instead
        (``workers`` is then unused; its workers import gelu_numba and this
        module).

    Returns
    -------
    dict
        ``function, stride, checked, max_ulp, worst_input, worst_input_hex,
        worst_output, worst_reference, correctly_rounded,
        correctly_rounded_share, over_1ulp, special_mismatches,
        first_mismatch_hex, nan_inputs, nan_inputs_bad_output, output_dtype,
        seconds``.
    """
    if func_name not in (FUNCTIONS if self_test else sweepable()):
        raise ValueError(f"unknown function {func_name!r}; choose from {', '.join(sweepable())}")
    if stride < 1 or chunk < 1:
        raise ValueError("stride and chunk must be >= 1")
    if workers < 1:
        raise ValueError("workers must be >= 1")
    if func is not None and (workers > 1 or client is not None):
        raise ValueError("a custom func can only be swept in this process")
    n = n_inputs(stride)
    bounds = [(k, min(k + chunk, n)) for k in range(0, n, chunk)]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n, unit="in", unit_scale=True, desc=func_name, file=sys.stderr)
    t0 = time.perf_counter()
    total = empty_stats()
    with contextlib.ExitStack() as stack:
        if bar is not None:
            stack.callback(bar.close)
        jobs = [(func_name, self_test, kernels, k0, k1, stride) for k0, k1 in bounds]
        if client is not None:
            from distributed import as_completed

            futures = [client.submit(_worker, job, pure=False) for job in jobs]
            results = (fut.result() for fut in as_completed(futures))
        elif workers > 1:
            ctx = multiprocessing.get_context("spawn")
            ex = stack.enter_context(
                concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx))
            results = ex.map(_worker, jobs)
        else:
            f = func if func is not None else function_for(func_name, self_test, kernels)
            results = ((k1 - k0, _chunk_stats(func_name, f, k0, k1, stride))
                       for k0, k1 in bounds)
        for size, st in results:
            merge_stats(total, st)
            if bar is not None:
                bar.update(size)
    return finish_row(func_name, stride, total, time.perf_counter() - t0)


# ---------------------------------------------------------------- reporting


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def markdown_table(results: list[dict]) -> str:
    """Render sweep results as a markdown table."""
    lines = [
        "| function | checked | max ulp | worst input | worst hex | correctly rounded | "
        "> 1 ulp | NaN/inf mismatches | NaN inputs (bad) |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in results:
        share = r["correctly_rounded_share"]
        lines.append(
            f"| {r['function']} | {r['checked']} | {_fmt(r['max_ulp'], '.4f')} | "
            f"{_fmt(r['worst_input'], '.9g')} | {r['worst_input_hex'] or '-'} | "
            f"{'-' if share is None else f'{100 * share:.5f} %'} | {r['over_1ulp']} | "
            f"{r['special_mismatches']} | {r['nan_inputs']} ({r['nan_inputs_bad_output']}) |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------- CLI


def _functions_arg(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in FUNCTIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown function(s) {', '.join(bad) or '(none)'}; choose from {', '.join(FUNCTIONS)}"
        )
    return names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m analysis.sweep_float32",
        description="Sweep float32 inputs and measure gelu_numba's ulp errors "
        "against the float64 reference.",
    )
    p.add_argument("--functions", type=_functions_arg, default=list(FUNCTIONS),
                   help=f"comma-separated subset of {','.join(FUNCTIONS)} (default: all)")
    p.add_argument("--stride", type=int_arg, default=1,
                   help="bit-pattern stride (default 1 = all 2**32 inputs; odd strides sample evenly)")
    p.add_argument("--chunk", type=int_arg, default=DEFAULT_CHUNK,
                   help="inputs per chunk, at most 2**24 (default 2**22, ~0.5 GB)")
    p.add_argument("--workers", type=int_arg, default=1, help="processes (default 1)")
    p.add_argument("--out", type=Path, default=None, help="write results as JSON here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--kernels", choices=KERNELS, default="cpu",
                   help="cpu: the ufuncs (default); gpu32: the GPU's float32 kernels "
                        "(float32 arithmetic) compiled for the CPU, same bits as on the GPU; "
                        "lean32: the lean float32 kernels (kernels.lean32: gelu, "
                        "ndtr, gelu_grad, gelu_backward)")
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                   help="gpu: run the sweep on the GPU (analysis.gpu.sweep): the GPU's float32 "
                        "kernels against its float64 kernels, inputs generated on the device")
    p.add_argument("--peers", default=None,
                   help="with --device gpu: also sweep these libraries' GELUs on the GPU, "
                        "comma-separated names of analysis.gpu.peers.PEERS or 'all' "
                        "(those not installed are reported, not swept)")
    p.add_argument("--self-test", action="store_true",
                   help="sweep the f64 reference rounded to float32 against itself "
                        "(checks the machinery; must give <= 0.5 ulp)")
    return p


def _write(args, argv, info, results, **fields):
    if args.out is None:
        return
    payload = {
        "command": "python -m analysis.sweep_float32 " + " ".join(sys.argv[1:] if argv is None else argv),
        "self_test": args.self_test,
        **fields,
        "machine": info,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(jsonable(payload), indent=2) + "\n")
    print(f"wrote {args.out}")


def _main_gpu(args, argv) -> int:
    if args.self_test or args.kernels != "cpu" or args.workers != 1:
        build_parser().error("--device gpu takes no --self-test, --kernels or --workers "
                             "(it judges the GPU's own float32 kernels, on the GPU)")
    from analysis.gpu import sweep as sweep_gpu

    gpu = sweep_gpu.device_name()
    results = [sweep_gpu.sweep_gpu(name, args.stride, progress=not args.no_progress)
               for name in args.functions]
    missing = {}
    if args.peers:
        from analysis.gpu import peers as gpu_peers

        names = None if args.peers == "all" else [s for s in args.peers.split(",") if s]
        try:
            peers, missing = gpu_peers.available(names)
        except ValueError as e:
            build_parser().error(str(e))
        for peer in peers.values():
            results.append(sweep_gpu.sweep_gpu(peer.function, args.stride,
                                               progress=not args.no_progress,
                                               func=peer.call, label=peer.name))
    info = machine_info()
    print(f"\n## float32 sweep on the GPU ({gpu}): float32 results against its "
          f"float64 kernels, stride {args.stride}\n")
    print(markdown_table(results))
    for name, why in missing.items():
        print(f"- {name}: not swept: {why}")
    print("\nMachine: " + machine_line(info) + f", GPU {gpu}")
    _write(args, argv, info, results, device="gpu", gpu=gpu, peers_missing=missing)
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.chunk > MAX_CHUNK:
        parser.error(f"--chunk must be at most 2**24 = {MAX_CHUNK}")
    if args.device == "gpu":
        return _main_gpu(args, argv)
    if args.peers:
        parser.error("--peers needs --device gpu")
    if not args.self_test:
        try:
            for name in args.functions:
                function_for(name, False, args.kernels)
        except Exception as exc:  # import or attribute errors: tell, don't trace
            parser.error(f"cannot load gelu_numba kernels ({type(exc).__name__}: {exc}); "
                         "try --self-test to check the sweep itself")
    info = machine_info()
    results = [
        sweep(name, args.stride, args.chunk, not args.no_progress,
              workers=args.workers, self_test=args.self_test, kernels=args.kernels)
        for name in args.functions
    ]
    what = ("f64 reference rounded to float32 (SELF-TEST)" if args.self_test
            else "the GPU's float32 kernels (float32 arithmetic, on the CPU)"
            if args.kernels == "gpu32"
            else "the lean float32 kernels (kernels.lean32: float32 arithmetic, on the CPU)"
            if args.kernels == "lean32" else "gelu_numba kernels")
    print(f"\n## float32 sweep: {what}, stride {args.stride}\n")
    print(markdown_table(results))
    print("\nMachine: " + machine_line(info))
    _write(args, argv, info, results, kernels=args.kernels)
    if args.self_test:
        bad = [r["function"] for r in results
               if r["max_ulp"] is None or r["max_ulp"] > 0.5 or r["special_mismatches"]
               or r["nan_inputs_bad_output"] or r["correctly_rounded"] != r["checked"]]
        if bad:
            print(f"SELF-TEST FAILED for {', '.join(bad)}", file=sys.stderr)
            return 1
        print("self-test passed: reference rounded to float32 is within 0.5 ulp everywhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())
