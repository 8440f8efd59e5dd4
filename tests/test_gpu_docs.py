"""analysis.gpu.docs on a report of the next run's shape: the rows of the
kernels timed forced (the lean kernel GPUs with slow FP64 launch, the
device functions' kernel, lean on wide data, the 2-byte kernels' unrolled
variant) are ours, each with the accuracy that belongs to it; the lean
peers are not shown again as peers; an older run's tags keep their
columns."""
import json

import pytest

from analysis.gpu import docs as gpu_docs
from analysis.gpu import throughput as gt

pytestmark = pytest.mark.tools

_ROW = "| `{}` | {} | 2^28 | 1 | {} | 1 | 4.15e+03 | {}% |"


def _report(rows):
    return "\n".join(["# GPU throughput: X (1 SMs, compute capability 9.0)", "",
                      "| function | dtype | n | time (µs) | G elem/s | GB/s | copy GB/s "
                      "| of copy |", "|---|---|---|---|---|---|---|---|",
                      *(_ROW.format(*r) for r in rows)])


def _sweep(rows):
    return json.dumps({"results": [{"function": f, "max_ulp": u, "over_1ulp": 0}
                                   for f, u in rows]})


def _table(monkeypatch, report, sweep):
    files = {"throughput": report, "sweep": sweep}
    monkeypatch.setattr(gpu_docs, "_read", lambda key: files[key])
    _, text = gpu_docs.throughput_table()
    return {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in text.splitlines()[2:]}


def test_the_next_runs_rows(monkeypatch):
    report = _report([
        ("gelu", "float32", 247, 48), (f"gelu {gt.LEAN_TAG}", "float32", 273, 53),
        (f"gelu {gt.F32_TAG}", "float32", 216, 42), (gt.LEAN_WIDE, "float32", 200, 39),
        (f"gelu {gt.HALF_UNROLLED_TAG}", "bfloat16", 900, 91),
        ("gelu_numba_lean32_gelu", "float32", 270, 52), ("torch_gelu", "float32", 523, 101)])
    sweep = _sweep([("gelu", 0.783), ("gelu_numba_f64_arith", 0.5033),
                    ("gelu_numba_lean32_gelu", 0.7509), ("torch_gelu", 1.678e7)])
    rows = _table(monkeypatch, report, sweep)
    lean = rows[f"`gelu {gt.LEAN_TAG}`"]
    assert lean[-2:] == ["0.7509 (0)", "-"]          # launched: the device sweep's
    assert rows[f"`gelu {gt.F32_TAG}`"][-2:] == ["-", "0.783 (0)"]
    assert rows[f"`{gt.LEAN_WIDE}`"][-2:] == ["-", "-"]
    assert rows[f"`gelu {gt.HALF_UNROLLED_TAG}`"][-2:] == ["-", "-"]
    assert rows["`gelu`"][-2:] == ["0.5033 (0)", "0.783 (0)"]
    assert "peer `torch_gelu`" in rows
    assert not any("lean32_gelu" in label for label in rows)


def test_an_older_runs_rows(monkeypatch):
    report = _report([("gelu", "float32", 247, 48),
                      (f"gelu {gt.OLD_LEAN_TAG}", "float32", 273, 53),
                      (f"gelu {gt.OLD_F32_TAG}", "float32", 216, 42)])
    rows = _table(monkeypatch, report, _sweep([("gelu", 0.783),
                                               ("gelu_numba_f64_arith", 0.5033)]))
    # (then the float32-arithmetic kernel was the launched one, and the lean
    # one's accuracy that of its CPU compilation)
    assert rows[f"`gelu {gt.OLD_F32_TAG}`"][-2:] == ["0.783 (0)", "-"]
    assert rows[f"`gelu {gt.OLD_LEAN_TAG}`"][-2] == "-"
    assert rows[f"`gelu {gt.OLD_LEAN_TAG}`"][-1].endswith("its CPU compilation")
