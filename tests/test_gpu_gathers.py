"""analysis.gpu.gathers: the sectors a warp's table read touches, counted
from the kernels' own indexing."""

import numpy as np
import pytest

from analysis.gpu import gathers as gg

pytestmark = pytest.mark.tools


def test_sectors_per_read_counts_distinct_32_byte_sectors():
    assert gg.sectors_per_read(np.zeros(32)) == 1
    assert gg.sectors_per_read(np.arange(32) * 2) == 2            # 64 contiguous bytes
    assert gg.sectors_per_read(np.arange(32) * 32) == 32          # a sector a lane
    assert gg.sectors_per_read(np.arange(32) * 8 + 16) == 9       # 256 bytes from 16
    # the mean over warps; a lane that reads nothing adds no sector, a warp
    # where none reads counts for nothing
    two = np.concatenate([np.zeros(32), np.arange(32) * 32])
    assert gg.sectors_per_read(two) == 16.5
    active = np.ones(64, bool)
    active[32 + 16:] = False
    assert gg.sectors_per_read(two, active) == (1 + 16) / 2
    assert gg.sectors_per_read(two, np.r_[np.zeros(32, bool), np.ones(32, bool)]) == 32
    assert gg.touched_kb(np.arange(32) * 32) == 1.0               # 8 lines of 128 bytes


def test_shared_passes_count_distinct_words_per_bank():
    assert gg.shared_passes(np.zeros(32)) == 1                   # one word, broadcast
    assert gg.shared_passes(np.arange(32) * 4) == 1              # a bank a lane
    assert gg.shared_passes(np.arange(32) * 2) == 1              # 2-byte entries, 16 words
    assert gg.shared_passes(np.arange(32) * 128) == 32           # every lane in bank 0
    # two words in bank 0 and lanes that share them: 2 passes
    assert gg.shared_passes(np.r_[np.zeros(16), np.full(16, 128)]) == 2
    # a lane that reads nothing costs no pass
    offsets = np.arange(32) * 128
    assert gg.shared_passes(offsets, np.arange(32) < 3) == 3


def test_the_bit_patterns_are_the_formats():
    x = np.array([1.0, -2.0, 2.0**-24, 1 + 2.0**-8, 1 + 3 * 2.0**-9, 1 + 3 * 2.0**-8])
    assert list(gg.float16_bits(x)) == [0x3C00, 0xC000, 0x0001, 0x3C04, 0x3C06, 0x3C0C]
    # bfloat16: 8 significand bits (a step of 2**-7 at 1): 1 + 2**-8 and
    # 1 + 3 * 2**-8 are ties, to the even neighbour; 1 + 3 * 2**-9 to nearest
    assert list(gg.bfloat16_bits(x)[[0, 1, 3, 4, 5]]) == [0x3F80, 0xC000, 0x3F80, 0x3F81,
                                                         0x3F82]


def test_lean_rows_are_the_kernels_pieces():
    # quarters below 1, then SMALL - 1 + floor(a**2); none beyond A_F32
    from gelu_numba.tables import normal_cdf32_lean32 as tab
    x = np.array([0.0, -0.3, 0.99, 1.0, -1.5, 3.0, tab.A_F32, 21.0, np.inf, np.nan])
    row, reads = gg.lean_rows(x)
    assert list(row[:7]) == [0, 1, 3, tab.SMALL, tab.SMALL + 1, tab.SMALL + 8,
                             tab.SMALL - 1 + int(tab.A_F32**2)]
    assert row[6] == tab.ROWS - 1
    assert list(reads) == [True] * 7 + [False] * 3


def test_report_has_each_kernel_and_data(tmp_path):
    out = tmp_path / "g.md"
    assert gg.main(["--n", "4096", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Table reads") and "python -m analysis.gpu.gathers --n 4096" in text
    body = [line for line in text.splitlines() if line.startswith("| `") or
            line.startswith("| lean")]
    assert len(body) == 10
    # float16's standard-normal inputs spread over more of the forward table
    # than bfloat16's (more significand bits), and each warp read touches
    # nearly a sector a lane; the lean table's rows share sectors
    by = {(r.split("|")[1].strip(), r.split("|")[3].strip()): r.split("|") for r in body}
    f16 = by[("`gelu` float16", "standard normal")]
    bf16 = by[("`gelu` bfloat16", "standard normal")]
    assert float(f16[7]) > 2 * float(bf16[7]) and float(f16[5]) > 24
    lean = [v for k, v in by.items() if k[0].startswith("lean") and k[1] == "standard normal"][0]
    assert float(lean[5]) < 4
    # from shared memory the forward's read takes a few passes, not a pass
    # per sector; gelu_backward's table does not fit there
    assert float(f16[8]) < float(f16[5]) / 4
    assert by[("`gelu_backward` float16", "standard normal")][8].strip() == "-"


def test_the_committed_report_is_the_generators_output(tmp_path):
    from pathlib import Path
    committed = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "gpu_gathers.md"
    out = tmp_path / "g.md"
    assert gg.main(["--out", str(out)]) == 0
    assert out.read_text().split("\n\n", 2)[2] == committed.read_text().split("\n\n", 2)[2]
