"""The ufunc interface: dtypes, casting, out=/where=/in place, errors, @njit."""

import math
import pydoc
import re

import numba
import numpy as np
import pytest

import gelu_numba as g
from gelu_numba import catalog

pytestmark = pytest.mark.unit

UNARY = [f.name for f in catalog.group("exact") if f.nin == 1]
ALL = list(catalog.names("exact"))
#: the functions with float16 loops (gelu_numba.targets.cpu.half_loops)
HALF_LOOPS = tuple(f.name for f in catalog.FUNCTIONS if f.half)


def call(name, x):
    f = getattr(g, name)
    return f(x, x) if name == "gelu_backward" else f(x)


@pytest.mark.parametrize("name", ALL)
def test_is_a_ufunc(name):
    f = getattr(g, name)
    assert isinstance(f.ufunc, np.ufunc)
    assert f.nin == (2 if name == "gelu_backward" else 1)
    loops = {"f" * f.nin + "->f", "d" * f.nin + "->d"}
    if name in HALF_LOOPS:
        loops.add("e" * f.nin + "->e")
    assert set(f.types) == loops
    assert name in pydoc.render_doc(f)
    assert "ulp" in f.__doc__


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dt, out_dt", [
    (np.float32, np.float32), (np.float64, np.float64),
    (np.int64, np.float64), (np.int32, np.float64),
    (np.int16, np.float32), (np.uint8, np.float32), (np.bool_, np.float32),
    (np.float16, np.float32),
])
def test_dtype_follows_numpy_casting(name, dt, out_dt):
    if name in HALF_LOOPS and dt in (np.uint8, np.bool_, np.float16):
        out_dt = np.float16   # as np.exp: the float16 loop comes first
    x = np.arange(-3, 3).astype(dt)
    out = call(name, x)
    assert out.dtype == out_dt
    # the same numbers as the float loop applied to the cast input
    assert np.array_equal(out, call(name, x.astype(out_dt)))


@pytest.mark.parametrize("name", ALL)
def test_python_scalars(name):
    assert isinstance(call(name, 1.5), float)
    assert call(name, 2) == call(name, 2.0)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bad", [
    np.array([1 + 2j]), 1j, np.array(["a"]), "a",
    np.array([1.0, None], dtype=object), np.array([1.0], dtype=np.longdouble),
])
def test_bad_input_names_supported_dtypes(name, bad):
    with pytest.raises(TypeError, match="float32 or float64"):
        call(name, bad)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_out_where_inplace_and_no_mutation(name, dt):
    f = getattr(g, name)
    x = np.linspace(-4, 4, 17, dtype=dt)
    keep = x.copy()
    expected = f(x)
    assert np.array_equal(x, keep)  # input untouched
    out = np.empty_like(x)
    r = f(x, out=out)
    assert r is out and np.array_equal(out, expected)
    mask = x > 0
    out2 = np.full_like(x, 7)
    f(x, out=out2, where=mask)
    assert np.array_equal(out2[mask], expected[mask])
    assert np.all(out2[~mask] == 7)
    y = x.copy()
    f(y, out=y)
    assert np.array_equal(y, expected)
    # non-contiguous views
    big = np.linspace(-4, 4, 34, dtype=dt)
    assert np.array_equal(f(big[::2]), np.array([f(v) for v in big[::2]], dtype=dt))


def test_backward_broadcasting():
    dy = np.arange(3.0).reshape(3, 1)
    x = np.linspace(-2, 2, 4)
    out = g.gelu_backward(dy, x)
    assert out.shape == (3, 4)
    assert np.array_equal(out[2], g.gelu_backward(2.0, x))
    assert np.array_equal(out[0], np.zeros(4))


def test_mixed_precision_backward():
    # float32 dy with float64 x promotes to the float64 loop, as NumPy does
    out = g.gelu_backward(np.ones(3, np.float32), np.ones(3, np.float64))
    assert out.dtype == np.float64


