"""The float32 kernel a measured device launches: analysis.gpu.choice's
rule on throughput reports, the generated gelu_numba.targets.cuda.choice,
and GpuFunction.variant reading it."""

import pytest

from analysis.gpu import choice as gpu_choice
from analysis.gpu.throughput import (
    HALF_SHARED_TAG, HOST_CORE_LAUNCH, HOST_DRIVER_LAUNCH, LEAN_SHARED_TAG, LEAN_TAG, VEC4_MARK,
)

pytestmark = pytest.mark.gpu


def report(rows, cc="9.0", mark=True, device="NVIDIA H200"):
    """A throughput report of ``rows``: (row name, size, G elem/s[, dtype])."""
    head = (f"# GPU throughput: {device} (132 SMs, compute capability {cc})\n\n"
            "`python -m analysis.gpu.throughput`, 2026-12-01 10:00 UTC.  "
            + (f"float32 rows: {VEC4_MARK}." if mark else "") + "\n\n"
            "| function | dtype | n | time (µs) | G elem/s | GB/s | copy GB/s | of copy |\n"
            "|---|---|---|---|---|---|---|---|\n")
    return head + "".join(f"| `{name}` | {dt[0] if dt else 'float32'} | {size} | 1.0 | {g} "
                          "| 1 | 1 | 50% |\n" for name, size, g, *dt in rows)


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


def test_the_faster_form_of_the_lean_kernel_is_the_one_chosen():
    rows = [("gelu", "2^28", 250), (f"gelu {LEAN_TAG}", "2^28", 270),
            (f"gelu {LEAN_SHARED_TAG}", "2^28", 300),
            ("ndtr", "2^28", 250), (f"ndtr {LEAN_TAG}", "2^28", 300),
            (f"ndtr {LEAN_SHARED_TAG}", "2^28", 280)]
    chosen = gpu_choice.choose(report(rows))[1]
    assert chosen["gelu"] == ("lean32 shared", 250, 300, "2^28")
    assert chosen["ndtr"] == ("lean32", 250, 300, "2^28")


def test_the_2_byte_forward_reads_its_table_where_it_ran_faster():
    rows = [("gelu", "2^28", 750, "float16"), (f"gelu {HALF_SHARED_TAG}", "2^28", 950, "float16"),
            ("gelu", "2^28", 920, "bfloat16"),
            (f"gelu {HALF_SHARED_TAG}", "2^28", 940, "bfloat16")]
    # (a report of older float32 kernels: the halves are chosen all the same)
    assert gpu_choice.choose(report(rows, mark=False))[1] == {
        "gelu float16": ("shared", 750, 950, "2^28"),
        "gelu bfloat16": ("l1", 920, 940, "2^28")}     # 2 %: within the margin


def test_the_generated_module_merges_a_devices_reports(tmp_path, monkeypatch):
    # the whole run's report and the 2-byte kernels' own, of one device
    (tmp_path / "gpu_throughput_h200.md").write_text(report(
        [("gelu", "2^28", 250), (f"gelu {LEAN_TAG}", "2^28", 300)]))
    (tmp_path / "gpu_throughput_half_h200.md").write_text(report(
        [("gelu", "2^28", 750, "float16"), (f"gelu {HALF_SHARED_TAG}", "2^28", 950, "float16")],
        mark=False))
    monkeypatch.setattr(gpu_choice, "REPORTS", tmp_path)
    text = gpu_choice.render()
    scope = {}
    exec(compile(text, "choice.py", "exec"), scope)  # noqa: S102 (the generated module)
    assert scope["CHOICE"] == {"NVIDIA H200": {"gelu": "lean32", "gelu float16": "shared"}}
    assert "| NVIDIA H200 | `gelu` | lean32 | 250 | 300 | 2^28 |" in text
    assert "| NVIDIA H200 | `gelu float16` | shared | 750 | 950 | 2^28 |" in text


def host_table(core_us, driver_us):
    return ("\n## Host time per call (float32 `gelu`, 1048576 elements on the device, "
            "default stream)\n\n| call | µs per call | min |\n|---|---|---|\n"
            f"| `gpu.gelu(x, out=out)`, numba arrays (fast launch) | 19.4 | 18.2 |\n"
            f"| {HOST_CORE_LAUNCH} | {core_us} | 1 |\n"
            f"| {HOST_DRIVER_LAUNCH} | {driver_us} | 1 |\n")


def test_the_launch_goes_through_culaunchkernel_where_it_was_cheaper(tmp_path, monkeypatch):
    assert gpu_choice.choose(report([]) + host_table(9.5, 3.0))[1] == {
        "launch": ("cuLaunchKernel", 9.5, 3.0, "µs per call")}
    assert gpu_choice.choose(report([]) + host_table(9.5, 9.2))[1]["launch"][0] == "cuda.core"
    assert "launch" not in gpu_choice.choose(report([]))[1]
    # a newer host-time run of the device decides over the whole run's
    (tmp_path / "gpu_throughput_h200.md").write_text(report([]) + host_table(9.5, 3.0))
    (tmp_path / "gpu_host_h200.md").write_text(
        report([]).replace("2026-12-01 10:00", "2026-12-02 10:00") + host_table(5.0, 4.9))
    monkeypatch.setattr(gpu_choice, "REPORTS", tmp_path)
    scope = {}
    exec(compile(gpu_choice.render(), "choice.py", "exec"), scope)  # noqa: S102
    assert scope["CHOICE"] == {"NVIDIA H200": {"launch": "cuda.core"}}


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
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: True)
    chosen["gelu"] = variants.LEAN_SHARED                # (the same kernel's other form)
    assert gpu.gelu.variant("f") == "lean32"


def test_the_chosen_shared_form_is_the_16_byte_loop_of_lean_shared(monkeypatch):
    # the lean kernel with its table in shared memory where it was chosen:
    # the loop of 16-byte loads only (the other loops keep the table in
    # global memory, with the same bits); a forced lean kernel keeps it there
    from gelu_numba.targets import cuda as target
    from gelu_numba.targets.cuda import lean_shared, variants
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: True)
    monkeypatch.setattr(variants, "measured_choice",
                        lambda name: variants.LEAN_SHARED if name == "gelu" else None)
    f = target.gpu_function("gelu")
    layout = target.flat_layout(1)
    assert f.kernel("f", layout, vec4=True) is lean_shared.kernel("gelu")
    assert f.kernel("f", layout) is not lean_shared.kernel("gelu")
    assert f.kernel("f", layout, lean32=True, fp64=False, vec4=True) is not \
        lean_shared.kernel("gelu")
    # (its table passed after the input, as the lean kernel's)
    assert list(f.fixed_arguments("f", layout)) == [1]


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
