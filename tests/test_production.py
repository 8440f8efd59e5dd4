"""gelu_numba.production: the registry, the float32-only ufuncs, the half
formats, and the PyTorch emulations against torch itself."""

import os
import pickle
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import torch

from gelu_numba.kernels.emulated.formats import to_format
from gelu_numba.production import PRODUCTION

pytestmark = pytest.mark.unit

KEYS = ("name", "library", "runs", "formula", "source", "checked")


def _inputs():
    rng = np.random.default_rng(2026)
    x = np.concatenate([
        np.linspace(-12, 12, 400_001, dtype=np.float32),
        rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        np.float32([0.0, -0.0, np.inf, 3.4e38, -3.4e38, 1e-40, -1e-40, 2**-149, 5.5426, -5.5426]),
    ])
    x = x[~np.isnan(x)]
    # a multiple of 32: PyTorch's vectorised loop takes 32 elements at a time
    # and the remainder through the scalar path (see the test below)
    return x[:x.size // 32 * 32]


X = _inputs()


def same_bits(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def test_every_record_is_complete():
    assert PRODUCTION, "no emulations registered"
    for name, rec in PRODUCTION.items():
        assert rec.name == name
        for key in KEYS:
            assert isinstance(getattr(rec, key), str) and getattr(rec, key).strip(), (name, key)
        assert "@" in rec.source or " v" in rec.source, f"{name}: source names no version"
        y = rec.forward(np.float32([-1.0, 0.5, 2.0]))
        assert y.dtype == np.float32
        # GELU's shape: near x at 2, near 0 at -1 (every production GELU is)
        assert abs(y[2] - 1.954) < 0.05 and abs(y[0] + 0.159) < 0.05, name


def test_float32_only_and_inputs_untouched():
    rec = PRODUCTION["pytorch_cpu_vec_erf"]
    with pytest.raises(TypeError, match="accepted: float32"):
        rec.forward(np.float64([1.0]))
    x = np.float32([-3.0, 1.0])
    before = x.copy()
    rec.forward(x)
    assert np.array_equal(x, before)
    assert rec.forward(np.float16([1.0])).dtype == np.float32
    f = pickle.loads(pickle.dumps(rec.forward))
    assert f is rec.forward
    raw = pickle.loads(pickle.dumps(rec.forward.ufunc))
    assert raw is rec.forward.ufunc


def test_half_forward_refuses_values_outside_the_format():
    rec = PRODUCTION["pytorch_cpu_vec_erf"]
    with pytest.raises(ValueError, match="not bfloat16"):
        rec.half_forward(np.float32([1 + 2**-20]), "bfloat16")


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_to_format_is_torch_rounding(fmt):
    y = torch.from_numpy(X).to(getattr(torch, fmt)).float().numpy()
    assert same_bits(to_format(X, fmt), y).all()


# ------------------------------------------------------------------ PyTorch

@pytest.fixture(autouse=True)
def one_torch_thread():
    # one thread: each thread's chunk would end in a scalar remainder of its own
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _torch(fn, x, **kw):
    t = torch.from_numpy(x)
    with torch.backends.mkldnn.flags(enabled=False):
        return fn(t, **kw).numpy()


def test_pytorch_vec_erf_is_bit_identical():
    rec = PRODUCTION["pytorch_cpu_vec_erf"]
    assert same_bits(rec.forward(X), _torch(torch.nn.functional.gelu, X)).all()
    grad = _torch(lambda t: torch.ops.aten.gelu_backward(torch.ones_like(t), t), X)
    assert same_bits(rec.grad(X), grad).all()


def test_pytorch_vec_erf_float16_is_float32_rounded_once():
    rec = PRODUCTION["pytorch_cpu_vec_erf"]
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    x = x[np.isfinite(x)]                 # 63,488 = 1,984 * 32
    y = _torch(torch.nn.functional.gelu, x).astype(np.float32)
    assert same_bits(rec.half_forward(x.astype(np.float32), "float16"), y).all()


def test_pytorch_vec_path_ends_in_the_scalar_path():
    """The same value gets two results: the at::vec loop computes blocks of
    32 and the last n % 32 elements with the scalar formula (glibc erff);
    at x = -5.5426 the two differ (-1.65e-7 from the vector path, 0 from
    the scalar one)."""
    x = np.full(40, -5.5426, np.float32)
    y = _torch(torch.nn.functional.gelu, x)
    vec = PRODUCTION["pytorch_cpu_vec_erf"].forward(x)
    scalar = PRODUCTION["pytorch_cpu_scalar_erf"].forward(x)
    assert vec[0] < 0 and scalar[0] == 0
    assert same_bits(y[:32], vec[:32]).all() and same_bits(y[32:], scalar[32:]).all()


def test_pytorch_scalar_path_is_bit_identical():
    t = torch.from_numpy(np.stack([X, X], 1))[:, 0]     # strided: the scalar loop
    assert not t.is_contiguous()
    y = torch.nn.functional.gelu(t).numpy()
    assert same_bits(PRODUCTION["pytorch_cpu_scalar_erf"].forward(X), y).all()


_CHILD_VEC = """
import sys, numpy as np, torch
torch.set_num_threads(1)
print(torch.backends.cpu.get_cpu_capability())
t = torch.from_numpy(np.load(sys.argv[1]))
approximate = sys.argv[2]
with torch.backends.mkldnn.flags(enabled=False):   # at::vec, not oneDNN
    y = torch.nn.functional.gelu(t, approximate=approximate).numpy()
    g = torch.ops.aten.gelu_backward(torch.ones_like(t), t, approximate=approximate).numpy()
np.save(sys.argv[1], np.stack([y, g]))
"""


@pytest.mark.parametrize("isa", ["default", "avx2"])
@pytest.mark.parametrize("name, approximate", [("pytorch_cpu_vec_erf", "none"),
                                               ("pytorch_cpu_vec_tanh", "tanh")])
def test_pytorch_vec_paths_are_bit_identical_on_both_isas(name, approximate, isa, tmp_path):
    """F.gelu and its backward through at::vec (oneDNN off), forward and
    backward, in a fresh process on the default ISA and capped to AVX2
    (ATEN_CPU_CAPABILITY=avx2): the exact form's A&S erf around SLEEF's
    expf_u10, the tanh form's SLEEF tanhf_u10 (transcribed,
    kernels.emulated.sleef) with GCC's FMA contractions; SLEEF computes the
    same bits on both ISAs."""
    rec = PRODUCTION[name]
    path = tmp_path / "x.npy"
    np.save(path, X)
    env = dict(os.environ, **(AVX2_ENV if isa == "avx2" else {}))
    run = subprocess.run([sys.executable, "-c", _CHILD_VEC, str(path), approximate], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    if isa == "avx2":
        assert run.stdout.split()[0] == "AVX2"
    y, g = np.load(path)
    assert same_bits(rec.forward(X), y).all()
    with np.errstate(over="ignore"):
        assert same_bits(rec.grad(X), g).all()


def test_pytorch_exact_collapses_where_the_issue_says():
    """pytorch#187806: 1 + erf cancels; the at::vec result is exactly 0 from
    x = -5.5430 down (the real library agrees, see above); the exact GELU is not."""
    rec = PRODUCTION["pytorch_cpu_vec_erf"]
    x = np.float32([-5.5, -6.5])
    y = rec.forward(x)
    exact_55 = -5.5 * 0.5 * __import__("math").erfc(5.5 / 2**0.5)
    assert abs(y[0] - exact_55) / abs(exact_55) > 0.1
    assert y[1] == 0.0


# ---------------------------------------------------------------------- JAX

def _jax(approximate):
    import functools
    import jax
    f = jax.jit(functools.partial(jax.nn.gelu, approximate=approximate))
    return np.asarray(f(X))


def test_jax_tanh_is_bit_identical():
    assert same_bits(PRODUCTION["jax_tanh"].forward(X), _jax(True)).all()


def test_jax_exact_is_bit_identical():
    # XLA's own float32 exp included (the polynomial of its optimised IR)
    y = _jax(False)
    assert same_bits(PRODUCTION["jax_exact"].forward(X), y).all()
    # the tail JAX keeps (erfc, not 1 + erf) down to where XLA flushes denormals
    assert y[X == np.float32(-12.0)][0] < 0


def test_xla_exp_is_bit_identical_to_jnp_exp():
    import jax
    import jax.numpy as jnp
    from numba import vectorize

    from gelu_numba.kernels.emulated import xla
    emulated = vectorize(["float32(float32)"])(lambda v: xla._ftz(xla.xla_exp(v)))
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-100, 100, 200_000), rng.uniform(-1, 1, 100_000),
                        [-87.8, -87.9, 88.8, 88.9, 0.0, -0.0]]).astype(np.float32)
    assert same_bits(emulated(x), np.asarray(jax.jit(jnp.exp)(x))).all()


