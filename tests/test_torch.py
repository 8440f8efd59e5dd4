"""gelu_numba.torch: the PyTorch operator, module and autograd.

Expected values: the package's ufuncs bit for bit on CPU (their accuracy is
proven against mpmath elsewhere), mpmath for the half-precision types
(``tests/data/half_reference.npz``, every input), mathematics for gradients
(``gradcheck``'s finite differences) and PyTorch's own ``nn.GELU`` for the
module swap.  CUDA tests run where PyTorch sees a GPU.
"""

import math
import subprocess
import sys
from pathlib import Path

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from bits import same_bits
from derivative_limits import gelu_limit_is_negative_zero

import gelu_numba as g
import gelu_numba.torch as gt
from gelu_numba.approximations import APPROXIMATIONS
from reference import approx, mp

pytestmark = pytest.mark.unit

HALF_TABLE = Path(__file__).parent / "data" / "half_reference.npz"
CUDA = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="PyTorch sees no CUDA device")
DOUBLE = torch.float64


def _x(n=257, dtype=torch.float64, seed=0):
    """Inputs over the whole interesting range: core, both tails, tiny."""
    gen = torch.Generator().manual_seed(seed)
    core = torch.randn(n, generator=gen, dtype=torch.float64) * 3
    special = torch.tensor([0.0, -0.0, 1e-30, -1e-30, -7.0, -12.5, -30.0, 9.0, 40.0,
                            -0.7517915, 2**0.5, -(2**0.5)], dtype=torch.float64)
    return torch.cat([core, special]).to(dtype)


def _views(x):
    """x as a 0-d, contiguous, transposed, strided, expanded and empty tensor."""
    m = x[: 12 * 8].reshape(12, 8)
    return {"0-d": x[3].clone(), "1-d": x, "transposed": m.t(), "strided": x[::3],
            "expanded": x[:5].unsqueeze(0).expand(4, 5), "empty": x[:0]}


def _ufunc(approximate):
    return g.gelu if approximate == "none" else APPROXIMATIONS[approximate].forward


# ------------------------------------------------------------- CPU results

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh", "poly6"])
def test_forward_is_the_ufunc_bit_for_bit(dtype, approximate):
    for what, x in _views(_x(dtype=dtype)).items():
        before = x.clone()
        y = gt.gelu(x, approximate)
        assert y.dtype == dtype and y.shape == x.shape, what
        expected = _ufunc(approximate)(x.numpy())
        assert same_bits(y.numpy(), np.asarray(expected, dtype=y.numpy().dtype)), what
        assert torch.equal(x, before), f"{what}: input modified"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_backward_is_the_fused_ufunc_bit_for_bit(dtype):
    for what, x in _views(_x(dtype=dtype)).items():
        x = x.detach().clone().requires_grad_()  # clone: contiguous leaf
        dy = torch.randn(x.shape, dtype=dtype)
        gt.gelu(x).backward(dy)
        expected = g.gelu_backward(dy.numpy(), x.detach().numpy())
        assert same_bits(x.grad.numpy(), np.asarray(expected)), what


def test_backward_of_an_expanded_gradient():
    # sum()'s gradient reaches the op as a stride-0 tensor of ones
    x = _x(dtype=torch.float32).requires_grad_()
    gt.gelu(x).sum().backward()
    assert same_bits(x.grad.numpy(), g.gelu_grad(x.detach().numpy()))


def test_dense_strides_are_kept():
    x = torch.randn(6, 4).t()
    assert gt.gelu(x).stride() == x.stride()


def test_gelu_backward_function():
    x, dy = _x(), torch.randn(_x().shape, dtype=DOUBLE)
    assert same_bits(gt.gelu_backward(dy, x).numpy(), g.gelu_backward(dy.numpy(), x.numpy()))
    with pytest.raises(RuntimeError, match="one shape, dtype and device"):
        gt.gelu_backward(dy[:3], x)


# -------------------------------------------------------------- gradients

@pytest.mark.parametrize("approximate", ["none", "tanh", "sigmoid", "rat44"])
def test_gradcheck(approximate):
    x = _x(64).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: gt.gelu(t, approximate), (x,))


def test_gradgradcheck():
    x = _x(64).requires_grad_()
    assert torch.autograd.gradgradcheck(gt.gelu, (x,))
    # the registered operator is differentiable on its own too
    assert torch.autograd.gradgradcheck(lambda t: torch.ops.gelu_numba.gelu(t, "none"), (x,))


def test_second_derivative_is_gelu_grad2():
    x = _x().requires_grad_()
    (d1,) = torch.autograd.grad(gt.gelu(x).sum(), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), x)
    assert same_bits(d1.detach().numpy(), g.gelu_grad(x.detach().numpy()))
    assert same_bits(d2.numpy(), g.gelu_grad2(x.detach().numpy()))


