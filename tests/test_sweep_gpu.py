"""The GPU sweep (``python -m analysis.sweep_float32 --device gpu``).

Under numba-cuda's simulator (tests/conftest.py) its kernel runs as Python:
its statistics must be the CPU sweep's, chunk for chunk, for the same
float32 kernels (``--kernels gpu32``: the GPU's float32 kernels compiled for
the CPU, the same bits) judged against the independent float64 reference
(:mod:`reference.f64`, validated against mpmath), where the GPU
sweep uses the float64 GPU kernels.  A subprocess compiles the kernels to
PTX, so a kernel that only the simulator accepts fails here, in CI.
"""

import json

import numpy as np
import pytest
from compiled import without_simulator

from analysis import sweep_float32 as sf
from analysis.gpu import sweep as sweep_gpu

pytestmark = pytest.mark.gpu

NAMES = ["gelu", "gelu_backward", "ndtr", "norm_pdf", "gelu_grad", "gelu_grad2"]
#: (first k, last k + 1, stride): the neighbours of +-0 (subnormals), of
#: +-inf (the largest finite, the infinities, NaNs of both signs), and an
#: odd stride through all binades
RANGES = [(0, 12, 1), (0x80000000, 0x8000000C, 1), (0x7F7FFFFA, 0x7F800006, 1),
          (0xFF7FFFFA, 0xFF800006, 1), (0, 240, 17895697)]


def _cpu_stats(name, k0, k1, stride):
    return sf._chunk_stats(name, sf.gpu32_function(name), k0, k1, stride)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("k0,k1,stride", RANGES)
def test_statistics_are_the_cpu_sweeps(name, k0, k1, stride):
    got = sweep_gpu._launch_stats(name, k0, k1, stride)
    want = _cpu_stats(name, k0, k1, stride)
    for key in ("checked", "nan_inputs", "nan_inputs_bad_output", "special_mismatches",
                "over_1ulp", "first_mismatch_bits", "output_dtype"):
        assert got[key] == want[key], key
    # a float64 reference on a float32 midpoint counts either neighbour
    ties = got["reference_midpoints"]
    assert abs(got["correctly_rounded"] - want["correctly_rounded"]) <= ties
    if name != "gelu" or k0 != 0 and k0 != 0x80000000:
        assert ties == 0
    # the references differ by ~1e-16 relative: ~1e-9 float32 ulp
    assert got["max_ulp"] == pytest.approx(want["max_ulp"], abs=1e-6)
    # the worst input (one of them, where several share the maximum)
    there = _cpu_stats(name, got["worst_bits"], got["worst_bits"] + 1, 1)
    assert there["max_ulp"] == pytest.approx(want["max_ulp"], abs=1e-6)
    assert got["worst_output"] == there["worst_output"]
    assert got["worst_reference"] == pytest.approx(there["worst_reference"], rel=1e-12)


def test_the_ranges_reach_the_special_values():
    # the ranges above see NaN inputs, infinities and zeros
    bits = np.concatenate([sf._bits(k0, k1, s) for k0, k1, s in RANGES])
    x = bits.view(np.float32)
    assert np.isnan(x).sum() >= 8 and np.isposinf(x).any() and np.isneginf(x).any()
    assert (x == 0).sum() >= 2 and (np.abs(x[x != 0]) < 2.0**-126).any()


