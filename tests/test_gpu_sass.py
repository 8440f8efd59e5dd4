"""analysis.gpu.sass: the SASS an H100 runs per element, without a GPU
(numba-cuda's PTX, ptxas, cuobjdump from the test extra's wheels).  Runs in
a subprocess: the test process runs numba-cuda's simulator, which has no
compiler."""

import pytest
from compiled import json_of, without_simulator

from analysis.gpu import sass as gpu_sass
from analysis.gpu.sass import constant_moves, hot_path, loop_body, loop_common_path

pytestmark = pytest.mark.gpu

_LISTING = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E R7, desc[UR4][R10.64] ;
        /*0020*/               @P0 BRA 0x60 ;
        /*0030*/                   DFMA R2, R4, R6, R2 ;
        /*0040*/                   STG.E desc[UR4][R2.64], R7 ;
        /*0050*/                   EXIT ;
        /*0060*/                   MUFU.RCP R2, R11 ;
        /*0070*/                   RET.REL.NODEC R16 0x0 ;
"""


def test_hot_path_ends_at_the_exit_after_the_store():
    assert hot_path(_LISTING) == ["LDC", "LDG.E", "BRA", "DFMA", "STG.E", "EXIT"]


_LOOPS = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   UMOV UR4, 0x652b82fe ;
        /*0020*/                   IMAD.MOV.U32 R16, RZ, RZ, -0x974f2cb ;
        /*0030*/                   IMAD.MOV.U32 R2, RZ, RZ, R13 ;
        /*0040*/                   DFMA R4, R2, UR4, R4 ;
        /*0050*/                   NOP ;
        /*0060*/               @P0 BRA 0x10 ;
        /*0070*/                   MOV R3, 0x3ff00000 ;
        /*0080*/                   IMAD.WIDE R6, R7, 0x4, R2 ;
        /*0090*/              @!P1 BRA 0x70 ;
        /*00a0*/                   EXIT ;
        /*00b0*/                   MUFU.RCP R2, R11 ;
        /*00c0*/                   BRA 0x30 ;
"""


def test_loop_body_is_the_longest_loop_and_constant_moves_move_literals():
    # (0x30 <- 0xc0 is longer but jumps back from after the EXIT: a slow path)
    body = loop_body(_LOOPS)
    assert [op for op, _ in body] == ["UMOV", "IMAD.MOV.U32", "IMAD.MOV.U32", "DFMA", "BRA"]
    assert constant_moves(body) == 2                # not the register move, not the DFMA
    assert constant_moves([("MOV", "R3, 0x3ff00000"), ("IMAD.WIDE", "R6, R7, 0x4, R2"),
                           ("MOV", "R3, R4")]) == 1
    try:
        loop_body(_LISTING)
    except ValueError as e:
        assert "no loop" in str(e)
    else:
        raise AssertionError("a listing without a loop gave a loop body")


_SLOW_CALL = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   DFMA R4, R2, R6, R4 ;
        /*0020*/                   FSETP.GEU.AND P2, PT, |R27|, 6.58e-37, PT ;
        /*0030*/               @P0 BRA P2, 0x70 ;
        /*0040*/                   MOV R4, R27 ;
        /*0050*/                   MOV R20, 0x60 ;
        /*0060*/                   CALL.REL.NOINC 0x200 ;
        /*0070*/                   BSYNC B1 ;
        /*0080*/              @!P1 BRA 0xa0 ;
        /*0090*/                   DADD R4, R4, R2 ;
        /*00a0*/                   STG.E desc[UR4][R2.64], R7 ;
        /*00b0*/               @P3 BRA 0x10 ;
        /*00c0*/                   EXIT ;
