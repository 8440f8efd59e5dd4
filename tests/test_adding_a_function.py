"""Adding a function is one record: the recipe of docs/guide/layout.md, run.

A toy record, ``toy_cubic(x) = x (1 + x**2)`` (odd, a closed form, an
mpmath reference), is registered with :func:`gelu_numba.catalog.registered`
and from that record alone the test finds: the NumPy ufunc in both dtypes,
within its stated bound of the mpmath reference; the multithreaded ufunc;
the ``@njit`` overload; the JAX function (the XLA FFI handler running the
ufunc's loop); the CUDA kernel and device function (under the
simulator); the accuracy measurement of ``analysis.accuracy``, whose figure
the docstring then states; and the API page that documents it.

A toy approximation of GELU, ``x/2 + x**2/4`` with its derivative's record
and its formula, registered the same way, reaches the frontends'
``approximate`` argument: PyTorch's ``gelu`` and ``GELU`` (forward, backward,
second derivative) and JAX's ``gelu`` (forward, ``grad``, ``grad`` of
``grad``).
"""

import dataclasses

import mpmath as mp
import numpy as np
import pytest
from numba import cuda, njit

import gelu_numba as g
import gelu_numba.gpu as gpu
import gelu_numba.parallel as gp
from gelu_numba import catalog
from gelu_numba.gpu import device as gd

pytestmark = pytest.mark.unit

# --- the recipe: a kernel per precision (mathematics only) ...


def toy_cubic_64(x):
    return x * (1.0 + x * x)


def toy_cubic_32(x):
    w = np.float64(x)
    return np.float32(w * (1.0 + w * w))


def toy_cubic_reference(x):
    x = mp.mpf(x)
    return x * (1 + x * x)


# ... and one record: name, kernels, inputs, the docstring's body, how it is
# evaluated, the stated bound (float32, float64 ulps), the public modules


def toy_record(measured=None):
    return catalog.record(
        "toy_cubic", toy_cubic_64, toy_cubic_32, 1, """
    ``x (1 + x**2)``, an odd cubic (the toy record of the catalog's recipe).""",
        "float64 in three roundings, float32 in float64 with one final rounding.",
        (1.0, 1.5), (catalog.TOP, catalog.PARALLEL, catalog.GPU),
        group="family", reference=toy_cubic_reference, measured=measured)

# --- end of the recipe


def _ulps(y, x, dtype):
    from reference.mp import ulp_error
    with mp.workdps(60):
        return [ulp_error(float(v), toy_cubic_reference(float(u)), dtype) for u, v in zip(x, y)]


X = np.concatenate([np.linspace(-40, 40, 257), [0.0, -0.0, 1e-300, -3e-8, 2.5e100]])


@pytest.fixture(scope="module")
def measured():
    """The accuracy measurement of analysis.accuracy on the registered record."""
    from analysis import accuracy
    with catalog.registered(toy_record()):
        rows = accuracy.approx_rows(["toy_cubic"], ["float32", "float64"], samples=400,
                                    peers=False)
    worst = {r["dtype"]: r["regions"]["all"]["max_ulp"] for r in rows}
    return worst["float32"], worst["float64"]


def test_the_measurement_is_within_the_stated_bound(measured):
    assert 0 < measured[0] <= 1.0 and 0 < measured[1] <= 1.5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_ufunc_in_both_dtypes_is_within_its_bound_of_mpmath(dtype):
    with catalog.registered(toy_record()) as (rec,):
        f = g.toy_cubic
        assert isinstance(f.ufunc, np.ufunc) and f.__name__ == "toy_cubic"
        assert f.types == ["f->f", "d->d"]
        x = X.astype(dtype)
        with np.errstate(over="ignore"):
            y = f(x)
        assert y.dtype == dtype
        finite = np.isfinite(y)
        assert max(_ulps(y[finite], x[finite], dtype)) <= rec.bound[dtype == np.float64]
        assert np.array_equal(np.signbit(f(dtype(-0.0))), True)
    assert "toy_cubic" not in dir(g)
    with pytest.raises(AttributeError):
        g.toy_cubic


def test_the_parallel_ufunc_and_the_njit_overload_give_the_ufuncs_bits():
    with catalog.registered(toy_record()):
        x = np.linspace(-3, 3, 10_001)
        want = g.toy_cubic(x)
        assert np.array_equal(gp.toy_cubic(x), want)
        f = g.toy_cubic

        @njit
        def caller(v):
            return f(v), f(v[7])

        arr, scalar = caller(x)
        assert np.array_equal(arr, want) and scalar == want[7]