def test_callable_from_njit():
    @numba.njit
    def user(x, dy):
        return g.gelu(x) + g.gelu_backward(dy, x) - g.ndtr(x) * x

    @numba.njit
    def scalar(v):
        return g.gelu_grad(v) + g.gelu_grad2(v) + g.norm_pdf(v)

    @numba.njit
    def mixed(x, dy):
        return g.gelu_backward(dy, x)

    x = np.linspace(-3, 3, 11)
    expected = g.gelu(x) + g.gelu_backward(0.5, x) - g.ndtr(x) * x
    assert np.array_equal(user(x, 0.5), expected)
    assert scalar(0.3) == g.gelu_grad(0.3) + g.gelu_grad2(0.3) + g.norm_pdf(0.3)
    # float32 operands, one of them a scalar: the float32 loop's dtype and
    # bits (the array-only float32 paths: tests/test_ordinary.py)
    x32 = x.astype(np.float32)
    got = mixed(x32, np.float32(0.5))
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32),
                          g.gelu_backward(np.float32(0.5), x32).view(np.uint32))


def _scalar_call_loop_llvm(dtype):
    @numba.njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = g.gelu(x[i])

    ty = numba.types.Array(numba.from_dtype(np.dtype(dtype)), 1, "C")
    loop.compile((ty, ty))
    return loop.inspect_llvm((ty, ty))


@pytest.mark.isa
def test_scalar_calls_in_an_njit_loop_are_inlined_and_vectorised():
    # the overload is inlined at Numba's IR level, so the float64 kernel
    # lands in the caller's loop, which LLVM then vectorises (a call to a
    # function too large to inline would run element by element)
    assert "vector.body" in _scalar_call_loop_llvm("float64"), "the caller's loop is not vectorised"


@pytest.mark.isa
def test_float32_scalar_calls_branch_to_the_accurate_path():
    # the correctly rounded float32 kernel: its fast path and rounding test
    # are inlined into the caller's loop, its accurate path stays a call
    # behind the branch (a select over both paths would run the float64
    # kernel on every element; arrays passed whole run the blocked loop)
    ir = _scalar_call_loop_llvm("float32")
    assert "@llvm.fma.f64" in ir                          # the fast path, inlined
    calls = re.findall(r"call \S+ @(\S*gelu_accurate\S*)\(", ir)
    assert calls, "the accurate path is not a call"


