"""The float32 kernel a measured device launches: analysis.gpu_choice's
rule on throughput reports, the generated gelu_numba.targets.cuda.choice,
and GpuFunction.variant reading it."""

import pytest

from analysis import gpu_choice
from analysis.gpu_throughput import LEAN_TAG, VEC4_MARK

pytestmark = pytest.mark.gpu


def report(rows, cc="9.0", mark=True, device="NVIDIA H200"):
    """A throughput report of ``rows``: (row name, size, G elem/s)."""
    head = (f"# GPU throughput: {device} (132 SMs, compute capability {cc})\n\n"
            "`python -m analysis.gpu_throughput`, 2026-12-01 10:00 UTC.  "
            + (f"float32 rows: {VEC4_MARK}." if mark else "") + "\n\n"
            "| function | dtype | n | time (µs) | G elem/s | GB/s | copy GB/s | of copy |\n"
            "|---|---|---|---|---|---|---|---|\n")
    return head + "".join(f"| `{name}` | float32 | {size} | 1.0 | {g} | 1 | 1 | 50% |\n"
                          for name, size, g in rows)


def test_the_lean_kernel_is_chosen_where_it_is_clearly_faster_at_the_largest_size():
    rows = [("gelu", "2^28", 250), (f"gelu {LEAN_TAG}", "2^28", 270),
            ("gelu", "2^20", 250), (f"gelu {LEAN_TAG}", "2^20", 200),
            ("gelu_grad", "2^28", 250), (f"gelu_grad {LEAN_TAG}", "2^28", 260),
            ("gelu_backward", "2^28", 200), (f"gelu_backward {LEAN_TAG}", "2^28", 180),
            ("gelu_grad2", "2^28", 300)]
    name, chosen = gpu_choice.choose(report(rows))
    assert name == "NVIDIA H200"
    assert chosen == {"gelu": ("lean32", 250, 270, "2^28"),          # 8 % faster
                      "gelu_grad": ("fp64", 250, 260, "2^28"),       # 4 %: within the margin
                      "gelu_backward": ("fp64", 200, 180, "2^28")}   # (ndtr: not timed)


def test_reports_of_other_kernels_or_devices_choose_nothing():
    rows = [("gelu", "2^28", 100), (f"gelu {LEAN_TAG}", "2^28", 200)]
    assert gpu_choice.choose(report(rows, mark=False)) == ("NVIDIA H200", {})   # older kernels
    assert gpu_choice.choose(report(rows, cc="8.6"))[1] == {}       # FP64 at 1/64: lean anyway
    with pytest.raises(ValueError, match="not a report"):
        gpu_choice.choose("# something else\n")


def test_the_committed_choice_is_the_generators_output():
    assert gpu_choice.MODULE.read_text() == gpu_choice.render()


def test_the_accuracy_beside_each_kernel_is_below_one_ulp():
    ulp = gpu_choice.accuracy()
    assert set(ulp) == {(f, k) for f in gpu_choice.FUNCTIONS for k in ("fp64", "lean32")}
    for f in gpu_choice.FUNCTIONS:
        assert ulp[(f, "fp64")] < ulp[(f, "lean32")] < 1


def test_variant_follows_the_measured_choice_on_full_rate_devices(monkeypatch):
    from gelu_numba import gpu
    from gelu_numba.targets.cuda import variants
    chosen = {}
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: True)
    monkeypatch.setattr(variants, "measured_choice", lambda name: chosen.get(name))
    assert gpu.gelu.variant("f") == "fp64"               # unmeasured: the rule
    chosen["gelu"] = "lean32"
    assert gpu.gelu.variant("f") == "lean32"
    assert gpu.gelu.variant("f", fp64=True) == "fp64"    # a forced choice stands
    assert gpu.gelu.variant("d") is None
    chosen["gelu_grad2"] = "lean32"                      # (it has no lean kernel)
    assert gpu.gelu_grad2.variant("f") == "fp64"
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: False)
    assert gpu.gelu.variant("f") == "lean32"


def test_measured_choice_reads_the_table_by_the_devices_name(monkeypatch):
    from numba import cuda

    from gelu_numba.targets.cuda import choice, variants

    class Device:
        id, name = 5, b"NVIDIA H200"

    monkeypatch.setattr(variants, "SIMULATOR", False)
    monkeypatch.setattr(variants, "_device_available", lambda: True)
    monkeypatch.setattr(variants, "_CHOICE", {})
    monkeypatch.setattr(cuda, "get_current_device", lambda: Device())
    monkeypatch.setattr(choice, "CHOICE", {"NVIDIA H200": {"gelu": "lean32"}})
    assert variants.measured_choice("gelu") == "lean32"
    assert variants.measured_choice("ndtr") is None
    Device.id, Device.name = 6, "NVIDIA H100 80GB HBM3"
    assert variants.measured_choice("gelu") is None
