"""gelu_numba.gpu against the CPU ufuncs, and its array interface.

Runs on a GPU when one is present, else under numba-cuda's simulator
(tests/conftest.py sets NUMBA_ENABLE_CUDASIM=1 before Numba is imported).
The CPU ufuncs are validated against mpmath elsewhere (test_accuracy.py,
the float32 sweep); here every GPU function must agree with its CPU twin
within 1 ulp (NVVM may contract a product and a sum into an FMA; the
normal-CDF family's float32 kernels compute in float32 on the GPU and in
float64 on the CPU, each within its bound) and exactly on NaN, infinities
and signed zeros; those float32 kernels also bit for bit with their CPU
compilation (tests/test_gpu32.py).
"""

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from bits import same_bits

pytest.importorskip("numba_cuda", reason="the GPU layer needs numba-cuda "
                    "(pip install 'gelu-numba[cuda]')")

from numba import cuda  # noqa: E402
from numba.core import config  # noqa: E402

import gelu_numba  # noqa: E402
import gelu_numba.approximations as approx  # noqa: E402
from gelu_numba import catalog, gpu  # noqa: E402
from gelu_numba.gpu import device as gd  # noqa: E402
from gelu_numba.targets import cuda as target  # noqa: E402
from gelu_numba.targets.cuda import caller, variants  # noqa: E402

SIMULATOR = bool(config.ENABLE_CUDASIM)
NIN = {fn.name: fn.nin for fn in catalog.published(catalog.GPU)}

# the simulator runs device code as Python, in which NumPy warns about
# the generator's wrapping uint64 arithmetic; Numba warns that the
# simulator's random-state set-up falls back to object mode
pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning",
    "ignore::numba.core.errors.NumbaWarning")]


def test_runs_where_the_conftest_says():
    # a real device exactly when the simulator is off
    fake = type(cuda.get_current_device()).__name__ == "FakeCUDADevice"
    assert SIMULATOR == fake


def cpu(name):
    return getattr(gelu_numba, name, None) or getattr(approx, name)


# ------------------------------------------------------------------ inputs

X0 = -0.751791524693564457457904946780  # zero of GELU'
_SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, -5e-324,
            1e-310, -1e-310, 2.0**-126, -2.0**-126, 1e-45, -1e-45, 1e-30,
            -1e-30, 1e300, -1e300, 3.4e38, -3.4e38, 1e-8, -1e-8]
_NEAR_ZEROS = [X0 + d for d in (-1e-3, -1e-9, 0.0, 1e-9, 1e-3)] + \
    [s * (math.sqrt(2) + d) for s in (-1, 1) for d in (-1e-9, 0.0, 1e-9)] + \
    [-1.0, -1.2784645427610738, -1.27846, -5.5, -6.0, -8.3, -13.2, -14.2,
     -37.6, -38.4, -38.5]


def xs(dtype):
    rng = np.random.default_rng(20261122)
    x = np.concatenate([_SPECIAL, _NEAR_ZEROS, np.linspace(-40.0, 12.0, 79),
                        rng.standard_normal(24) * 3])
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def inputs(name, dtype):
    """Arguments for a function of ``NIN[name]`` inputs, in ``dtype``."""
    x = xs(dtype)
    if NIN[name] == 1:
        return (x,)
    rng = np.random.default_rng(7)
    if NIN[name] == 2:
        # paired values, then every special dy against every special x
        dy_vals = np.array([1.0, -2.5, 0.0, -0.0, math.inf, -math.inf,
                            math.nan, 1e-300, 3e38, 1e-40, 7.0, -0.3])
        dy = rng.choice(dy_vals, x.size)
        sp = np.array(_SPECIAL[:9], dtype)
        with np.errstate(over="ignore"):
            dy = np.concatenate([dy, np.repeat(dy_vals, sp.size)]).astype(dtype)
        return dy, np.concatenate([x, np.tile(sp, dy_vals.size)])
    mus = np.array([0.0, 0.5, -1.0, 3.0, math.nan, math.inf, -math.inf])
    sigmas = np.array([1.0, 0.5, 2.0, 0.0, math.inf, -1.0, math.nan, 1e-30, 7.0])
    mu = rng.choice(mus, x.size).astype(dtype)
    sigma = rng.choice(sigmas, x.size).astype(dtype)
    return x, mu, sigma


def ordered(a):
    """Floats mapped to integers that count ulps (-0 and +0 both to 0)."""
    i = a.view(np.int32 if a.dtype == np.float32 else np.int64).astype(np.int64)
    mag = i & (0x7FFFFFFF if a.dtype == np.float32 else 0x7FFFFFFFFFFFFFFF)
    return np.where(i < 0, -mag, mag)


