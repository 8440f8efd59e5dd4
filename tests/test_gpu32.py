"""The GPU's float32 kernels (gelu_numba.kernels.gpu32: float32
arithmetic, the device functions'), and the lean ones that GPUs with slow
FP64 launch (gelu_numba.kernels.lean32: one table row each, no division), compiled for the CPU, where they compute the GPU's bits (the
same IEEE operations in the same order; tests/test_ptx.py checks that CUDA
fuses nothing, tests/test_gpu.py that the GPU layer runs them).

Against mpmath on points chosen where the kernels are hardest (the tails,
subnormal results, next to GELU''s zero and to sqrt 2, tiny and huge x,
the domain edge 20), against the float64 reference on a strided sweep of all
float32 bit patterns, and bit for bit against the CPU ufuncs on special
values.  The exhaustive runs are analysis/results/sweep_float32_gpu32.json
and sweep_float32_lean32.json (``python -m analysis.sweep_float32 --kernels
gpu32 --workers 2``, ``--kernels lean32 --functions gelu,ndtr,gelu_grad,
gelu_backward``).
"""

import mpmath as mp
import numpy as np
import pytest

import gelu_numba
from analysis.sweep_float32 import function_for, gpu32_function, sweep
from gelu_numba.kernels import lean32, gpu32
from reference.mp import ulp_error
from gelu_numba import catalog

pytestmark = pytest.mark.gpu

ONE_INPUT = list(tuple(f.name for f in catalog.group("exact") if f.nin == 1))
SIX = list(catalog.names("exact"))
LEAN32 = [f.name for f in catalog.FUNCTIONS if f.lean32 is not None]
#: the stated bound the records give their float32-arithmetic GPU kernels
BOUND = catalog.GPU32_BOUND
assert lean32.BOUND == gpu32.BOUND == BOUND
assert all(f.gpu_bound == BOUND for f in catalog.FUNCTIONS if f.gpu32 or f.lean32)
#: (kernel set, function): the GPU's six, and the lean set's
ONE_INPUT_KERNELS = ([("gpu32", n) for n in ONE_INPUT]
                     + [("lean32", n) for n in LEAN32 if n != "gelu_backward"])
ALL_KERNELS = [("gpu32", n) for n in SIX] + [("lean32", n) for n in LEAN32]
BACKWARD = ["gpu32", "lean32"]


def _exact(name, x, dy=1.0):
    x = mp.mpf(float(x))
    pdf = mp.npdf(x)
    return {"gelu": lambda: x * mp.ncdf(x),
            "gelu_grad": lambda: mp.ncdf(x) + x * pdf,
            "gelu_grad2": lambda: pdf * (2 - x * x),
            "ndtr": lambda: mp.ncdf(x),
            "norm_pdf": lambda: pdf,
            "gelu_backward": lambda: mp.mpf(float(dy)) * (mp.ncdf(x) + x * pdf)}[name]()


def _hard_points():
    rng = np.random.default_rng(32)
    z0 = np.float32(0.75179152469356)
    s2 = np.float32(np.sqrt(2.0))
    near = [np.nextafter(v, np.float32(np.inf) * np.sign(d), dtype=np.float32)
            for v in (z0, s2) for d in (1, -1)]
    pts = np.concatenate([
        np.float32([0.0, 1e-45, 2**-126, 1e-30, 1e-8, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0,
                    10.0, 13.0, 14.0, 14.3, 19.99, 3e38]),
        np.float32([z0, s2]), np.float32(near),
        rng.uniform(-20, 20, 150).astype(np.float32),
        # the lowest binades of the results: GELU turns subnormal near x = -13.2
        rng.uniform(-14.4, -12.5, 80).astype(np.float32),
        (2.0 ** rng.uniform(-40, 4, 40)).astype(np.float32),
    ])
    return np.concatenate([pts, -pts])


@pytest.mark.parametrize("kernels, name", ONE_INPUT_KERNELS)
def test_within_bound_of_mpmath(kernels, name):
    x = _hard_points()
    y = function_for(name, False, kernels)(x)
    with mp.workdps(40):
        errs = [ulp_error(float(v), _exact(name, xi), np.float32) for xi, v in zip(x, y)]
    worst = int(np.argmax(errs))
    assert max(errs) <= BOUND, f"{errs[worst]:.4f} ulp at x = {x[worst]!r}"