def _mp_formula(approximate):
    """The approximation's formula in mpmath (the repository's
    reference.approx), as a function of one mpf."""
    if approximate == "as26":
        return approx.gelu_as26
    from gelu_numba.tables.approximations import FITS_BY_NAME
    return approx.t_form(FITS_BY_NAME[approximate])[0]


# float32 values, so that the float32 check below sees the same points
FORMULA_SAMPLE = np.float32([-5.3, -3.1, -2.0, -1.2, -0.75, -0.3, -1e-3, 1e-3, 0.4, 1.1, 2.5,
                             3.3, 4.9]).tolist()


@pytest.mark.parametrize("approximate", ["as26", "poly3", "poly6", "poly14", "rat22", "rat66"])
def test_second_and_third_derivatives_of_as26_and_the_fits(approximate):
    # against mpmath's derivatives of the formula at 40 digits, away from
    # the fits' L and from 0, where the formula is piecewise; at 0 itself
    # (f = x/2 + g(|x|) with g'(0) = 0, so f'' = g''(0) from both sides)
    # against mpmath's one-sided differences from each side
    x = torch.tensor(FORMULA_SAMPLE, dtype=DOUBLE).requires_grad_()
    ours = _derivatives(lambda v: gt.gelu(v, approximate), x, (1, 2, 3))
    formula = _mp_formula(approximate)
    with mpmath.workdps(40):
        for n, got in ours.items():
            ref = np.array([float(mpmath.diff(formula, mpmath.mpf(v), n)) for v in FORMULA_SAMPLE])
            scale = np.abs(ref).max()
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-11, atol=1e-13 * scale,
                                       err_msg=f"order {n}")
        zero = torch.zeros(2, dtype=DOUBLE).requires_grad_()
        d2 = _derivatives(lambda v: gt.gelu(v, approximate), zero, (2,))[2]
        for side in (1, -1):
            ref = float(mpmath.diff(formula, mpmath.mpf(0), 2, direction=side, h=mpmath.mpf(2)**-40))
            assert abs(float(d2[0]) - ref) <= 1e-9 * max(1.0, abs(ref)), (side, float(d2[0]), ref)
    # float32: the float64 formula's derivative rounded once; +-inf give
    # the limit 0, NaN stays NaN
    x32 = torch.tensor(FORMULA_SAMPLE + [float("inf"), -float("inf"), float("nan")],
                       requires_grad=True)
    d2_32 = _derivatives(lambda v: gt.gelu(v, approximate), x32, (2,))[2]
    assert d2_32.dtype == torch.float32
    torch.testing.assert_close(d2_32[:-3], ours[2].float(), rtol=2**-23, atol=0)
    assert d2_32[-3:-1].tolist() == [0.0, 0.0] and torch.isnan(d2_32[-1])


def test_derivative_order_is_checked():
    x = _x(4)
    with pytest.raises(RuntimeError, match="order must be an int >= 1"):
        torch.ops.gelu_numba.derivative(torch.ones_like(x), x, "none", 0)


@pytest.mark.parametrize("approximate, formula", [
    ("tanh", lambda t: t / 2 * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi)
                                                 * (t + mpmath.mpf(0.044715) * t**3)))),
    ("sigmoid", lambda t: t / (1 + mpmath.exp(-mpmath.mpf(1.702) * t))),
])
def test_higher_derivatives_of_the_tanh_and_sigmoid_forms(approximate, formula):
    # orders 2 and 3 against mpmath's derivatives of the formula (40 digits);
    # the tanh form also against nn.GELU(approximate="tanh")'s autograd
    x = torch.linspace(-6, 6, 25, dtype=DOUBLE).requires_grad_()
    ours = _derivatives(lambda v: gt.gelu(v, approximate), x, (2, 3))
    with mpmath.workdps(40):
        for n, got in ours.items():
            ref = np.array([float(mpmath.diff(formula, mpmath.mpf(float(v)), n))
                            for v in x.detach()])
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12,
                                       atol=1e-13 * np.abs(ref).max(), err_msg=f"order {n}")
    if approximate == "tanh":
        theirs = _derivatives(lambda v: torch.nn.functional.gelu(v, approximate="tanh"), x, (2, 3))
        for n in (2, 3):
            torch.testing.assert_close(ours[n], theirs[n], rtol=1e-11, atol=1e-13)


def _derivatives(f, x, orders):
    """{n: f^(n)(x)} by nested reverse mode."""
    out, d = {}, f(x)
    for n in range(1, max(orders) + 1):
        (d,) = torch.autograd.grad(d.sum(), x, create_graph=True)
        if n in orders:
            out[n] = d.detach()
    return out


@pytest.mark.parametrize("dtype, large", [
    (torch.float32, [1e13, 3.4028235e38]), (torch.float64, [1e103, 1.7976931348623157e308]),
    (torch.bfloat16, [1e13, 3.3895e38]), (torch.float16, [6e4, 65504.0])])