"""


def test_the_common_path_leaves_out_a_skipped_region_with_a_call_only():
    # the loop 0x10..0xb0 holds 11 instructions; the call's set-up (3) is
    # skipped on the common path, the DADD skipped by the other branch is not
    assert len(loop_body(_SLOW_CALL)) == 11
    assert loop_common_path(_SLOW_CALL) == 8


def test_the_float32_kernels_run_no_fp64_on_the_gpu():
    run = without_simulator("-m", "analysis.gpu.sass", "--functions",
                            "gelu,gelu_backward", "--frontier",
                            "analysis/results/sweep_float32_gpu.json")
    rows = {}
    for line in run.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 14 and cells[0].startswith("`"):
            rows[(cells[0].strip("`"), cells[1])] = cells
    now = rows[("gelu", gpu_sass._LABELS["gpu32"])]
    before = rows[("gelu", "float32, float64 arithmetic (the CPU's; GPUs with full-rate FP64)")]
    f64 = rows[("gelu", "float64 (a warp with an element out of range)")]
    f64o = rows[("gelu", "float64, ordinary form (a warp all in range: 2**-900 <= abs(x) < 4)")]
    assert int(now[4]) == 0 and int(now[3]) >= 40          # FP32 arithmetic, no FP64
    assert int(before[4]) >= 20 and int(f64[4]) >= 100     # the float64 arithmetic is there
    assert int(now[2]) >= 50 and int(now[10]) > 0
    # the launched loop: no FP64 in the float32 kernel's, per element the
    # same FP64 work as the one-element kernel in the others
    assert float(now[8]) == 0 and float(before[8]) == float(before[4])
    # (the float64 kernel's within a few: its one-element form loads the
    # coefficients, the loop keeps some in registers, and ptxas schedules
    # the two differently)
    assert abs(float(f64[8]) - float(f64[4])) <= 0.05 * float(f64[4])
    assert 30 <= float(now[6]) <= int(now[2])
    # the common path leaves out the division's slow-path call only: a few
    # instructions of the float64 division's, none of the float32 kernel's
    # (its reciprocal is an approximation, no subroutine); the budget
    # of 95 for the float64-arithmetic gelu holds on it
    assert float(now[7]) == float(now[6])
    assert float(before[6]) - 8 <= float(before[7]) < float(before[6])
    assert float(before[7]) <= 95
    # with FP64 at 1/64 the float64-arithmetic kernel needs many more cycles
    # per element
    assert float(before[13]) > 4 * float(now[13])
    # its launched loop reads the coefficient tables from registers: of its
    # constant moves (two per float64 literal, per element) few are left
    assert float(before[9]) < float(before[4]) / 4
    assert ("gelu_backward", "float64 (a warp with an element out of range)") in rows
    # the ordinary form (the launched kernel's choice for a warp all in
    # range): fewer FP64 and fewer instructions, within the budget of 300
    assert float(f64o[8]) < float(f64[8]) and float(f64o[6]) < float(f64[6])
    assert float(f64o[6]) <= 300
    # the 2-byte forward is a table lookup: no FP64, within the budget
    # of 50 loop instructions per element (per store: ptxas unrolls it)
    for fmt in ("bfloat16", "float16"):
        half = rows[("gelu", gpu_sass._half_label(fmt))]
        assert float(half[8]) == 0 and 4 <= float(half[6]) <= 50
        # the backward: decode, product, round; float16 by the hardware's
        # conversions (kernels.half_rounding), within the same budget
        assert 4 <= float(rows[("gelu_backward", gpu_sass._half_label(fmt))][6]) <= 50
    assert ("norm_pdf", gpu_sass._half_label("bfloat16")) not in rows
    # their variants (the one-element loop of unaligned operands, and the
    # timed ones): no FP64 in the forward, within the same budget; the
    # launched wide kernel issues fewer instructions per element than the
    # one-element loop
    for fmt in ("bfloat16", "float16"):
        for name in ("gelu", "gelu_backward"):
            for variant in ("narrow", "unrolled", "wide4", "streaming"):
                row = rows[(name, gpu_sass._half_label(f"{fmt} {variant}"))]
                assert 4 <= float(row[6]) <= 50
            assert (float(rows[(name, gpu_sass._half_label(fmt))][6])
                    < float(rows[(name, gpu_sass._half_label(f"{fmt} narrow"))][6]))
        assert float(rows[("gelu", gpu_sass._half_label(f"{fmt} unrolled"))][8]) == 0
        # the shared-memory table: gelu's only (gelu_backward's is 512 KB)
        shared = rows[("gelu", gpu_sass._half_label(f"{fmt} shared"))]
        assert 4 <= float(shared[6]) <= float(rows[("gelu", gpu_sass._half_label(fmt))][6])
        assert ("gelu_backward", gpu_sass._half_label(f"{fmt} shared")) not in rows
    # the lean kernels (one table row, no division), which GPUs with slow
    # FP64 launch: no FP64, within the budgets of 95 (gelu) and 140
    # (gelu_backward)
    lean = gpu_sass._LABELS["lean32"]
    for name, budget in (("gelu", 95), ("gelu_backward", 140)):
        row = rows[(name, lean)]
        assert float(row[8]) == 0 and int(row[4]) == 0 and 30 <= float(row[6]) <= budget
    assert float(rows[("gelu", lean)][6]) < float(now[6])
    # the frontier: five float32 gelu designs, fewest instructions first, the
    # launched loops counted as above; ours below 1 ulp, the naive float32
    # formula far above (the GPU sweep's CuPy row of the same formula)
    frontier = [[c.strip() for c in line.strip("|").split("|")]
                for line in run.stdout.split("The frontier of float32 gelu")[1].splitlines()
                if line.startswith("| ") and "design" not in line]
    assert len(frontier) == 5
    per = [float(r[1]) for r in frontier]
    assert per == sorted(per)
    ours = {r[0]: r for r in frontier if r[0].startswith("gelu_numba")}
    assert float(ours["gelu_numba, float32 arithmetic (the device functions)"][1]) == float(now[6])
    assert all(float(r[2]) < 1 and r[3] == "0" for r in ours.values())
    naive = next(r for r in frontier if "erfcf" in r[0])
    assert float(naive[2]) > 1e6 and float(naive[1]) < min(float(r[1]) for r in ours.values())


def test_the_calibration_reads_the_float32_rows_of_the_measured_table():
    from analysis.gpu.sass_calibration import measured
    text = """
