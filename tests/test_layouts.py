"""Every layout NumPy hands a loop gives the contiguous call's bits.

The loop runs one vectorised element loop on blocks; operands that are not
unit-stride are gathered into (or, for the output, scattered from)
contiguous scratch blocks, and a broadcast scalar fills one block once
(:mod:`gelu_numba.targets.cpu`).  The same kernel computes every element,
so each layout must reproduce the contiguous call bit for bit: every
catalog function in float32 and float64, the float16 and bfloat16 loops,
the parallel ufuncs and an emulation, over sizes that end inside a block
and cross block boundaries.  Expected values: the same ufunc's contiguous
call (whose accuracy the proof tier measures against mpmath), never a
typed result.
"""

import numpy as np
import pytest

from gelu_numba import catalog, production
from gelu_numba.targets import cpu
from gelu_numba.targets.cpu import half_loops as half, parallel

pytestmark = [pytest.mark.unit,
              # the specials raise NumPy's floating-point warnings in every layout
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

#: sizes: one element, a short run, one block and a bit, two blocks and a
#: partial one (of the largest block, float16's)
SIZES = (1, 7, cpu.BUFFER["f"] + 13, 2 * cpu.BUFFER["e"] + 37)


def _values(n, dtype, seed):
    """Inputs over the interesting range (both tails, zeros, specials)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 4
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -40.0, 1e-30, -7.5, 3.9, -3.9]
    x[: min(n, len(specials))] = specials[: min(n, len(specials))]
    return x.astype(dtype)


def _operands(fn, n, dtype, seed=0):
    """Contiguous operands of ``fn``: for gelu_general, sigma > 0 and 0."""
    ops = [_values(n, dtype, seed + k) for k in range(fn.nin)]
    if fn.name == "gelu_general":
        ops[2] = np.abs(ops[2]) + dtype(0.25)
        ops[2][:: 97] = 0
        ops[2][np.isnan(ops[2])] = 1
    return ops


def _same(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    assert np.array_equal(a.view(bits), b.view(bits)), what


def _strided(a, step, offset=0):
    """``a`` as a view with ``step`` elements between neighbours (negative:
    reversed), holding the same values."""
    base = np.full(len(a) * abs(step) + offset + 1, np.nan, dtype=a.dtype)
    view = base[offset::step][: len(a)] if step > 0 else base[::step][: len(a)]
    view[...] = a
    return view


def _layouts(ufunc, ops):
    """(name, result) of each layout against the contiguous call's result."""
    n = len(ops[0])
    yield "stride 2", ufunc(*(_strided(a, 2) for a in ops))
    yield "stride -1", ufunc(*(_strided(a, -1) for a in ops))
    yield "stride 7 and 3", ufunc(*(_strided(a, 7 if k % 2 else 3) for k, a in enumerate(ops)))
    column = np.empty((n, 5), dtype=ops[0].dtype)
    column[:, 2] = ops[0]
    yield "a column of a C matrix", ufunc(column[:, 2], *ops[1:])
    out = _strided(np.zeros(n, ops[0].dtype), 3)
    ufunc(*ops, out=out)
    yield "strided output", out
    mixed = _strided(np.zeros(n, ops[0].dtype), -2)
    ufunc(_strided(ops[0], 2), *ops[1:], out=mixed)
    yield "strided input, reversed output", mixed
    inplace = _strided(ops[0], 2)
    ufunc(inplace, *ops[1:], out=inplace)
    yield "in place, strided", inplace


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", [f.name for f in catalog.FUNCTIONS])
def test_every_layout_is_the_contiguous_call(name, dtype):
    fn = catalog.lookup(name)
    ufunc = cpu.REGISTRY.get(fn)
    for n in SIZES:
        ops = _operands(fn, n, dtype)
        want = ufunc(*ops)
        for what, got in _layouts(ufunc, ops):
            _same(got, want, f"{name} {dtype.__name__} n={n}: {what}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", [f.name for f in catalog.FUNCTIONS if f.nin > 1])
def test_broadcast_operands_in_every_position(name, dtype):
    # a scalar, a 0-d array and a stride-0 array in each position, alone
    # and together, against the contiguous call with the value repeated
    fn = catalog.lookup(name)
    ufunc = cpu.REGISTRY.get(fn)
    for n in SIZES:
        ops = _operands(fn, n, dtype)
        for k in range(fn.nin):
            value = ops[k][-1]
            full = [np.full(n, value, dtype) if j == k else a for j, a in enumerate(ops)]
            want = ufunc(*full)
            for form in (value, np.array(value), np.broadcast_to(value, n)):
                got = ufunc(*[form if j == k else a for j, a in enumerate(ops)])
                _same(got, want, f"{name} {dtype.__name__} n={n}: operand {k} as "
                                 f"{type(form).__name__}")
            strided = ufunc(*[np.broadcast_to(value, n) if j == k else _strided(a, 2)
                              for j, a in enumerate(ops)])
            _same(strided, want, f"{name} n={n}: operand {k} broadcast, others strided")
        scalars = [a[-1] for a in ops[1:]]
        _same(ufunc(ops[0], *scalars),
              ufunc(ops[0], *(np.full(n, s, dtype) for s in scalars)),
              f"{name} n={n}: every parameter a scalar")


@pytest.mark.parametrize("name", ["gelu", "gelu_backward"])
def test_parallel_layouts(name):
    # long enough for the parallel blocks when contiguous; strided and
    # broadcast calls take the buffered loop on the calling thread
    fn = catalog.lookup(name)
    ufunc = parallel.REGISTRY.get(fn)
    for dtype, char in ((np.float32, "f"), (np.float64, "d")):
        ops = _operands(fn, parallel.THRESHOLD[char] + 101, dtype)
        want = ufunc(*ops)
        _same(want, cpu.REGISTRY.get(fn)(*ops), f"parallel {name}: serial ufunc")
        for what, got in _layouts(ufunc, ops):
            _same(got, want, f"parallel {name} {dtype.__name__}: {what}")
        if fn.nin > 1:
            _same(ufunc(dtype(0.75), ops[1]), ufunc(np.full_like(ops[1], 0.75), ops[1]),
                  f"parallel {name}: scalar dy")


@pytest.mark.parametrize("name", half.FUNCTIONS)
def test_float16_and_bfloat16_layouts(name):
    fn = catalog.lookup(name)
    ufunc16 = cpu.REGISTRY.get(fn)
    bf16 = half.bfloat16_ufunc(f"{name}_bfloat16")
    for n in SIZES:
        ops = _operands(fn, n, np.float16)
        want = ufunc16(*ops)
        assert want.dtype == np.float16
        for what, got in _layouts(ufunc16, ops):
            _same(got, want, f"{name} float16 n={n}: {what}")
        bits = [_values(n, np.float32, 10 + k).view(np.uint32) >> 16 for k in range(fn.nin)]
        bits = [b.astype(np.uint16) for b in bits]
        want = bf16(*bits)
        for what, got in _layouts(bf16, bits):
            _same(got, want, f"{name} bfloat16 n={n}: {what}")
        if fn.nin > 1:
            _same(ufunc16(np.float16(1.5), ops[1]), ufunc16(np.full(n, 1.5, np.float16), ops[1]),
                  f"{name} float16 n={n}: scalar dy")


def test_an_emulation_layouts():
    ufunc = production.ufunc(next(iter(production.PRODUCTION)))
    for n in SIZES:
        x = _values(n, np.float32, 3)
        want = ufunc(x)
        for what, got in _layouts(ufunc, [x]):
            _same(got, want, f"emulation n={n}: {what}")


def test_accumulate_and_reduce_keep_their_order():
    # NumPy's accumulate and reduce hand the loop an input that is the
    # output one element back: no block may be read ahead of its writes
    ufunc = cpu.REGISTRY.get(catalog.lookup("gelu_backward"))
    for dtype in (np.float32, np.float64, np.float16):
        x = _values(3 * cpu.BUFFER["f"], dtype, 5)
        x[np.isnan(x) | np.isinf(x)] = 0.5
        acc = ufunc.accumulate(x)
        want = [x[0]]
        for v in x[1:]:
            want.append(ufunc(want[-1], v))
        _same(acc, np.array(want, dtype=dtype), f"accumulate {dtype.__name__}")
        _same(ufunc.reduce(x), want[-1], f"reduce {dtype.__name__}")
        acc2 = ufunc.accumulate(_strided(x, 3))
        _same(acc2, acc, f"accumulate of a strided view {dtype.__name__}")