# ------------------------------------------------------ Hugging Face (torch)

def _hf(name, t):
    import math
    if name == "huggingface_gelu_new":
        return 0.5 * t * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                           * (t + 0.044715 * torch.pow(t, 3.0))))
    if name == "huggingface_gelu_fast":
        return 0.5 * t * (1.0 + torch.tanh(t * 0.7978845608 * (1.0 + 0.044715 * t * t)))
    return t * torch.sigmoid(1.702 * t)


@pytest.mark.parametrize("name, f32, f16", [("huggingface_gelu_new", 0.998, 0.999),
                                            ("huggingface_gelu_fast", 0.998, 1.0),
                                            ("huggingface_quick_gelu", 1.0, 1.0)])
def test_huggingface_against_the_torch_expressions(name, f32, f16):
    rec = PRODUCTION[name]
    x = X[:400_000]
    y = _hf(name, torch.from_numpy(x)).numpy()
    m = rec.forward(x)
    assert same_bits(m, y).mean() >= f32
    assert np.max(np.abs(m.astype(np.float64) - y)) <= 4.8e-7
    for fmt, share in (("bfloat16", 1.0), ("float16", f16)):
        t = torch.from_numpy(x).to(getattr(torch, fmt))
        xf = t.float().numpy()
        assert same_bits(rec.half_forward(xf, fmt), _hf(name, t).float().numpy()).mean() >= share