def test_lazy_loops_in_a_fresh_process():
    # loops are built on first use; whatever the first call, float32 inputs
    # must then still select the float32 loop, and integers the float64 one
    import subprocess
    import sys
    code = """
import numpy as np, gelu_numba as g
assert g.gelu(np.ones(3)).dtype == np.float64
assert g.gelu(np.ones(3, np.float32)).dtype == np.float32
assert g.gelu(np.ones(3, np.int16)).dtype == np.float32
assert g.gelu(np.ones(3, np.int64)).dtype == np.float64
assert g.ndtr(np.float32(1.0)).dtype == np.float32
assert g.gelu_grad.types == ['e->e', 'f->f', 'd->d']
assert g.ndtr.types == ['f->f', 'd->d']
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def _counting_registry(fail=None):
    """A fresh Registry of the CPU loops that records which loops it
    compiled, and raises ``fail[0]`` instead while ``fail`` holds one."""
    from gelu_numba.targets import cpu
    built = []

    def make_loop(fn, char):
        if fail:
            raise fail[0]
        built.append(char)
        return cpu.loop(fn, char)

    return cpu.Registry("gelu_numba.targets.cpu", make_loop), built


def test_a_loop_compiles_on_the_first_call_of_its_dtype():
    from gelu_numba import catalog
    registry, built = _counting_registry()
    fn = catalog.lookup("ndtr")
    raw = registry.get(fn)
    assert built == [] and raw.types == ["f->f", "d->d"]
    x = np.float32([-2.0, 0.0, 1.5])
    y = raw(x)
    assert built == ["f"] and y.dtype == np.float32
    expected = [0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(float)]
    assert np.array_equal(y, np.float32(expected))  # rounded once from float64
    raw(x), raw(x)
    assert built == ["f"]                 # the stub was replaced by the loop
    raw(x.astype(np.float64))
    assert built == ["f", "d"]
    assert registry.compile(fn, "d") is registry.compile(fn, "d")
    assert built == ["f", "d"]


def test_a_loop_that_fails_to_compile_raises_and_returns_nan_meanwhile():
    from gelu_numba import catalog
    from gelu_numba.targets import cpu
    from gelu_numba.targets.cpu import numpy_api
    fail = [MemoryError("no memory for LLVM")]
    registry, built = _counting_registry(fail)
    fn = catalog.lookup("ndtr")
    public = cpu.Ufunc(registry.get(fn), "ndtr", "test", "doc")
    x = np.float32([0.0, 1.0])
    with pytest.warns(RuntimeWarning, match="float32 loop of ndtr failed to compile"):
        with pytest.raises(RuntimeError, match="failed to compile") as info:
            public(x)
    assert isinstance(info.value.__cause__, MemoryError)
    # the raw numpy.ufunc (what duck arrays call) cannot raise: NaN, a
    # warning, and the error kept for this thread's next check
    with pytest.warns(RuntimeWarning):
        y = public.ufunc(x)
    assert np.isnan(y).all()
    with pytest.raises(RuntimeError):
        numpy_api.raise_failure()
    numpy_api.raise_failure()             # reported once
    fail.clear()                          # a later call compiles and computes
    assert public(x)[0] == 0.5 and built == ["f"]


def test_warmup_compiles_the_named_loops_and_refuses_unknown_names():
    import subprocess
    import sys
    run = [sys.executable, "-m", "gelu_numba", "warmup"]
    out = subprocess.run(run + ["--functions", "ndtr", "--dtypes", "float32"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "cpu ndtr float32" in out.stderr and "parallel ndtr float32" in out.stderr
    assert "warmup: 2 loops" in out.stderr
    bad = subprocess.run(run + ["--functions", "gelu", "no_such_gelu"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "unknown function(s) no_such_gelu" in bad.stderr
    assert "known:" in bad.stderr and "gelu_backward" in bad.stderr
    usage = subprocess.run([sys.executable, "-m", "gelu_numba"], capture_output=True,
                           text=True, timeout=300)
    assert usage.returncode == 1 and "warmup" in usage.stderr


def test_warmup_group_takes_the_catalog_groups_functions(monkeypatch):
    # --group exact (what .ci/run warms before the tests) names the loops of
    # every record of that group, and only those
    from gelu_numba import _warmup, catalog
    seen = {}
    monkeypatch.setattr(_warmup, "warmup", lambda functions, *rest: seen.setdefault("f", functions))
    assert _warmup.main(["--group", "exact", "--dtypes", "float32", "--quiet"]) == 0
    assert seen["f"] and {catalog.lookup(name).group for name in seen["f"]} == {"exact"}
    assert set(seen["f"]) == {f.name for f in catalog.FUNCTIONS if f.group == "exact"}


def test_warmup_tasks_cover_every_public_function():
    import gelu_numba.approximations as approx
    from gelu_numba import production
    from gelu_numba._warmup import tasks
    labels = [label for label, _ in tasks()]
    names = {label.split()[1] for label in labels}
    public = ({n for n in g.__all__ if n != "warmup"}
              | set(approx.__all__) - {"APPROXIMATIONS", "Approximation"})
    assert public <= names
    assert set(production.PRODUCTION) <= names and "gelu_half32" in names
    assert len(labels) == len(set(labels))


# One function of each kernel family besides the exact ones, chosen where
# vectorisation once failed: coefficient tuples longer than LLVM unrolls
# (poly14, the Taylor forms at the derivatives' zeros, the Cauchy series)
# and loops whose element index LLVM could not prove non-negative (ndtr and
# gelu_grad in float64 loaded and stored through gathers and scatters)
FAMILIES = ["x_cauchy_grad", "gelu_general", "gelu_sigmoid_grad", "gelu_as26_grad",
            "gelu_poly14", "gelu_poly14_grad", "gelu_rat22_grad"]


def _numba_cpu_features():
    """The features Numba compiles for: NUMBA_CPU_FEATURES where set (with
    NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES=-avx512f it compiles for AVX2
    on an AVX-512 CPU), else the host's."""
    import llvmlite.binding as ll
    from numba.core import config
    features = config.CPU_FEATURES
    if features is None:
        features = ll.get_host_cpu_features().flatten()
    return features.split(",")


