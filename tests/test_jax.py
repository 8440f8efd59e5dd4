"""gelu_numba.jax: values against mpmath's table and the ufuncs' bits (the
contract: one loop, the same bits) under every transformation, the
half-precision paths, the errors, and the FFI handler's own checks."""

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import mpmath
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import gelu_numba as g  # noqa: E402
import gelu_numba.half as gh  # noqa: E402
import gelu_numba.jax as gj  # noqa: E402
from gelu_numba import approximations, catalog  # noqa: E402
from gelu_numba.approximations import APPROXIMATIONS  # noqa: E402
from gelu_numba.targets.jax import ffi as jax_ffi  # noqa: E402
from reference.mp import ulp_error_dd  # noqa: E402
from derivative_limits import gelu_limit_is_negative_zero  # noqa: E402

pytestmark = pytest.mark.unit

EXACT = tuple(f.name for f in catalog.group("exact") if f.nin == 1)
X = np.concatenate([np.linspace(-40, 10, 2001), [-14.2, -0.0, 0.0, np.inf, -np.inf, np.nan]])


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(bits(a), bits(b))


def operands(name, dtype, n=257, seed=0):
    rng = np.random.default_rng(seed)
    nin = catalog.lookup(name).nin
    ops = [(rng.standard_normal(n) * 4).astype(dtype) for _ in range(nin)]
    if name == "gelu_general":
        ops[2] = np.abs(ops[2])  # sigma >= 0
    return ops


# ------------------------------------------------------------------ values

@pytest.mark.parametrize("name", jax_ffi.FUNCTIONS)
def test_every_function_gives_the_ufuncs_bits_in_float32(name):
    ops = operands(name, np.float32)
    ufunc = getattr(g, name, None) or getattr(approximations, name)
    assert same_bits(getattr(gj, name)(*ops), ufunc(*ops))


@pytest.mark.parametrize("name", EXACT + ("gelu_backward", "gelu_general"))
def test_float64_under_x64_gives_the_ufuncs_bits(name):
    ops = operands(name, np.float64)
    with jax.enable_x64(True):
        out = getattr(gj, name)(*ops)
        assert out.dtype == jnp.float64
    assert same_bits(out, getattr(g, name)(*ops))


@pytest.mark.parametrize("name", EXACT + ("gelu_backward",))
def test_within_the_stated_bound_of_mpmath(table, name):
    # the mpmath table (tests/data/reference_table.npz): float32 rows
    rows = table["is_f32"]
    x = table["x"][rows].astype(np.float32)
    args = (table["dy"][rows].astype(np.float32), x) if name == "gelu_backward" else (x,)
    out = np.asarray(jax.jit(getattr(gj, name))(*args))
    err = ulp_error_dd(out, table[name + "_hi"][rows], table[name + "_lo"][rows],
                       np.float32, table[name + "_res"][rows])
    assert err.max() <= catalog.lookup(name).bound[0]


def test_subnormal_results_survive_xlas_flush_to_zero():
    # XLA's CPU threads flush subnormals; the handler clears that around
    # its loop: GELU(-14.2) in float32 is about -7e-45, not -0
    x = np.float32(-14.2)
    exact = float(mpmath.mpf(float(x)) * mpmath.ncdf(float(x)))
    y = jax.jit(gj.gelu)(x)
    assert float(y) != 0 and abs(float(y) - exact) <= 2.0**-150
    assert same_bits(y, g.gelu(x))
    # the mode is restored: XLA's own arithmetic after the call in one
    # program does what it does alone (it flushes: 0, not -3.5e-45)
    alone = jax.jit(lambda v: v * 0.5)(y)
    assert same_bits(jax.jit(lambda v: gj.gelu(v) * 0.5)(x), alone)
    assert float(alone) == 0


def test_shapes_scalars_and_broadcasting():
    assert gj.gelu(1.0).shape == () and gj.gelu(np.float32(1)).dtype == jnp.float32
    assert gj.gelu(np.zeros((0, 3), np.float32)).shape == (0, 3)
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    assert same_bits(gj.gelu(x.T), g.gelu(x.T))             # a transposed view
    dy = np.float32(2.5)
    assert same_bits(gj.gelu_backward(dy, x), g.gelu_backward(dy, x))
    assert same_bits(gj.gelu_general(x, 0.5, np.float32(2)), g.gelu_general(x, 0.5, np.float32(2)))


@pytest.mark.parametrize("name, dtype", [("gelu", np.float32), ("gelu_backward", np.float32),
                                         ("gelu_general", np.float64), ("gelu", jnp.bfloat16)])