def test_jax_runs_the_ufuncs_loop_of_a_registered_record():
    # the XLA FFI handler takes a row for a record registered after
    # gelu_numba.jax was imported, and runs the ufunc's own loop: its bits
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import gelu_numba.jax as gj
    with catalog.registered(toy_record()):
        for dtype in (np.float32, np.float64):
            x = np.linspace(-3, 3, 1001).astype(dtype)
            want = g.toy_cubic(x)
            for f in (gj.toy_cubic, jax.jit(gj.toy_cubic)):
                got = np.asarray(f(x))
                assert got.dtype == dtype and np.array_equal(got, want)
        # no derivative link in the record: differentiating it says so
        with pytest.raises(NotImplementedError, match="toy_cubic"):
            jax.grad(gj.toy_cubic)(1.5)
    with pytest.raises(AttributeError):
        gj.toy_cubic


def _negated_64(x):
    return -(x * (1.0 + x * x))


def _negated_32(x):
    w = np.float64(x)
    return np.float32(-(w * (1.0 + w * w)))


def test_a_name_registered_again_runs_the_new_records_kernels():
    # the loops are the record's, not the name's: a second record of the
    # same name gets loops of its own in NumPy and in JAX
    jax = pytest.importorskip("jax")
    import gelu_numba.jax as gj
    x = np.linspace(-2, 2, 101).astype(np.float32)
    with catalog.registered(toy_record()):
        first, first_jax = g.toy_cubic(x), np.asarray(gj.toy_cubic(x))
    other = dataclasses.replace(toy_record(), k64=_negated_64, k32=_negated_32)
    with catalog.registered(other):
        assert np.array_equal(g.toy_cubic(x), -first)
        assert np.array_equal(np.asarray(jax.jit(gj.toy_cubic)(x)), -first_jax)


def test_the_cuda_kernel_and_device_function_give_the_ufuncs_bits():
    with catalog.registered(toy_record()):
        x = np.linspace(-3, 3, 1000).astype(np.float32)
        want = g.toy_cubic(x)
        assert np.array_equal(gpu.toy_cubic(cuda.to_device(x)).copy_to_host(), want)
        dev = gd.toy_cubic

        @cuda.jit
        def kernel(a, out):
            i = cuda.grid(1)
            if i < a.size:
                out[i] = dev(a[i])

        out = cuda.device_array_like(x)
        kernel[4, 256](cuda.to_device(x), out)
        assert np.array_equal(out.copy_to_host(), want)


def test_the_docstring_and_the_api_page_state_the_measured_figure(measured):
    import importlib
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
    try:
        gelu_api = importlib.import_module("gelu_api")
    finally:
        sys.path.pop(0)
    figure = f"measured max {measured[0]:.3f} and {measured[1]:.3f} ulp on sampled inputs"
    with catalog.registered(toy_record(measured)):
        doc = " ".join(g.toy_cubic.__doc__.split())
        assert "x (1 + x**2)" in doc and figure in doc
        assert "Stated bound: 1 ulp (float32), 1.5 ulp (float64)" in doc
        page = " ".join(gelu_api.catalog_page("gelu_numba", "The exact functions").split())
        assert ".. py:function:: toy_cubic(x, /" in page and figure in page


def test_a_name_the_catalog_has_is_refused():
    clash = dataclasses.replace(toy_record(), name="gelu")
    with pytest.raises(ValueError, match="already has gelu"):
        with catalog.registered(clash):
            pass


# --- an approximation: its record and its derivative's, linked, with its
# formula as array operations and the key that approximate= takes


def toy_approx_64(x):
    return 0.5 * x + 0.25 * (x * x)


def toy_approx_32(x):
    w = np.float64(x)
    return np.float32(0.5 * w + 0.25 * (w * w))


def toy_approx_grad_64(x):
    return 0.5 + 0.5 * x


def toy_approx_grad_32(x):
    return np.float32(0.5 + 0.5 * np.float64(x))


def toy_approx_formula(w, ops):
    return ops.const(w, 0.5) * w + ops.const(w, 0.25) * (w * w)