def assert_matches(got, want, atol_ulp=1):
    """Same dtype and shape; identical NaN, infinities and signed zeros;
    finite values within ``atol_ulp`` ulp."""
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    g, w = got[ok], want[ok]
    special = np.isinf(w) | (w == 0) | np.isinf(g) | (g == 0)
    assert np.array_equal(g[special], w[special])
    assert np.array_equal(np.signbit(g[special]), np.signbit(w[special]))
    diff = np.abs(ordered(g[~special]) - ordered(w[~special]))
    worst = np.argmax(diff) if diff.size else None
    assert diff.size == 0 or diff.max() <= atol_ulp, (
        f"{diff.max()} ulp at {g[~special][worst]!r} vs {w[~special][worst]!r}")


# ---------------------------------------------------- every function, both dtypes

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(NIN))
def test_matches_cpu(name, dtype):
    args = inputs(name, dtype)
    with np.errstate(all="ignore"):
        want = cpu(name)(*args)
    got = getattr(gpu, name)(*args)
    assert not isinstance(got, np.ndarray)
    assert_matches(got.copy_to_host(), want)


@pytest.mark.parametrize("name", catalog.names("exact"))
def test_float64_exact_functions_are_the_cpus_bits(name):
    # the float64 device function runs the ordinary form for a warp whose
    # elements are all in range and the general kernel for any other
    # (targets.cuda.device.float64_kernel): both the CPU's operations, so the CPU's
    # bits; runs of 64 in range, then runs with one element out of range
    rng = np.random.default_rng(12)
    x = rng.standard_normal(64 * 40) * 1.2
    x[64 * 20::64] = 6.5
    x = np.concatenate([x, inputs(name, np.float64)[-1]])
    args = (x,) if NIN[name] == 1 else (np.resize(rng.standard_normal(64) * 3, x.size), x)
    with np.errstate(all="ignore"):
        want = getattr(gelu_numba, name)(*args)
    got = getattr(gpu, name)(*args).copy_to_host()
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize("name", catalog.names("exact"))
def test_float32_is_the_kernel_the_device_runs(name):
    # float32 on a GPU without full-rate FP64 runs the lean kernel
    # (gelu_numba.kernels.lean32) where there is one, else
    # gpu32 (float32 arithmetic): the same bits as that kernel
    # compiled for the CPU, which the exhaustive sweeps judged
    # (analysis.sweep_float32 --kernels lean32 / gpu32); on a device with
    # half-rate FP64 the CPU's float32 kernel instead, within an ulp of the
    # CPU ufunc (NVVM may contract its plain products and sums;
    # test_full_rate_fp64_devices_run_the_float64_arithmetic_float32_kernel)
    from analysis.sweep_float32 import gpu32_function, lean32_function, plain32_function
    args = inputs(name, np.float32)
    full_fp64 = target.full_rate_fp64()
    assert getattr(gpu, name).variant("f") == (
        "fp64" if full_fp64 else "lean32" if catalog.lookup(name).lean32 else "gpu32")
    with np.errstate(all="ignore"):
        want = (plain32_function(name) if full_fp64 else lean32_function(name)
                if catalog.lookup(name).lean32 else gpu32_function(name))(*args)
    got = getattr(gpu, name)(*args).copy_to_host()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    if full_fp64:
        inf = ok & np.isinf(want)
        assert np.array_equal(got[inf], want[inf])
        ok &= ~inf
        ulp = np.spacing(np.abs(want[ok]).astype(np.float32))
        assert np.all(np.abs(got[ok].astype(np.float64) - want[ok]) <= ulp)
    else:
        assert np.array_equal(got.view(np.uint32)[ok], want.view(np.uint32)[ok])


def test_every_function_is_there():
    assert set(NIN) <= set(gpu.__all__)
    assert set(NIN) == set(gd.__all__)
    assert "soi_map" in gpu.__all__
    for name in NIN:
        f = getattr(gpu, name)
        assert f.__name__ == name and name in f.__doc__ and "device" in f.__doc__
        assert getattr(gd, name).__doc__.startswith(name + "(")


# ----------------------------------------------------------- array interface

def dev(a):
    return cuda.to_device(np.asarray(a, order="C"))


@pytest.mark.parametrize("dt, out_dt", [
    (np.float32, np.float32), (np.float64, np.float64), (np.int64, np.float64),
    (np.int32, np.float64), (np.int16, np.float32), (np.uint8, np.float32),
    (np.bool_, np.float32), (np.float16, np.float32),
])
def test_dtype_follows_numpy_casting(dt, out_dt):
    x = np.arange(-3, 4).astype(dt)
    for arg in (x, dev(x)):
        got = gpu.gelu_grad(arg).copy_to_host()
        assert got.dtype == out_dt
        assert np.array_equal(got, gelu_numba.gelu_grad(x.astype(out_dt)))