# ------------------------------------------------------- source-only: ggml

def test_ggml_table_is_the_tanh_form_rounded_to_float16():
    """Each entry is the tanh form at a float16 x, computed in float32 and
    rounded to float16: within half a float16 ulp of the exact form, plus
    float32's error in 0.5 x (1 + tanh) (about |x| 2**-24, the 1 + tanh
    cancellation for x < 0), plus tanhf's 2 ulp."""
    from gelu_numba.kernels.emulated import ggml
    h = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    ok = np.isfinite(h) & (np.abs(h) < 10)
    x = h[ok].astype(np.float64)
    v = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * x * (1 + 0.044715 * x * x)))
    table = ggml.GELU_TABLE[ok].astype(np.float64)
    e = np.maximum(np.floor(np.log2(np.maximum(np.abs(v), 2.0**-24))), -14)
    half_ulp = 2.0 ** (e - 10) / 2
    assert np.all(np.abs(table - v) <= half_ulp + 3 * np.abs(x) * 2.0**-24 + 2.0**-25)
    # and mostly the correctly rounded float16 value itself
    assert np.mean(table == v.astype(np.float16).astype(np.float64)) > 0.99


def test_ggml_lookup_clamps_and_float16_steps():
    f = PRODUCTION["ggml_gelu"].forward
    y = f(np.float32([-10.5, -10.0, 10.0, 123.0]))
    assert list(y) == [0.0, 0.0, 10.0, 123.0]
    # every float32 input in one float16 interval gets the same value
    x = np.float32(1.5) + np.arange(-50, 50, dtype=np.float32) * np.float32(2**-20)
    assert len(set(f(x[(x >= 1.5 - 2**-11 + 2**-20) & (x < 1.5 + 2**-11)]))) == 1
    q = PRODUCTION["ggml_gelu_quick"].forward(np.float32([-100.0]))
    assert q[0] == np.float32(np.float16(-100 / (1 + np.exp(170.2))))