| function | dtype | n | time µs | G elem/s | GB/s | copy GB/s | of copy |
|---|---|---|---|---|---|---|---|
| `gelu` | float32 | 2^20 | 83.0 | 12.6 | 101 | 1.2e+03 | 8% |
| `gelu` | float32 | 2^26 | 380.5 | 176 | 1.41e+03 | 2.88e+03 | 49% |
| `gelu` | float64 | 2^26 | 1610 | 41.7 | 667 | 2.9e+03 | 23% |
| `ndtr` | float32 | 2^26 | 335.6 | 200 | 1.6e+03 | 2.88e+03 | 56% |
"""
    assert measured(text) == {"gelu": 176.0, "ndtr": 200.0}
    assert measured(text, "2^20") == {"gelu": 12.6}


def test_calibration_sets_each_timed_kernel_beside_its_bound(tmp_path):
    # rows of a throughput report (analysis.gpu.throughput's names) -> the
    # kernel each timed, its bound as counted, the copy's rate of the same
    # bytes; peers and other sizes left out
    from analysis.gpu import throughput as gt
    report = tmp_path / "t.md"
    report.write_text(
        "# GPU throughput: NVIDIA H200 (132 SMs, compute capability 9.0)\n\n"
        "`...`, 2026-11-26 08:31 UTC.\n\n"
        "| function | dtype | n | time (µs) | G elem/s | GB/s | copy GB/s | of copy |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| `gelu` | float32 | 2^28 | 1 | 247 | 1 | 4.15e+03 | 48% |\n"
        "| `gelu` | float32 | 2^26 | 1 | 999 | 1 | 4.15e+03 | 48% |\n"
        f"| `gelu {gt.LEAN_TAG}` | float32 | 2^28 | 1 | 273 | 1 | 4.15e+03 | 53% |\n"
        f"| `gelu_backward {gt.OLD_F32_TAG}` | float32 | 2^28 | 1 | 148 | 1 | 4.15e+03 | 1% |\n"
        f"| `{gt.WIDE}` | float64 | 2^28 | 1 | 61.9 | 1 | 4.24e+03 | 1% |\n"
        "| `gelu` | bfloat16 | 2^28 | 1 | 485 | 1 | 3.96e+03 | 49% |\n"
        "| `torch_gelu` | float32 | 2^28 | 1 | 523 | 1 | 4.15e+03 | 101% |\n")
    flight = {"in_flight": 16, "loop_regs": 32}       # 32 KB per SM: copy-bound here
    # (a report that does not say its float32 rows timed 16-byte loads timed
    # the loops of 4-byte loads: the variants' " flat" counts)
    counts = {("gelu", "k32 flat"): {"loop": 97, "loop_fp64": 42, "h100_bound_gelems": 345.0,
                                     **flight},
              ("gelu", "lean32 flat"): {"loop": 87.5, "loop_fp64": 0,
                                        "h100_bound_gelems": 382.0, "in_flight": 2,
                                        "loop_regs": 32},
              ("gelu_backward", "gpu32 flat"): {"loop": 190, "loop_fp64": 0,
                                                "h100_bound_gelems": 176.0, **flight},
              ("gelu", "k64"): {"loop": 337.5, "loop_fp64": 186, "h100_bound_gelems": 90.0,
                                **flight},
              ("gelu", "bfloat16"): {"loop": 15, "loop_fp64": 0, "h100_bound_gelems": 2230.0,
                                     **flight}}
    out = gpu_sass.calibration(counts, report)
    rows = {tuple(c.strip() for c in line.strip("|").split("|"))[:3]:
            [c.strip() for c in line.strip("|").split("|")]
            for line in out.splitlines() if line.startswith("| `")}
    assert "2026-11-26 08:31" in out and "full-rate FP64" in out
    assert len(rows) == 5                                   # not 2^26, not the peer
    k32 = rows[("`gelu`", "float32", gpu_sass._LABELS["k32 flat"])]
    assert k32[5:10] == ["345", f"{4150 / 8:.0f}", "247", f"{247 / 345:.0%}",
                         f"{247 / 345:.0%}"]
    # Little's law: 16 bytes a thread, 2048 threads (32 registers), 132
    # SMs, over the assumed latency, per 4 bytes read; the model the least
    # of the three bounds
    latency = 132 * 16 * 2048 / gpu_sass.LOADED_LATENCY_S / 4 / 1e9
    assert k32[10:] == ["32", f"{latency:.0f}", "345", f"{247 / 345:.0%}"]
    lean = rows[(f"`gelu {gt.LEAN_TAG}`", "float32", gpu_sass._LABELS["lean32 flat"])]
    assert lean[8] == f"{273 / 382:.0%}"
    # (2 bytes in flight a thread: latency-bound below its issue bound)
    assert lean[11] == lean[12] == f"{latency / 8:.0f}"
    assert lean[-1] == f"{273 / (latency / 8):.0%}"
    back = rows[(f"`gelu_backward {gt.OLD_F32_TAG}`", "float32",
                 gpu_sass._LABELS["gpu32 flat"])]
    assert back[6] == f"{4150 / 12:.0f}"                    # three float32 arrays
    assert (f"`{gt.WIDE}`", "float64", gpu_sass._LABELS["k64"]) in rows
    half = rows[("`gelu`", "bfloat16", gpu_sass._half_label("bfloat16"))]
    # (copy-bound side: the copy's rate of 2-byte elements is below the bound)
    assert half[6] == f"{3960 / 4:.0f}" and half[9] == f"{485 / (3960 / 4):.0%}"
    assert half[-1] == f"{485 / (3960 / 4):.0%}"
    # a report of 16-byte loads: its float32 rows are the launched counts,
    # but those of views not 16-byte aligned, which take 4-byte loads
    report.write_text(report.read_text().replace(
        "08:31 UTC.", f"08:31 UTC.  float32: {gt.VEC4_MARK}.")
        + f"| `gelu {gt.F32_NARROW_TAG}` | float32 | 2^28 | 1 | 200 | 1 | 4.15e+03 | 39% |\n")
    counts = {(name, variant.removesuffix(" flat")): c for (name, variant), c in counts.items()}
    counts[("gelu", "k32 flat")] = {"loop": 120, "loop_fp64": 42, "h100_bound_gelems": 279.0,
                                    **flight}
    out = gpu_sass.calibration(counts, report)
    rows = {tuple(c.strip() for c in line.strip("|").split("|"))[:3]
            for line in out.splitlines() if line.startswith("| `")}
    assert {("`gelu`", "float32", gpu_sass._LABELS["k32"]),
            (f"`gelu {gt.F32_NARROW_TAG}`", "float32", gpu_sass._LABELS["k32 flat"]),
            (f"`gelu {gt.LEAN_TAG}`", "float32", gpu_sass._LABELS["lean32"])} <= rows


def test_bytes_in_flight_stop_at_the_first_use_of_a_load():
    body = [("IADD3", "R2, P0, R4, UR6, RZ"),
            ("LDG.E.64", "R12, desc[UR4][R2.64]"),
            ("LDG.E.U16", "R9, desc[UR4][R6.64]"),
            ("SHF.R.U64", "R14, R8, 0xf, R9"),          # reads R9: the U16 load's
            ("LDG.E.128", "R16, desc[UR4][R2.64]")]
    assert gpu_sass.bytes_in_flight(body) == 10
    # a 64-bit load fills a pair: reading its high half is a use
    assert gpu_sass.bytes_in_flight([("LDG.E.64", "R12, desc[UR4][R2.64]"),
                                     ("LDG.E", "R20, desc[UR4][R4.64]"),
                                     ("STG.E", "desc[UR4][R6.64], R13"),
                                     ("LDG.E", "R21, desc[UR4][R4.64]")]) == 12
    assert gpu_sass.bytes_in_flight([("LDG.E.128", "R16, desc[UR4][R2.64]")]) == 16


@pytest.mark.parametrize("registers, threads", [(14, 2048), (32, 2048), (40, 1536),
                                                (56, 1024), (72, 768), (255, 256)])
def test_resident_threads_follow_the_register_file(registers, threads):
    # 64K registers per SM, allocated per warp in units of 256; at most
    # 2048 threads; whole blocks of 256
    assert gpu_sass.threads_per_sm(registers) == threads


def test_the_shared_table_variant_reads_its_table_from_shared_memory():
    # one LDS per element in the loop (ptxas sees the shared address space
    # through the device function) and none in the launched kernel, whose
    # table is in global memory; one block of 1024 threads per SM
    counts = json_of("import json; from analysis.gpu import sass as g; g.without_a_driver(); "
                     "print(json.dumps([g.count_half('gelu', 'float16', v) "
                     "for v in ('shared', '')]))")
    shared, launched = counts
    assert shared["shared_loads"] == 1 and launched["shared_loads"] == 0
    assert shared["threads_per_sm"] == 1024 and launched["threads_per_sm"] is None
    assert shared["in_flight"] == launched["in_flight"] == 16