def test_large_calls_split_across_xlas_pool_give_the_same_bits(name, dtype):
    # from 2 * PARALLEL_CHUNK elements on, chunks run on XLA's intra-op
    # threads too: every operand offset, the short last chunk, and the
    # cleared flush-to-zero mode on the pool's threads (-14.2 at the end)
    n = 3 * jax_ffi.PARALLEL_CHUNK + 12345
    ops = operands(name, np.float32, n=n, seed=7)
    ops[1 if name == "gelu_backward" else 0][-1000:] = -14.2      # x
    if dtype == jnp.bfloat16:
        x = jnp.asarray(ops[0], jnp.bfloat16)
        assert same_bits(jax.jit(gj.gelu)(x),
                         gh.gelu_bfloat16(np.asarray(x).view(np.uint16)).view(jnp.bfloat16))
        return
    ops = [o.astype(dtype) for o in ops]
    with jax.enable_x64(dtype == np.float64):
        out = jax.jit(getattr(gj, name))(*ops)
    ref = getattr(g, name)(*ops)
    assert same_bits(out, ref)
    assert ref[-1] != 0


# ---------------------------------------------------------- transformations

def test_jit_and_the_lowered_program_has_no_callback():
    f = jax.jit(gj.gelu)
    x = X.astype(np.float32)
    assert same_bits(f(x), g.gelu(x))
    text = f.lower(x).as_text()
    assert "stablehlo.custom_call @gelu_numba" in text and 'function = "gelu"' in text
    assert "callback" not in text.lower()


@pytest.mark.parametrize("axes", [0, 1, (0, None), (None, 1), (1, 0)])
def test_vmap_any_batch_axes(axes):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    b = rng.standard_normal((6, 5) if axes != (1, 0) else (5, 6)).astype(np.float32)
    if isinstance(axes, int):
        out = jax.vmap(gj.gelu, in_axes=axes)(a)
        assert same_bits(out, np.moveaxis(g.gelu(a), axes, 0))
        return
    dy = a if axes[0] is not None else a[:, 0]
    x = b if axes[1] is not None else b[0]
    out = jax.vmap(gj.gelu_backward, in_axes=axes)(dy, x)
    ref = [g.gelu_backward(np.take(dy, i, axis=axes[0]) if axes[0] is not None else dy,
                           np.take(x, i, axis=axes[1]) if axes[1] is not None else x)
           for i in range(out.shape[0])]
    assert same_bits(out, np.stack(ref))


def test_grad_and_vjp_are_the_fused_backward():
    x = X.astype(np.float32)
    ct = np.random.default_rng(2).standard_normal(x.size).astype(np.float32)
    y, pullback = jax.vjp(gj.gelu, x)
    assert same_bits(pullback(ct)[0], g.gelu_backward(ct, x))
    assert same_bits(jax.vmap(jax.grad(gj.gelu))(x), g.gelu_grad(x))
    jaxpr = str(jax.make_jaxpr(jax.grad(gj.gelu))(1.0))
    assert "function=gelu_backward" in jaxpr


def test_jvp_and_jacfwd():
    x = X[np.isfinite(X)].astype(np.float32)
    t = np.full_like(x, 1.5)
    _, tangent = jax.jvp(gj.gelu, (x,), (t,))
    assert same_bits(tangent, g.gelu_backward(t, x))
    jac = jax.jacfwd(gj.gelu)(x[:50])
    assert same_bits(np.diag(np.asarray(jac)), g.gelu_grad(x[:50]))
    assert np.count_nonzero(np.asarray(jac) - np.diag(np.diag(np.asarray(jac)))) == 0


def _mp_derivative(order, x):
    """GELU^(order)(x) by mpmath (exact differentiation of x Phi(x))."""
    with mpmath.workdps(40):
        return float(mpmath.diff(lambda v: v * mpmath.ncdf(v), mpmath.mpf(x), order))


@pytest.mark.parametrize("order", [2, 3, 4, 5])
def test_every_order_matches_mpmath(order):
    xs = np.array([-7.5, -3.0, -2.0, -1.25, -0.5, 0.0, 0.3, 1.0, 2.0, 2.5, 4.0, 9.0])
    f = gj.gelu
    for _ in range(order):
        f = jax.grad(f)
    with jax.enable_x64(True):
        out = np.asarray(jax.vmap(f)(xs))
    ref = np.array([_mp_derivative(order, v) for v in xs])
    scale = np.maximum(np.abs(ref), 1e-300)
    # order 2 is gelu_grad2 (below 1 ulp), order 3 on is phi(x) times a
    # polynomial by XLA's float64 arithmetic: a few ulps of the terms
    tol = 2.0**-52 if order == 2 else 2.0**-45 * (1 + xs**4).max()
    assert np.all(np.abs(out - ref) <= tol * np.maximum(scale, 1e-12)), (out, ref)