def test_mixed_dtypes_and_weak_python_scalars():
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    got = gpu.gelu_backward(dev(x), dev(x.astype(np.float64))).copy_to_host()
    assert got.dtype == np.float64
    assert np.array_equal(got, gelu_numba.gelu_backward(x.astype(np.float64),
                                                        x.astype(np.float64)))
    # a Python float does not promote float32 (NumPy's rule)
    got = gpu.gelu_backward(2.0, dev(x)).copy_to_host()
    assert got.dtype == np.float32
    assert np.array_equal(got, gelu_numba.gelu_backward(np.float32(2.0), x))
    got = gpu.gelu_general(dev(x), 0.5, 2.0).copy_to_host()
    assert np.array_equal(got, gelu_numba.gelu_general(x, np.float32(0.5),
                                                       np.float32(2.0)))


def test_broadcasting():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4, 3))
    dy = rng.standard_normal(3)
    got = gpu.gelu_backward(dev(dy), dev(x)).copy_to_host()
    assert got.shape == (5, 4, 3)
    assert np.array_equal(got, gelu_numba.gelu_backward(dy, x))
    mu = rng.standard_normal((4, 1))
    got = gpu.gelu_general(dev(x), dev(mu), 0.75).copy_to_host()
    assert np.array_equal(got, gelu_numba.gelu_general(x, mu, 0.75))
    with pytest.raises(ValueError, match="broadcast"):
        gpu.gelu_backward(dev(np.ones(4)), dev(x))


@pytest.mark.parametrize("view", ["strided", "transposed", "fortran",
                                  "reversed", "column"])
def test_strided_views(view):
    base = np.random.default_rng(2).standard_normal((6, 10)).astype(np.float32)
    d = dev(base)
    host, devv = {
        "strided": (base[::2, 1::3], d[::2, 1::3]),
        "transposed": (base.T, d.T),
        "fortran": (np.asfortranarray(base), cuda.to_device(np.asfortranarray(base))),
        "reversed": (base[:, ::-1], d[:, ::-1]),
        "column": (base[:, 3], d[:, 3]),
    }[view]
    got = gpu.gelu(devv).copy_to_host()
    assert np.array_equal(got, gelu_numba.gelu(host))
    # out= may be strided too
    out = cuda.device_array((6, 20), np.float32)
    res = gpu.gelu(dev(base), out=out[:, ::2])
    assert np.array_equal(out.copy_to_host()[:, ::2], gelu_numba.gelu(base))
    assert res is not None


def test_zero_d_and_empty():
    got = gpu.ndtr(dev(np.array(0.25)))
    assert got.shape == () and got.copy_to_host()[()] == gelu_numba.ndtr(0.25)
    got = gpu.ndtr(1.5)
    assert got.copy_to_host()[()] == gelu_numba.ndtr(1.5)
    empty = gpu.gelu(dev(np.empty((0, 3), np.float32)))
    assert empty.shape == (0, 3) and empty.dtype == np.float32


def test_out_and_in_place():
    x = np.linspace(-6, 6, 25)
    d = dev(x)
    out = cuda.device_array(25, np.float64)
    assert gpu.gelu(d, out=out) is out
    assert np.array_equal(out.copy_to_host(), gelu_numba.gelu(x))
    assert np.array_equal(d.copy_to_host(), x)  # the input is not touched
    gpu.gelu(d, out=d)  # in place
    assert np.array_equal(d.copy_to_host(), gelu_numba.gelu(x))
    # a float32 out takes the float64 result, rounded (same_kind casting)
    out32 = cuda.device_array(25, np.float32)
    gpu.gelu(dev(x), out=out32)
    assert np.array_equal(out32.copy_to_host(), gelu_numba.gelu(x).astype(np.float32))


def test_bad_arguments_name_what_is_accepted():
    x = dev(np.ones(4))
    with pytest.raises(TypeError, match="float32 or float64"):
        gpu.gelu(np.array([1 + 2j]))
    with pytest.raises(TypeError, match="float32 or float64"):
        gpu.gelu(np.array(["a"]))
    with pytest.raises(TypeError, match="float32 or float64"):
        gpu.gelu(dev(np.array([1 + 2j])))
    with pytest.raises(TypeError, match="device array"):
        gpu.gelu(x, out=np.empty(4))
    with pytest.raises(ValueError, match="shape"):
        gpu.gelu(x, out=cuda.device_array(5))
    with pytest.raises(TypeError, match="out= must have dtype"):
        gpu.gelu(x, out=cuda.device_array(4, np.int64))
    with pytest.raises(TypeError, match="takes 2 inputs"):
        gpu.gelu_backward(x)
    with pytest.raises(TypeError, match="device array"):
        gpu.gelu(object())


@pytest.mark.skipif(SIMULATOR, reason="the simulator cannot import foreign "
                    "__cuda_array_interface__ objects")
def test_cuda_array_interface_objects_are_used_in_place():
    class Foreign:  # what CuPy arrays and PyTorch CUDA tensors look like
        def __init__(self, arr):
            self.arr = arr
            self.__cuda_array_interface__ = arr.__cuda_array_interface__

    x = np.linspace(-4, 4, 17)
    src = Foreign(dev(x))
    dst = Foreign(cuda.device_array(17))
    assert gpu.gelu_grad(src, out=dst) is dst
    assert np.array_equal(dst.arr.copy_to_host(), gelu_numba.gelu_grad(x))


