"""gelu_numba.torch on the paths around eager autograd: dispatch modes,
tensor subclasses, torch.fx and its quantization, TorchScript of the
functions, quantized and nested tensors.

Each path must give the eager result's values (the eager result is the
ufunc's, proven against mpmath elsewhere), or PyTorch's own where the path
adds arithmetic of PyTorch's (quantization), and each tool must see the
operator: a mode that saw only ``empty_like`` would replay uninitialised
memory.
"""

import functools
import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.fx.experimental.proxy_tensor import make_fx

import gelu_numba as g
import gelu_numba.torch as gt
from reference import mp

pytestmark = pytest.mark.unit

GELU_OP = torch.ops.gelu_numba.gelu.default
DERIVATIVE_OP = torch.ops.gelu_numba.derivative.default


def _x(n=64, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=gen, dtype=torch.float64) * 3).to(dtype)


def _eager_grad(x, dy):
    return torch.from_numpy(g.gelu_backward(dy.numpy(), x.numpy()))


class Recording(TorchDispatchMode):
    """A logging mode: the operators it sees, run as they are."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func)
        return func(*args, **(kwargs or {}))


class Wrapped(torch.Tensor):
    """A ``__torch_dispatch__`` wrapper subclass (the DTensor pattern): it
    unwraps, runs the operator on the inner tensor and wraps the result."""

    seen = []

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(
            cls, inner.shape, dtype=inner.dtype, device=inner.device,
            requires_grad=inner.requires_grad)

    def __init__(self, inner):
        self.inner = inner

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(func)
        unwrap = lambda t: t.inner if isinstance(t, Wrapped) else t  # noqa: E731
        out = func(*map(unwrap, args), **{k: unwrap(v) for k, v in (kwargs or {}).items()})
        wrap = lambda t: Wrapped(t) if isinstance(t, torch.Tensor) else t  # noqa: E731
        return torch.utils._pytree.tree_map(wrap, out)


# ----------------------------------------------------------- dispatch modes

@pytest.mark.parametrize("mode", ["real", "fake", "symbolic"])
def test_make_fx_records_and_replays_the_operator(mode):
    x, other = _x(), _x(seed=1)

    def f(v):
        return gt.gelu(v) * 2 + torch.sin(v)

    graph = make_fx(f, tracing_mode=mode)(x)
    targets = [n.target for n in graph.graph.nodes if n.op == "call_function"]
    assert GELU_OP in targets and torch.ops.aten.empty_like.default not in targets
    assert torch.equal(graph(other), f(other))


def test_make_fx_of_a_backward_records_the_derivative():
    x, dy = _x(), _x(seed=2)

    def backward(v, d):
        v = v.detach().requires_grad_()
        (grad,) = torch.autograd.grad(gt.gelu(v), v, d)
        return grad

    graph = make_fx(backward)(x, dy)
    targets = [n.target for n in graph.graph.nodes if n.op == "call_function"]
    assert DERIVATIVE_OP in targets
    other, d_other = _x(seed=3), _x(seed=4)
    assert torch.equal(graph(other, d_other), _eager_grad(other, d_other))


def test_linearize_is_the_fused_backward():
    x, t = _x(), _x(seed=5)
    out, jvp_fn = torch.func.linearize(gt.gelu, x)
    assert torch.equal(out, gt.gelu(x))
    assert torch.equal(jvp_fn(t), _eager_grad(x, t))
    assert torch.equal(jvp_fn(torch.ones_like(x)), _eager_grad(x, torch.ones_like(x)))


def test_a_logging_mode_sees_forward_and_backward():
    x = _x().requires_grad_()
    dy = _x(seed=6)
    with Recording() as mode:
        y = gt.gelu(x)
        (grad,) = torch.autograd.grad(y, x, dy)
    assert GELU_OP in mode.seen and DERIVATIVE_OP in mode.seen
    assert torch.ops.aten.empty_like.default not in mode.seen
    assert torch.equal(y, gt.gelu(x.detach()))
    assert torch.equal(grad, _eager_grad(x.detach(), dy))
    with Recording() as mode:      # no gradient to record: the same rule
        y = gt.gelu(x.detach(), "tanh")
    assert GELU_OP in mode.seen and torch.ops.aten.empty_like.default not in mode.seen
    assert torch.equal(y, gt.gelu(x.detach(), "tanh"))


def test_a_wrapper_subclass_sees_and_runs_the_operator():
    x, dy = _x(), _x(seed=7)
    Wrapped.seen = []
    w = Wrapped(x.clone().requires_grad_())
    y = gt.gelu(w)
    assert isinstance(y, Wrapped) and GELU_OP in Wrapped.seen
    assert torch.equal(y.inner, gt.gelu(x))
    (grad,) = torch.autograd.grad(y, w, Wrapped(dy))
    assert DERIVATIVE_OP in Wrapped.seen
    assert torch.equal(grad.inner, _eager_grad(x, dy))
    back = gt.gelu_backward(Wrapped(dy), Wrapped(x))
    assert torch.equal(back.inner, _eager_grad(x, dy))


def test_flop_counter_mode_counts_the_model_and_keeps_the_values():
    from torch.utils.flop_counter import FlopCounterMode
    torch.manual_seed(0)
    ours = torch.nn.Sequential(torch.nn.Linear(8, 16), gt.GELU(), torch.nn.Linear(16, 4))
    stock = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    stock.load_state_dict(ours.state_dict())
    x = torch.randn(5, 8)
    want = ours(x)
    counts = []
    for model in (ours, stock):
        with FlopCounterMode(display=False) as counter:
            got = model(x)
            got.sum().backward()
        counts.append(counter.get_total_flops())
        if model is ours:
            assert torch.equal(got, want)
    assert counts[0] == counts[1] > 0


@pytest.mark.parametrize("policy", ["save", "recompute"])
def test_selective_checkpointing_with_a_policy_naming_the_operator(policy, monkeypatch):
    from torch.utils.checkpoint import (CheckpointPolicy, checkpoint,
                                        create_selective_checkpoint_contexts)
    from gelu_numba.targets.torch import ops
    seen, runs = [], []
    kernel = ops.gelu_body
    # (ops, where gelu_numba::gelu reads it)
    monkeypatch.setattr(ops, "gelu_body", lambda *a: runs.append(1) or kernel(*a))

    def choose(ctx, op, *args, **kwargs):
        seen.append(op)
        if op == GELU_OP and policy == "save":
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    x, dy = _x(), _x(seed=8)
    w = torch.linspace(-1, 1, 64, dtype=torch.float64)
    leaf = x.clone().requires_grad_()

    def block(v):   # the outer gelu's backward needs gelu(v) * w
        return gt.gelu(gt.gelu(v) * w)

    y = checkpoint(block, leaf, use_reentrant=False,
                   context_fn=functools.partial(create_selective_checkpoint_contexts, choose))
    assert seen.count(GELU_OP) == 2 and len(runs) == 2
    del runs[:]
    (grad,) = torch.autograd.grad(y, leaf, dy)
    # a saved result is not computed again in the backward
    assert (len(runs) > 0) == (policy == "recompute")
    inner = gt.gelu(x)
    assert torch.equal(y, gt.gelu(inner * w))
    assert torch.equal(grad, _eager_grad(x, _eager_grad(inner * w, dy) * w))


def test_a_torch_function_mode_sees_the_public_functions():
    from torch.overrides import TorchFunctionMode

    class Functions(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return func(*args, **(kwargs or {}))

    x, dy = _x(), _x(seed=9)
    with Functions() as mode:
        y = gt.gelu(x)
        back = gt.gelu_backward(dy, x)
    assert gt.gelu in mode.seen and gt.gelu_backward in mode.seen
    assert torch.equal(y, torch.from_numpy(g.gelu(x.numpy())))
    assert torch.equal(back, _eager_grad(x, dy))
    with torch.device("meta"):      # a TorchFunctionMode of PyTorch's own
        assert gt.gelu(torch.empty(3)).is_meta


# ------------------------------------------------------------------ torch.fx

def test_symbolic_trace_records_a_call_of_gelu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), gt.GELU("tanh"), torch.nn.Linear(8, 2))
    traced = torch.fx.symbolic_trace(model)
    calls = [n for n in traced.graph.nodes if n.op == "call_function"]
    assert [n.target for n in calls] == [gt.gelu]
    assert calls[0].kwargs == {"approximate": "tanh"}
    x = torch.randn(4, 6)
    assert torch.equal(traced(x), model(x))

    def f(v, d):
        return gt.gelu(v) + gt.gelu_backward(d, v)

    traced = torch.fx.symbolic_trace(f)
    assert {n.target for n in traced.graph.nodes if n.op == "call_function"} >= {
        gt.gelu, gt.gelu_backward}
    x, dy = _x(), _x(seed=10)
    assert torch.equal(traced(x, dy), f(x, dy))


def _quantize_fx(model, x):
    import warnings

    from torch.ao.quantization import get_default_qconfig_mapping, quantize_fx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.ao's notice that it moves to torchao
        prepared = quantize_fx.prepare_fx(model, get_default_qconfig_mapping("x86"), (x,))
        prepared(x)
        return quantize_fx.convert_fx(prepared)


def test_prepare_fx_convert_fx_computes_gelu_on_dequantized_values():
    torch.manual_seed(0)
    ours = torch.nn.Sequential(torch.nn.Linear(8, 16), gt.GELU(), torch.nn.Linear(16, 4)).eval()
    stock = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                                torch.nn.Linear(16, 4)).eval()
    stock.load_state_dict(ours.state_dict())
    x = torch.randn(64, 8) * 2
    q_ours, q_stock = _quantize_fx(ours, x), _quantize_fx(stock, x)
    (node,) = [n for n in q_ours.graph.nodes if n.target is gt.gelu]
    assert node.args[0].target == "dequantize"          # float in ...
    assert [u.target for u in node.users] == [torch.quantize_per_tensor]   # ... quantized out
    # calibration observed our GELU's outputs, which differ from this
    # CPU's F.gelu by an ulp here and there (oneDNN's AVX-512 and AVX2
    # kernels differ too), so the observers' parameters agree to about an
    # ulp of the extremes, not to the bit
    ours_params, stock_params = q_ours.state_dict(), q_stock.state_dict()
    assert ours_params.keys() == stock_params.keys()
    for key in ("1_scale_0", "1_zero_point_0", "2.scale", "2.zero_point"):
        assert torch.allclose(torch.as_tensor(ours_params[key], dtype=torch.float64),
                              torch.as_tensor(stock_params[key], dtype=torch.float64),
                              rtol=1e-5, atol=0), key
    # torch quantizes nn.GELU's model the same way: with F.gelu in our
    # node's place and the same parameters, the quantized models give the
    # same bits
    node.target = F.gelu
    q_ours.recompile()
    q_ours.load_state_dict(stock_params)
    assert torch.equal(q_ours(x), q_stock(x))


# -------------------------------------------------------------- TorchScript

def test_script_of_code_that_calls_the_functions():
    class Block(torch.nn.Module):
        def forward(self, v, d):
            return gt.gelu(v) * 2 + gt.gelu(v, "tanh") + gt.gelu_backward(d, v)

    def function(v: torch.Tensor) -> torch.Tensor:
        return gt.gelu(v, approximate="poly6")

    x, dy = _x(), _x(seed=11)
    block = Block()
    scripted = torch.jit.script(block)
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    for run in (scripted, loaded):
        assert "gelu_numba::gelu" in str(run.inlined_graph)
        assert torch.equal(run(x, dy), block(x, dy))
    assert torch.equal(torch.jit.script(function)(x), function(x))
    assert torch.equal(torch.jit.script(gt.gelu_backward)(dy, x), _eager_grad(x, dy))


# ------------------------------------------------------- quantized tensors

@pytest.mark.parametrize("dtype, zero_point", [(torch.quint8, 128), (torch.qint8, 0)])
def test_quantized_tensors_are_gelu_of_the_dequantized_values(dtype, zero_point):
    values = torch.linspace(-6.3, 6.3, 253)
    q = torch.quantize_per_tensor(values, 0.05, zero_point, dtype)
    y = gt.gelu(q)
    assert y.dtype == dtype and y.q_scale() == q.q_scale() and y.q_zero_point() == zero_point
    # the exact GELU (mpmath) of each dequantized value, correctly rounded
    # to float32, quantized as PyTorch quantizes
    exact = torch.tensor([float(mp.to_double(mp.gelu(float(v)))) for v in q.dequantize()],
                         dtype=torch.float32)
    want = torch.quantize_per_tensor(exact, q.q_scale(), zero_point, dtype)
    assert torch.equal(y.int_repr(), want.int_repr())
    # PyTorch's own quantized GELU rounds its CPU-dependent float GELU (an
    # ulp off ours here and there), so it may land one step away where a
    # value sits on a midpoint of the quantization grid
    theirs = F.gelu(q).int_repr().to(torch.int32)
    assert (y.int_repr().to(torch.int32) - theirs).abs().max() <= 1
    assert torch.equal(gt.GELU()(q).int_repr(), want.int_repr())


def test_per_channel_quantized_tensors_keep_their_channels():
    values = torch.linspace(-5, 5, 120).reshape(3, 40)
    scales, points = torch.tensor([0.05, 0.1, 0.02]), torch.tensor([128, 100, 120])
    q = torch.quantize_per_channel(values, scales, points, 0, torch.quint8)
    y = gt.gelu(q)
    assert y.qscheme() == torch.per_channel_affine
    want = torch.quantize_per_channel(torch.from_numpy(g.gelu(q.dequantize().numpy())),
                                      scales, points, 0, torch.quint8)
    assert torch.equal(y.int_repr(), want.int_repr())


def test_eager_mode_quantization_of_a_model():
    import warnings

    from torch.ao.quantization import (DeQuantStub, QuantStub, convert, get_default_qconfig,
                                       prepare)

    class Net(torch.nn.Module):
        def __init__(self, act):
            super().__init__()
            self.quant, self.dequant = QuantStub(), DeQuantStub()
            self.first, self.act, self.second = torch.nn.Linear(8, 16), act, torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.dequant(self.second(self.act(self.first(self.quant(x)))))

    x = torch.randn(64, 8) * 2
    converted = []
    for act in (gt.GELU(), torch.nn.GELU()):
        torch.manual_seed(1)
        net = Net(act).eval()
        net.qconfig = get_default_qconfig("x86")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prepared = prepare(net)
            prepared(x)
            converted.append(convert(prepared))
    ours, stock = converted
    assert type(ours.act) is gt.GELU
    # the activation's input is quantized; its output PyTorch's own bits
    hidden = ours.first(ours.quant(x))
    assert hidden.is_quantized
    assert torch.equal(ours.act(hidden).int_repr(), stock.act(hidden).int_repr())
    # the models differ in the second layer's calibrated scale only (it
    # observed the float GELUs, which differ in the last bits)
    assert torch.allclose(ours(x), stock(x), rtol=0, atol=2 * stock.second.scale)


# ------------------------------------------------------------ nested tensors

@pytest.mark.parametrize("layout", [torch.jagged, torch.strided])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_nested_tensors_forward_and_backward(layout, approximate):
    parts = [_x(6, seed=12).reshape(2, 3), _x(12, seed=13).reshape(4, 3)]
    nested = torch.nested.nested_tensor(parts, layout=layout, requires_grad=True)
    y = gt.gelu(nested, approximate)
    assert y.is_nested and y.layout == layout
    for got, part in zip(y.unbind(), parts):
        assert torch.equal(got, gt.gelu(part, approximate))
    dy = torch.nested.nested_tensor([p * 0.5 + 1 for p in parts], layout=layout)
    if layout == torch.jagged:   # one structure: the same offsets
        dy = torch.nested.nested_tensor_from_jagged(dy.values(), y.offsets())
    (grad,) = torch.autograd.grad(y, nested, dy)
    for got, part, d in zip(grad.unbind(), parts, dy.unbind()):
        x = part.clone().requires_grad_()
        (want,) = torch.autograd.grad(gt.gelu(x, approximate), x, d)
        assert torch.equal(got, want)
    back = gt.gelu_backward(dy, nested.detach(), approximate)
    for got, part, d in zip(back.unbind(), parts, dy.unbind()):
        assert torch.equal(got, gt.gelu_backward(d, part, approximate))
    # the operator itself, and below autograd (PyTorch's jagged tensors
    # refuse inference mode: F.gelu too)
    below = torch.no_grad() if layout == torch.jagged else torch.inference_mode()
    with below:
        bare = torch.ops.gelu_numba.gelu(nested.detach(), approximate)
    for got, part in zip(bare.unbind(), parts):
        assert torch.equal(got, gt.gelu(part, approximate))


def test_quantized_tensors_have_no_backward():
    q = torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.quint8)
    with pytest.raises(NotImplementedError, match="float16, bfloat16, float32 or float64"):
        gt.gelu_backward(q, q)
    assert np.array_equal(gt.gelu(q).dequantize().numpy(),
                          torch.quantize_per_tensor(torch.from_numpy(g.gelu(np.ones(3, np.float32))),
                                                    0.1, 0, torch.quint8).dequantize().numpy())


# ------------------------------------------------------------ Hugging Face

@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_transformers_save_and_load_keep_the_exact_gelu(family, tmp_path):
    import json
    import subprocess
    import sys

    import transformers
    names = gt.register_transformers()
    assert names[0] == "gelu_numba" and "gelu_numba_tanh" in names
    if family == "bert":
        model_cls, field = transformers.BertModel, "hidden_act"
        config = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=32)
    else:
        model_cls, field = transformers.GPT2Model, "activation_function"
        config = transformers.GPT2Config(vocab_size=50, n_embd=16, n_layer=2, n_head=2,
                                         activation_function="gelu")
    torch.manual_seed(0)
    stock = model_cls(config).eval()
    stock.save_pretrained(tmp_path / "stock")
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(0))

    def exact_gelus(model):
        found = [m for m in model.modules() if isinstance(m, torch.nn.GELU)]
        return bool(found) and all(type(m) is gt.GELU and m.approximate == "none"
                                   for m in found)

    # a pretrained model, loaded with the exact GELU named in its config
    ours = model_cls.from_pretrained(tmp_path / "stock", **{field: "gelu_numba"}).eval()
    assert exact_gelus(ours) and not exact_gelus(stock)
    with torch.no_grad():
        want = ours(ids).last_hidden_state
        assert torch.allclose(want, stock(ids).last_hidden_state, rtol=0, atol=1e-5)
    ours.save_pretrained(tmp_path / "ours")
    assert json.loads((tmp_path / "ours" / "config.json").read_text())[field] == "gelu_numba"
    again = model_cls.from_pretrained(tmp_path / "ours").eval()
    assert exact_gelus(again)
    with torch.no_grad():
        assert torch.equal(again(ids).last_hidden_state, want)
    if family != "bert":
        return
    # a process that did not register the names stops; it never builds
    # another GELU in their place
    code = (f"import transformers; transformers.{model_cls.__name__}"
            f".from_pretrained({str(tmp_path / 'ours')!r})")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode != 0 and "KeyError: 'gelu_numba'" in run.stderr, run.stderr[-2000:]
