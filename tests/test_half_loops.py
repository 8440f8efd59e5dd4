"""The 2-byte loops: gelu_numba.gelu/gelu_grad/gelu_backward on float16 and
gelu_numba.half's bfloat16 bit-pattern ufuncs.  Expected values: the
correctly rounded results in tests/data/half_reference.npz (mpmath, every
finite input), mpmath for the backward's products, mathematics for the
special values."""

import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import gelu_numba as g
from gelu_numba import catalog, half
from gelu_numba.internals import numba_core
from reference.make_half_table import round_to_format

pytestmark = pytest.mark.unit

TABLE = np.load(Path(__file__).parent / "data" / "half_reference.npz")
FORMATS = ("float16", "bfloat16")


def _values(bits, fmt):
    if fmt == "float16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _call(name, fmt, *bits):
    """The function on bit patterns of fmt, bits out."""
    if fmt == "float16":
        out = getattr(g, name)(*(b.view(np.float16) for b in bits))
        assert out.dtype == np.float16
        return out.view(np.uint16)
    out = getattr(half, f"{name}_bfloat16")(*bits)
    assert out.dtype == np.uint16
    return out


def _expected(name, fmt):
    bits = TABLE[f"{fmt}_bits"]
    want = TABLE[f"{fmt}_{name}_cr"].copy()
    # mpmath has no signed zero: the table holds +0 for GELU(-0), which is
    # -0 * Phi(0) = -0 (IEEE; PyTorch's F.gelu(-0.0) is -0.0 too)
    if name == "gelu":
        want[bits == 0x8000] = 0x8000
    return bits, want


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", [f.name for f in catalog.FUNCTIONS if f.half and f.nin == 1])
def test_correctly_rounded_at_every_finite_input(name, fmt):
    bits, want = _expected(name, fmt)
    got = _call(name, fmt, bits)
    wrong = np.flatnonzero(got != want)
    assert wrong.size == 0, (f"{wrong.size} of {bits.size} misrounded, e.g. x bits "
                             f"{[hex(b) for b in bits[wrong[:5]]]}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_ties_that_float32_misses(fmt):
    # the inputs where GELU computed in float32 and rounded once is wrong
    # (the exact value just above a tie x/2: float16 2**-24 and -2**-24,
    # every subnormal bfloat16); here correctly rounded, as above
    x = np.float64([2.0**-24, -(2.0**-24)]) if fmt == "float16" else \
        np.float64([2.0**-133, -(2.0**-133), -(3 * 2.0**-133), 5 * 2.0**-133])
    bits = (x.astype(np.float16).view(np.uint16) if fmt == "float16" else
            (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16))
    got = _values(_call("gelu", fmt, bits), fmt)
    with mp.workdps(60):
        want = [round_to_format(mp.mpf(v) * mp.ncdf(mp.mpf(v)), fmt) for v in x]
    np.testing.assert_array_equal(got, want)
    # and the plain "x/2 rounded to even" would have differed on each
    assert all(w != float(np.float64(v) / 2) or v == 0 for w, v in zip(want, x))


def test_the_cpus_float16_conversion_is_found_by_asking_llvm():
    # the CPU's hardware rounding is chosen where LLVM compiles the
    # conversion to one instruction: every AVX2 CPU (F16C), not the
    # baseline x86-64 (a call to a runtime function Numba does not link)
    triple = "x86_64-unknown-linux-gnu"
    assert numba_core.converts_float16((triple, "haswell", "-avx512f"))
    assert numba_core.converts_float16((triple, "znver3", ""))
    assert not numba_core.converts_float16((triple, "x86-64", ""))
    assert not numba_core.converts_float16((triple, "haswell", "-f16c"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_special_values(fmt):
    # +-inf, NaN (quiet, the input's sign) and the signed zeros
    inf, ninf, nan = ((0x7C00, 0xFC00, 0x7E00) if fmt == "float16"
                      else (0x7F80, 0xFF80, 0x7FC0))
    bits = np.array([inf, ninf, nan, nan | 0x8000, 0x0000, 0x8000], np.uint16)
    y = _values(_call("gelu", fmt, bits), fmt)
    d = _values(_call("gelu_grad", fmt, bits), fmt)
    assert y[0] == math.inf and y[1] == 0 and math.copysign(1, y[1]) == -1
    assert d[0] == 1 and d[1] == 0
    assert np.isnan(y[2:4]).all() and np.isnan(d[2:4]).all()
    assert np.signbit(y[3]) and not np.signbit(y[2])
    assert y[4] == 0 and not np.signbit(y[4]) and np.signbit(y[5])
    assert (d[4], d[5]) == (0.5, 0.5)


def _exact_backward(dy, x, fmt):
    with mp.workdps(40):
        t = mp.mpf(float(x))
        return round_to_format(mp.mpf(float(dy)) * (mp.ncdf(t) + t * mp.npdf(t)), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_backward_is_the_product_rounded_once(fmt):
    # dy * GELU'(x) against mpmath for pairs over the whole range: random
    # finite bit patterns, and dy = 1 (GELU' itself) at every input
    bits, grad = _expected("gelu_grad", fmt)
    ones = np.full_like(bits, 0x3C00 if fmt == "float16" else 0x3F80)
    np.testing.assert_array_equal(_call("gelu_backward", fmt, ones, bits), grad)
    rng = np.random.default_rng(7)
    dy, x = rng.choice(bits, 1500), rng.choice(bits, 1500)
    got = _values(_call("gelu_backward", fmt, dy, x), fmt)
    want = [_exact_backward(a, b, fmt) for a, b in zip(_values(dy, fmt), _values(x, fmt))]
    np.testing.assert_array_equal(got, want)


def test_float16_dtype_rules():
    x16 = np.float16([-3.0, 0.5, 2.0])
    assert g.gelu(x16).dtype == np.float16
    assert g.gelu_backward(x16, x16).dtype == np.float16
    # as np.exp: bool and 8-bit integers go to float16, a float32 operand
    # to float32; dtype= still chooses
    assert g.gelu(np.int8([1, -2])).dtype == np.float16
    assert g.gelu_backward(x16, np.float32([1, 2, 3])).dtype == np.float32
    assert g.gelu(x16, dtype=np.float32).dtype == np.float32
    np.testing.assert_array_equal(g.gelu(x16, dtype=np.float32),
                                  g.gelu(x16.astype(np.float32)))
    # the other functions keep float32 loops for float16 inputs
    assert g.ndtr(x16).dtype == np.float32
    # strided, out= and where= take NumPy's paths around the loop
    big = np.linspace(-6, 6, 301).astype(np.float16)
    out = np.zeros(151, np.float16)
    g.gelu(big[::2], out=out)
    np.testing.assert_array_equal(out, g.gelu(big)[::2])


def test_bfloat16_ufuncs_refuse_other_dtypes():
    with pytest.raises(TypeError, match="uint16 bfloat16 bit patterns"):
        half.gelu_bfloat16(np.float32([1.0]))
    x = np.uint16([0x3F80])
    before = x.copy()
    half.gelu_bfloat16(x)
    np.testing.assert_array_equal(x, before)   # inputs are never modified


def test_the_float16_rounding_forms_are_ieee_rounding():
    # round_float16 has three forms: the integer code (Python, and the CPU
    # without a conversion instruction), and the round-to-odd float32
    # converted by the hardware (CUDA's cvt.rn.f16.f32; the CPU's F16C
    # vcvtps2ph where Numba's target has it).  NumPy's casts are IEEE (to
    # nearest even, gradual underflow, overflow to inf), so each compiled
    # form must give the cast's bits at every float16, at each midpoint and
    # a float64 ulp either side, and past the overflow edge (NaN: the
    # format's quiet NaN, with its sign)
    from numba import njit

    from gelu_numba.kernels import half_rounding as kh
    from gelu_numba.kernels.primitives import inline

    def rounding(form):
        @njit
        def run(v, out, odd):
            for i in range(v.size):
                out[i] = form(v[i])
                odd[i] = kh._float32_round_to_odd(v[i])
        return run

    bits = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    values = bits.view(np.float16).astype(np.float64)
    finite = values[np.isfinite(values)]
    up = np.sort(finite)
    mids = (up[:-1] + up[1:]) / 2
    v = np.concatenate([finite, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                        [65504.0, 65519.99, 65520.0, 65536.0, 1e6, -65520.0, 2.0**-25,
                         -2.0**-25, 2.0**-26, 1e-300, 0.0, -0.0, np.inf, -np.inf, np.nan,
                         -np.nan]])
    forms = {"chosen for this CPU": kh.round_float16, "integer code": inline(kh._round_float16)}
    if numba_core.converts_float16():
        forms["hardware"] = inline(kh._round_float16_hardware())
    for what, form in forms.items():
        out, odd = np.empty(v.size, np.uint16), np.empty(v.size, np.uint32)
        rounding(form)(v, out, odd)
        with np.errstate(over="ignore"):
            cast = odd.view(np.float32).astype(np.float16).view(np.uint16)
        nan = np.isnan(v)
        cast[nan] = np.where(np.signbit(v[nan]), 0xFE00, 0x7E00)
        assert np.array_equal(out, cast), what
    # decode: the cast of every float16 (NaNs as NaNs), in Python and
    # compiled in each form
    def decoding(form):
        @njit
        def run(b, out):
            for i in range(b.size):
                out[i] = form(b[i])
        return run

    want = bits.view(np.float16).astype(np.float64)
    decoded = {"Python": np.array([kh.decode_float16(b) for b in bits])}
    forms = {"chosen for this CPU": kh.decode_float16, "integer code": inline(kh._decode_float16)}
    if numba_core.converts_float16():
        forms["hardware"] = inline(kh._decode_float16_hardware())
    for what, form in forms.items():
        decoded[what] = np.empty(bits.size)
        decoding(form)(bits, decoded[what])
    ok = ~np.isnan(want)
    for what, dec in decoded.items():
        assert np.array_equal(np.isnan(dec), np.isnan(want)), what
        assert np.array_equal(dec[ok].view(np.uint64), want[ok].view(np.uint64)), what


def test_float16_subnormals_are_kept_under_flush_to_zero():
    # torch.set_flush_denormal(True) sets flush-to-zero and
    # denormals-are-zero; a float16 subnormal is a normal float32 number,
    # so the float16 backward reads and writes them as in the default mode
    # (a subnormal dy decoded through a subnormal float32 would read as 0)
    import fp_mode

    sub = np.arange(1, 1024, dtype=np.uint16).view(np.float16)
    dy = np.concatenate([sub, -sub])
    x = np.resize(np.float16([1.0, -0.5, 3.0, 2.0**-14, -2.0]), dy.size)
    want = g.gelu_backward(dy, x)
    assert np.count_nonzero(want) > dy.size // 2
    before = fp_mode.mxcsr()
    fp_mode.set_bits(fp_mode.FTZ_DAZ)
    try:
        got = g.gelu_backward(dy, x)
    finally:
        fp_mode.set_bits(clear=fp_mode.FTZ_DAZ)
    assert fp_mode.mxcsr() == before
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_the_catalog_records_say_which_functions_have_2_byte_loops():
    # the record's ``half`` is the one place the fact lives: the ufuncs'
    # float16 loops, the bfloat16 ufuncs and the JAX target follow it
    import gelu_numba
    from gelu_numba import catalog
    from gelu_numba.half import __all__ as half_names
    from gelu_numba.targets.jax import ffi as jax_ffi
    with_half = {f.name for f in catalog.published(catalog.TOP) if f.half}
    assert with_half == {"gelu", "gelu_grad", "gelu_backward"}
    float16 = {f.name for f in catalog.published(catalog.TOP)
               if any(t.endswith("->e") for t in getattr(gelu_numba, f.name).types)}
    assert float16 == with_half
    assert {n.removesuffix("_bfloat16") for n in half_names if n.endswith("_bfloat16")} == with_half
    assert {n for n in jax_ffi.FUNCTIONS if jax_ffi.has_loop(n, "b")} == with_half