def test_higher_derivatives_are_the_limits_signed_zero_at_large_x(dtype, large):
    # phi(x) underflows to 0 where P_n(x) overflows: 0 * inf would be NaN
    points = [s * v for v in large + [float("inf")] for s in (1, -1)]
    x = torch.tensor(points + [float("nan")], dtype=dtype, requires_grad=True)
    for n, got in _derivatives(gt.gelu, x, (3, 4, 5)).items():
        assert torch.isnan(got[-1])
        for p, value in zip(points, got[:-1].tolist()):
            negative = math.copysign(1, value) < 0
            assert value == 0 and negative == gelu_limit_is_negative_zero(n, p), (n, p, value)


@pytest.mark.parametrize("approximate", ["tanh", "sigmoid"])
def test_second_and_third_derivatives_of_the_unclamped_forms_are_zero_at_large_x(approximate):
    # their formulas' x**3 and 1.702 x would overflow there
    for dtype, points in ((torch.float32, [1e13, 3.4e38]), (torch.float64, [1e103, 1.7e308])):
        x = torch.tensor([s * p for p in points + [float("inf")] for s in (1, -1)],
                         dtype=dtype, requires_grad=True)
        for n, got in _derivatives(lambda v: gt.gelu(v, approximate), x, (2, 3)).items():
            assert (got == 0).all(), (dtype, n, got)


def test_every_derivative_order_of_the_exact_gelu():
    # orders 3 to 6 against mpmath's numerical derivatives of x Phi(x) at 40
    # digits, and against nn.GELU's own autograd (to rounding)
    x = torch.linspace(-6, 6, 25, dtype=DOUBLE).requires_grad_()
    ours = _derivatives(gt.gelu, x, range(3, 7))
    theirs = _derivatives(torch.nn.functional.gelu, x, (3, 4))
    with mpmath.workdps(40):
        for n, got in ours.items():
            ref = np.array([float(mpmath.diff(lambda t: t * mpmath.ncdf(t),
                                              mpmath.mpf(float(v)), n))
                            for v in x.detach()])
            scale = np.abs(ref).max()
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-13 * scale,
                                       err_msg=f"order {n}")
    for n in (3, 4):
        torch.testing.assert_close(ours[n], theirs[n], rtol=1e-11, atol=1e-13)
    # float32: the float64 formula rounded once
    x32 = x.detach().float().requires_grad_()
    d3 = _derivatives(gt.gelu, x32, (3,))[3]
    assert d3.dtype == torch.float32
    torch.testing.assert_close(d3, ours[3].float(), rtol=2**-23, atol=1e-7)


def test_opcheck():
    # schema, fake (meta) kernel, autograd registration and dispatch
    x = _x(16).requires_grad_()
    torch.library.opcheck(torch.ops.gelu_numba.gelu.default, (x, "none"))
    dy = torch.randn(x.shape, dtype=DOUBLE)
    torch.library.opcheck(torch.ops.gelu_numba.derivative.default, (dy, x, "none", 1))


# ---------------------------------------------------- transforms, compile

def test_vmap_and_func_grad():
    x = torch.randn(3, 5, dtype=DOUBLE)
    assert same_bits(torch.vmap(gt.gelu)(x).numpy(), g.gelu(x.numpy()))
    grads = torch.func.vmap(torch.func.grad(gt.gelu))(x.flatten())
    assert same_bits(grads.numpy(), g.gelu_grad(x.flatten().numpy()))
    second = torch.func.vmap(torch.func.grad(torch.func.grad(gt.gelu)))(x.flatten())
    assert same_bits(second.numpy(), g.gelu_grad2(x.flatten().numpy()))
    jac = torch.func.jacrev(gt.gelu)(x[0])
    assert torch.equal(jac, torch.diag(torch.from_numpy(g.gelu_grad(x[0].numpy()))))
    # vmap of the backward with one unbatched operand
    dy = torch.randn(5, dtype=DOUBLE)
    out = torch.vmap(gt.gelu_backward, in_dims=(None, 0))(dy, x)
    assert same_bits(out.numpy(), g.gelu_backward(dy.numpy(), x.numpy()))


def test_compile_fullgraph_matches_eager():
    torch.manual_seed(0)
    # no biases: the graph's other nodes are matmuls, so inductor emits no
    # C++ kernel and the test compiles in seconds
    model = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False), gt.GELU(),
                                torch.nn.Linear(16, 1, bias=False))
    x = torch.randn(32, 8)
    compiled = torch.compile(model, fullgraph=True)
    y = compiled(x)
    y.sum().backward()
    compiled_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    y_eager = model(x)
    y_eager.sum().backward()
    assert torch.equal(y, y_eager)
    for a, p in zip(compiled_grads, model.parameters()):
        torch.testing.assert_close(a, p.grad, rtol=1e-6, atol=0)


# ------------------------------------------------------ the module swap