@pytest.mark.skipif(SIMULATOR, reason="the fast launch needs the CUDA driver; its "
                    "rules, glue and ABI are tested without one in tests/test_fast_launch.py")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_launch_is_taken_and_gives_the_general_paths_bits(dtype):
    x = np.linspace(-30, 30, 4099).astype(dtype)
    inputs = {"gelu": (x,), "gelu_backward": (np.cos(x).astype(dtype), x),
              "gelu_general": (x, np.full_like(x, 0.5), np.full_like(x, 2.0))}
    key = target.fast_key("f" if dtype == np.float32 else "d")
    for name, args in inputs.items():
        f = getattr(gpu, name)
        d = [dev(a) for a in args]
        general = cuda.device_array_like(d[0])
        f._call(d, general, 0)
        expected = general.copy_to_host()
        assert same_bits(f(*d).copy_to_host(), expected)
        assert f._fast[key] is not None, "the contiguous call did not take the fast launch"
        stream, out = cuda.stream(), cuda.device_array_like(d[0])
        assert f(*d, out=out, stream=stream) is out
        stream.synchronize()
        assert same_bits(out.copy_to_host(), expected)
        two_d = [a.reshape(4099, 1) for a in d]
        assert same_bits(f(*two_d).copy_to_host().ravel(), expected)
        # the same launch through cuLaunchKernel (a timed alternative)
        fast = f._fast[key]
        for launcher in (fast.wide, fast.narrow) if hasattr(fast, "wide") else (fast,):
            out = cuda.device_array_like(d[0])
            launcher.via_driver(tuple(a.device_ctypes_pointer.value for a in (*d, out)), 4099)
            cuda.synchronize()
            assert same_bits(out.copy_to_host(), expected)


def test_host_operands_and_numba_arrays_name_no_library():
    torch = pytest.importorskip("torch")
    x = np.linspace(-3, 3, 7)
    assert caller.library((x, 1.0)) is None
    assert caller.library((dev(x),)) is None
    # a PyTorch CPU tensor is a host operand (copied), not the caller's array
    assert caller.library((torch.tensor(x),)) is None
    y = gpu.gelu(torch.tensor(x))
    assert not isinstance(y, torch.Tensor)
    np.testing.assert_array_max_ulp(y.copy_to_host(), gelu_numba.gelu(x), 1)


def _sleeping_copy(torch, src):
    """On PyTorch's current stream: a long sleep, then a copy of ``src``
    (zeros until then): a launch on any other stream reads the zeros."""
    t = torch.zeros_like(src)
    torch.cuda._sleep(100_000_000)    # (~50 ms at 2 GHz)
    t.copy_(src)
    return t


@pytest.mark.skipif(SIMULATOR, reason="PyTorch CUDA tensors need a device")
@pytest.mark.parametrize("layout", ["contiguous (fast launch)", "strided (general path)"])
def test_a_pytorch_tensor_gives_a_tensor_on_its_current_stream(layout):
    torch = pytest.importorskip("torch")
    x = np.linspace(-6, 6, 1 << 16).astype(np.float32)
    src = torch.as_tensor(x, device="cuda")
    step = 1 if layout.startswith("contiguous") else 2
    side = torch.cuda.Stream()     # (PyTorch's streams do not wait for the default one)
    with torch.cuda.stream(side):
        t = _sleeping_copy(torch, src)
        y = gpu.gelu(t[::step])
        dy = gpu.gelu_backward(t[::step], t[::step])
    side.synchronize()
    for got, want in ((y, gelu_numba.gelu(x[::step])),
                      (dy, gelu_numba.gelu_backward(x[::step], x[::step]))):
        assert type(got) is torch.Tensor and got.device == src.device
        assert got.dtype == torch.float32 and got.is_contiguous()
        np.testing.assert_array_max_ulp(got.cpu().numpy(), want, 1)
    # the array type does not depend on the stream
    z = gpu.gelu(src, stream=0)
    cuda.synchronize()
    assert type(z) is torch.Tensor
    np.testing.assert_array_max_ulp(z.cpu().numpy(), gelu_numba.gelu(x), 1)


@pytest.mark.skipif(SIMULATOR, reason="CuPy arrays need a device")
def test_a_cupy_array_gives_a_cupy_array_on_its_current_stream():
    cupy = pytest.importorskip("cupy")
    x = np.linspace(-6, 6, 4099)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        c = cupy.asarray(x)
        y = gpu.gelu(c)
        y2 = gpu.gelu(c[::3])
    stream.synchronize()
    assert type(y) is cupy.ndarray and type(y2) is cupy.ndarray
    np.testing.assert_array_max_ulp(cupy.asnumpy(y), gelu_numba.gelu(x), 1)
    np.testing.assert_array_max_ulp(cupy.asnumpy(y2), gelu_numba.gelu(x[::3]), 1)