def test_sweep_and_cli(tmp_path):
    stride = 2**32 // 97 + 1
    res = sweep_gpu.sweep_gpu("gelu", stride, chunk=40, progress=False)
    want = sf.sweep("gelu", stride, chunk=40, progress=False, kernels="gpu32")
    assert res["checked"] == want["checked"] == sf.n_inputs(stride)
    assert res["worst_input_hex"] == want["worst_input_hex"]
    assert res["reference_midpoints"] == 0
    out = tmp_path / "gpu.json"
    assert sf.main(["--device", "gpu", "--functions", "ndtr", "--stride", str(stride),
                    "--no-progress", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["device"] == "gpu" and data["gpu"] == sweep_gpu.device_name()
    assert data["results"][0]["function"] == "ndtr"
    assert data["results"][0]["checked"] == sf.n_inputs(stride)


def test_reference_midpoints_are_counted():
    # x = odd multiples of 2**-149: x/2 is a float32 midpoint and the float64
    # gelu returns it (Phi(x) = 1/2 in float64); the exact value x Phi(x) is
    # above it for x > 0, below it for x < 0
    st = sweep_gpu._launch_stats("gelu", 1, 12, 1)
    assert st["checked"] == 11 and st["reference_midpoints"] == 6
    assert st["max_ulp"] == 0.5


def test_cli_rejects_cpu_only_options(capsys):
    with pytest.raises(SystemExit):
        sf.main(["--device", "gpu", "--workers", "2"])
    assert "--device gpu takes no" in capsys.readouterr().err


def test_unknown_function():
    with pytest.raises(ValueError, match="the GPU sweep judges"):
        sweep_gpu.sweep_gpu("gelu_tanh", 2**30, progress=False)


_PTX = r"""
from numba import cuda, float32, float64, int64
from analysis.gpu.sass import without_a_driver
without_a_driver()
from analysis.gpu.sweep import input_kernel, sweep_kernel
for name in ("gelu", "gelu_backward"):
    for given in (False, True):
        ptx, _ = cuda.compile_ptx(
            sweep_kernel(name, given).py_func,
            (int64, int64, int64, float32[::1], int64[:, ::1], float64[:, ::1]), cc=(9, 0))
        assert ".entry" in ptx and ".local" not in ptx, (name, given)
ptx, _ = cuda.compile_ptx(input_kernel.py_func, (int64, int64, int64, float32[::1],
                                                  float32[::1]), cc=(9, 0))
assert ".entry" in ptx
print("ok")
"""


def test_kernels_compile_for_the_gpu():
    assert without_simulator("-c", _PTX).stdout.strip().endswith("ok")


# ------------------------------------------------------------------ peers

def _own_peer(name, on_stream):
    # gelu_numba.gpu's own function through the peers' path: a call on
    # device arrays that returns a new device array
    from analysis.gpu.peers import Peer
    from gelu_numba import gpu
    return Peer(f"own_{name}", name, ("float32",), getattr(gpu, name), on_stream)


@pytest.mark.parametrize("name", ["gelu", "gelu_backward"])
def test_a_peer_is_swept_on_its_outputs(name):
    stride = 2**32 // 61 + 1
    peer = _own_peer(name, None)
    got = sweep_gpu.sweep_gpu(name, stride, chunk=25, progress=False, func=peer.call,
                              label=peer.name)
    want = sweep_gpu.sweep_gpu(name, stride, chunk=25, progress=False)
    assert got["function"] == peer.name
    for key in ("checked", "max_ulp", "worst_input_hex", "correctly_rounded", "over_1ulp",
                "nan_inputs", "special_mismatches"):
        assert got[key] == want[key], key


def test_a_wrong_peer_is_caught():
    # the tanh form judged as GELU: the CPU sweep of the same callable
    # against the independent reference says what the GPU sweep must find
    from analysis.gpu.peers import Peer
    from gelu_numba import approximations, gpu
    stride = 2**32 // 53 + 1
    peer = Peer("tanh_as_gelu", "gelu", ("float32",), gpu.gelu_tanh, None)
    got = sweep_gpu.sweep_gpu("gelu", stride, progress=False, func=peer.call)
    want = sf.sweep("gelu", stride, progress=False, func=approximations.gelu_tanh)
    assert want["over_1ulp"] > 0
    for key in ("checked", "over_1ulp", "worst_input_hex"):
        assert got[key] == want[key], key
    assert got["max_ulp"] == pytest.approx(want["max_ulp"], rel=1e-9)


def test_a_peer_returning_the_wrong_dtype_is_refused():
    from gelu_numba import gpu
    with pytest.raises(ValueError, match="not float32"):
        sweep_gpu.sweep_gpu("gelu", 2**30, progress=False,
                            func=lambda x: gpu.gelu(x.copy_to_host().astype(np.float64)))


def test_peers_not_installed_are_named():
    from analysis.gpu import peers as gpu_peers
    ok, missing = gpu_peers.available()
    assert set(ok) | set(missing) == set(gpu_peers.PEERS)
    for why in missing.values():
        assert "not installed" in why or "no CUDA" in why or "no GPU" in why
    with pytest.raises(ValueError, match="unknown peer"):
        gpu_peers.available(["nope"])


def test_throughput_times_peers_on_the_same_buffers(tmp_path):
    import contextlib

    from numba import cuda

    from analysis.gpu import throughput as gpu_throughput
    from gelu_numba import gpu
    peers = [_own_peer("gelu", lambda stream: contextlib.nullcontext()),
             _own_peer("gelu_backward", None)]
    rows = gpu_throughput.measure(["gelu"], [64], 1, 1, cuda, gpu, peers=peers)
    by = {(r["function"], r["dtype"]): r for r in rows}
    # beside float32 gelu, the lean kernel and the device functions'
    # float32-arithmetic one, forced (the lean one on wide data too), and
    # the launched one on views not 16-byte aligned
    assert set(by) == {("gelu", "float32"), ("gelu", "float64"), ("own_gelu", "float32"),
                       (f"gelu {gpu_throughput.F32_NARROW_TAG}", "float32"),
                       ("own_gelu_backward", "float32"), (gpu_throughput.WIDE, "float64"),
                       (f"gelu {gpu_throughput.F32_TAG}", "float32"),
                       (f"gelu {gpu_throughput.LEAN_TAG}", "float32"),
                       (gpu_throughput.LEAN_WIDE, "float32")}
    assert by[("own_gelu_backward", "float32")]["host_timed"]
    assert not by[("own_gelu", "float32")]["host_timed"]
    assert all(r["t_median"] > 0 for r in rows)
    # a peer that fails costs its row, named on stderr, not the run
    from analysis.gpu.peers import Peer

    def broken(x):
        raise RuntimeError("no such dtype here")

    only = gpu_throughput.measure(["gelu"], [64], 1, 1, cuda, gpu,
                                  peers=[Peer("broken", "gelu", ("float32",), broken, None)],
                                  dtypes=("float32",))
    assert [(r["function"], r["dtype"]) for r in only] == [
        ("gelu", "float32"), (f"gelu {gpu_throughput.F32_NARROW_TAG}", "float32"),
        (f"gelu {gpu_throughput.LEAN_TAG}", "float32"),
        (f"gelu {gpu_throughput.F32_TAG}", "float32"), (gpu_throughput.LEAN_WIDE, "float32")]
    acc = {"gpu": "simulator", "results": [
        sweep_gpu.sweep_gpu("gelu", 2**32 // 7 + 1, progress=False)]}
    text = gpu_throughput.report({"name": "sim", "sms": 1, "cc": "9.0"}, rows, [], None, None,
                                 {}, [], {"torch_gelu": "no CUDA"}, acc)
    assert "`own_gelu_backward` (host-timed)" in text
    assert "peer `torch_gelu` not measured: no CUDA" in text
    assert "Exhaustive float32 accuracy on simulator" in text
    # (analysis.gpu.sass reads which float32 loops the run timed from it)
    assert gpu_throughput.VEC4_MARK in text


@pytest.mark.parametrize("name", ["gelu", "gelu_backward", "ndtr"])
def test_the_float64_arithmetic_variant_is_the_plain_kernel_on_the_gpu_path(name):
    # gelu_numba_f64_arith(_backward): the float32 kernel in float64
    # arithmetic (k32) launched like gelu_numba.gpu's; its GPU sweep must be
    # the CPU sweep of the same kernel compiled for the CPU (both against
    # independent references), within its bound
    from analysis.gpu import peers as gpu_peers
    from gelu_numba import catalog
    peer_name = {"gelu": "gelu_numba_f64_arith",
                 "gelu_backward": "gelu_numba_f64_arith_backward"}.get(
                     name, f"gelu_numba_f64_arith_{name}")
    ok, _ = gpu_peers.available([peer_name])
    peer = ok[peer_name]
    assert (peer.function, peer.dtypes, peer.event_timed) == (name, ("float32",), True)
    stride = 2**32 // 59 + 1
    got = sweep_gpu.sweep_gpu(name, stride, chunk=25, progress=False, func=peer.call,
                              label=peer.name)
    want = sf.sweep(name, stride, progress=False, func=sf.plain32_function(name))
    for key in ("checked", "over_1ulp", "worst_input_hex", "correctly_rounded"):
        assert got[key] == want[key], key
    # (two float64 references, which may differ by float64 ulps: 2**-29
    # float32 ulps each, 1.9e-9 seen for gelu)
    assert got["max_ulp"] == pytest.approx(want["max_ulp"], abs=1e-6)
    assert got["max_ulp"] <= catalog.PLAIN32_BOUND


@pytest.mark.parametrize("name", ["gelu", "gelu_backward"])
def test_the_lean_peer_is_the_lean_kernel_on_the_gpu_path(name):
    # gelu_numba_lean32_<name>: the kernel devices without full-rate FP64
    # launch, forced; its GPU sweep must be the CPU sweep of the lean
    # kernel's CPU compilation, which the exhaustive sweep judged
    from analysis.gpu import peers as gpu_peers
    ok, _ = gpu_peers.available([f"gelu_numba_lean32_{name}"])
    peer = ok[f"gelu_numba_lean32_{name}"]
    assert (peer.function, peer.dtypes, peer.event_timed) == (name, ("float32",), True)
    stride = 2**32 // 59 + 1
    got = sweep_gpu.sweep_gpu(name, stride, chunk=25, progress=False, func=peer.call,
                              label=peer.name)
    want = sf.sweep(name, stride, progress=False, func=sf.lean32_function(name))
    for key in ("checked", "over_1ulp", "worst_input_hex", "correctly_rounded"):
        assert got[key] == want[key], key
    assert got["max_ulp"] == pytest.approx(want["max_ulp"], abs=1e-6)
    assert got["max_ulp"] < 1


@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<u2"])
def test_the_copy_roofline_kernel_copies(dtype):
    # gpu_throughput's second copy (a kernel in gelu_numba.gpu's loop, for
    # host-bound sizes): it copies every element, and checks that it does
    from numba import cuda

    from analysis.gpu import throughput as gpu_throughput
    stream = cuda.stream()
    x = cuda.to_device((np.arange(2500) % 977).astype(dtype))
    out = cuda.device_array_like(x)
    call = gpu_throughput._copy_call(x, out, stream)
    out[:] = 1
    call()
    stream.synchronize()
    assert np.array_equal(out.copy_to_host(), x.copy_to_host())