def test_module_is_a_drop_in_for_nn_gelu():
    torch.manual_seed(0)
    assert repr(gt.GELU()) == repr(torch.nn.GELU()) == "GELU(approximate='none')"
    assert repr(gt.GELU("tanh")) == repr(torch.nn.GELU("tanh"))
    assert gt.GELU().state_dict() == {} == torch.nn.GELU().state_dict()
    # code that finds GELU layers by type finds the swap
    assert isinstance(gt.GELU("rat44"), torch.nn.GELU)

    def mlp(act):
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Linear(10, 32), act, torch.nn.Linear(32, 3)).double()

    x = torch.randn(50, 10, dtype=DOUBLE)
    for ours, theirs in ((gt.GELU(), torch.nn.GELU()), (gt.GELU("tanh"), torch.nn.GELU("tanh"))):
        a, b = mlp(ours), mlp(theirs)
        a(x).square().sum().backward()
        b(x).square().sum().backward()
        # PyTorch's float64 GELU is accurate to a few ulps away from the tail
        torch.testing.assert_close(a(x), b(x), rtol=1e-14, atol=1e-15)
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-12, atol=1e-14)


def test_tanh_is_pytorchs_formula_without_the_tail_collapse():
    # PyTorch's float32 kernel computes 1 + tanh(u), which is 0 once
    # tanh(u) rounds to -1 (x below about -9.1); the formula's value is not
    x = torch.tensor([-9.5, -10.0, -10.5, -3.0, 0.5, 4.0], dtype=torch.float32)
    ours = gt.gelu(x, "tanh")
    theirs = torch.nn.functional.gelu(x, approximate="tanh")
    assert (theirs[:3] == 0).all() and (ours[:3] != 0).all()
    for v, y in zip(x.tolist(), ours.tolist()):  # within the ufunc's 1 ulp
        assert mp.ulp_error(y, approx.evaluate(approx.gelu_tanh, v), np.float32) < 1


# -------------------------------------------------------- half precision

@pytest.fixture(scope="module")
def half_table():
    with np.load(HALF_TABLE) as data:
        return {k: data[k] for k in data.files}


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
@pytest.mark.parametrize("fn", ["gelu", "gelu_grad"])
def test_half_precision_exhaustive(half_table, fmt, fn):
    dtype = getattr(torch, fmt)
    x = torch.from_numpy(half_table[f"{fmt}_bits"].view(np.int16)).view(dtype)
    assert x.numel() == 65536 - (2048 if fmt == "float16" else 256)  # every finite input
    if fn == "gelu":
        y = gt.gelu(x)
    else:
        y = gt.gelu_backward(torch.ones_like(x), x)
    assert y.dtype == dtype
    # correctly rounded at every input: the bits of mpmath's rounding (whose
    # unsigned zero stands for GELU(-0) = -0)
    want = half_table[f"{fmt}_{fn}_cr"].copy()
    if fn == "gelu":
        want[half_table[f"{fmt}_bits"] == 0x8000] = 0x8000
    got = y.view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(got, want), f"{(got != want).sum()} misrounded"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_backward_is_one_pass_and_correctly_rounded(dtype):
    # dy * GELU'(x) rounded once, against mpmath, on pairs over the range
    # (every pair is proven in tests/test_half_backward_proof.py); and the
    # autograd backward of a half forward is the same call
    from reference.make_half_table import round_to_format
    fmt = str(dtype).split(".")[1]
    gen = torch.Generator().manual_seed(5)
    x = (torch.randn(400, generator=gen, dtype=torch.float64) * 4).to(dtype)
    dy = (torch.randn(400, generator=gen, dtype=torch.float64) * 3).to(dtype)
    got = gt.gelu_backward(dy, x)
    assert got.dtype == dtype
    with mpmath.workdps(40):
        want = [round_to_format(mpmath.mpf(float(a)) * (mpmath.ncdf(mpmath.mpf(float(b)))
                                + mpmath.mpf(float(b)) * mpmath.npdf(mpmath.mpf(float(b)))),
                                fmt) for a, b in zip(dy.tolist(), x.tolist())]
    np.testing.assert_array_equal(got.double().numpy(), want)
    xr = x.clone().requires_grad_()
    gt.gelu(xr).backward(dy)
    assert torch.equal(xr.grad, got)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_specials_and_dtype(dtype):
    x = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, 1.0], dtype=dtype)
    y = gt.gelu(x)
    assert y.dtype == dtype
    assert y[0] == float("inf") and y[1] == 0 and torch.isnan(y[2]) and y[3] == 0
    x = torch.randn(4, 3, dtype=dtype).t().requires_grad_()
    gt.gelu(x).sum().backward()
    assert x.grad.dtype == dtype and y.device.type == "cpu"


# -------------------------------------------------------------- bad input