# ---------------------------------------------------- source-only: XNNPACK

@pytest.mark.parametrize("name", ["xnnpack_f32_gelu", "xnnpack_f32_approxgelu"])
def test_xnnpack_is_its_rational(name):
    from gelu_numba.kernels.emulated import xnnpack as xn
    a, b, clamp = ((xn.GELU_A, xn.GELU_B, xn.GELU_CLAMP) if name.endswith("_gelu")
                   else (xn.APPROX_A, xn.APPROX_B, xn.APPROX_CLAMP))
    x = np.linspace(-12, 12, 200_001, dtype=np.float32)
    xc = np.clip(x, -clamp, clamp).astype(np.float64)
    x2 = xc * xc
    p = xc * np.polyval([float(c) for c in a[::-1]], x2)
    q = np.polyval([float(c) for c in b[::-1]] + [1.0], x2)
    ref = x.astype(np.float64) * 0.5 * (p / q + 1)
    y = PRODUCTION[name].forward(x).astype(np.float64)
    # float32 rounding: a few ulps of the result, plus the cancellation of
    # erf + 1 for x < 0 (|x|/2 times a few ulps of 1)
    tol = 4 * np.spacing(np.abs(ref).astype(np.float32)) + 2 * np.abs(x) * 2.0**-23
    assert np.all(np.abs(y - ref) <= tol)


def test_xnnpack_meets_its_own_test_tolerance():
    """XNNPACK's test: |y - ref| <= max(10 eps, 5 eps |ref|) on [-10, 10],
    ref = x/2 (1 + erf(x/sqrt 2)) (test/unary-ops.h, TolMixed)."""
    from scipy.special import erf
    x = np.linspace(-10, 10, 200_001, dtype=np.float32)
    ref = x.astype(np.float64) * 0.5 * (1 + erf(x.astype(np.float64) / np.sqrt(2)))
    y = PRODUCTION["xnnpack_f32_gelu"].forward(x)
    eps = np.finfo(np.float32).eps
    assert np.all(np.abs(y - ref) <= np.maximum(10 * eps, 5 * eps * np.abs(ref)))


# ---------------------------------------------------- oneDNN, through torch
#
# Which oneDNN kernel torch runs depends on the CPU and on ONEDNN_MAX_CPU_ISA
# (and PyTorch's half-format checks on oneDNN's effective ISA), so the tests
# ask oneDNN: its verbose log names the kernel of every call ("jit:" and the
# ISA it was generated for), or has no line where torch did not call oneDNN.

#: oneDNN's gelu_erf kernels, by the two code paths of
#: gelu_erf_compute_vector_fwd (minimax polynomials from avx512_core up, A&S
#: 7.1.26 below); sse41 and avx (no FMA) are not emulated
ONEDNN_PATH = {"jit:avx2": "avx2", "jit:avx2_vnni_2": "avx2", "jit:avx512_core": "avx512",
               "jit:avx512_core_bf16": "avx512", "jit:avx10_1_512": "avx512",
               "jit:avx10_1_512_amx": "avx512", "jit:avx10_2": "avx512"}
EMULATION = {"avx2": "onednn_gelu_erf_avx2", "avx512": "onednn_gelu_erf_avx512"}
#: the A&S path on any x86-64 CPU: both libraries read their caps once, when
#: they start, so only a fresh process honours them
AVX2_ENV = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}

_VERBOSE_EXEC = re.compile(r"onednn_verbose,.*,exec,cpu,eltwise,([^,]+),\w+,.*eltwise_gelu_erf")


def _kernels(log):
    return [m.group(1) for m in map(_VERBOSE_EXEC.match, log.splitlines()) if m]


_CHILD = """
import sys, numpy as np, torch
torch.set_num_threads(1)
t = torch.from_numpy(np.load(sys.argv[1])).to(getattr(torch, sys.argv[2]))
y = torch.nn.functional.gelu(t).float().numpy()
g = torch.ops.aten.gelu_backward(torch.ones_like(t), t).numpy() if sys.argv[3] == "1" else y
np.save(sys.argv[1], np.stack([y, g]))
"""