def test_launch_configuration():
    blocks, threads = target.launch_config(10**8)
    if SIMULATOR:
        assert (blocks, threads) == (4, 1)
    else:
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
        assert threads == target.THREADS_PER_BLOCK
        assert blocks == sms * target.BLOCKS_PER_SM
    assert target.launch_config(1)[0] == 1


# ------------------------------------------------------------ device functions

def test_device_functions_in_a_users_kernel():
    """The example of gelu_numba.gpu.device's docstring."""
    @cuda.jit
    def bias_gelu(x, b, out):
        i, j = cuda.grid(2)
        if i < x.shape[0] and j < x.shape[1]:
            out[i, j] = gd.gelu(x[i, j] + b[j])

    rng = np.random.default_rng(3)
    rows, cols = (8, 6) if SIMULATOR else (1024, 768)
    threads = (1, 1) if SIMULATOR else (16, 16)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    out = cuda.device_array_like(x)
    grid = (-(-rows // threads[0]), -(-cols // threads[1]))
    bias_gelu[grid, threads](cuda.to_device(x), cuda.to_device(b), out)
    assert_matches(out.copy_to_host(), gelu_numba.gelu(x + b))


def test_device_functions_take_both_precisions():
    @cuda.jit
    def apply(x32, x64, o32, o64):
        i = cuda.grid(1)
        if i < x32.size:
            o32[i] = gd.gelu_backward(x32[i], x32[i])
            o64[i] = gd.gelu_backward(x64[i], x64[i])

    x = np.linspace(-9, 3, 16)
    o32 = cuda.device_array(16, np.float32)
    o64 = cuda.device_array(16, np.float64)
    apply[16, 1](dev(x.astype(np.float32)), dev(x), o32, o64)
    x32 = x.astype(np.float32)
    assert_matches(o32.copy_to_host(), gelu_numba.gelu_backward(x32, x32))
    assert_matches(o64.copy_to_host(), gelu_numba.gelu_backward(x, x))


# --------------------------------------------------------------------- soi_map

def test_soi_map_reproducible_and_exact_values():
    x = np.concatenate([np.linspace(-3, 3, 60), [math.nan, math.inf, -math.inf,
                                                 0.0, -0.0]])
    for dt in (np.float32, np.float64):
        xd = x.astype(dt)
        a = gpu.soi_map(dev(xd), seed=12345).copy_to_host()
        b = gpu.soi_map(xd, seed=12345).copy_to_host()
        c = gpu.soi_map(dev(xd), seed=54321).copy_to_host()
        assert a.dtype == dt
        assert np.array_equal(a, b, equal_nan=True)
        assert not np.array_equal(a, c, equal_nan=True)
        fin = np.isfinite(xd)
        # every value is x or a zero of x's sign
        kept = a[fin] == xd[fin]
        assert np.all(kept | ((a[fin] == 0) & (np.signbit(a[fin]) == np.signbit(xd[fin]))))
        assert np.isnan(a[-5]) and a[-4] == math.inf
        assert a[-3] == 0 and np.signbit(a[-3])


def test_soi_map_depends_on_values_not_layout():
    base = np.random.default_rng(4).standard_normal((6, 8))
    view = cuda.to_device(base)[:, ::2]
    a = gpu.soi_map(view, seed=9).copy_to_host()
    b = gpu.soi_map(np.ascontiguousarray(base[:, ::2]), seed=9).copy_to_host()
    assert np.array_equal(a, b)
    out = cuda.device_array((6, 4))
    assert gpu.soi_map(view, seed=9, out=out) is out
    assert np.array_equal(out.copy_to_host(), a)


def test_soi_map_mean_is_gelu():
    """sum(m - Phi(x)) over n independent elements is within 5 standard
    deviations (sqrt(sum Phi (1 - Phi))) of 0, for mixed x, in both dtypes."""
    n = 1536 if SIMULATOR else 2**22
    x = np.random.default_rng(5).uniform(-3, 3, n)
    for dt in (np.float32, np.float64):
        xd = x.astype(dt)
        m = gpu.soi_map(dev(xd), seed=2026).copy_to_host() != 0
        p = gelu_numba.ndtr(xd.astype(np.float64))
        z = (m.sum() - p.sum()) / math.sqrt(np.sum(p * (1 - p)))
        assert abs(z) < 5, z
        # and per sign of x, so that a map with Phi(-x) could not pass
        for side in (xd < 0, xd > 0):
            z = (m[side].sum() - p[side].sum()) / math.sqrt(np.sum(p[side] * (1 - p[side])))
            assert abs(z) < 5, z


def test_soi_map_bad_arguments():
    with pytest.raises(TypeError, match="seed"):
        gpu.soi_map(np.ones(3), seed=1.5)
    with pytest.raises(ValueError, match="seed"):
        gpu.soi_map(np.ones(3), seed=-1)
    with pytest.raises(TypeError, match="float32 or float64"):
        gpu.soi_map(np.array([1j]))
    with pytest.raises(TypeError, match="device array"):
        gpu.soi_map(np.ones(3), out=np.ones(3))


def test_throughput_script_runs(tmp_path, capsys):
    """analysis.gpu.throughput end to end on a tiny size (a dry run under
    the simulator): it prints and writes its report, naming the device."""
    from analysis.gpu import throughput as gpu_throughput
    out = tmp_path / "report.md"
    assert gpu_throughput.main(["--sizes", "64", "--rounds", "1", "--batch", "1",
                                "--functions", "gelu,gelu_backward,soi_map",
                                "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# GPU throughput: ")
    for name in ("`gelu`", "`gelu_backward`", "`soi_map`", "float32", "float64",
                 f"`{gpu_throughput.WIDE}`"):
        assert name in text
    # the 2-byte kernels of gelu and gelu_backward (none of soi_map), the
    # launched one and the variants, beside PyTorch's where it has CUDA
    # (its rows: ``torch_*``)
    halves = {tuple(c.strip() for c in line.split("|")[1:3]) for line in text.splitlines()
              if ("| bfloat16 |" in line or "| float16 |" in line)
              and not line.startswith("| `torch_")}
    assert halves == {(f"`{f}{tag}`", d) for f in ("gelu", "gelu_backward")
                      for tag in ("", *(f" {t}" for t in gpu_throughput.HALF_TAGS))
                      for d in ("bfloat16", "float16")}
    host = text.split("## Host time per call")[1]
    for call in ("`gpu.gelu(x, out=out)`", "before the output pool", "general path",
                 "dispatcher alone"):
        assert call in host
    assert "wrote" in capsys.readouterr().out
    assert gpu_throughput.main(["--sizes", "64", "--rounds", "1", "--batch", "1", "--no-half",
                                "--functions", "gelu", "--peers", "none",
                                "--out", str(out)]) == 0
    assert "bfloat16" not in out.read_text()
    assert gpu_throughput.main(["--functions", "nope"]) == 2
    with pytest.raises(SystemExit):
        gpu_throughput.main(["--sizes", "abc"])


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_half_kernels_are_the_cpu_loops_bits(fmt):
    # the 2-byte GPU kernels (table lookups; the backward's float64 product
    # rounded once) against the CPU loops, which tests/test_half_loops.py
    # proves correctly rounded: every 7th finite input, both operations
    from gelu_numba import gelu_backward
    from gelu_numba.gpu import gelu_backward_bits, gelu_bits
    from gelu_numba.half import gelu_backward_bfloat16, gelu_bfloat16
    table = np.load(Path(__file__).parent / "data" / "half_reference.npz")
    bits = np.ascontiguousarray(table[f"{fmt}_bits"][::7])
    dy = np.ascontiguousarray(bits[::-1])
    out = cuda.device_array(bits.size, dtype=np.uint16)
    gelu_bits(cuda.to_device(bits), out, fmt)
    cpu = (gelu_numba.gelu(bits.view(np.float16)).view(np.uint16) if fmt == "float16"
           else gelu_bfloat16(bits))
    np.testing.assert_array_equal(out.copy_to_host(), cpu)
    # the same bits from every variant: operands off an 8-byte boundary
    # (the one-element loop; a length that is no multiple of 4 leaves the
    # wide kernel a tail too), and the timed ones
    from gelu_numba.targets.cuda import half_kernels as cuda_half
    gelu_cpu = cpu
    with np.errstate(all="ignore"):
        backward_cpu = (gelu_backward(dy.view(np.float16), bits.view(np.float16)).view(np.uint16)
                        if fmt == "float16" else gelu_backward_bfloat16(dy, bits))

    def shifted(a):      # (on the device, 2 bytes past an 8-byte boundary)
        return cuda.to_device(np.concatenate([a[:1], a]))[1:]

    n = bits.size - bits.size % 4 - 3
    for xs, ds, o, m in ((cuda.to_device(bits[:n]), cuda.to_device(dy[:n]), out[:n], n),
                         (shifted(bits), shifted(dy), shifted(bits), bits.size)):
        assert cuda_half.aligned([cuda_half._address(xs)]) == (m == n)
        gelu_bits(xs, o, fmt)
        np.testing.assert_array_equal(o.copy_to_host(), gelu_cpu[:m])
        gelu_backward_bits(ds, xs, o, fmt)
        np.testing.assert_array_equal(o.copy_to_host(), backward_cpu[:m])
    for name, args, want in (("gelu", (bits,), gelu_cpu),
                             ("gelu_backward", (dy, bits), backward_cpu)):
        table = cuda_half.table_on_device(name, fmt)
        arrays = [cuda.to_device(a) for a in args] + [out]
        blocks, threads = target.launch_config(bits.size)
        for kernel in (cuda_half.unrolled_kernel(name, fmt),
                       cuda_half.backward_kernel(fmt) if name == "gelu_backward"
                       else cuda_half.lookup_kernel):
            out.copy_to_device(np.zeros(bits.size, np.uint16))
            kernel[blocks, threads](*arrays[:-1], table, out)
            np.testing.assert_array_equal(out.copy_to_host(), want)
        *ins, wout, full = cuda_half.wide_operands(arrays, bits.size)
        for words, streaming in ((1, False), (4, False), (cuda_half.WORDS, True)):
            out.copy_to_device(np.zeros(bits.size, np.uint16))
            cuda_half.wide_kernel(name, fmt, words, streaming)[blocks, threads](
                *ins, table, wout, full)
            np.testing.assert_array_equal(out.copy_to_host(), want)
    with pytest.raises(ValueError, match="fmt must be"):
        gelu_bits(cuda.to_device(bits), out, "float8")
    # float16 arrays are float16 values: their bits are the input (not the
    # values converted to integers), and read as bfloat16 they would be wrong
    if fmt == "float16":
        gelu_bits(cuda.to_device(bits.view(np.float16)), out, fmt)
        np.testing.assert_array_equal(out.copy_to_host(), gelu_cpu)
    if fmt == "bfloat16":
        with pytest.raises(TypeError, match="holds float16 values"):
            gelu_bits(cuda.to_device(bits.view(np.float16)), out, fmt)


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_the_shared_table_forward_gives_the_cpus_bits_on_every_pattern(fmt):
    # half_kernels.shared_kernel (timed, not launched): every 2-byte
    # pattern, and one more so that the tail (n % 4 == 1) runs, against the
    # CPU loops' table (tests/test_half_loops.py proves it correctly rounded)
    from gelu_numba.targets.cpu import half_loops
    from gelu_numba.targets.cuda import half_kernels as cuda_half
    bits = np.r_[np.arange(65536), 0x3C00].astype(np.uint16)
    out = cuda.device_array(bits.size, np.uint16)
    cuda_half.launch_shared("gelu", fmt, cuda.to_device(bits), out)
    np.testing.assert_array_equal(out.copy_to_host(), half_loops.table("gelu", fmt)[bits])


def test_full_rate_fp64_devices_run_the_float64_arithmetic_float32_kernel(monkeypatch):
    # the per-device choice: on GPUs with half-rate FP64 (cc 6.0, 7.0, 8.0,
    # 9.0, 10.0) the float32 loop of the normal family runs the float32
    # kernel in float64 arithmetic (k32, 0.5 + 2**-7 ulp: the CPU's fast
    # path design without its rounding test); elsewhere a float32-arithmetic
    # one (the lean kernel, 0.875 ulp;
    # test_slow_fp64_devices_run_the_lean_kernel).  The simulator has no
    # compute capability: the choice is forced here both ways
    from analysis.sweep_float32 import lean32_function, plain32_function
    dense = np.linspace(-9, 5, 1 << 16).astype(np.float32)
    differ = dense[~same_bits_each(lean32_function("gelu")(dense), plain32_function("gelu")(dense))]
    assert differ.size > 0                             # (the kernels can be told apart)
    x = np.concatenate([np.linspace(-9, 5, 257).astype(np.float32), differ[:16]])
    assert target.FULL_RATE_FP64 >= {(8, 0), (9, 0)} and (8, 6) not in target.FULL_RATE_FP64
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: True)
    fp64 = gpu.gelu(x).copy_to_host()
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: False)
    fp32 = gpu.gelu(x).copy_to_host()
    assert same_bits(fp64, plain32_function("gelu")(x))  # k32 on the CPU, bit for bit
    assert same_bits(fp32, lean32_function("gelu")(x))  # the other algorithm
    # every function of the family, contiguous (the flat kernel, its tables
    # an argument) and strided (the N-D kernel, its tables in the code)
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: True)
    grid = np.linspace(-14, 9, 2 * 311).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40], np.float32)
    for name in catalog.names("exact"):
        f = getattr(gpu, name)
        flat = target.flat_layout(f.nin)
        assert list(f.fixed_arguments("f", flat)) == [f.nin]
        assert f.fixed_arguments("f", flat)[f.nin].dtype == np.float64
        assert f.fixed_arguments("f", flat, fp64=False, lean32=False) == {}
        for xs, step in ((grid, 1), (grid, 2), (specials, 1)):
            args = (xs[::-1].copy() if f.nin == 2 else None, xs)[-f.nin:]
            with np.errstate(all="ignore"):
                want = plain32_function(name)(*(a[::step] for a in args))
            got = f(*(cuda.to_device(a)[::step] for a in args)).copy_to_host()
            assert same_bits(got, want), (name, xs.size, step)
    # functions without a float32-arithmetic kernel have one variant
    assert target.gpu_function("gelu_tanh").fp64_device is None