def _torch_raises(call):
    """The exception type PyTorch's own call raises."""
    with pytest.raises(Exception) as theirs:
        call()
    return theirs.type


@pytest.mark.parametrize("bad", [torch.arange(3), torch.ones(3, dtype=torch.bool),
                                 torch.ones(3, dtype=torch.complex64),
                                 torch.ones(3, dtype=torch.int8)])
def test_dtypes_without_a_kernel_raise_what_torch_raises(bad):
    expected = _torch_raises(lambda: F.gelu(bad))
    assert expected is NotImplementedError
    for call in (gt.gelu, gt.GELU(), lambda t: gt.gelu_backward(t, t)):
        with pytest.raises(expected, match="float16, bfloat16, float32 or float64"):
            call(bad)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_layouts_raise_what_torch_raises(layout):
    x = torch.ones(3, 3)
    bad = x.to_sparse() if layout == "coo" else x.to_sparse_csr()
    expected = _torch_raises(lambda: F.gelu(bad))   # NotImplementedError, RuntimeError
    with pytest.raises(expected, match="dense .strided. and nested"):
        gt.gelu(bad)


def test_bad_arguments_raise_what_torch_raises():
    x = torch.ones(3)
    with pytest.raises(_torch_raises(lambda: F.gelu(np.ones(3))), match="expected a torch.Tensor"):
        gt.gelu(np.ones(3))
    for approximate, what in [("fast", "approximate must be one of 'none', 'tanh'"),
                              (1, "approximate must be a str"),
                              (None, "approximate must be a str")]:
        expected = _torch_raises(lambda: F.gelu(x, approximate=approximate))
        assert expected is (RuntimeError if isinstance(approximate, str) else TypeError)
        for call in (lambda: gt.gelu(x, approximate), lambda: gt.GELU(approximate),
                     lambda: gt.gelu_backward(x, x, approximate)):
            with pytest.raises(expected, match=what):
                call()
    expected = _torch_raises(lambda: torch.ops.aten.gelu_backward(torch.ones(3), torch.ones(4)))
    with pytest.raises(expected, match="one shape, dtype and device"):
        gt.gelu_backward(torch.ones(3), torch.ones(4))


