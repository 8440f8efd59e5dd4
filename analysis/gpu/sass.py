"""What the GPU runs per element, without a GPU: the SASS of each device
function for an H100 (sm_90), counted on the hot path.

Usage::

    python -m analysis.gpu.sass [--functions gelu,gelu_backward,...] [--out FILE]

Method
------
Each function is wrapped in a one-element-per-thread kernel (load, call,
store), compiled by numba-cuda to PTX for ``cc=(9, 0)``, by ``ptxas
-arch=sm_90 -O3`` (the ``nvidia-cuda-nvcc-cu12`` wheel of the test extra)
to a cubin, and disassembled by ``cuobjdump -sass`` (the
``nvidia-cuda-cuobjdump`` and ``nvidia-cuda-nvdisasm`` wheels). The hot
path is the straight line from the kernel's entry to the first ``EXIT``
after its store: the code an element runs unless it takes a slow path (the
division's subroutine for special divisors, placed after it). Then the
kernel ``gelu_numba.gpu`` launches on contiguous arrays (the flat
grid-stride loop, ``UNROLL`` elements per trip, the fast launch's) is
compiled the same way: its longest loop, from a backward branch's target to
the branch, divided by ``UNROLL`` is the per-element count that the bound
below uses (loads, stores and loop control shared by the unrolled
elements).  Its common path leaves out the regions that only a slow path
runs (the argument set-up and call of the division's subroutine, which a
predicated branch skips for every divisor but special ones:
:func:`loop_common_path`). Its constant moves are the ``UMOV``/``MOV``/``IMAD.MOV`` of a
literal: no SASS instruction takes a 64-bit immediate, so each float64
constant costs two of them, and inside the loop wherever ptxas does not
keep it in a register. Three versions per function where they exist: the
GPU's float32 kernel (:mod:`gelu_numba.kernels.gpu32`), the float32
kernel in float64 arithmetic (the CPU's,
:mod:`gelu_numba.kernels.normal32_cpu_f64`, which devices with full-rate FP64
run, its coefficient tables an argument of the launched kernel), and the
float64 kernel; for gelu, ndtr, gelu_grad and gelu_backward also the lean
float32-arithmetic kernel (:mod:`gelu_numba.kernels.lean32`, its table an
argument of the grid-stride loop), which ``gelu_numba.gpu`` launches on
devices without full-rate FP64 (the GPU's float32 kernel then remains the
device functions').  Its table reads (11 float32 an element, from device
memory through the L1 cache) count as instructions here, not as traffic:
the bound does not see them.

The 2-byte kernels of ``gelu`` and ``gelu_backward``
(:mod:`gelu_numba.targets.cuda.half_kernels`, bfloat16 and float16 bit patterns)
are counted the same way, per store of their loop (which ptxas unrolls).

Reading the counts
------------------
An H100 SM issues one warp instruction per cycle in each of its four
sub-partitions, and runs FP32 at one warp instruction per cycle there, FP64
at one per two cycles (16 FP64 lanes a sub-partition).  A kernel whose loop
runs ``N`` instructions per element, of which ``D`` are FP64, is counted as
needing ``N + D`` cycles per warp-element, each FP64 instruction holding its
sub-partition for a second cycle: ``issue bound = SMs * 4 * clock * 32 /
(N + D)`` elements per second (132 SMs at 1.98 GHz for the H100 SXM and the
H200; the loop's own instructions are in ``N``, memory stalls are not).
Not ``max(N, 2 D)``, which would let the FP64 instructions overlap the
rest: the H200 run of 2026-11-27 put the FP64-heavy kernels of ``gelu``,
``gelu_grad``, ``gelu_backward`` and ``ndtr`` (float64, and float32 in
float64 arithmetic) well below that bound and close to ``N + D``; those of
``gelu_grad2`` and ``norm_pdf``, the shortest, run further below it (the
calibration table of ``benchmarks/results/gpu_sass_sm90.md``). On GPUs whose FP64
runs at 1/32 or 1/64 of FP32 (L4, A10, T4, RTX) the FP64 term is ``16 D``
or ``32 D`` instead. The report divides the bound by the rate of a
device-to-device copy of the same bytes (372 G float32 / 186 G float64
elements per second, measured with ``cuMemcpyDtoD`` on an H100 on
2026-11-23; two thirds of that for ``gelu_backward``, which moves
three arrays where the copy moves two): a kernel whose bound is below the
copy cannot run at copy speed. These are estimates from static code, not
measurements; the float32 kernels timed on an H100 on 2026-11-22 ran at
84-90 % of their bound (``python -m analysis.gpu.sass_calibration``, which
counts that commit's kernels).  ``--measured`` sets each kernel's speed in
the last GPU run's throughput report beside its bound and the copy's rate
(:func:`calibration`): how far the bound is from what runs, per kind of
kernel.
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

from gelu_numba import catalog

CORE = catalog.names("exact")
#: the 2-byte kernels' formats (gelu and gelu_backward)
HALF_FORMATS = ("bfloat16", "float16")
#: H100 SXM: multiprocessors, boost clock (Hz)
H100_SMS, H100_CLOCK = 132, 1.98e9
#: device-to-device copy on an H100, G elements per second (2026-11-23)
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


def without_a_driver():
    """Let numba-cuda compile PTX for cc 9.0 where there is no CUDA driver.

    numba-cuda 0.30 asks the current device for its compute capability
    when it compiles a device function called by another, even under
    ``compile_ptx`` with an explicit ``cc``; without a driver, answer for
    it.  A no-op where a GPU is present.  It changes numba-cuda's module
    state, so it is for scripts and test subprocesses, never the package.
    """
    from numba import cuda
    if not cuda.is_available():
        import numba.cuda.dispatcher as dispatcher

        class _Device:
            compute_capability = (9, 0)

        dispatcher.get_current_device = lambda: _Device()


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


def _flat_kernel_ptx(record, ty, fp64=False, vec4=False):
    """PTX (cc 9.0) of the kernel ``gelu_numba.gpu`` launches on contiguous
    arrays (the fast launch's): the grid-stride loop over ``UNROLL``
    elements per trip, around catalog record ``record``'s device function
    (``fp64``: the float32 loop of a device with full-rate FP64, the
    float64-arithmetic kernel, its tables an argument; ``vec4``: its
    16-byte loads and stores, what float32 operands all 16-byte aligned
    take)."""
    from numba import cuda, float64

    from gelu_numba.targets import cuda as target

    loop = "f" if ty.bitwidth == 32 else "d"
    layout = target.flat_layout(record.nin)
    if fp64:
        gf = target.gpu_function(record.name)
    else:
        gf = target.GpuFunction(record.name, target.device_function(record), record.nin, "")
    kernel = gf.kernel(loop, layout, fp64=fp64, vec4=vec4)
    argtypes = [ty[::1]] * (record.nin + 1)
    if gf.tables_argument(loop, layout, fp64=fp64):
        argtypes.insert(record.nin, float64[::1])
    ptx, _ = cuda.compile_ptx(kernel.py_func, tuple(argtypes), cc=(9, 0))
    return ptx


def lean_kernel(name, flat, vec4=False):
    """``(kernel, table)``: the Python function of a kernel around the lean
    float32 kernel of ``name`` (:mod:`gelu_numba.kernels.lean32`), its
    table an argument after the inputs (``kernel(a0[, a1], table, out)``),
    for ``cuda.jit`` or ``cuda.compile_ptx``: one element per thread, or
    (``flat``) the kernel ``gelu_numba.gpu`` launches on contiguous arrays
    on a device without full-rate FP64 (``vec4``: its 16-byte loads and
    stores, what operands all 16-byte aligned take)."""
    from numba import cuda

    from gelu_numba import catalog
    from gelu_numba.targets import cuda as target

    table = catalog.lookup(name).lean32[1]
    gf = target.gpu_function(name)
    if flat:
        return gf.kernel("f", target.flat_layout(gf.nin), fp64=False, lean32=True,
                         vec4=vec4).py_func, table
    args = ", ".join(f"a{k}" for k in range(gf.nin))
    loads = ", ".join(f"a{k}[i]" for k in range(gf.nin))
    source = (f"def kernel({args}, tab, out):\n    i = cuda.grid(1)\n"
              f"    if i < out.size:\n        out[i] = dev({loads}, tab)\n")
    scope = {"dev": gf.lean32(), "cuda": cuda}
    exec(compile(source, "<lean kernel>", "exec"), scope)  # noqa: S102
    return scope["kernel"], table


def _lean_ptx(record, flat, vec4=False):
    """PTX (cc 9.0) of :func:`lean_kernel`."""
    from numba import cuda, float32

    kernel, _ = lean_kernel(record.name, flat, vec4)
    ptx, _ = cuda.compile_ptx(kernel, (float32[::1],) * (record.nin + 2), cc=(9, 0))
    return ptx


_INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:\{\s*)?(?:@!?U?P\w+\s+)?"
                          r"([A-Z][A-Z0-9_.]*)([^;]*);")


def instructions(sass: str) -> list[tuple[int, str, str]]:
    """``(address, opcode, operands)`` of each instruction in a listing."""
    return [(int(m.group(1), 16), m.group(2), m.group(3).strip())
            for m in map(_INSTRUCTION.match, sass.splitlines()) if m]


def hot_path(sass: str) -> list[str]:
    """The opcodes from the entry to the first EXIT after the first store."""
    ops = [op for _, op, _ in instructions(sass)]
    store = next(i for i, op in enumerate(ops) if op.startswith("STG"))
    end = next(i for i in range(store, len(ops)) if ops[i] == "EXIT")
    return [op for op in ops[:end + 1] if op != "NOP"]


def loop_body(sass: str) -> list[tuple[str, str]]:
    """``(opcode, operands)`` of the longest loop: from the target of a
    backward branch to the branch (the unrolled grid-stride loop; its
    remainder loop is shorter; a region with an ``EXIT`` in it is none).  A
    slow path placed outside the loop (the division's subroutine) is not in
    it; the branches around it are."""
    return [(op, operands) for _, op, operands in _loop(sass)]


def _loop(sass: str) -> list[tuple[int, str, str]]:
    ins = instructions(sass)
    loops = []
    for addr, op, operands in ins:
        target = re.search(r"0x([0-9a-f]+)\s*$", operands) if op.startswith("BRA") else None
        if target and int(target.group(1), 16) < addr:
            loops.append((int(target.group(1), 16), addr))
    # (a slow path placed after the kernel's EXIT that branches back into
    # the loop is not a loop)
    exits = [addr for addr, op, _ in ins if op == "EXIT"]
    loops = [(a, b) for a, b in loops if not any(a <= e <= b for e in exits)]
    if not loops:
        raise ValueError("no loop (backward branch) in the listing")
    first, last = max(loops, key=lambda lo: lo[1] - lo[0])
    return [i for i in ins if first <= i[0] <= last and i[1] != "NOP"]


def loop_common_path(sass: str) -> int:
    """Instructions of the longest loop (:func:`loop_body`) that an element
    issues unless it takes a slow path: less each region a predicated
    forward branch skips when that region holds a ``CALL`` (the argument
    set-up and call of the division's subroutine for special divisors,
    which the kernels' denominators, in a fixed range, never are)."""
    inside = _loop(sass)
    skipped = set()
    for addr, op, operands in inside:
        target = re.search(r"^!?U?P\w+,\s*0x([0-9a-f]+)\s*$", operands) if op == "BRA" else None
        if target:
            region = [(a, o) for a, o, _ in inside if addr < a < int(target.group(1), 16)]
            if any(o.startswith("CALL") for _, o in region):
                skipped.update(a for a, _ in region)
    return len(inside) - len(skipped)


def constant_moves(body) -> int:
    """Instructions of ``body`` (``(opcode, operands)``) that only put an
    immediate into a register: ``UMOV``/``MOV``/``IMAD.MOV`` of a literal
    (float64 constants, which no SASS instruction takes as an operand, cost
    two each)."""
    return sum(1 for op, operands in body
               if op.startswith(("UMOV", "MOV", "IMAD.MOV"))
               and re.search(r",\s*-?0x[0-9a-f]+$|,\s*-?\d+$", operands))


def _sass(ptx: str) -> tuple[str, int]:
    """``(cuobjdump -sass listing, registers)`` of ``ptx`` for sm_90."""
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        Path(src).write_text(ptx)
        run = subprocess.run([_tool(["nvidia.cuda_nvcc", "nvidia"], "ptxas"), "-arch=sm_90",
                              "-O3", "-v", src, "-o", cubin],
                             capture_output=True, text=True, check=True)
        regs = max(int(r) for r in re.findall(r"Used (\d+) registers", run.stderr))
        env = dict(os.environ)
        dis = _tool(["nvidia"], "nvdisasm")
        env["PATH"] = os.path.dirname(dis) + os.pathsep + env.get("PATH", "")
        sass = subprocess.run([_tool(["nvidia"], "cuobjdump"), "-sass", cubin],
                              capture_output=True, text=True, check=True, env=env).stdout
    return sass, regs


#: what an H100 or H200 SM holds of resident threads: 64K 32-bit
#: registers, at most 2048 threads (64 warps) and 32 blocks
SM_REGISTERS, SM_THREADS, SM_BLOCKS = 65536, 2048, 32
#: loaded HBM latency assumed by :func:`latency_bound`, seconds: the round
#: figure the kernels were designed with (bandwidth times latency over the
#: SMs gives the bytes each SM must keep in flight); the calibration below
#: shows how far each timed kernel is from what it predicts
LOADED_LATENCY_S = 0.6e-6


def _load_width(op):
    return (16 if ".128" in op else 8 if ".64" in op else 2 if ".U16" in op or ".S16" in op
            else 1 if ".U8" in op or ".S8" in op else 4)


def bytes_in_flight(body) -> int:
    """Bytes of global loads a thread starts in one trip of the loop
    ``body`` (:func:`loop_body`) before an instruction reads what any of
    them loaded: what it has in flight while it waits for the memory."""
    loaded, total = set(), 0
    for op, operands in body:
        parts = [p.strip() for p in operands.rstrip(" ;").split(",")]
        sources = parts if op.startswith(("ST", "BRA", "RED", "ATOM")) else parts[1:]
        used = {int(r) for p in sources for r in re.findall(r"\bR(\d+)", p)}
        if used & loaded:
            break
        if op.startswith("LDG"):
            width = _load_width(op)
            dest = int(re.match(r"R(\d+)", parts[0]).group(1))
            loaded |= set(range(dest, dest + max(1, width // 4)))
            total += width
    return total


def threads_per_sm(registers: int, block: int = 256) -> int:
    """Resident threads per SM for kernels of ``registers`` per thread in
    blocks of ``block`` (registers allocated per warp in units of 256)."""
    per_warp = -(-max(registers, 1) * 32 // 256) * 256
    warps = min(SM_REGISTERS // per_warp, SM_THREADS // 32)
    blocks = min(warps // (block // 32), SM_BLOCKS)
    return blocks * block


def latency_bound(in_flight_thread: int, registers: int, bytes_read: int,
                  threads=None) -> float:
    """G elements per second that Little's law allows a kernel whose
    threads each keep ``in_flight_thread`` bytes of loads in flight and
    read ``bytes_read`` bytes per element: the SMs' bytes in flight over
    :data:`LOADED_LATENCY_S`.  ``threads``: resident threads per SM where
    something else than registers caps them (shared memory), else
    :func:`threads_per_sm`."""
    per_sm = in_flight_thread * (threads or threads_per_sm(registers))
    return H100_SMS * per_sm / LOADED_LATENCY_S / bytes_read / 1e9


def issue_bound(n, fp64):
    """The H100 (and H200) issue bound, G elements per second, for ``n``
    instructions per element of which ``fp64`` are FP64, each of those
    taking two issue cycles (see the module docstring)."""
    return H100_SMS * 4 * H100_CLOCK * 32 / (n + fp64) / 1e9


def count(record, variant: str) -> dict:
    """Counts for catalog record ``record``'s kernel ``variant`` (``gpu32``:
    the GPU's float32 kernel; ``k32``: the float32 kernel in float64
    arithmetic; ``k64``: the float64 kernel, general form; ``k64o``: its
    ordinary form, what a warp all in range runs): the one-element kernel's hot
    path, and per element of the launched kernel's unrolled loop.  The
    float32 loops are those of operands all 16-byte aligned (16-byte loads
    and stores); the float32 variants with :data:`FLAT` appended
    (``"k32 flat"``) count the loop of 4-byte loads the others take."""
    import dataclasses

    from numba import float32, float64

    variant, flat = variant.removesuffix(FLAT), variant.endswith(FLAT)
    if variant == "lean32":
        return _counts(record, *_sass(_lean_ptx(record, False)),
                       *_sass(_lean_ptx(record, True, vec4=not flat)), "float32")
    if variant == "k64o":
        # the ordinary form alone: what a warp all in range runs (the
        # launched kernel holds both forms and chooses by a warp vote)
        record = dataclasses.replace(record, k64=record.ordinary[1])
    kernel_fn = {"gpu32": record.gpu32, "k32": record.k32, "k64": record.k64,
                 "k64o": record.k64}[variant]
    ty, dtype = (float64, "float64") if variant.startswith("k64") else (float32, "float32")
    record = dataclasses.replace(record, ordinary=None)
    sass, regs = _sass(_kernel_ptx(kernel_fn, ty, record.nin))
    # the launched kernel: the record as gelu_numba.gpu compiles it; the
    # float32 kernel in float64 arithmetic as a device with full-rate FP64
    # runs it, or in its place where the record has no other
    vec4 = dtype == "float32" and not flat
    if variant == "k32" and record.gpu32 is not None:
        loop_sass, loop_regs = _sass(_flat_kernel_ptx(record, ty, fp64=True, vec4=vec4))
    else:
        launched = record if variant != "k32" else dataclasses.replace(record, gpu32=None)
        loop_sass, loop_regs = _sass(_flat_kernel_ptx(launched, ty, vec4=vec4))
    return _counts(record, sass, regs, loop_sass, loop_regs, dtype)


def _counts(record, sass, regs, loop_sass, loop_regs, dtype):
    """The counts of :func:`count` from the one-element kernel's listing
    and the launched kernel's."""
    from gelu_numba.targets.cuda import UNROLL

    ops = hot_path(sass)
    classes = Counter(op.split(".")[0] for op in ops)
    fp64 = sum(1 for op in ops if _FP64.match(op))
    fp32 = sum(v for k, v in classes.items() if k in ("FFMA", "FADD", "FMUL"))
    body = loop_body(loop_sass)
    per = len(body) / UNROLL
    fp64_per = sum(1 for op, _ in body if _FP64.match(op)) / UNROLL
    return {"dtype": dtype, "hot": len(ops), "fp32": fp32, "fp64": fp64,
            "mufu": classes.get("MUFU", 0),
            "loop": per, "loop_common": loop_common_path(loop_sass) / UNROLL,
            "loop_fp64": fp64_per, "loop_regs": loop_regs,
            "loop_const_moves": constant_moves(body) / UNROLL,
            "h100_bound_gelems": issue_bound(per, fp64_per),
            # a copy of the same bytes: nin + 1 arrays where the copy moves 2
            "of_copy": issue_bound(per, fp64_per) / (COPY_GELEMS[dtype] * 2 / (record.nin + 1)),
            "fp64_1_64_cycles": max(per, 32 * fp64_per),
            "in_flight": bytes_in_flight(body)}


#: the 2-byte kernels' variants (:mod:`gelu_numba.targets.cuda.half_kernels`):
#: key -> row label; "" the launched wide kernel
HALF_VARIANTS = {"": "8-byte words, 2 per trip",
                 "narrow": "one element per trip: unaligned operands",
                 "unrolled": "loads first, x4 per trip: not launched",
                 "wide4": "8-byte words, 4 per trip: not launched",
                 "streaming": "8-byte words, 2 per trip, evict-first hints: not launched",
                 "shared": "8-byte words, 2 per trip, table in shared memory, one block "
                           "of 1024 per SM: launched where measured faster"}
#: the variants of the uint16 tables only (gelu's, not gelu_backward's 512 KB)
HALF_FORWARD_ONLY = ("shared",)


def count_half(name: str, fmt: str, variant: str = "") -> dict:
    """Counts for the 2-byte kernel of ``name`` ("gelu", "gelu_backward")
    on ``fmt`` bit patterns (:mod:`gelu_numba.targets.cuda.half_kernels`;
    ``variant`` a key of :data:`HALF_VARIANTS`), per element of its longest
    loop, and its bound against a copy of 2-byte elements (twice the
    float32 copy's elements per second; the table, read through the
    caches, not counted).  ``in_flight``: :func:`bytes_in_flight` of its
    loop."""
    from numba import cuda, float64, uint16, uint64

    from gelu_numba.targets.cuda import half_kernels as cuda_half
    u16, u64 = uint16[::1], uint64[::1]
    nin = 2 if name == "gelu_backward" else 1
    table = u16 if nin == 1 else float64[::1]
    threads = None
    if variant == "shared":
        fn = cuda_half.shared_kernel(name, fmt).py_func
        sig = (u64, u16, u64, u64, u16)
        threads = "one block"   # (its table's shared memory: one block per SM; below)
    elif variant in ("", "wide4", "streaming"):
        words = 4 if variant == "wide4" else cuda_half.WORDS
        fn = cuda_half.wide_kernel(name, fmt, words, variant == "streaming").py_func
        sig = (u64, u16) * nin + (table, u64, u16)
    else:
        fn = (cuda_half.unrolled_kernel(name, fmt) if variant == "unrolled" else
              cuda_half.backward_kernel(fmt) if nin == 2 else cuda_half.lookup_kernel).py_func
        sig = (u16,) * nin + (table, u16)
    ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
    loop_sass, regs = _sass(ptx)
    body = loop_body(loop_sass)
    # (ptxas unrolls the one-element loop itself: one store per element; an
    # 8-byte store is 4 elements)
    stores = [op for op, _ in body if op.startswith("STG")]
    elements = sum(4 if ".64" in op else 1 for op in stores)
    per = len(body) / elements
    fp64_per = sum(1 for op, _ in body if _FP64.match(op)) / elements
    return {"loop": per, "loop_common": loop_common_path(loop_sass) / elements,
            "loop_fp64": fp64_per, "loop_regs": regs,
            "loop_const_moves": constant_moves(body) / elements,
            "h100_bound_gelems": issue_bound(per, fp64_per),
            "of_copy": issue_bound(per, fp64_per) / (COPY_GELEMS["float32"] * 2 * 2 / (nin + 1)),
            "fp64_1_64_cycles": max(per, 32 * fp64_per),
            "in_flight": bytes_in_flight(body),
            "threads_per_sm": threads and min(cuda_half.SHARED_THREADS,
                                              threads_per_sm(regs, cuda_half.SHARED_THREADS)),
            "shared_loads": sum(1 for op, _ in body if op.startswith("LDS")) / elements}


#: the naive float32 GELUs of the frontier: (label, the sweep's row of the
#: same formula (analysis.gpu.peers, CuPy's), the scalar function)
_NAIVE = (
    ("`x 0.5 erfcf(-x 0.70710678)`, float32 (CUDA's erfcf)", "cupy_erfcf",
     "lambda x: x * np.float32(0.5) * math.erfc(-x * np.float32(0.70710678))"),
    ("`x 0.5 erfc(-x 0.7071...)` in float64, rounded to float32 (CUDA's erfc)", "cupy_erfc_f64",
     "lambda x: np.float32(np.float64(x) * 0.5 * math.erfc(-np.float64(x) * 0.7071067811865476))"),
)


def _naive_loop(source):
    """Per element of the launched loop (the flat kernel of gelu_numba.gpu,
    ``UNROLL`` elements a trip) around the scalar ``source``."""
    import math

    import numpy as np
    from numba import cuda, float32

    from gelu_numba.targets import cuda as target

    dev = cuda.jit(device=True)(eval(source, {"np": np, "math": math}))  # noqa: S307
    kernel = target.generate(target.FLAT_LOOP, {"dev": dev, "cast": target.CAST["f"]},
                             **target.flat_fields(1, target.UNROLL))
    ptx, _ = cuda.compile_ptx(kernel.py_func, (float32[::1],) * 2, cc=(9, 0))
    sass, _ = _sass(ptx)
    return len(loop_body(sass)) / target.UNROLL


def frontier(sweep_path, counts=None) -> str:
    """Instructions per element of the launched loop against the exhaustive
    float32 max ulp (all 2**32 inputs, from the GPU sweep at
    ``sweep_path``), for float32 ``gelu``: our two kernels and the naive
    formula in float32 and in float64.  ``counts``: those :func:`table`
    made, by ``(name, variant)``, used where they hold gelu's."""
    import json

    from gelu_numba import catalog

    swept = {r["function"]: r for r in json.loads(Path(sweep_path).read_text())["results"]}
    record = catalog.lookup("gelu")
    counts = {} if counts is None else counts

    def loop(variant):
        if ("gelu", variant) not in counts:
            counts[("gelu", variant)] = count(record, variant)
        return counts[("gelu", variant)]["loop"]

    rows = [("gelu_numba, float32 arithmetic (the device functions)", loop("gpu32"), "gelu"),
            ("gelu_numba, float64 arithmetic, tables in registers (GPUs with full-rate FP64)",
             loop("k32"), "gelu_numba_f64_arith")]
    rows += [(label, _naive_loop(source), row) for label, row, source in _NAIVE]
    if LEAN_SWEEP.exists():
        # its accuracy from the exhaustive sweep of its CPU compilation (the
        # same operations; on a GPU, the sweep's gelu_numba_lean32 peers)
        lean = {r["function"]: r for r in json.loads(LEAN_SWEEP.read_text())["results"]}
        swept["lean32 gelu"] = lean["gelu"]
        rows.append(("gelu_numba, float32 arithmetic, one table row (kernels.lean32: GPUs "
                     "with slow FP64; max ulp from its CPU compilation)",
                     loop("lean32"),
                     "lean32 gelu"))
    lines = ["| float32 `gelu` design | launched loop, SASS per element | max ulp, all 2^32 "
             "inputs | inputs above 1 ulp |", "|---|---:|---:|---:|"]
    for label, per, row in sorted(rows, key=lambda r: r[1]):
        r = swept[row]
        lines.append(f"| {label} | {per:g} | {r['max_ulp']:.4g} | {r['over_1ulp']:,} |")
    return "\n".join(lines)


#: the exhaustive sweep of the lean kernels' CPU compilation
LEAN_SWEEP = Path(__file__).resolve().parents[1] / "results" / "sweep_float32_lean32.json"


_LABELS = {"lean32": "float32, float32 arithmetic, one table row, no division "
                     "(kernels.lean32: GPUs with slow FP64)",
           "gpu32": "float32, float32 arithmetic (the device functions; GPUs with slow FP64 "
                    "where there is no lean kernel)",
           "k32": "float32, float64 arithmetic (the CPU's; GPUs with full-rate FP64)",
           "k64": "float64 (a warp with an element out of range)",
           "k64o": "float64, ordinary form (a warp all in range: 2**-900 <= abs(x) < 4)"}
#: appended to a float32 variant: its loop of 4-byte loads (operands not all
#: 16-byte aligned; every float32 launch before the 16-byte loads)
FLAT = " flat"
_LABELS.update({v + FLAT: _LABELS[v] + ", 4-byte loads" for v in ("lean32", "gpu32", "k32")})


def versions(name: str):
    """``(record, variants)``: the kernels of ``name`` the GPU ran or runs."""
    from gelu_numba import catalog

    fn = catalog.lookup(name)
    return fn, ((("lean32",) if fn.lean32 is not None else ())
                + (("gpu32",) if fn.gpu32 is not None else ()) + ("k32", "k64")
                + (("k64o",) if fn.ordinary is not None else ()))


def table(names, counts=None) -> str:
    """The markdown table of the kernels of ``names``; ``counts``, a dict,
    receives each row's counts by ``(name, variant)`` (``(name, fmt)`` for
    the 2-byte kernels)."""
    counts = {} if counts is None else counts
    lines = ["| function | kernel | one-element hot path | FP32 arith. | FP64 | MUFU "
             "| launched loop, per element | its common path | its FP64 | its constant moves "
             "| registers | H100 issue bound, G elem/s | of copy "
             "| cycles per warp-element, FP64 at 1/64 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        record, variants = versions(name)
        for v in variants:
            c = counts[(name, v)] = count(record, v)
            label = (_LABELS[v] if record.gpu32 is not None or v.startswith("k64")
                     else "float32")
            lines.append(f"| `{name}` | {label} | {c['hot']} | {c['fp32']} | {c['fp64']} | "
                         f"{c['mufu']} | {c['loop']:g} | {c['loop_common']:g} | "
                         f"{c['loop_fp64']:g} | "
                         f"{c['loop_const_moves']:g} | {c['loop_regs']} | "
                         f"{c['h100_bound_gelems']:.0f} | {c['of_copy']:.0%} | "
                         f"{c['fp64_1_64_cycles']:g} |")
        for fmt, variant in ([(f, v) for f in HALF_FORMATS for v in HALF_VARIANTS
                              if name == "gelu" or v not in HALF_FORWARD_ONLY]
                             if name in ("gelu", "gelu_backward") else ()):
            key = f"{fmt} {variant}".strip()
            c = counts[(name, key)] = count_half(name, fmt, variant)
            lines.append(f"| `{name}` | {_half_label(key)} | - | - | - | - | "
                         f"{c['loop']:g} | {c['loop_common']:g} | {c['loop_fp64']:g} | "
                         f"{c['loop_const_moves']:g} | "
                         f"{c['loop_regs']} | {c['h100_bound_gelems']:.0f} | "
                         f"{c['of_copy']:.0%} | {c['fp64_1_64_cycles']:g} |")
    return "\n".join(lines)


def _half_label(key):
    """The row label of a 2-byte kernel: ``fmt`` or ``"fmt variant"``."""
    fmt, *variant = key.split()
    return f"{fmt} bits (2-byte kernel, {HALF_VARIANTS[''.join(variant)]})"


#: the last GPU run's throughput report, which :func:`calibration` reads
MEASURED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / \
    "gpu_throughput_h200.md"


def _measured_kernel(name, dtype, full_fp64, vec4=True):
    """``(function, variant or 2-byte format)`` that the throughput
    report's row ``name``/``dtype`` timed (the row names of
    :mod:`analysis.gpu.throughput`), or None (a peer's row).  ``vec4``:
    whether the report's float32 rows timed the 16-byte loads (a report
    that does not say so is of the loops of 4-byte loads)."""
    from analysis.gpu import throughput as gt

    if dtype == "float32" and (not vec4 or name.endswith(gt.F32_NARROW_TAG)):
        name = name.removesuffix(" " + gt.F32_NARROW_TAG)
        key = _measured_kernel(name, dtype, full_fp64)
        return None if key is None else (key[0], key[1] + FLAT)
    base = name.split(" (")[0]
    if base not in CORE:
        return None
    if dtype in HALF_FORMATS:
        tags = {gt.HALF_UNROLLED_TAG: "unrolled", gt.HALF_NARROW_TAG: "narrow",
                gt.HALF_WIDE4_TAG: "wide4", gt.HALF_STREAMING_TAG: "streaming",
                gt.HALF_SHARED_TAG: "shared"}
        return base, " ".join([dtype] + [v for t, v in tags.items() if name.endswith(t)])
    if dtype == "float64":            # (standard-normal data: ordinary warps)
        return base, "k64" if name == gt.WIDE else "k64o" if name == base else None
    if name.endswith((gt.LEAN_TAG, gt.OLD_LEAN_TAG)) or name == gt.LEAN_WIDE:
        return base, "lean32"
    if name.endswith((gt.F32_TAG, gt.OLD_F32_TAG)):
        return base, "gpu32"
    return (base, "k32" if full_fp64 else "gpu32") if name == base else None


def calibration(counts, path=MEASURED, size="2^28", compute=False) -> str:
    """Each kernel's measured speed at ``size`` in the throughput report at
    ``path`` beside its issue bound as :func:`count` counts it now (the
    report's device: 132 SMs at 1.98 GHz, as the bound assumes, for an
    H100 SXM or an H200), and beside the copy's rate of the same bytes
    from the same report: which of the two limits each kernel, and how
    close it comes.  ``compute``: count the kernels a row timed that
    ``counts`` lacks (into it), rather than leave the row out."""
    from analysis.gpu import throughput as gt
    from gelu_numba import catalog
    from gelu_numba.targets.cuda import FULL_RATE_FP64

    text = Path(path).read_text()
    cc = re.search(r"compute capability (\d+)\.(\d+)", text)
    full_fp64 = bool(cc) and (int(cc.group(1)), int(cc.group(2))) in FULL_RATE_FP64
    vec4 = gt.VEC4_MARK in text
    stamp = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d) UTC", text)
    lines = [f"Against the measurement of {text.splitlines()[0].lstrip('# ')} "
             f"({Path(path).name}, {stamp.group(1) if stamp else 'undated'}, {size} elements, "
             "standard-normal data unless the row says otherwise): each kernel as counted "
             "above (what the run timed, if the kernels have not changed since), "
             "its issue bound, and a copy of the same bytes on the same device"
             + ("; the launched float32 kernel is the float64-arithmetic one (full-rate FP64)"
                if full_fp64 else ""), "",
             "| row | dtype | kernel | loop per element | its FP64 | issue bound, G elem/s "
             "| copy, G elem/s | measured, G elem/s | measured / bound "
             "| measured / min(bound, copy) | loads in flight per SM, KB "
             "| latency bound, G elem/s | model: min of the three | measured / model |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 8 or cells[2] != size or not cells[0].startswith("`"):
            continue
        name, dtype = cells[0].strip("`"), cells[1]
        key = _measured_kernel(name, dtype, full_fp64, vec4)
        if key is not None and key not in counts and compute and dtype not in HALF_FORMATS:
            counts[key] = count(catalog.lookup(key[0]), key[1])
        if key is None or key not in counts:
            continue
        c = counts[key]
        nin = 2 if key[0] == "gelu_backward" else 1
        item = {"float32": 4, "float64": 8}.get(dtype, 2)
        copy = float(cells[6]) / ((nin + 1) * item)
        got, bound = float(cells[4]), c["h100_bound_gelems"]
        kernel = _LABELS[key[1]] if key[1] in _LABELS else _half_label(key[1])
        threads = c.get("threads_per_sm") or threads_per_sm(c["loop_regs"])
        per_sm = c["in_flight"] * threads
        latency = latency_bound(c["in_flight"], c["loop_regs"], nin * item, threads)
        model = min(bound, copy, latency)
        lines.append(f"| `{name}` | {dtype} | {kernel} | {c['loop']:g} | {c['loop_fp64']:g} | "
                     f"{bound:.0f} | {copy:.0f} | {got:g} | {got / bound:.0%} | "
                     f"{got / min(bound, copy):.0%} | {per_sm / 1024:g} | {latency:.0f} | "
                     f"{model:.0f} | {got / model:.0%} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.gpu.sass",
                                description=__doc__.splitlines()[0])
    p.add_argument("--functions", default=",".join(CORE))
    p.add_argument("--out", help="also write the markdown table here")
    p.add_argument("--frontier", metavar="SWEEP_JSON",
                   help="also the frontier of float32 gelu designs: SASS per element against "
                        "the exhaustive max ulp of a GPU sweep (analysis/results/"
                        "sweep_float32_gpu.json)")
    p.add_argument("--measured", metavar="THROUGHPUT_MD", action="append",
                   help="also each kernel's speed in a GPU run's throughput report "
                        f"(benchmarks/results/{MEASURED.name}) beside its bound "
                        "(repeat for more reports)")
    args = p.parse_args(argv)
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)   # (read when numba is imported)
    without_a_driver()
    counts = {}
    text = ("SASS per element for sm_90 (ptxas -O3): the hot path of a one-element "
            "kernel, and the launched kernel's unrolled loop per element, which gives "
            "the issue bound for an H100 SXM (python -m analysis.gpu.sass)\n\n"
            + table([s for s in args.functions.split(",") if s], counts) + "\n")
    if args.frontier:
        text += ("\nThe frontier of float32 gelu (python -m analysis.gpu.sass --frontier "
                 f"{args.frontier}): SASS per element of the launched loop on sm_90, "
                 "max ulp from that GPU sweep\n\n" + frontier(args.frontier, counts) + "\n")
    for measured in args.measured or ():
        text += "\n" + calibration(counts, measured, compute=True) + "\n"
    print(text)
    if args.out:
        import numba_cuda

        given = " ".join(sys.argv[1:] if argv is None else argv)
        Path(args.out).write_text(
            "# SASS per element for an H100 or H200 (sm_90), counted without a GPU\n\n"
            f"`python -m analysis.gpu.sass {given}` (numba-cuda {numba_cuda.__version__}; "
            "generated: do not edit)\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