@pytest.mark.parametrize("kernels", BACKWARD)
def test_backward_within_bound_of_mpmath(kernels):
    x = _hard_points()
    rng = np.random.default_rng(33)
    # dy over the whole range: the kernel scales tiny and huge dy apart
    dy = (rng.choice([-1, 1], x.size) * 2.0 ** rng.uniform(-140, 127, x.size)).astype(np.float32)
    y = function_for("gelu_backward", False, kernels)(dy, x)
    with mp.workdps(40):
        exact = [_exact("gelu_backward", xi, di) for xi, di in zip(x, dy)]
        errs = [ulp_error(float(v), e, np.float32) for v, e in zip(y, exact)
                if abs(e) < mp.mpf(float(np.finfo(np.float32).max))]
    assert max(errs) <= BOUND


@pytest.mark.parametrize("kernels, name", ALL_KERNELS)
def test_strided_sweep_below_one_ulp(kernels, name):
    # every 65,537th float32 bit pattern (65,536 inputs, every binade, both
    # signs) against the float64 reference; NaN/inf/signed-zero mismatches too
    r = sweep(name, stride=65537, progress=False, kernels=kernels)
    assert r["max_ulp"] <= BOUND, r
    assert r["over_1ulp"] == 0 and r["special_mismatches"] == 0, r
    assert r["nan_inputs_bad_output"] == 0, r


SPECIAL = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38,
                      20.0, -20.0, 20.5, -20.5, 14.5, -14.5, 1.0, -1.0])


@pytest.mark.parametrize("kernels, name", ONE_INPUT_KERNELS)
def test_special_values_as_the_cpu_ufuncs(kernels, name):
    with np.errstate(all="ignore"):
        got = function_for(name, False, kernels)(SPECIAL)
        want = getattr(gelu_numba, name)(SPECIAL)
    assert np.array_equal(got.view(np.uint32)[~np.isnan(want)],
                          want.view(np.uint32)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("kernels", BACKWARD)
def test_backward_special_values_as_the_cpu_ufunc(kernels):
    dy, x = (a.ravel() for a in np.meshgrid(
        np.float32([0.0, -0.0, 1.0, -2.0, np.inf, -np.inf, np.nan, 3e38]),
        np.float32([0.0, -0.0, 1.0, -1.0, -0.5, np.inf, -np.inf, np.nan, 25.0, -25.0])))
    with np.errstate(all="ignore"):
        got = function_for("gelu_backward", False, kernels)(dy, x)
        want = gelu_numba.gelu_backward(dy, x)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.array_equal(got.view(np.uint32)[ok], want.view(np.uint32)[ok])


def test_inputs_are_not_changed_and_float64_is_refused():
    x = np.float32([-1.0, 0.5, 2.0])
    before = x.copy()
    gpu32_function("gelu")(x)
    assert np.array_equal(x, before)
    with pytest.raises(TypeError, match="float32"):
        gpu32_function("gelu")(np.array([1.0]))


def test_lean_tables_rows_cover_their_pieces():
    # at each piece's ends (and one float32 either side) the row the kernel
    # picks must hold D(a - c) = log f(a) - log f(c) to the table's certified
    # error: the row choice from a**2 rounded stays within the widened fit
    from gelu_numba.tables import normal_cdf32_lean32 as tab
    ends = [np.float32(k / 4) for k in range(1, 5)] + [np.float32(np.sqrt(n))
                                                       for n in (2, 3, 50, 123, 399, 400)]
    pts = sorted({np.nextafter(e, d, dtype=np.float32) for e in ends
                  for d in (np.float32(0), np.float32(30))} | set(ends))
    with mp.workdps(40):
        for a in pts:
            a = np.float32(a)
            h = np.float32(a * a)
            row = int(np.float32(4) * a) if a < 1 else int(np.float32(h + np.float32(3)))
            r = tab.Q_TABLE[row * tab.WIDTH:(row + 1) * tab.WIDTH]
            c, d1 = r[0], mp.mpf(r[5]) + mp.mpf(r[6])
            dd = mp.mpf(float(a)) - mp.mpf(c)
            D = sum(mp.mpf(v) * dd ** (i + 2) for i, v in enumerate(r[7:])) + d1 * dd
            exact = mp.log(mp.ncdf(-mp.mpf(float(a)))) - mp.log(mp.ncdf(-mp.mpf(c)))
            assert abs(D - exact) <= 2 * tab.Q_D_ERROR, (a, row)