def same_bits_each(a, b):
    """Elementwise: the same float32 bits."""
    return np.asarray(a, np.float32).view(np.uint32) == np.asarray(b, np.float32).view(np.uint32)


def test_slow_fp64_devices_run_the_lean_kernel(monkeypatch):
    # elsewhere gelu, ndtr, gelu_grad and gelu_backward run the lean kernel,
    # its table a float32 device array after the inputs, on every layout
    # (contiguous: the flat loop; strided and broadcast: the N-D loop):
    # the bits of its CPU compilation, which the exhaustive sweep judged
    # (analysis/results/sweep_float32_lean32.json); the device functions
    # keep gpu32 (a user's kernel has no table to pass)
    from analysis.sweep_float32 import gpu32_function, lean32_function
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: False)
    rng = np.random.default_rng(7)
    base = np.concatenate([rng.standard_normal(300) * 3, np.linspace(-20, 20, 97),
                           [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3e38, -3e38]])
    dense = np.linspace(-14, 6, 1 << 16).astype(np.float32)
    lean = [f.name for f in catalog.FUNCTIONS if f.lean32 is not None]
    assert set(lean) < set(NIN)
    for name in lean:
        f = getattr(gpu, name)
        flat = target.flat_layout(f.nin)
        assert f.variant("f") == "lean32" and f.variant("d") is None
        table = f.fixed_arguments("f", flat)[f.nin]
        assert table.dtype == np.float32 and np.array_equal(
            table.copy_to_host(), catalog.lookup(name).lean32[1])
        # with inputs where the lean kernel and gpu32 differ (the
        # kernels can be told apart)
        dense_args = (np.float32(1.75) * np.cos(dense), dense)[-f.nin:]
        with np.errstate(all="ignore"):
            differ = dense[~same_bits_each(lean32_function(name)(*dense_args),
                                           gpu32_function(name)(*dense_args))]
        assert differ.size > 0
        x = np.concatenate([base, differ[:16]]).astype(np.float32)
        with np.errstate(all="ignore"):
            dy = (1.75 * np.cos(x) * 10.0 ** rng.integers(-30, 30, x.size)).astype(np.float32)
        args = (dy, x)[-f.nin:]
        with np.errstate(all="ignore"):
            want = lean32_function(name)(*args)
            old = gpu32_function(name)(*args)
        assert not same_bits(want, old)
        calls = [f(*args), f(*(cuda.to_device(np.repeat(a, 2))[::2] for a in args))]
        if f.nin == 2:                                  # broadcast: one dy row
            calls.append(f(dy[:1], x))
            with np.errstate(all="ignore"):
                want_b = lean32_function(name)(np.broadcast_to(dy[:1], x.shape), x)
        for k, got in enumerate(calls):
            got, w = got.copy_to_host(), want_b if k == 2 else want
            nan = np.isnan(w)                           # (a device's NaN payload is its own)
            assert np.array_equal(np.isnan(got), nan), (name, k)
            assert same_bits(got[~nan], w[~nan]), (name, k)


