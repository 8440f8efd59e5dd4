"""What the GPU runs per element, without a GPU: the SASS of each device
function for an H100 (sm_90), counted on the hot path.

Usage::

    python -m analysis.gpu_sass [--functions gelu,gelu_backward,...] [--out FILE]

Method
------
Each function is wrapped in a one-element-per-thread kernel (load, call,
store), compiled by numba-cuda to PTX for ``cc=(9, 0)``, by ``ptxas
-arch=sm_90 -O3`` (the ``nvidia-cuda-nvcc-cu12`` wheel of the test extra)
to a cubin, and disassembled by ``cuobjdump -sass`` (the
``nvidia-cuda-cuobjdump`` and ``nvidia-cuda-nvdisasm`` wheels).  The hot
path is the straight line from the kernel's entry to the first ``EXIT``
after its store: the code an element runs unless it takes a slow path
(the division's subroutine for special divisors, placed after it).  Three
versions per function where they exist: the GPU's float32 kernel
(:mod:`gelu_numba.kernels.normal_f32`), the float32 kernel in float64
arithmetic that it replaced on the GPU (the CPU's,
:mod:`gelu_numba.kernels.normal32`), and the float64 kernel.

Reading the counts
------------------
An H100 SM issues one warp instruction per cycle in each of its four
sub-partitions, and runs FP32 at one warp instruction per cycle there,
FP64 at one per two cycles.  A kernel with ``N`` hot-path instructions, of
which ``D`` are FP64, therefore needs at least ``max(N, 2 D)`` cycles per
warp-element: ``issue bound = SMs * 4 * clock * 32 / max(N, 2 D)`` elements
per second (132 SMs at 1.98 GHz for the H100 SXM; the loop's own
instructions are in ``N``, memory stalls are not).  On GPUs whose FP64 runs
at 1/32 or 1/64 of FP32 (L4, A10, T4, RTX) the FP64 term is ``16 D`` or
``32 D`` instead.  The report divides the bound by the rate of a
device-to-device copy (372 G float32 / 186 G float64 elements per second,
measured with ``cuMemcpyDtoD`` on an H100 on 2026-11-23, issue 14): a
kernel whose bound is below the copy cannot run at copy speed.  These are
estimates from static code, not measurements.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

CORE = ("gelu", "gelu_backward", "gelu_grad", "gelu_grad2", "ndtr", "norm_pdf")
#: H100 SXM: multiprocessors, boost clock (Hz)
H100_SMS, H100_CLOCK = 132, 1.98e9
#: device-to-device copy on an H100, G elements per second (issue 14)
COPY_GELEMS = {"float32": 372.0, "float64": 186.0}
_FP64 = re.compile(r"D(FMA|ADD|MUL|SETP|MNMX)\b")


def _tool(module, name):
    """The path of a CUDA tool shipped in an ``nvidia`` wheel."""
    import importlib.util
    for mod in module:
        spec = importlib.util.find_spec(mod)
        if spec is None or not spec.submodule_search_locations:
            continue
        for root in spec.submodule_search_locations:
            for path in Path(root).rglob(name):
                if path.is_file():
                    return str(path)
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"{name} not found: pip install nvidia-cuda-nvcc-cu12 "
                            "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm (the test extra)")


def _kernel_ptx(kernel_fn, ty, nin):
    """PTX (cc 9.0) of a one-element-per-thread kernel around the scalar
    kernel ``kernel_fn`` (a plain Python function of scalars)."""
    from numba import cuda

    dev = cuda.jit(device=True)(kernel_fn)
    if nin == 1:
        def k(x, out):
            i = cuda.grid(1)
            if i < x.size:
                out[i] = dev(x[i])
    else:
        def k(dy, x, out):
            i = cuda.grid(1)
            if i < x.size:
                out[i] = dev(dy[i], x[i])
    ptx, _ = cuda.compile_ptx(k, (ty[::1],) * (nin + 1), cc=(9, 0))
    return ptx


def hot_path(sass: str) -> list[str]:
    """The opcodes from the entry to the first EXIT after the first store."""
    ops = []
    for line in sass.splitlines():
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            ops.append(m.group(1))
    store = next(i for i, op in enumerate(ops) if op.startswith("STG"))
    end = next(i for i in range(store, len(ops)) if ops[i] == "EXIT")
    return [op for op in ops[:end + 1] if op != "NOP"]


def count(kernel_fn, dtype: str, nin: int) -> dict:
    """Hot-path counts and registers of ``kernel_fn`` for ``dtype``."""
    from numba import float32, float64

    ptx = _kernel_ptx(kernel_fn, {"float32": float32, "float64": float64}[dtype], nin)
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        Path(src).write_text(ptx)
        run = subprocess.run([_tool(["nvidia.cuda_nvcc", "nvidia"], "ptxas"), "-arch=sm_90",
                              "-O3", "-v", src, "-o", cubin],
                             capture_output=True, text=True, check=True)
        regs = int(re.search(r"Used (\d+) registers", run.stderr).group(1))
        env = dict(os.environ)
        dis = _tool(["nvidia"], "nvdisasm")
        env["PATH"] = os.path.dirname(dis) + os.pathsep + env.get("PATH", "")
        sass = subprocess.run([_tool(["nvidia"], "cuobjdump"), "-sass", cubin],
                              capture_output=True, text=True, check=True, env=env).stdout
    ops = hot_path(sass)
    classes = Counter(op.split(".")[0] for op in ops)
    fp64 = sum(1 for op in ops if _FP64.match(op))
    fp32 = sum(v for k, v in classes.items() if k in ("FFMA", "FADD", "FMUL"))
    cycles = max(len(ops), 2 * fp64)
    bound = H100_SMS * 4 * H100_CLOCK * 32 / cycles / 1e9
    return {"dtype": dtype, "hot": len(ops), "fp32": fp32, "fp64": fp64,
            "mufu": classes.get("MUFU", 0), "regs": regs,
            "h100_bound_gelems": bound, "of_copy": bound / COPY_GELEMS[dtype],
            "fp64_1_64_cycles": max(len(ops), 32 * fp64)}


def versions(name: str):
    """``(label, kernel, dtype)`` for the versions of ``name`` the GPU ran
    or runs."""
    from gelu_numba import catalog

    fn = catalog.lookup(name)
    out = []
    if fn.k32_gpu is not None:
        out.append(("float32, float32 arithmetic (GPU, now)", fn.k32_gpu, "float32"))
        out.append(("float32, float64 arithmetic (CPU; GPU before)", fn.k32, "float32"))
    else:
        out.append(("float32", fn.k32, "float32"))
    out.append(("float64", fn.k64, "float64"))
    return fn.nin, out


def table(names) -> str:
    lines = ["| function | kernel | hot-path SASS | FP32 arith. | FP64 | MUFU | registers "
             "| H100 issue bound, G elem/s | of copy | cycles per warp-element, FP64 at 1/64 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        nin, vs = versions(name)
        for label, k, dtype in vs:
            c = count(k, dtype, nin)
            lines.append(f"| `{name}` | {label} | {c['hot']} | {c['fp32']} | {c['fp64']} | "
                         f"{c['mufu']} | {c['regs']} | {c['h100_bound_gelems']:.0f} | "
                         f"{c['of_copy']:.0%} | {c['fp64_1_64_cycles']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.gpu_sass",
                                description=__doc__.splitlines()[0])
    p.add_argument("--functions", default=",".join(CORE))
    p.add_argument("--out", help="also write the markdown table here")
    args = p.parse_args(argv)
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)   # (read when numba is imported)
    from numba import cuda
    if not cuda.is_available():
        # numba-cuda asks the current device for its compute capability
        # even under compile_ptx with an explicit cc; without a driver,
        # answer for it
        import numba.cuda.dispatcher as dispatcher

        class _Device:
            compute_capability = (9, 0)

        dispatcher.get_current_device = lambda: _Device()
    text = ("SASS per element for sm_90 (ptxas -O3), hot path of a one-element kernel; "
            "issue bound for an H100 SXM (python -m analysis.gpu_sass)\n\n"
            + table([s for s in args.functions.split(",") if s]) + "\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
