"""State built on a first call never depends on the floating-point mode or
the thread of that call.

The 2-byte tables and the compiled loops are built on a process's first
call that needs them and kept for the process.  Each test here makes that
first call, in a fresh process, under a mode that would poison them:
flush-to-zero and denormals-are-zero (``torch.set_flush_denormal(True)``
on the main thread; another thread; XLA's CPU threads, where a
deserialized ``jax.export`` program and a ``pure_callback`` run), or round
toward zero.
Every one of the 65,536 patterns of both formats must then be correctly
rounded, during the mode and after it.  The forward and the gradient are
lookups in the tables, so they are correct in any mode.  The backward
multiplies dy by a tabled GELU' in the caller's mode, as NumPy's and
PyTorch's own arithmetic does: under flush-to-zero its subnormal results
are zero during the mode (and correctly rounded after it, from a table
built clean); in a JAX program its handler clears the mode, so there they
are kept.  Under a directed rounding mode its product rounds that way.

Expected values: tests/data/half_reference.npz (mpmath's correctly
rounded GELU and GELU' at every finite pattern) and mathematics for the
non-finite ones (GELU(inf) = inf, GELU(-inf) = -0, GELU'(inf) = 1,
GELU'(-inf) = 0, NaN stays NaN).
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gelu_numba.targets import fp_env

# proof tier: each test is a fresh process that builds the 2-byte loops and
# checks every pattern against mpmath's table (20-45 s each on 2 cores)
pytestmark = pytest.mark.proof

ROOT = Path(__file__).resolve().parent.parent
TABLE = np.load(Path(__file__).parent / "data" / "half_reference.npz")
FORMATS = ("float16", "bfloat16")
EVERY = np.arange(65536, dtype=np.uint16)
ONE = {"float16": 0x3C00, "bfloat16": 0x3F80}

needs_x86_64_linux = pytest.mark.skipif(
    not fp_env.X86_64_LINUX, reason="sets MXCSR through glibc's x86-64 fenv_t")


def _value(bits, fmt):
    if fmt == "float16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _check(name, fmt, got, flushed=False):
    """``got`` (bits of ``name`` at every pattern of ``fmt``) against
    mpmath at the finite patterns and the limits at the others;
    ``flushed``: computed by float32 arithmetic under flush-to-zero, so a
    subnormal bfloat16 result is the zero of its sign."""
    finite = TABLE[f"{fmt}_bits"]
    want = TABLE[f"{fmt}_{name}_cr"].copy()
    if name == "gelu":
        want[finite == 0x8000] = 0x8000       # -0 * Phi(0) = -0 (mpmath has no -0)
    if flushed and fmt == "bfloat16":
        # (a bfloat16 subnormal is a float32 one; float16's are normal there)
        want[(want & 0x7F80) == 0] &= 0x8000
    wrong = np.flatnonzero(got[finite] != want)
    assert wrong.size == 0, (f"{name} {fmt}: {wrong.size} patterns wrong, e.g. x bits "
                             f"{[hex(b) for b in finite[wrong[:4]]]} gave "
                             f"{[hex(b) for b in got[finite][wrong[:4]]]}, want "
                             f"{[hex(b) for b in want[wrong[:4]]]}")
    x = _value(EVERY, fmt)
    y = _value(got, fmt)
    nan = np.isnan(x)
    assert np.isnan(y[nan]).all()
    pos, neg = EVERY[x == np.inf], EVERY[x == -np.inf]
    if name == "gelu":
        assert (_value(got[pos], fmt) == np.inf).all()
        assert (_value(got[neg], fmt) == 0).all() and np.signbit(_value(got[neg], fmt)).all()
    else:
        assert (_value(got[pos], fmt) == 1).all() and (_value(got[neg], fmt) == 0).all()


# A fresh process that makes its first 2-byte calls under a mode, writes
# the bits it got during the mode ("during_*") and after it ("after_*").
_PRELUDE = textwrap.dedent("""
    import sys, threading
    import numpy as np
    sys.path.insert(0, {tests!r})
    import fp_mode
    EVERY = np.arange(65536, dtype=np.uint16)
    ONE = {one!r}

    def calls(prefix, results):
        import gelu_numba as g
        from gelu_numba import half
        for fmt in ("float16", "bfloat16"):
            ones = np.full(EVERY.size, ONE[fmt], np.uint16)
            if fmt == "float16":
                x, dy = EVERY.view(np.float16), ones.view(np.float16)
                results[f"{{prefix}}_gelu_{{fmt}}"] = g.gelu(x).view(np.uint16)
                results[f"{{prefix}}_gelu_grad_{{fmt}}"] = g.gelu_grad(x).view(np.uint16)
                results[f"{{prefix}}_backward_{{fmt}}"] = g.gelu_backward(dy, x).view(np.uint16)
            else:
                results[f"{{prefix}}_gelu_{{fmt}}"] = half.gelu_bfloat16(EVERY)
                results[f"{{prefix}}_gelu_grad_{{fmt}}"] = half.gelu_grad_bfloat16(EVERY)
                results[f"{{prefix}}_backward_{{fmt}}"] = half.gelu_backward_bfloat16(ones, EVERY)
    results = {{}}