def _example(doc):
    """The literal block of a docstring's Examples section."""
    return textwrap.dedent(doc.split("\n    Examples\n    --------\n")[1].split("::\n", 1)[1])


def test_every_gpu_function_documents_its_parameters_return_and_an_example():
    # numpydoc sections on every kernel of gelu_numba.gpu and every device
    # function of gelu_numba.gpu.device, their example naming the function
    # and passing each of its parameters
    records = catalog.published(catalog.GPU)
    assert len(records) > 30
    for fn in records:
        for f, call in ((getattr(gpu, fn.name), f"gpu.{fn.name}("),
                        (getattr(gd, fn.name), f"gd.{fn.name}(")):
            doc = f.__doc__
            for head in ("Parameters", "Returns", "Examples"):
                assert f"\n    {head}\n    {'-' * len(head)}\n" in doc, (fn.name, head)
            assert f"    {', '.join(fn.params)} : " in doc
            example = _example(doc)
            assert call in example
            assert all(catalog.EXAMPLE_ARGUMENTS[p] in example for p in fn.params)


@pytest.mark.parametrize("name", ["gelu", "gelu_backward", "gelu_general", "gelu_tanh_grad"])
def test_the_gpu_examples_run_and_give_the_cpu_values(name):
    # one function of each parameter list and group: the examples of its
    # kernel and of its device function, run as written (here on the
    # simulator), against the CPU ufunc on the same inputs
    fn = catalog.lookup(name)
    host = {"x": np.linspace(-3, 3, 7, dtype=np.float32), "dy": np.ones(7, np.float32),
            "mu": 0.25, "sigma": 0.5}
    ufunc = getattr(gelu_numba, name, None) or getattr(approx, name)
    with np.errstate(all="ignore"):
        want = ufunc(*(np.float32(host[p]) if np.isscalar(host[p]) else host[p]
                       for p in fn.params))
    for f in (getattr(gpu, name), getattr(gd, name)):
        scope = {}
        exec(_example(f.__doc__), scope)                   # noqa: S102 (our own docstring)
        got = scope["result"]
        assert got.shape == (7,) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