def test_only_gelu_numba_torch_imports_torch():
    code = ("import sys, gelu_numba, gelu_numba.approximations, gelu_numba.parallel, "
            "gelu_numba.soi; gelu_numba.gelu(1.0); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------- forward mode, batched, meta

def _grad_ufunc(x):
    return torch.from_numpy(g.gelu_backward(np.ones_like(x.numpy()), x.numpy()))


def test_calls_that_record_nothing_skip_the_function_and_keep_tangents():
    # no input needing a gradient (or no_grad): the kernel is called without
    # the autograd.Function, with its bits; a dual tensor needs no gradient,
    # yet keeps its tangent, under no_grad too
    import torch.autograd.forward_ad as fwAD
    x = _x(1001)
    recorded = gt.gelu(x.clone().requires_grad_())
    plain = gt.gelu(x)
    with torch.no_grad():
        off = gt.gelu(x.clone().requires_grad_())
        backward_off = gt.gelu_backward(torch.ones_like(x), x.clone().requires_grad_())
    assert recorded.grad_fn is not None and plain.grad_fn is None and off.grad_fn is None
    assert same_bits(plain.numpy(), recorded.detach().numpy())
    assert same_bits(off.numpy(), plain.numpy())
    assert torch.equal(backward_off, _grad_ufunc(x)) and backward_off.grad_fn is None
    for grad_mode in (True, False):
        with fwAD.dual_level(), torch.set_grad_enabled(grad_mode):
            out = gt.gelu(fwAD.make_dual(x, 2 * torch.ones_like(x)))
            assert torch.equal(fwAD.unpack_dual(out).tangent, 2 * _grad_ufunc(x))
            back = gt.gelu_backward(fwAD.make_dual(torch.ones_like(x), torch.ones_like(x)), x)
            assert torch.equal(fwAD.unpack_dual(back).tangent, _grad_ufunc(x))


def test_forward_mode_ad_jvp_jacfwd_hessian_and_dual_tensors():
    import torch.autograd.forward_ad as fwAD
    from torch.func import hessian, jacfwd, jvp
    x = _x(40)
    want = _grad_ufunc(x)                  # GELU'(x), the fused ufunc
    ones = torch.ones_like(x)
    assert torch.equal(jvp(gt.gelu, (x,), (ones,))[1], want)
    assert torch.equal(torch.diagonal(jacfwd(gt.gelu)(x)), want)
    h = hessian(lambda v: gt.gelu(v).sum())(x)
    assert torch.equal(torch.diagonal(h), torch.from_numpy(g.gelu_grad2(x.numpy())))
    assert torch.count_nonzero(h - torch.diag(torch.diagonal(h))) == 0
    with fwAD.dual_level():
        out = gt.gelu(fwAD.make_dual(x, 2 * ones))
        assert torch.equal(fwAD.unpack_dual(out).tangent, 2 * want)
    # forward over forward is refused (PyTorch runs a Function's jvp rule
    # with the outer forward levels off: three nested jvps gave 0, silently)
    for nested in (jacfwd(jacfwd(gt.gelu)),
                   lambda v: jvp(lambda w: jvp(gt.gelu, (w,), (ones[:3],))[1], (v,),
                                 (ones[:3],))[1]):
        with pytest.raises(RuntimeError, match="forward mode over forward mode"):
            nested(x[:3])


def test_forward_mode_ad_through_the_bare_operator():
    # torch.ops.gelu_numba.* have their own Autograd kernels with a jvp:
    # custom_op's generated one had none, and forward mode gave a tangent of
    # None (zeros) silently.  Under torch.func's differentiating transforms,
    # PyTorch 2.13 cannot run such a rule inside a kernel: they raise on the
    # bare operator, naming the public functions (vmap works)
    import torch.autograd.forward_ad as fwAD
    x = _x(40)
    ones = torch.ones_like(x)
    with fwAD.dual_level():
        out = torch.ops.gelu_numba.gelu(fwAD.make_dual(x, 3 * ones), "none")
        # the fused ufunc, one rounding of 3 GELU'(x)
        want = torch.from_numpy(g.gelu_backward(3 * ones.numpy(), x.numpy()))
        assert torch.equal(fwAD.unpack_dual(out).tangent, want)
        dy = fwAD.make_dual(ones, ones)
        back = torch.ops.gelu_numba.derivative(dy, x, "none", 1)
        assert torch.equal(fwAD.unpack_dual(back).tangent, _grad_ufunc(x))
    for approximate in ("none", "poly6"):
        xr = _x(16).requires_grad_()
        op = lambda v: torch.ops.gelu_numba.gelu(v, approximate)  # noqa: E731
        assert torch.autograd.gradcheck(op, (xr,), check_forward_ad=True)
        assert torch.autograd.gradgradcheck(op, (xr,))
    bare = lambda v: torch.ops.gelu_numba.gelu(v, "none")  # noqa: E731
    for transform in (lambda: torch.func.jvp(bare, (x,), (ones,)),
                      lambda: torch.func.grad(lambda v: bare(v).sum())(x),
                      lambda: torch.func.vjp(bare, x)[1](ones),
                      lambda: torch.func.jacrev(bare)(x)):
        with pytest.raises(RuntimeError, match="of the operator itself are not supported"
                                               ".*call gelu_numba.torch.gelu"):
            transform()
    assert torch.equal(torch.func.vmap(bare)(x[:8].reshape(2, 4)).reshape(-1),
                       torch.from_numpy(g.gelu(x[:8].numpy())))


@pytest.mark.parametrize("approximate", ["none", "tanh", "poly6"])
def test_gradcheck_forward_mode_and_batched(approximate):
    x = _x(20).requires_grad_()
    f = lambda v: gt.gelu(v, approximate)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x,), check_forward_ad=True, check_batched_grad=True)
    if approximate == "none":
        assert torch.autograd.gradgradcheck(f, (x,), check_fwd_over_rev=True,
                                            check_batched_grad=True)


def test_batched_backward():
    x = _x(9).requires_grad_()
    want = _grad_ufunc(x.detach())
    J = torch.autograd.functional.jacobian(gt.gelu, x.detach(), vectorize=True)
    assert torch.equal(torch.diagonal(J), want)
    (rows,) = torch.autograd.grad(gt.gelu(x), x, torch.eye(len(x), dtype=DOUBLE),
                                  is_grads_batched=True)
    assert torch.equal(torch.diagonal(rows), want)


def test_meta_device_propagates_shapes_as_nn_gelu():
    with torch.device("meta"):
        ours = torch.nn.Sequential(torch.nn.Linear(4, 8), gt.GELU(), torch.nn.Linear(8, 2))
        x = torch.empty(3, 4, requires_grad=True)
        y = ours(x)
        t = torch.empty(5, 7).t()
        want = torch.nn.functional.gelu(t)
        got = gt.gelu(t)
        back = gt.gelu_backward(torch.empty(2, 3), torch.empty(2, 3))
    assert y.shape == (3, 2) and y.device.type == "meta"
    assert (got.shape, got.stride(), got.dtype, got.device) == \
        (want.shape, want.stride(), want.dtype, want.device)
    assert back.shape == (2, 3) and back.device.type == "meta"
    y.sum().backward()                     # autograd on meta too, as nn.GELU
    assert x.grad.shape == x.shape and x.grad.device.type == "meta"


# ------------------------------------------------------ export and script

def _mlp(approximate):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), gt.GELU(approximate)).eval()


