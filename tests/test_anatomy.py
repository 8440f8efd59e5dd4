"""benchmarks.anatomy reads the instruction mix of a compiled loop: what it
reports for the ufuncs' kernels must be what their design says."""

import numpy as np
import pytest
from numba import types

from benchmarks.anatomy import (
    NAIVE, ONE_EXP, ROUNDED, VARIANTS, loop_of, selects, vector_loop, vector_loop_mix,
)
from gelu_numba.targets.cpu import element_signature

pytestmark = [pytest.mark.tools, pytest.mark.isa]


def _compiled(dtype, label):
    loop = loop_of(label, VARIANTS[dtype][label])
    ty = types.Array(types.float32 if dtype == "float32" else types.float64, 1, "C")
    sig = element_signature((ty, ty))
    loop.compile(sig)
    x = np.linspace(-3, 3, 64).astype(dtype)
    out = np.empty_like(x)
    loop((x, out))
    return loop, sig


def _mix(dtype, label):
    return vector_loop_mix(*_compiled(dtype, label))


def _selects(dtype, label):
    return selects(vector_loop(*_compiled(dtype, label)))


@pytest.mark.parametrize("label", [ROUNDED, "gelu, the fast path alone, rounded on store "
                                            "(timing only: no test)"])
def test_float32_gelu_loop_is_packed_fmas_and_one_division_without_gathers(label):
    _, ops = _mix("float32", label)
    fma = sum(v for k, v in ops.items() if k.startswith("vfmadd"))
    assert fma >= 15                      # exp and the rational, packed
    assert ops["vdivpd"] >= 1             # the rational's division, packed
    assert not any("gather" in k for k in ops)
    assert not any(k.startswith("call") for k in ops)   # the accurate path off the loop


def test_the_rounded_loop_counts_its_tests_comparison():
    # the bracket's two float32 conversions and their comparison, an
    # instruction whose mnemonic holds an underscore (vcmpneq_oqps)
    _, ops = _mix("float32", ROUNDED)
    assert ops["vcvtpd2ps"] >= 2
    assert any(k.startswith("vcmpneq") and k.endswith("ps") for k in ops), sorted(ops)


def test_float64_loops_have_no_gathers_and_one_division():
    for label in ("gelu (the ufunc's general kernel: blocks with an element out of range)",
                  "R alone (t, two pieces by blends)"):
        _, ops = _mix("float64", label)
        assert not any("gather" in k for k in ops), label
        assert ops["vdivpd"] == 1, label      # w = 1/(a + 4), packed
        # the pieces are selected by blends, not branches: vblendmpd under a
        # mask register (AVX-512), vblendvpd under a vector mask (AVX2)
        assert sum(v for k, v in ops.items() if k.startswith("vblend")) >= 15, label


def test_isa_avx2_reexecutes_with_the_forcing_variables():
    # --isa avx2 on any x86 machine: a fresh process where Numba compiles
    # for haswell without AVX-512 (and PyTorch/oneDNN are capped), named in
    # the report's first line; its loops are then 256-bit
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "benchmarks.anatomy", "--isa", "avx2",
                          "--n", "2000", "--rounds", "1"], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ISA: Numba: haswell, AVX2"), out.stdout[:200]
    rows = [r for r in out.stdout.splitlines() if r.startswith("| float")]
    # our loops are 256-bit, each with its FMA bound (as wide as the probe's);
    # the peers' rows (naive Numba, PyTorch) have no instruction columns
    ours = [r.split("|") for r in rows if r.split("|")[5].strip() != "-"]
    assert ours and all(r[5].strip() == "256" and float(r[4]) > 0 for r in ours), rows
    assert any(NAIVE in r for r in rows)


def test_float64_ordinary_gelu_selects_no_coefficients_and_is_shorter():
    # the ordinary form (|x| < 4) uses R's first piece: no select chooses
    # coefficients (the general kernel's selects, less at least as many as
    # R's piece selection alone takes), and the special-value steps are
    # gone.  Selects as the ISA compiles them (benchmarks.anatomy.selects):
    # vblendvpd on AVX2, masked instructions on AVX-512
    general_label = "gelu, one vector an iteration (no interleave)"
    ordinary_label = "gelu, ordinary form, one vector an iteration (no interleave)"
    n_general, _ = _mix("float64", general_label)
    n_ordinary, ordinary = _mix("float64", ordinary_label)
    coefficients = _selects("float64", "R alone (t, two pieces by blends)")
    assert coefficients >= 15
    assert _selects("float64", ordinary_label) + coefficients <= _selects("float64", general_label)
    assert n_ordinary < 0.8 * n_general
    assert ordinary["vdivpd"] == 1


def _gelu_mpmath(x):
    import mpmath
    with mpmath.workdps(40):
        v = mpmath.mpf(float(x))
        return float(v * mpmath.ncdf(v))


def test_timing_variants_compute_gelu():
    # the timing-only variants must still be GELU (a wrong formula would
    # time something else): the one-exp float32 form within the kernel's
    # 0.5 + 2**-7 ulp on |x| < 4, the plain float64 method within 2**-40
    from numba import vectorize

    from benchmarks.anatomy import f32_gelu_one_exp, f64_gelu_plain
    x = np.concatenate([np.linspace(-3.999, 3.999, 301), [0.0, -1e-30, 2.0**-120]])
    one_exp = vectorize(["float32(float32)"])(f32_gelu_one_exp)(x.astype(np.float32))
    plain = vectorize(["float64(float64)"])(f64_gelu_plain)(x)
    for xi, o, p in zip(x, one_exp, plain):
        exact = _gelu_mpmath(np.float32(xi))
        ulp32 = np.spacing(np.abs(np.float32(exact))).astype(np.float64)
        assert abs(float(o) - exact) <= (0.5 + 2.0**-7) * ulp32, xi
        exact64 = _gelu_mpmath(xi)
        assert abs(p - exact64) <= 2.0**-40 * abs(exact64) + 1e-300, xi
    assert ONE_EXP in VARIANTS["float32"]