def _function_ir(module, marker):
    """The LLVM IR of the function of ``module`` whose symbol contains
    ``marker`` (and its attribute groups, where prefer-vector-width is)."""
    import re
    functions = re.split(r"(?m)^(?=define )", module)
    # (Numba's own symbol, not the C wrapper "cfunc._ZN...")
    (found,) = [f for f in functions if f.startswith("define ")
                and marker in re.match(r"define [^@]*@([^(]+)\(", f).group(1)
                and not re.match(r"define [^@]*@\"?cfunc\.", f)]
    attributes = "\n".join(re.findall(r"(?m)^attributes .*$", module))
    return found.split("\n}\n", 1)[0] + "\n" + attributes


@pytest.mark.isa
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ALL + FAMILIES)
def test_loop_is_vectorised(name, dtype):
    # the kernel must be inlined into the ufunc's element loop (the function
    # the ufunc loops, serial and parallel, and @njit callers on arrays call
    # on each run or block: its C entry point, cpu.element_entry) and that
    # loop vectorised: LLVM's loop vectoriser ran (its "vector.body"), with
    # contiguous loads and stores (no masked gather or scatter: the
    # buffered loop gathers strided operands into contiguous blocks before
    # it), and for the exact functions packed FMAs on ymm/zmm registers
    # (this project's machines have AVX2/AVX-512; Numba compiles for the
    # host CPU)
    import platform
    import re

    from gelu_numba import catalog
    from gelu_numba.targets import cpu
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the check expects x86-64 vector widths")
    avx512 = "+avx512f" in _numba_cpu_features()
    char = "f" if dtype == "float32" else "d"
    fn = catalog.lookup(name)
    # the C entry point that the ufunc loops and @njit callers call
    for ir in [_function_ir(cpu.loop_llvm(fn, char), f"{name}_{dtype}")]:
        assert "vector.body" in ir, f"{name} {dtype}: the element loop is not vectorised"
        assert not re.search(r"llvm\.masked\.(gather|scatter)", ir), f"{name} {dtype}"
        if name in ALL:
            # the float32 kernels compute in float64: packed double FMAs
            packed = re.findall(r"@llvm\.fma\.v(?:4|8)f64", ir)
            assert len(packed) >= 8, f"{name} {dtype}: {len(packed)} packed FMAs"
        if avx512:
            # cpu.attributes(wide=True): 512-bit vectors even where LLVM's
            # tuning for the CPU prefers 256 (Intel server cores)
            assert "prefer-vector-width" in ir and "v8f64" in ir, f"{name} {dtype}"


def test_ufuncs_pickle_by_reference():
    # Dask's distributed scheduler and multiprocessing ship functions by pickle
    import pickle
    import subprocess
    import sys

    import gelu_numba.parallel as gp
    from gelu_numba import approximations

    for f in (g.gelu, g.gelu_backward, g.silu, gp.gelu, approximations.gelu_poly6):
        assert pickle.loads(pickle.dumps(f)) is f
    blob = pickle.dumps((g.gelu_backward, np.float32(2.0), np.float32(-1.0)))
    code = ("import pickle, sys; f, dy, x = pickle.loads(sys.stdin.buffer.read()); "
            "y = f(dy, x); print(y.dtype, repr(float(y)))")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True,
                         check=True).stdout.decode().split()
    # 2 * GELU'(-1) = 2 * (Phi(-1) - phi(1)) = -0.16663..., as float32
    assert out[0] == "float32"
    assert abs(float(out[1]) - 2 * (0.15865525393145707 - 0.24197072451914337)) < 1e-7