def _onnx_bytes(model, x, dynamo):
    import io
    if dynamo:
        return torch.onnx.export(model, (x,), dynamo=True, verbose=False).model_proto \
            .SerializeToString()
    f = io.BytesIO()
    torch.onnx.export(model, (x,), f, dynamo=False)
    return f.getvalue()


@pytest.mark.parametrize("dynamo", [False, True], ids=["legacy", "dynamo"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_onnx_export_is_onnx_gelu_of_the_input(approximate, dynamo):
    # The exported graph must take the input and end in ONNX's Gelu with the
    # same approximate attribute (the legacy exporter once wrote the traced
    # eager kernel's output as a constant, with no input at all); run in
    # ONNX Runtime on fresh inputs, it computes GELU (ORT's, not this
    # package's kernel) of the same Linear: equal to rounding
    import onnx
    import onnxruntime as ort
    model = _mlp(approximate)
    data = _onnx_bytes(model, torch.randn(3, 6), dynamo)
    graph = onnx.load_from_string(data).graph
    assert len(graph.input) == 1
    gelu_nodes = [n for n in graph.node if n.op_type == "Gelu"]
    assert len(gelu_nodes) == 1
    attrs = {a.name: a.s.decode() for a in gelu_nodes[0].attribute}
    assert attrs.get("approximate", "none") == approximate
    session = ort.InferenceSession(data)
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(1)) * 3
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dynamo", [False, True], ids=["legacy", "dynamo"])
@pytest.mark.parametrize("approximate", ["sigmoid", "as26", "poly6", "rat44"])
def test_onnx_export_of_the_other_approximations_is_their_formula(approximate, dynamo):
    # No ONNX operator: the graph is the formula's subgraph in double, cast
    # back once.  ONNX Runtime's result on other inputs than the traced ones
    # (with +-inf, 0 and both tails) is the module's to an ulp of float32:
    # both are the formula rounded once
    import onnx
    import onnxruntime as ort

    class Act(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.act = gt.GELU(approximate)

        def forward(self, x):
            return self.act(x)

    x = torch.cat([torch.linspace(-9, 9, 2001),
                   torch.tensor([float("inf"), -float("inf"), 0.0, -0.0, -1e30, 1e-30])])
    data = _onnx_bytes(Act(), torch.randn(x.shape), dynamo)
    graph = onnx.load_from_string(data).graph
    assert len(graph.input) == 1
    ops = {n.op_type for n in graph.node}
    assert "Gelu" not in ops and "Cast" in ops, ops
    session = ort.InferenceSession(data)
    got = torch.from_numpy(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0])
    with torch.no_grad():
        want = gt.gelu(x, approximate)
    assert same_bits(torch.signbit(got).numpy(), torch.signbit(want).numpy())
    ulp = torch.finfo(torch.float32).eps * want.abs().clamp(min=torch.finfo(torch.float32).tiny)
    assert torch.all((got - want).abs()[torch.isfinite(want)] <= ulp[torch.isfinite(want)])
    assert torch.equal(got[torch.isinf(want)], want[torch.isinf(want)])


def test_onnx_export_of_an_exported_program_with_the_translation_table():
    # torch.export keeps gelu_numba::gelu as one node: without the table the
    # dynamo exporter has no ONNX function for it; with it, ONNX's Gelu,
    # run in ORT; an approximation without an ONNX operator raises, naming
    # the module export
    import onnxruntime as ort
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(3)) * 3
    for approximate in ("none", "tanh"):
        model = _mlp(approximate)
        program = torch.export.export(model, (x,))
        onnx_program = torch.onnx.export(program, (x,), dynamo=True, verbose=False,
                                         custom_translation_table=gt.onnx_translation_table())
        proto = onnx_program.model_proto
        assert [n.op_type for n in proto.graph.node].count("Gelu") == 1
        session = ort.InferenceSession(proto.SerializeToString())
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
        with torch.no_grad():
            np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-6)
    program = torch.export.export(_mlp("poly6"), (x,))
    with pytest.raises(Exception) as info:
        torch.onnx.export(program, (x,), dynamo=True, verbose=False,
                          custom_translation_table=gt.onnx_translation_table())
    chain, e = [], info.value
    while e is not None:
        chain.append(str(e))
        e = e.__cause__ or e.__context__
    assert any("export the nn.Module" in text for text in chain), chain[:2]


def test_onnx_export_of_gelu_backward_raises():
    class Backward(torch.nn.Module):
        def forward(self, x):
            return gt.gelu_backward(torch.ones_like(x), x)

    with pytest.raises(RuntimeError, match="derivatives have no ONNX form"):
        _onnx_bytes(Backward(), torch.randn(3), dynamo=False)