def test_hessian_is_gelu_grad2():
    x = np.linspace(-5, 5, 41)
    with jax.enable_x64(True):
        h = jax.vmap(jax.hessian(gj.gelu))(x)
    assert np.array_equal(np.asarray(h), g.gelu_grad2(x))


def test_other_exact_functions_differentiate():
    x = np.array([-3.0, -0.7, 0.0, 1.1, 4.0])
    with jax.enable_x64(True):
        assert np.array_equal(np.asarray(jax.vmap(jax.grad(gj.ndtr))(x)), g.norm_pdf(x))
        d2 = np.asarray(jax.vmap(jax.grad(jax.grad(gj.ndtr)))(x))
        d3 = np.asarray(jax.vmap(jax.grad(jax.grad(gj.norm_pdf)))(x))
    with mpmath.workdps(40):
        ref2 = [float(-v * mpmath.npdf(v)) for v in x]
        ref3 = [float((v * v - 1) * mpmath.npdf(v)) for v in x]
    np.testing.assert_allclose(d2, ref2, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(d3, ref3, rtol=1e-14, atol=1e-300)


def test_gelu_general_partials_match_mpmath():
    point = (1.3, -0.4, 0.7)
    with jax.enable_x64(True):
        got = jax.grad(gj.gelu_general, argnums=(0, 1, 2))(*point)
        degenerate = jax.grad(gj.gelu_general, argnums=(0, 1, 2))(1.3, 0.5, 0.0)
    with mpmath.workdps(40):
        def f(x, mu, s):
            return x * mpmath.ncdf((x - mu) / s)
        ref = [mpmath.diff(f, point, tuple(int(i == k) for i in range(3))) for k in range(3)]
    np.testing.assert_allclose([float(v) for v in got], [float(r) for r in ref], rtol=1e-14)
    assert [float(v) for v in degenerate] == [1.0, 0.0, 0.0]   # x H(x - mu), x > mu


def test_approximations_differentiate_once_by_their_loops_then_by_their_formulas():
    x = np.linspace(-4, 4, 9, dtype=np.float32)
    assert same_bits(gj.gelu(x, approximate=True), g.gelu_tanh(x))
    assert same_bits(jax.vmap(jax.grad(lambda v: gj.gelu(v, "poly14")))(x),
                     APPROXIMATIONS["poly14"].grad(x))
    assert same_bits(jax.vmap(jax.grad(gj.silu))(x), g.silu_grad(x))
    with pytest.raises(NotImplementedError, match="silu_grad has no derivative"):
        jax.grad(jax.grad(gj.silu))(1.0)


@pytest.mark.parametrize("key", ["tanh", "sigmoid", "as26", "poly6", "rat44"])
def test_second_and_third_derivatives_of_the_approximations_are_their_formulas(key):
    """Against mpmath's derivatives of the repository's mpmath definition of
    each formula (reference.approx), in float64; +-inf give 0, NaN NaN."""
    from reference import approx
    _, grad = approx.formulas(key)
    f = getattr(gj, f"gelu_{key}")
    with jax.enable_x64(True):
        second = jax.grad(jax.grad(f))
        third = jax.grad(second)
        for x in (-3.1, -0.7, 0.3, 1.9):
            with mpmath.workdps(40):
                want2 = mpmath.diff(grad, x)
                want3 = mpmath.diff(grad, x, 2)
            np.testing.assert_allclose(float(second(jnp.float64(x))), float(want2), rtol=1e-12)
            np.testing.assert_allclose(float(third(jnp.float64(x))), float(want3), rtol=1e-9)
        edges = jax.vmap(second)(jnp.array([np.inf, -np.inf, np.nan]))
    assert float(edges[0]) == 0 and float(edges[1]) == 0 and np.isnan(float(edges[2]))
    assert jax.grad(jax.grad(f))(jnp.float32(0.5)).dtype == jnp.float32


def test_checkpoint_scan_and_remat():
    x = np.linspace(-3, 3, 64, dtype=np.float32)

    def body(carry, xi):
        return carry + gj.gelu(xi), gj.gelu(xi)
    total, ys = jax.lax.scan(body, jnp.float32(0), x)
    assert same_bits(ys, g.gelu(x))
    ref = jax.grad(lambda v: gj.gelu(v).sum())(x)
    assert same_bits(jax.grad(jax.checkpoint(lambda v: gj.gelu(v).sum()))(x), ref)
    assert same_bits(jax.grad(lambda v: jax.lax.scan(body, jnp.float32(0), v)[0])(x), ref)


_SHARDED = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import numpy as np, jax
from jax.sharding import NamedSharding, PartitionSpec as P
import gelu_numba as g, gelu_numba.jax as gj
mesh = jax.make_mesh((4,), ("d",))
x = np.linspace(-8, 8, 8 * 12 * 16, dtype=np.float32).reshape(8, 12, 16)
for spec in (P("d"), P(None, "d"), P(None, None, "d")):
    xs = jax.device_put(x, NamedSharding(mesh, spec))
    for f, ref in ((gj.gelu, g.gelu(x)), (jax.grad(lambda v: gj.gelu(v).sum()), g.gelu_grad(x))):
        jitted = jax.jit(f)
        hlo = jitted.lower(xs).compile().as_text()
        y = jitted(xs)
        assert "all-gather" not in hlo and "all-to-all" not in hlo, (spec, hlo)
        assert tuple(y.sharding.spec)[:len(spec)] == tuple(spec), (y.sharding, spec)
        assert np.array_equal(np.asarray(y).view(np.uint32), ref.view(np.uint32))
sm = jax.jit(jax.shard_map(gj.gelu, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
xs = jax.device_put(x, NamedSharding(mesh, P("d")))
assert np.array_equal(np.asarray(sm(xs)).view(np.uint32), g.gelu(x).view(np.uint32))
print("ok")
"""


def test_sharded_jit_and_shard_map_run_shard_by_shard():
    # a fresh process: the device count is fixed when XLA starts
    out = subprocess.run([sys.executable, "-c", _SHARDED], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


_VMA = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import numpy as np, jax, jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P
import gelu_numba as g, gelu_numba.jax as gj
mesh = jax.make_mesh((4,), ("a",), axis_types=(AxisType.Auto,))
x = np.linspace(-4, 4, 8, dtype=np.float32)
theirs = lambda v: jax.nn.gelu(v, approximate=False)

def outcome(f):
    try:
        return "value", np.asarray(f())
    except Exception as error:
        return type(error).__name__, None

# a wrong out_specs (P(): replicated, but the result varies over "a")
for f in (theirs, gj.gelu):
    kind, _ = outcome(lambda: jax.shard_map(f, mesh=mesh, in_specs=P("a"), out_specs=P())(x))
    assert kind == "ValueError", (f, kind)
# grad through shard_map with check_vma=True (the default)
for f in (theirs, gj.gelu):
    sm = jax.shard_map(f, mesh=mesh, in_specs=P("a"), out_specs=P("a"))
    kind, grad = outcome(lambda: jax.grad(lambda v: sm(v).sum())(x))
    assert kind == "value", (f, kind)
    if f is gj.gelu:
        assert np.array_equal(grad.view(np.uint32), g.gelu_grad(x).view(np.uint32))
# operands that vary over different axes: dy varies, x (closed over) does not
x2 = np.linspace(-3, 3, 2, dtype=np.float32)
for f in (lambda dy: dy * theirs(x2), lambda dy: gj.gelu_backward(dy, x2)):
    kind, y = outcome(lambda: jax.shard_map(f, mesh=mesh, in_specs=P("a"), out_specs=P("a"))(x))
    assert kind == "value" and y.shape == (8,), kind
assert np.array_equal(y.view(np.uint32), g.gelu_backward(x, np.tile(x2, 4)).view(np.uint32))
print("ok")
"""


def test_shard_map_checks_varying_manual_axes_as_jax_does():
    # as jax.nn.gelu in the same program: a wrong out_specs raises, grad
    # works with check_vma=True, mixed operands are made varying
    out = subprocess.run([sys.executable, "-c", _VMA], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


# (the fresh process saves what it computed; the test compares it here, where
# the ufunc is loaded already, rather than compile it in that process too)
_DESERIALIZE = """
import sys, numpy as np
{imports}
from jax import export
exported = export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
x = np.linspace(-16, 4, 301, dtype=np.float32)
np.save(sys.argv[2], np.asarray(exported.call(x)))
print("ok")
"""


def test_export_needs_the_targets_check_disabled():
    with pytest.raises(ValueError, match="custom calls whose targets have no compatibility"):
        jax.export.export(jax.jit(gj.gelu))(jax.ShapeDtypeStruct((3,), jnp.float32))


def test_export_round_trip_in_a_fresh_process(tmp_path):
    x = jax.ShapeDtypeStruct((301,), jnp.float32)
    exported = jax.export.export(jax.jit(jax.grad(lambda v: gj.gelu(v).sum())),
                                 disabled_checks=gj.EXPORT_CHECKS)(x)
    path = tmp_path / "gelu.bin"
    path.write_bytes(exported.serialize())
    y = tmp_path / "y.npy"
    ok = subprocess.run([sys.executable, "-c", _DESERIALIZE.format(imports="import gelu_numba.jax"),
                         str(path), str(y)], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == "ok", ok.stderr[-3000:]
    x = np.linspace(-16, 4, 301, dtype=np.float32)
    assert np.array_equal(np.load(y).view(np.uint32), g.gelu_grad(x).view(np.uint32))
    # without the import the target is unknown, and XLA says so
    bad = subprocess.run([sys.executable, "-c", _DESERIALIZE.format(imports="import jax"),
                          str(path), str(y)], capture_output=True, text=True)
    assert bad.returncode != 0 and "gelu_numba" in bad.stderr


_SYMBOLIC = """
import sys, numpy as np
import gelu_numba.jax
from jax import export
exported = export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
for batch in (2, 700):
    x = np.linspace(-16, 4, 3 * batch, dtype=np.float32).reshape(batch, 3)
    np.save(f"{sys.argv[2]}{batch}.npy", np.asarray(exported.call(x)))
print("ok")
"""


def test_export_with_a_symbolic_batch_runs_at_two_batch_sizes(tmp_path):
    # as jax.nn.gelu exports: the call with a symbolic shape is not marked
    # for partitioning (its shape operand has no sharding rule)
    (b,) = jax.export.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, 3), jnp.float32)
    jax.export.export(jax.jit(lambda v: jax.nn.gelu(v, approximate=False)))(x)
    exported = jax.export.export(jax.jit(jax.grad(lambda v: gj.gelu(v).sum())),
                                 disabled_checks=gj.EXPORT_CHECKS)(x)
    path = tmp_path / "symbolic.bin"
    path.write_bytes(exported.serialize())
    out = subprocess.run([sys.executable, "-c", _SYMBOLIC, str(path), str(tmp_path / "y")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]
    for batch in (2, 700):
        x = np.linspace(-16, 4, 3 * batch, dtype=np.float32).reshape(batch, 3)
        y = np.load(tmp_path / f"y{batch}.npy")
        assert y.shape == (batch, 3)
        assert np.array_equal(y.view(np.uint32), g.gelu_grad(x).view(np.uint32))


def test_soi_map_keeps_x_with_probability_phi():
    x = np.full(200_000, 0.6, np.float32)
    y = np.asarray(gj.soi_map(jax.random.key(0), x))
    assert set(np.unique(y)) == {0.0, np.float32(0.6)}
    kept = np.mean(y != 0)
    assert abs(kept - float(mpmath.ncdf(0.6))) < 5 * np.sqrt(0.25 / x.size)
    assert same_bits(gj.soi_map(jax.random.key(0), x), y)      # a key is a seed


# ------------------------------------------------------------ half precision

def test_bfloat16_forward_and_gradient_are_the_correctly_rounded_loops():
    every = np.arange(65536, dtype=np.uint16)
    xb = jnp.asarray(every.view(jnp.bfloat16))
    assert same_bits(gj.gelu(xb), gh.gelu_bfloat16(every).view(jnp.bfloat16))
    assert same_bits(gj.gelu_grad(xb), gh.gelu_grad_bfloat16(every).view(jnp.bfloat16))
    ct = np.random.default_rng(3).integers(0, 65536, every.size).astype(np.uint16)
    ct[(ct & 0x7F80) == 0x7F80] = 0x3F80    # finite cotangents
    _, pullback = jax.vjp(gj.gelu, xb)
    got = pullback(jnp.asarray(ct.view(jnp.bfloat16)))[0]
    assert same_bits(got, gh.gelu_backward_bfloat16(ct, every).view(jnp.bfloat16))


def test_float16_forward_and_gradient_are_the_correctly_rounded_loops():
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    assert same_bits(gj.gelu(x), g.gelu(x))
    ct = np.random.default_rng(4).standard_normal(x.size).astype(np.float16)
    assert same_bits(jax.vjp(gj.gelu, x)[1](ct)[0], g.gelu_backward(ct, x))


def test_half_inputs_of_other_functions_round_once_from_float32():
    x = np.linspace(-6, 6, 101).astype(np.float16)
    assert same_bits(gj.ndtr(x), g.ndtr(x.astype(np.float32)).astype(np.float16))


# ---------------------------------------------------------------- errors

def test_complex_operands_raise_naming_the_accepted_dtypes():
    with pytest.raises(TypeError, match="float16, bfloat16, float32 or float64"):
        gj.gelu(np.ones(2, np.complex64))
    with pytest.raises(TypeError, match="float16, bfloat16, float32 or float64"):
        gj.gelu_backward(np.ones(2, np.float32), np.ones(2, np.complex64))


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("operand", [1, True, 2.5, np.int32(3), np.arange(-2, 3),
                                     np.array([True, False]), np.int8([1, -2]),
                                     np.uint16([7]), np.int64([5]), np.uint64([1])],
                         ids=repr)
def test_integers_and_bools_promote_as_jax_nn_gelu(operand, x64):
    # the dtype and weak type of JAX's own elementwise functions (jnp.exp;
    # jax.nn.gelu(approximate=False) gives the same dtype) and the value
    # at that dtype
    with jax.enable_x64(x64):
        ours, exp = gj.gelu(operand), jnp.exp(operand)
        theirs = jax.nn.gelu(operand, approximate=False)
        assert ours.dtype == theirs.dtype == exp.dtype
        assert ours.weak_type == exp.weak_type
        want = g.gelu(np.asarray(operand, dtype=ours.dtype))
        assert same_bits(np.asarray(ours), want)
        # two operands promote together, the scalar weakly
        mixed = gj.gelu_general(np.asarray(operand, dtype=ours.dtype), 0, 1)
        assert mixed.dtype == ours.dtype


def test_python_scalars_stay_weakly_typed():
    assert (gj.gelu(2.0) * jnp.ones(2, jnp.bfloat16)).dtype == jnp.bfloat16
    assert (gj.gelu(2) * jnp.ones(2, jnp.float16)).dtype == jnp.float16
    assert (gj.gelu(np.float32(2)) * jnp.ones(2, jnp.bfloat16)).dtype == jnp.float32


@pytest.mark.parametrize("approximate", [False, True, np.False_, np.True_, 0, 1, None, 2])
def test_approximate_takes_what_jax_nn_gelu_takes(approximate):
    # jax.nn.gelu: the tanh form where approximate is true
    x = np.linspace(-4, 4, 9, dtype=np.float32)
    want = gj.gelu(x, "tanh" if approximate else "none")
    assert same_bits(gj.gelu(x, approximate), want)
    assert same_bits(gj.GELU(approximate)(x), want)
    jax.nn.gelu(x, approximate=approximate)      # (JAX takes it too)


def test_bad_approximate_and_operand_count():
    with pytest.raises(ValueError, match="'tanh'"):
        gj.gelu(1.0, approximate="erf")
    with pytest.raises(TypeError, match=r"takes 2 operands \(dy, x\), got 1"):
        gj.gelu_backward(1.0)
    with pytest.raises(ValueError):
        gj.GELU(approximate="nope")


def test_disable_jit_runs_each_call_compiled():
    x = np.linspace(-6, 6, 13, dtype=np.float32)
    with jax.disable_jit():
        assert same_bits(gj.gelu(x), g.gelu(x))
        assert same_bits(jax.grad(lambda v: gj.gelu(v).sum())(x), g.gelu_grad(x))
        assert same_bits(jax.vmap(gj.ndtr)(x), g.ndtr(x))
        assert jax.config.jax_disable_jit      # left as the user set it


def test_the_jax_extra_installs_what_serialize_needs():
    import tomllib
    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    jax_extra = extras["project"]["optional-dependencies"]["jax"]
    assert any(r.startswith("flatbuffers") for r in jax_extra), jax_extra
    x = jax.ShapeDtypeStruct((3,), jnp.float32)
    assert jax.export.export(jax.jit(gj.gelu), disabled_checks=gj.EXPORT_CHECKS)(x).serialize()


def _raw(function, *ops, result=None):
    result = result or jax.ShapeDtypeStruct(ops[0].shape, ops[0].dtype)
    return jax.ffi.ffi_call(jax_ffi.TARGET, result)(*ops, function=function)


@pytest.mark.parametrize("case, message", [
    (lambda: _raw("not_a_function", np.ones(3, np.float32)), "unknown function"),
    (lambda: _raw("gelu", np.ones(3, np.int32)), "supports float16, bfloat16, float32 and float64"),
    (lambda: _raw("gelu_backward", np.ones(3, np.float32)), "wrong number of operands"),
    (lambda: _raw("gelu", np.ones(3, np.float32),
                  result=jax.ShapeDtypeStruct((4,), jnp.float32)), "neither the result's size"),
    (lambda: jax.ffi.ffi_call(jax_ffi.TARGET, jax.ShapeDtypeStruct((3,), jnp.float32))(
        np.ones(3, np.float32)), "one attribute"),
    (lambda: _raw("ndtr", np.ones(3, np.float16).astype(jnp.bfloat16)), "no loop of the function"),
])
def test_the_handler_returns_an_ffi_error_for_a_bad_call(case, message):
    with pytest.raises(Exception, match=message):
        jax.block_until_ready(case())


# -------------------------------------------------------------- the probe

def test_the_abi_probe_fails_loudly_on_another_layout(tmp_path):
    from gelu_numba.internals import xla_ffi
    header = open(__import__("os").path.join(jax.ffi.include_dir(), "xla", "ffi", "api",
                                             "c_api.h")).read()
    xla_ffi.probe()    # the installed header passes
    moved = tmp_path / "c_api.h"
    moved.write_text(header.replace("  XLA_FFI_ExecutionStage stage;\n", "")
                     .replace("  XLA_FFI_Args args;", "  XLA_FFI_Args args;\n  int extra;"))
    with pytest.raises(ImportError, match="XLA_FFI_CallFrame has fields"):
        xla_ffi.probe(str(moved))
    newer = tmp_path / "newer.h"
    newer.write_text(header.replace("#define XLA_FFI_API_MINOR 3", "#define XLA_FFI_API_MINOR 4"))
    with pytest.raises(ImportError, match="API version 0.4"):
        xla_ffi.probe(str(newer))


def test_import_changes_no_global_state():
    code = textwrap.dedent("""
        import jax
        before = (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision)
        import gelu_numba.jax
        assert (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision) == before
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


# ------------------------------------------- derivatives where phi underflows

LARGE = {"float32": [1e13, 3.4028235e38], "float64": [1e103, 1.7976931348623157e308],
         "bfloat16": [1e13, 3.3895e38], "float16": [6e4, 65504.0]}


@pytest.mark.parametrize("dtype", sorted(LARGE))
@pytest.mark.parametrize("order", [3, 4, 5])
def test_higher_derivatives_are_the_limits_signed_zero_at_large_x(dtype, order):
    # phi(x) underflows to 0 where P_n(x) overflows: 0 * inf would be NaN
    points = [s * v for v in LARGE[dtype] + [np.inf] for s in (1, -1)]
    f = gj.gelu
    for _ in range(order):
        f = jax.grad(f)
    with jax.enable_x64(dtype == "float64"):
        dt = jnp.dtype(dtype)
        got = [float(f(jnp.asarray(p, dt))) for p in points]
        assert np.isnan(float(f(jnp.asarray(np.nan, dt))))
    for p, value in zip(points, got):
        assert value == 0 and bool(np.signbit(value)) == gelu_limit_is_negative_zero(order, p), \
            (p, value)


@pytest.mark.parametrize("key", ["tanh", "sigmoid"])
def test_second_and_third_derivatives_of_the_unclamped_forms_are_zero_at_large_x(key):
    # their formulas' x**3 and 1.702 x would overflow there
    d2 = jax.grad(jax.grad(lambda v: gj.gelu(v, key)))
    d3 = jax.grad(d2)
    for p in (1e13, -1e13, 3.4e38, -3.4e38, np.inf, -np.inf):
        assert float(d2(jnp.float32(p))) == 0 and float(d3(jnp.float32(p))) == 0, p
    with jax.enable_x64(True):
        for p in (1e103, -1e103, 1.7e308, -1.7e308):
            assert float(d2(jnp.float64(p))) == 0 and float(d3(jnp.float64(p))) == 0, p


# --------------------------------------------------------------------- jet

JET_REFERENCE = {
    "gelu": lambda t: t * mpmath.ncdf(t),
    "gelu_grad": lambda t: mpmath.ncdf(t) + t * mpmath.npdf(t),
    "gelu_grad2": lambda t: (2 - t * t) * mpmath.npdf(t),
    "ndtr": mpmath.ncdf,
    "norm_pdf": mpmath.npdf,
}


@pytest.mark.parametrize("name", sorted(JET_REFERENCE))
def test_jet_to_order_4_matches_mpmath(name):
    from jax.experimental import jet

    xs = np.array([-7.5, -3.0, -2.0, -0.5, 0.0, 0.3, 1.0, 2.0, 4.0, 9.0])
    ones, zeros = np.ones_like(xs), np.zeros_like(xs)
    with jax.enable_x64(True):
        y, series = jet.jet(getattr(gj, name), (xs,), ((ones, zeros, zeros, zeros),))
        assert same_bits(y, getattr(g, name)(xs))
    with mpmath.workdps(40):
        for n, got in enumerate(series, start=1):
            ref = np.array([float(mpmath.diff(JET_REFERENCE[name], mpmath.mpf(v), n)) for v in xs])
            # phi(x) times a polynomial by float64 arithmetic: a few ulps
            # of the largest term
            tol = 2.0**-45 * (1 + xs**4) * np.abs(ref).max()
            assert np.all(np.abs(np.asarray(got) - ref) <= tol), (n, np.asarray(got), ref)


def test_jet_of_the_fused_backward_and_of_a_composition():
    from jax.experimental import jet

    xs = np.array([-3.0, -0.7, 0.4, 2.2])
    with jax.enable_x64(True):
        _, ours = jet.jet(lambda v: gj.gelu_backward(jnp.full_like(v, 2.5), v), (xs,),
                          ((np.ones_like(xs), np.zeros_like(xs)),))
        _, composed = jet.jet(lambda v: 2.5 * gj.gelu_grad(v), (xs,),
                              ((np.ones_like(xs), np.zeros_like(xs)),))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(composed), rtol=1e-15, atol=1e-300)


def test_jet_raises_naming_what_it_cannot_expand():
    from jax.experimental import jet

    xs = np.array([0.5, 1.0], np.float32)
    with pytest.raises(NotImplementedError, match="gelu_general"):
        jet.jet(lambda v: gj.gelu_general(v, 0.0, 1.0), (xs,), ((np.ones_like(xs),),))
    with pytest.raises(NotImplementedError, match="silu_grad has no derivative"):
        jet.jet(gj.silu, (xs,), ((np.ones_like(xs),),))


# ------------------------------------------------ one value for every element

@pytest.mark.parametrize("loss, dy", [
    (lambda y: y.sum(), 1.0), (lambda y: y.mean(), 1 / 1001), (lambda y: 3.0 * y.sum(), 3.0)])
def test_grad_of_a_sum_passes_the_cotangents_one_value(loss, dy):
    # jax.grad of a sum, a mean, a scaled loss: the cotangent is one value
    # broadcast; the call takes that value (no broadcast written to memory)
    x = np.linspace(-9, 9, 1001, dtype=np.float32)
    f = jax.jit(jax.grad(lambda v: loss(gj.gelu(v))))
    text = f.lower(x).as_text()
    assert "broadcast" not in text and "(tensor<f32>, tensor<1001xf32>)" in text, text
    assert same_bits(f(x), g.gelu_backward(np.float32(dy), x))


def test_zero_d_operands_stay_zero_d_through_every_transformation():
    x = np.linspace(-6, 6, 7 * 11, dtype=np.float32).reshape(7, 11)
    d = np.arange(7, dtype=np.float32)
    assert "broadcast" not in jax.jit(lambda v: gj.gelu_backward(2.5, v)).lower(x).as_text()
    assert same_bits(gj.gelu_backward(2.5, x), g.gelu_backward(np.float32(2.5), x))
    assert same_bits(jax.vmap(gj.gelu_backward)(d, x), g.gelu_backward(d[:, None], x))
    assert same_bits(jax.vmap(gj.gelu_backward, in_axes=(None, 0))(np.float32(2), x),
                     g.gelu_backward(np.float32(2), x))
    assert same_bits(gj.gelu_general(x, 0.5, 2.0),
                     g.gelu_general(x, np.float32(0.5), np.float32(2.0)))
    # the cotangent of a 0-d dy is the sum of GELU' over x (linear in dy;
    # XLA's summation order: to within n ulps of the sum of magnitudes)
    with jax.enable_x64(True):
        terms = g.gelu_grad(x.astype(np.float64)).ravel()
        got = jax.grad(lambda t: gj.gelu_backward(t, x.astype(np.float64)).sum())(2.0)
        assert abs(float(got) - math.fsum(terms)) <= terms.size * 2.0**-52 * np.abs(terms).sum()
    # a half dtype and an empty x
    xb = jnp.asarray(x, jnp.bfloat16)
    assert same_bits(gj.gelu_backward(jnp.bfloat16(1), xb), gj.gelu_grad(xb))
    assert gj.gelu_backward(2.0, np.zeros((0,), np.float32)).shape == (0,)


def test_the_handler_reads_a_one_element_operand_with_step_zero():
    x = np.linspace(-5, 5, 300_000, dtype=np.float32)   # split across XLA's pool
    got = jax.block_until_ready(_raw("gelu_backward", np.float32([2.5]), x,
                                     result=jax.ShapeDtypeStruct(x.shape, jnp.float32)))
    assert same_bits(got, g.gelu_backward(np.float32(2.5), x))