def _torch_gelu(x, fmt="float32", forced=False, grad=False):
    """torch's gelu of float32 ``x`` as ``fmt`` (and gelu_backward at dy = 1
    with ``grad``), as float32, and the oneDNN kernels that ran: here, or
    with ``forced`` in a subprocess capped to AVX2 (:data:`AVX2_ENV`)."""
    if forced:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.npy")
            np.save(path, x)
            env = dict(os.environ, **AVX2_ENV, ONEDNN_VERBOSE="1")
            run = subprocess.run([sys.executable, "-c", _CHILD, path, fmt, str(int(grad))],
                                 env=env, capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            y, g = np.load(path)
        return y, (g if grad else None), _kernels(run.stdout)
    t = torch.from_numpy(x).to(getattr(torch, fmt))
    # the log goes to file descriptor 1 (C stdio), not through sys.stdout
    with tempfile.TemporaryFile() as log:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(log.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                y = torch.nn.functional.gelu(t).float().numpy()
                g = torch.ops.aten.gelu_backward(torch.ones_like(t), t).numpy() if grad else None
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        return y, g, _kernels(log.read().decode())


#: the float32 kernel torch runs here: oneDNN's effective ISA, after
#: ONEDNN_MAX_CPU_ISA (a CPU's flags alone would not tell)
DEFAULT_KERNEL = next(iter(_torch_gelu(np.linspace(-3, 3, 64, dtype=np.float32))[2]), None)
DEFAULT_PATH = ONEDNN_PATH.get(DEFAULT_KERNEL)
#: the paths this CPU runs: its own, and the A&S path by capping the ISA
PATHS = sorted({"avx2", DEFAULT_PATH} - {None})


def _pytorch_sends_to_onednn(fmt, kernel):
    """PyTorch's mkldnn_bf16_device_check and mkldnn_fp16_device_check
    (ideep's has_bf16_type_support, has_fp16_type_support) on oneDNN's
    effective ISA, named by its float32 kernel."""
    isa = kernel.removeprefix("jit:")
    if fmt == "bfloat16":       # avx512_core and up, or avx2_vnni_2
        return isa != "avx2"
    return isa in ("avx2_vnni_2", "avx10_1_512", "avx10_1_512_amx", "avx10_2")


# generated only where torch runs AVX-512 (not skipped elsewhere): on AVX2
# CPUs and under ONEDNN_MAX_CPU_ISA=AVX2 there is no such test
if DEFAULT_PATH == "avx512":
    def test_onednn_avx512_is_torchs_default_exact_gelu():
        """Contiguous float32 on an AVX-512 CPU: torch 2.13 runs oneDNN's
        minimax gelu_erf; the emulation is bit-identical.  Its backward is
        the A&S one of every ISA."""
        y, g, kernels = _torch_gelu(X, grad=True)
        assert [ONEDNN_PATH[k] for k in kernels] == ["avx512", "avx512"], kernels
        assert same_bits(PRODUCTION["onednn_gelu_erf_avx512"].forward(X), y).all()
        with np.errstate(over="ignore"):
            assert same_bits(PRODUCTION["onednn_gelu_erf_avx512"].grad(X), g).all()
        # and it is exactly 0 below x = -5.5426 (the rbound), unlike the exact GELU
        assert PRODUCTION["onednn_gelu_erf_avx512"].forward(np.float32([-5.6]))[0] == 0


def test_onednn_avx2_is_torchs_default_exact_gelu_without_avx512():
    """Contiguous float32 without AVX-512 (an AVX2 CPU, or any x86-64 CPU
    capped to AVX2): oneDNN's A&S 7.1.26 with its own exp, forward and
    backward bit-identical."""
    # beyond the grid: exp's clamp to ln FLT_MIN and its 0 from -86.99 on (|x| near 13.2)
    far = np.linspace(12, 14, 20_001, dtype=np.float32)
    x = np.concatenate([X, far, -far, np.float32([np.nan, -np.inf])])
    y, g, kernels = _torch_gelu(x, forced=DEFAULT_PATH != "avx2", grad=True)
    assert [ONEDNN_PATH[k] for k in kernels] == ["avx2", "avx2"], kernels
    rec = PRODUCTION["onednn_gelu_erf_avx2"]
    with np.errstate(all="ignore"):
        assert same_bits(rec.forward(x), y).all()
        assert same_bits(rec.grad(x), g).all()
    # 1 + erf cancels to +0 from x = -5.5430 down, as the exact GELU does not
    assert rec.forward(np.float32([-5.6]))[0] == 0


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
def test_onednn_half_formats(fmt, path):
    """torch's half-precision exact GELU: oneDNN where PyTorch's checks on
    oneDNN's effective ISA send the format there (bfloat16 from avx512_core
    up, float16 with AVX512-FP16; both on AVX2-VNNI-2), flushing subnormal
    bfloat16 results where the kernel converts with VCVTNEPS2BF16; at::vec
    elsewhere.  Each path this CPU runs: its own, and the A&S path (AVX2)."""
    from analysis.exhaustive import half_inputs
    x = half_inputs(fmt)
    forced = path != DEFAULT_PATH
    y, _, kernels = _torch_gelu(x, fmt, forced=forced)
    level = "jit:avx2" if forced else DEFAULT_KERNEL
    assert bool(kernels) == _pytorch_sends_to_onednn(fmt, level), (fmt, level, kernels)
    if kernels:
        assert ONEDNN_PATH[kernels[0]] == path
        # avx512_core converts in software (keeps subnormals), the kernels
        # above it and avx2_vnni_2 with VCVTNEPS2BF16
        m = PRODUCTION[EMULATION[path]].half(x, fmt, flush_bf16=kernels[0] != "jit:avx512_core")
    else:
        with np.errstate(over="ignore"):
            m = PRODUCTION["pytorch_cpu_vec_erf"].half_forward(x, fmt)
    assert same_bits(m, y).all()


# ------------------------------------------------ source-only: oneDNN tanh

def test_onednn_tanh_table_is_tanh_to_one_ulp():
    """The 31 degree-6 pieces of oneDNN's JIT tanh, read through the index
    and argument reduction, are within 1 float32 ulp of tanh (a wrong
    coefficient, index or reduction would be off by far more); exactly v
    below 4.2e-4 and +-1 from 9.0109 on."""
    from numba import vectorize
    from gelu_numba.kernels.emulated.onednn import tanh_avx512
    t = vectorize(["float32(float32)"])(lambda v: tanh_avx512(v))
    rng = np.random.default_rng(7)
    v = np.concatenate([rng.uniform(-10, 10, 400_000), 2.0 ** rng.uniform(-13, 3.2, 400_000)])
    v = v.astype(np.float32)
    ref = np.tanh(v.astype(np.float64)).astype(np.float32)
    ulps = np.abs(t(v).view(np.int32).astype(np.int64) - ref.view(np.int32))
    assert ulps.max() <= 1 and np.mean(ulps == 0) > 0.8
    edge = np.float32([4.2e-4, -4.2e-4, 9.011, -9.011, 50.0])
    assert list(t(edge)) == [np.float32(4.2e-4), np.float32(-4.2e-4), 1.0, -1.0, 1.0]


def test_onednn_gelu_tanh_forward_and_backward_are_the_tanh_form():
    rec = PRODUCTION["onednn_gelu_tanh_avx512"]
    x = np.linspace(-12, 12, 200_001, dtype=np.float32)
    X = x.astype(np.float64)
    c = np.sqrt(2 / np.pi)
    t = np.tanh(c * X * (1 + 0.044715 * X * X))
    fwd = 0.5 * X * (1 + t)
    bwd = 0.5 * (1 + t) * (1 + c * X * (1 + 3 * 0.044715 * X * X) * (1 - t))
    # float32 arithmetic: 1 ulp of tanh, the rounding of G (|x| 2**-23
    # relative, times tanh' <= 1), a few ulps of the products
    tol = 2 * np.abs(X) * 2.0**-23 * (1 + 0.13 * X * X) + 4 * np.spacing(np.float32(np.abs(fwd)))
    assert np.all(np.abs(rec.forward(x) - fwd) <= tol + 2.0**-24 * np.abs(X))
    assert np.max(np.abs(rec.grad(x) - bwd)) < 1e-6
    # -inf: tanh(-inf) = -1, (1 - 1) * 0.5 * -inf = NaN, as the JIT computes
    with np.errstate(invalid="ignore"):
        assert np.isnan(rec.forward(np.float32([-np.inf]))[0])


# ------------------------------------------- ONNX Runtime, through onnxruntime

def _ort(op, x, domain="", **attrs):
    """Run one ONNX node on the CPU execution provider, one thread, no graph
    rewriting."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    node = helper.make_node(op, ["x"], ["y"], domain=domain, **attrs)
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None]) for n in "xy"]
    opsets = [helper.make_opsetid("", 20)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(helper.make_graph([node], "g", vi[:1], vi[1:]),
                              opset_imports=opsets)
    model.ir_version = 9
    onnx.checker.check_model(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


@pytest.mark.parametrize("name, op, domain, attrs", [
    ("onnxruntime_cpu_gelu", "Gelu", "", {}),
    ("onnxruntime_cpu_gelu", "Gelu", "com.microsoft", {}),
    ("onnxruntime_cpu_fastgelu", "Gelu", "", {"approximate": "tanh"}),
    ("onnxruntime_cpu_fastgelu", "FastGelu", "com.microsoft", {}),
])
def test_onnxruntime_cpu_is_bit_identical(name, op, domain, attrs):
    # X plus a length that leaves a remainder after MLAS's 4096-element
    # blocks and its vector width
    for x in (X, X[:4096 * 2 + 7]):
        y = _ort(op, x, domain, **attrs)
        assert same_bits(PRODUCTION[name].forward(x), y).all()


def test_onnxruntime_gelu_is_zero_from_minus_5_5():
    y = _ort("Gelu", np.float32([-5.56, -5.5, -5.4]))
    assert y[0] == 0 and y[2] != 0   # the library itself
    assert list(PRODUCTION["onnxruntime_cpu_gelu"].forward(np.float32([-5.56, -5.4])) != 0) == [
        False, True]


def test_onnxruntime_fastgelu_has_the_wrong_sign_near_minus_5():
    """MLAS's rational tanh overshoots -1 near -4.3, so FastGelu returns
    +3.1e-7 for x near -5.1548: the library itself, and the emulation."""
    x = np.linspace(-5.16, -5.15, 4001, dtype=np.float32)
    y = _ort("FastGelu", x, "com.microsoft")
    assert (y > 0).sum() > 100 and y.max() > 3e-7
    assert same_bits(PRODUCTION["onnxruntime_cpu_fastgelu"].forward(x), y).all()


def test_onnxruntime_cuda_fastgelu_half_rounds_each_operation():
    """float16 FastGelu on CUDA: every operation is a float16 one.  Against
    the same expression in numpy's float16 (IEEE float16 arithmetic, tanh
    through float32 as the kernel does), with the correctly rounded tanh."""
    rec = PRODUCTION["onnxruntime_cuda_fastgelu"]
    h = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    h = h[np.isfinite(h)]
    a, b, c = np.float16(0.5), np.float16(0.7978845608028654), np.float16(0.035677408136300125)
    with np.errstate(all="ignore"):
        inner = h * (c * h * h + b)
        t = np.tanh(inner.astype(np.float64)).astype(np.float32).astype(np.float16)
        ref = h * (a + a * t)
    got = rec.half_forward(h.astype(np.float32), "float16")
    assert same_bits(got, ref.astype(np.float32)).all()


# ------------------------------------------------------ source-only: MLX

def _ulps(y, ref):
    return np.abs(y.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32))


def test_mlx_erfs_and_exp_against_mathematics():
    from numba import vectorize
    from scipy.special import erf
    from gelu_numba.kernels.emulated import mlx
    v = np.random.default_rng(3).uniform(-5, 5, 400_000).astype(np.float32)
    ref = erf(v.astype(np.float64))
    # CPU: A&S 7.1.26, |error| <= 1.5e-7 (A&S's bound) plus the float32
    # evaluation and exp (at::vec's copy with SLEEF's exp reaches 4.7e-7)
    cpu = vectorize(["float32(float32)"])(lambda a: mlx.mlx_erf_cpu(a))
    assert np.max(np.abs(cpu(v) - ref)) < 6e-7
    # Metal: Juffa's erff; the small branch keeps its 0.99 ulp bound, the
    # large one loses the ln 2 low part in MLX's expm1f: > 1 ulp, < 16
    metal = vectorize(["float32(float32)"])(lambda a: mlx.mlx_erf_metal(a))
    small = np.abs(v) <= 0.927734375
    u = _ulps(metal(v), ref)
    assert u[small].max() < 1.0
    assert 4 < u[~small].max() < 16
    # MLX's exp: 2**k by bits times a Cephes polynomial; 0 below -88
    e = vectorize(["float32(float32)"])(lambda a: mlx.mlx_exp(a))
    w = np.random.default_rng(4).uniform(-87, 88, 400_000).astype(np.float32)
    assert np.max(np.abs(e(w) / np.exp(w.astype(np.float64)) - 1)) < 5e-6
    assert list(e(np.float32([-88.5, 88.5, 0.0]))) == [0.0, np.inf, 1.0]


def test_mlx_half_rounds_each_operation():
    """mlx.nn.gelu on a float16 array: x / sqrt2, erf, 1 + e, x * ., / 2,
    each a float16 operation (numpy's float16 arithmetic), erf in float32."""
    from numba import vectorize
    from gelu_numba.kernels.emulated import mlx
    erf = vectorize(["float32(float32)"])(lambda a: mlx.mlx_erf_cpu(a))
    h = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    h = h[np.isfinite(h)]
    with np.errstate(all="ignore"):
        e = erf((h / np.float16(np.sqrt(2))).astype(np.float32)).astype(np.float16)
        ref = (h * (np.float16(1) + e)) / np.float16(2)
    got = PRODUCTION["mlx_gelu_cpu"].half_forward(h.astype(np.float32), "float16")
    assert same_bits(got, ref.astype(np.float32)).all()


# ----------------------------------------------------- source-only: vLLM

def test_vllm_half_mixes_dtype_and_float():
    """gelu_new_kernel<c10::Half>: x*x*x in half (each product rounded),
    the tanh argument in float, the last line in half.  Against numpy's
    float16 arithmetic, with the correctly rounded tanh."""
    h = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    h = h[np.isfinite(h)]
    f32 = np.float32
    with np.errstate(all="ignore"):
        x3 = (h * h * h).astype(f32)
        inner = (f32(0.79788456) * (h + (f32(0.044715) * x3).astype(np.float16)).astype(f32))
        t = np.tanh(inner.astype(np.float16).astype(np.float64)).astype(f32).astype(np.float16)
        ref = np.float16(0.5) * h * (np.float16(1) + t)
    got = PRODUCTION["vllm_gelu_new"].half_forward(h.astype(f32), "float16")
    assert same_bits(got, ref.astype(f32)).all()


@pytest.mark.parametrize("name", ["vllm_gelu_new", "vllm_gelu_fast"])
def test_vllm_float32_is_the_tanh_form(name):
    x = np.linspace(-12, 12, 200_001, dtype=np.float32)
    X = x.astype(np.float64)
    ref = 0.5 * X * (1 + np.tanh(0.79788456 * X * (1 + 0.044715 * X * X)))
    tol = 2 * np.abs(X) * 2.0**-23 * (1 + 0.13 * X * X) + 4 * np.spacing(np.float32(np.abs(ref)))
    assert np.all(np.abs(PRODUCTION[name].forward(x) - ref) <= tol)