@pytest.mark.parametrize("approximate", ["none", "tanh", "poly6"])
def test_torchscript_script_and_trace_save_load(approximate):
    import io
    model = _mlp(approximate).train()
    x = (torch.randn(4, 6, generator=torch.Generator().manual_seed(2)) * 3).requires_grad_()
    want = model(x)
    (want_grad,) = torch.autograd.grad(want.sum(), x)
    scripted = torch.jit.script(model)
    traced = torch.jit.trace(model, (torch.randn(2, 6),))
    for compiled in (scripted, traced):
        buffer = io.BytesIO()
        torch.jit.save(compiled, buffer)
        buffer.seek(0)
        loaded = torch.jit.load(buffer)
        assert "gelu_numba::gelu" in str(getattr(loaded, "1").inlined_graph)
        for run in (compiled, loaded):
            got = run(x)
            assert torch.equal(got, want)     # the operator: the same kernel
            (grad,) = torch.autograd.grad(got.sum(), x)
            assert torch.equal(grad, want_grad)


# ------------------------------------------------------------------- CUDA

def _within_one_ulp(got, want):
    # NVVM may contract a product and a sum into an FMA: one ulp apart at most
    dtype = want.dtype
    ulp = torch.finfo(dtype).eps * want.double().abs().clamp_min(torch.finfo(dtype).tiny)
    return bool(((got.cpu().double() - want.double()).abs() <= ulp).all())


@CUDA
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_cuda_matches_cpu(dtype):
    x = _x(100_003, dtype=torch.float32).to(dtype)
    xc = x.cuda().requires_grad_()
    y = gt.gelu(xc)
    y.backward(torch.ones_like(y))
    assert y.device == xc.device and y.dtype == dtype and xc.grad.dtype == dtype
    assert _within_one_ulp(y.detach(), gt.gelu(x))
    assert _within_one_ulp(xc.grad, gt.gelu_backward(torch.ones_like(x), x))


@CUDA
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cuda_fast_launch_is_taken_and_exact(dtype):
    # contiguous float32/float64 go through the fast launch (raw pointers,
    # the current stream), bit for bit the general path's result
    from gelu_numba import gpu
    from gelu_numba.targets import torch as torch_op
    x = _x(100_003, dtype=dtype).cuda()
    before = torch_op.FAST_CUDA_CALLS[0]
    y = gt.gelu(x)
    dx = gt.gelu_backward(torch.ones_like(x), x)
    assert torch_op.FAST_CUDA_CALLS[0] == before + 2
    general = torch.empty_like(x)
    gpu.gelu(x, out=general)          # numba-cuda's launch, through the interface
    torch.cuda.synchronize()
    assert torch.equal(y, general)
    assert _within_one_ulp(dx, gt.gelu_backward(torch.ones_like(x.cpu()), x.cpu()))
    # on a side stream: ordered after the producer, read after a sync
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        z = gt.gelu(x * 2)
    s.synchronize()
    assert _within_one_ulp(z, gt.gelu((x * 2).cpu()))


@CUDA
def test_cuda_fast_launch_from_a_thread_with_no_context():
    # a fresh thread has no CUDA context bound (PyTorch's autograd workers
    # neither: test_cuda_matches_cpu's backward); the fast launch binds one
    import threading
    x = _x(4099).cuda()
    got = {}

    def work():
        try:
            got["y"] = gt.gelu(x).cpu()
        except BaseException as exc:  # (re-raised below, on the test's thread)
            got["error"] = exc

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    if "error" in got:
        raise got["error"]
    assert same_bits(got["y"], gt.gelu(x).cpu())
    assert _within_one_ulp(got["y"], gt.gelu(x.cpu()))


@CUDA
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_halves_in_one_pass_are_the_cpu_bits(dtype):
    # contiguous half tensors: the 2-byte kernels through their fast launch,
    # bits in and out, the same correctly rounded bits as the CPU loops
    # (forward and fused backward)
    from gelu_numba.targets import torch as torch_op
    x = _x(50_000, dtype=torch.float32).to(dtype)
    dy = torch.flip(x, [0]).contiguous()
    xc, dyc = x.cuda(), dy.cuda()
    before = torch_op.FAST_CUDA_CALLS[0]
    assert torch.equal(gt.gelu(xc).cpu().view(torch.int16), gt.gelu(x).view(torch.int16))
    assert torch.equal(gt.gelu_backward(dyc, xc).cpu().view(torch.int16),
                       gt.gelu_backward(dy, x).view(torch.int16))
    assert torch_op.FAST_CUDA_CALLS[0] == before + 2


@CUDA
def test_cuda_on_a_side_stream_and_non_contiguous():
    x = torch.randn(300, 200, device="cuda").t()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = gt.gelu(x)
    s.synchronize()
    assert y.stride() == x.stride()
    assert _within_one_ulp(y, gt.gelu(x.cpu()))


@CUDA
def test_cuda_compile_and_gradcheck():
    x = _x(64).cuda().requires_grad_()
    assert torch.autograd.gradgradcheck(gt.gelu, (x,))
    m = torch.compile(gt.GELU(), fullgraph=True)
    assert torch.equal(m(x), gt.gelu(x))