""")

_EPILOGUE = textwrap.dedent("""
    calls("after", results)
    np.savez(sys.argv[1], **results)
    print("ok")
""")

SCENARIOS = {
    # round toward zero on the main thread, then to nearest again
    "round_toward_zero": """
        fp_mode.set_bits(fp_mode.ROUND_TOWARD_ZERO)
        calls("during", results)
        fp_mode.set_bits(clear=fp_mode.ROUND_TOWARD_ZERO)
    """,
    # the first call on another thread, in FTZ/DAZ there
    "ftz_thread": """
        def worker():
            fp_mode.set_bits(fp_mode.FTZ_DAZ)
            calls("during", results)
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    """,
}


def _run(tmp_path, body):
    script = (_PRELUDE.format(tests=str(Path(__file__).parent), one=ONE)
              + textwrap.dedent(body) + _EPILOGUE)
    out_file = tmp_path / "bits.npz"
    done = subprocess.run([sys.executable, "-c", script, str(out_file)], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
    with np.load(out_file) as data:
        return {k: data[k] for k in data.files}


def _check_all(results, phases=("during", "after"), flushed=False, directed=False):
    for phase in phases:
        for fmt in FORMATS:
            _check("gelu", fmt, results[f"{phase}_gelu_{fmt}"])
            _check("gelu_grad", fmt, results[f"{phase}_gelu_grad_{fmt}"])
            # dy = 1: GELU' rounded once, through the backward's own table
            if phase == "during" and directed:
                continue    # the backward's product rounds in the caller's mode
            _check("gelu_grad", fmt, results[f"{phase}_backward_{fmt}"],
                   flushed=flushed and phase == "during")


@needs_x86_64_linux
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_first_two_byte_calls_under_a_mode_build_correct_tables(tmp_path, scenario):
    _check_all(_run(tmp_path, SCENARIOS[scenario]), flushed=scenario.startswith("ftz"),
               directed=scenario == "round_toward_zero")


@needs_x86_64_linux
def test_first_call_after_torch_set_flush_denormal(tmp_path):
    pytest.importorskip("torch")
    results = _run(tmp_path, """
        import torch
        import gelu_numba.torch as gt
        torch.set_flush_denormal(True)
        assert fp_mode.mxcsr() & fp_mode.FTZ_DAZ == fp_mode.FTZ_DAZ   # the mode is on
        for fmt, dt in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
            x = torch.from_numpy(EVERY.view(np.int16)).view(dt)
            ones = torch.full_like(x, 1.0)
            results[f"during_gelu_{fmt}"] = gt.gelu(x).view(torch.int16).numpy().view(np.uint16)
            xg = x.clone().requires_grad_()
            gt.gelu(xg).backward(ones)
            results[f"during_backward_{fmt}"] = xg.grad.view(torch.int16).numpy().view(np.uint16)
        torch.set_flush_denormal(False)
        # bfloat16 -13.3125 and -13.5: subnormal results that FTZ tables lose
        x = torch.tensor([-13.3125, -13.5], dtype=torch.bfloat16)
        results["pair"] = gt.gelu(x).view(torch.int16).numpy().view(np.uint16)
    """)
    assert [hex(b) for b in results["pair"]] == ["0x800e", "0x8001"]
    for fmt in FORMATS:
        _check("gelu", fmt, results[f"during_gelu_{fmt}"])
        _check("gelu_grad", fmt, results[f"during_backward_{fmt}"], flushed=True)
    _check_all(results, phases=("after",))


@needs_x86_64_linux
def test_first_call_from_a_deserialized_export_on_xlas_threads(tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import gelu_numba.jax as gj

    # XLA's CPU threads flush subnormals: a program deserialized in a fresh
    # process builds its 2-byte loops there, on its first run
    paths = {}
    for fmt, dt in (("float16", jnp.float16), ("bfloat16", jnp.bfloat16)):
        spec = jax.ShapeDtypeStruct((65536,), dt)
        f = jax.jit(lambda v: (gj.gelu(v), jax.vjp(gj.gelu, v)[1](jnp.ones_like(v))[0]))
        exported = jax.export.export(f, disabled_checks=gj.EXPORT_CHECKS)(spec)
        paths[fmt] = tmp_path / f"{fmt}.bin"
        paths[fmt].write_bytes(exported.serialize())
    results = _run(tmp_path, f"""
        import jax, jax.numpy as jnp
        import gelu_numba.jax
        from jax import export
        for fmt, dt in (("float16", jnp.float16), ("bfloat16", jnp.bfloat16)):
            path = {{"float16": {str(paths["float16"])!r}, "bfloat16": {str(paths["bfloat16"])!r}}}[fmt]
            f = export.deserialize(bytearray(open(path, "rb").read()))
            y, d = f.call(jnp.asarray(EVERY.view(dt)))
            results[f"during_gelu_{{fmt}}"] = np.asarray(y).view(np.uint16)
            results[f"during_backward_{{fmt}}"] = np.asarray(d).view(np.uint16)
        # and a NumPy call inside a callback, which runs on an XLA thread
        def numpy_side(b):
            from gelu_numba import half
            return half.gelu_grad_bfloat16(np.asarray(b))
        out = jax.jit(lambda b: jax.pure_callback(
            numpy_side, jax.ShapeDtypeStruct(b.shape, jnp.uint16), b))(EVERY)
        results["callback_gelu_grad_bfloat16"] = np.asarray(out)
    """)
    for fmt in FORMATS:
        _check("gelu", fmt, results[f"during_gelu_{fmt}"])
        _check("gelu_grad", fmt, results[f"during_backward_{fmt}"])
    _check("gelu_grad", "bfloat16", results["callback_gelu_grad_bfloat16"])
    _check_all(results, phases=("after",))


@needs_x86_64_linux
def test_a_build_leaves_the_callers_mode_and_flags_as_they_were():
    import fp_mode

    subnormal = 2.0**-1024
    saved = fp_mode.mxcsr()
    try:
        fp_mode.set_bits(fp_mode.FTZ_DAZ | fp_mode.ROUND_TOWARD_ZERO, clear=0x3F)
        before = fp_mode.mxcsr()
        with fp_env.default_environment():
            inside = fp_mode.mxcsr()
            tiny = np.float64(2.0**-1022) * np.float64(0.25)   # subnormal, raises underflow
        after = fp_mode.mxcsr()
    finally:
        fp_mode.set_bits(saved, clear=~saved & 0xFFFF)
    assert tiny == subnormal                                   # no flush inside
    assert inside & (fp_mode.FTZ_DAZ | fp_mode.ROUND_TOWARD_ZERO) == 0
    assert after == before                                     # mode and flags back
    assert fp_mode.mxcsr() == saved


@needs_x86_64_linux
def test_first_float32_call_under_flush_to_zero_compiles_correctly_rounded_loops(tmp_path):
    # the correctly rounded float32 loops (and their accurate paths),
    # compiled on an empty cache under torch.set_flush_denormal(True), are
    # correctly rounded once the mode is off, subnormal results included:
    # expected values from mpmath
    pytest.importorskip("torch")
    from benchmarks.rounding import unsure_inputs
    from reference import mp as ref
    from tests.test_rounded32 import correctly_rounded

    xs = np.array([-13.5, -14.0, -13.9, -10.0, -0.5, 2.0, *unsure_inputs("gelu", 2)],
                  np.float32)
    dy = np.array([2.0**-140, 3 * 2.0**-149, 1.0, 2.0**-130, 0.5], np.float32)
    xb = np.array([np.inf, 0.0, -13.5, 3.0, *unsure_inputs("gelu_grad", 1)], np.float32)
    results = _run(tmp_path, f"""
        import os, tempfile
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()
        import torch
        import gelu_numba as g
        xs = np.array({xs.view(np.uint32).tolist()!r}, np.uint32).view(np.float32)
        dy = np.array({dy.view(np.uint32).tolist()!r}, np.uint32).view(np.float32)
        xb = np.array({xb.view(np.uint32).tolist()!r}, np.uint32).view(np.float32)
        torch.set_flush_denormal(True)
        assert fp_mode.mxcsr() & fp_mode.FTZ_DAZ == fp_mode.FTZ_DAZ
        results["during_gelu32"] = g.gelu(xs)
        results["during_backward32"] = g.gelu_backward(dy, xb)
        torch.set_flush_denormal(False)
        results["after_gelu32"] = g.gelu(xs)
        results["after_backward32"] = g.gelu_backward(dy, xb)
    """)
    want_gelu = [correctly_rounded(ref.gelu(float(v))) for v in xs]
    want_backward = [correctly_rounded(ref.gelu_backward(float(d), float(v)))
                     for d, v in zip(dy, xb)]
    for got, want in ((results["after_gelu32"], want_gelu),
                      (results["after_backward32"], want_backward)):
        assert [float(v) for v in got] == [float(v) for v in want]
    # during the mode: the same wherever the result and the inputs are normal
    tiny = np.finfo(np.float32).tiny
    for key, want, ins in (("during_gelu32", want_gelu, [xs]),
                           ("during_backward32", want_backward, [dy, xb])):
        normal = (np.abs(np.array(want)) >= tiny) & np.all(
            [(np.abs(a) >= tiny) | ~np.isfinite(a) for a in ins], axis=0)
        assert np.array_equal(results[key][normal], np.array(want, np.float32)[normal])