def toy_approximation(k64=toy_approx_64, k32=toy_approx_32):
    how = "float64 in three roundings, float32 in float64 with one final rounding."
    forward = catalog.record(
        "toy_approx", k64, k32, 1, """
    ``x/2 + x**2/4``, a toy approximation of GELU (its first two Taylor
    terms at 0, roughly).""", how, (1.0, 1.5), (catalog.APPROX,), group="approximation",
        reference=lambda x: mp.mpf(x) / 2 + mp.mpf(x) ** 2 / 4,
        derivative="toy_approx_grad", approximate="toy", formula=toy_approx_formula)
    grad = catalog.record(
        "toy_approx_grad", toy_approx_grad_64, toy_approx_grad_32, 1, """
    Derivative of :func:`toy_approx`, ``1/2 + x/2``.""", how, (1.0, 1.0),
        (catalog.APPROX,), group="approximation", reference=lambda x: (1 + mp.mpf(x)) / 2)
    return forward, grad

# --- end of the approximation's recipe


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_takes_a_registered_approximation(dtype):
    torch = pytest.importorskip("torch")
    import gelu_numba.approximations as ga
    import gelu_numba.torch as gt
    x_np = np.linspace(-3, 3, 1001).astype(dtype)
    dy_np = np.linspace(2, -1, 1001).astype(dtype)
    with catalog.registered(*toy_approximation()):
        want, slope = ga.toy_approx(x_np), ga.toy_approx_grad(x_np)
        for f in (lambda v: gt.gelu(v, approximate="toy"), gt.GELU(approximate="toy")):
            x = torch.from_numpy(x_np.copy()).requires_grad_()
            y = f(x)
            assert np.array_equal(y.detach().numpy(), want)
            # backward: dy times the derivative's ufunc (two roundings)
            (gx,) = torch.autograd.grad(y, x, torch.from_numpy(dy_np), create_graph=True)
            assert np.array_equal(gx.detach().numpy(), dy_np * slope)
            # the second derivative: torch's autograd of the formula, 1/2
            (g2,) = torch.autograd.grad(gx.sum(), x)
            assert np.array_equal(g2.numpy(), np.full_like(x_np, 0.5) * dy_np)
    with pytest.raises(RuntimeError, match="approximate must be one of 'none'"):
        gt.gelu(torch.from_numpy(x_np), approximate="toy")


def test_jax_takes_a_registered_approximation():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import gelu_numba.approximations as ga
    import gelu_numba.jax as gj
    x = np.linspace(-3, 3, 1001)
    with catalog.registered(*toy_approximation()):
        for dtype in (np.float32, np.float64):
            v = x.astype(dtype)
            assert np.array_equal(np.asarray(jax.jit(gj.gelu, static_argnums=1)(v, "toy")),
                                  ga.toy_approx(v))
            grad = jax.grad(lambda w: gj.gelu(w, "toy").sum())
            assert np.array_equal(np.asarray(grad(v)), ga.toy_approx_grad(v))
        # the second derivative: JAX's autodiff of the formula, 1/2
        second = jax.grad(jax.grad(lambda w: gj.gelu(w, "toy")))
        assert [float(second(t)) for t in (-2.0, 0.0, 3.0)] == [0.5, 0.5, 0.5]
    with pytest.raises(ValueError, match="approximate must be a bool or one of"):
        gj.gelu(x, "toy")


def test_a_key_registered_again_runs_the_new_records_kernels_in_torch():
    torch = pytest.importorskip("torch")
    import gelu_numba.torch as gt
    x = torch.linspace(-2, 2, 101, dtype=torch.float64)
    with catalog.registered(*toy_approximation()):
        first = gt.gelu(x, approximate="toy")
    negated = toy_approximation(k64=_negated_64, k32=_negated_32)
    with catalog.registered(*negated):
        assert torch.equal(gt.gelu(x, approximate="toy"), -(x * (1 + x * x)))
    assert not torch.equal(first, -(x * (1 + x * x)))


def test_an_approximate_key_the_catalog_has_is_refused():
    forward, grad = toy_approximation()
    clash = dataclasses.replace(forward, approximate="tanh")
    with pytest.raises(ValueError, match="already has approximate='tanh'"):
        with catalog.registered(clash, grad):
            pass


def test_an_approximate_key_without_formula_or_derivative_is_refused():
    forward, _ = toy_approximation()
    for missing in ("formula", "derivative"):
        with pytest.raises(ValueError, match="needs its formula and its derivative's record"):
            dataclasses.replace(forward, **{missing: None})
