"""analysis.gpu_sass: the SASS an H100 runs per element, without a GPU
(numba-cuda's PTX, ptxas, cuobjdump from the test extra's wheels).  Runs in
a subprocess: the test session runs numba-cuda's simulator, which has no
compiler."""

import os
import subprocess
import sys

from analysis.gpu_sass import hot_path

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


def test_the_float32_kernels_run_no_fp64_on_the_gpu():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    run = subprocess.run([sys.executable, "-m", "analysis.gpu_sass", "--functions",
                          "gelu,norm_pdf"], env=env, cwd=root, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = {}
    for line in run.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 10 and cells[0].startswith("`"):
            rows[(cells[0].strip("`"), cells[1])] = cells
    now = rows[("gelu", "float32, float32 arithmetic (GPU, now)")]
    before = rows[("gelu", "float32, float64 arithmetic (CPU; GPU before)")]
    f64 = rows[("gelu", "float64")]
    assert int(now[4]) == 0 and int(now[3]) >= 40          # FP32 arithmetic, no FP64
    assert int(before[4]) >= 20 and int(f64[4]) >= 100     # the float64 arithmetic is there
    assert int(now[2]) >= 50 and int(now[6]) > 0
    # with FP64 at 1/64 the old kernel needs many more cycles per element
    assert int(before[9]) > 4 * int(now[9])
    assert ("norm_pdf", "float64") in rows
