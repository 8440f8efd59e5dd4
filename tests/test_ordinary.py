"""The float64 loops' ordinary range (gelu_numba.kernels.normal): blocks of
elements all in range run the kernels' ordinary forms, which must return the
general forms' bits and raise no flag the general forms do not.

The general form is what a strided call runs (the byte-offset loop calls the
kernel itself), so a contiguous call against a strided call of the same
values compares the two forms through the public ufuncs; the forms are also
compared directly, element by element, on inputs all in range.  The
expected bits are thus the general kernel's, whose accuracy the proof tier
holds against mpmath.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import njit

from bits import same_bits

import gelu_numba
import gelu_numba.parallel
from gelu_numba import catalog
from gelu_numba.kernels import normal
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import cpu

pytestmark = pytest.mark.unit

ONE_INPUT = tuple(f.name for f in catalog.group("exact") if f.nin == 1)
X0 = -0.75179152469356  # the zero of GELU'


def _bits(a):
    return np.ascontiguousarray(a).view(np.int64)


def _strided(a):
    """The values of ``a`` as a strided view (the general kernel's loop)."""
    b = np.empty(2 * a.size, a.dtype)
    b[::2] = a
    return b[::2]


def _xs():
    rng = np.random.default_rng(7)
    edges = [0.0, -0.0, 4.0, -4.0, np.nextafter(4.0, 0), -np.nextafter(4.0, 0),
             2.0**-900, -2.0**-900, np.nextafter(2.0**-900, 0), 2.0**-1000, 5e-324,
             2.0**-200, np.nextafter(2.0**-200, 0), np.sqrt(2.0), -np.sqrt(2.0),
             np.nan, np.inf, -np.inf, 1e300, -38.6, 7.0]
    return np.concatenate(
        [rng.standard_normal(6000) * s for s in (1e-3, 0.5, 1.0, 3.0)]
        + [rng.uniform(-4, 4, 6000), X0 + np.arange(-300, 300) * 2.0**-53,
           2.0 ** rng.uniform(-1074, 3, 6000) * rng.choice([-1.0, 1.0], 6000),
           np.array(edges * 20)])


def _dys(n):
    rng = np.random.default_rng(8)
    edges = [2.0**900, -2.0**900, np.nextafter(2.0**900, np.inf), 2.0**-900,
             np.nextafter(2.0**-900, 0), 0.0, -0.0, np.inf, np.nan, 5e-324]
    with np.errstate(over="ignore", under="ignore"):   # (some are inf or 0)
        dy = rng.standard_normal(n) * 10.0 ** rng.uniform(-320, 320, n)
    dy[: 20 * len(edges)] = edges * 20
    return dy


@pytest.mark.parametrize("module", [gelu_numba, gelu_numba.parallel])
@pytest.mark.parametrize("name", ONE_INPUT)
def test_contiguous_calls_give_the_general_kernels_bits(module, name):
    f = getattr(module, name)
    x = _xs()
    with np.errstate(all="ignore"):
        assert np.array_equal(_bits(f(x)), _bits(f(_strided(x))))


@pytest.mark.parametrize("module", [gelu_numba, gelu_numba.parallel])
def test_gelu_backward_contiguous_gives_the_general_kernels_bits(module):
    x = _xs()
    dy = _dys(x.size)
    with np.errstate(all="ignore"):
        fast = module.gelu_backward(dy, x)
        general = module.gelu_backward(_strided(dy), _strided(x))
    assert np.array_equal(_bits(fast), _bits(general))


def _in_range_sample():
    x = _xs()
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(x) & (np.abs(x) < 4) & ((np.abs(x) >= 2.0**-900) | (x == 0))
    return x[ok]


EXACT = [f for f in catalog.FUNCTIONS if f.ordinary is not None]


def test_the_exact_functions_have_ordinary_forms():
    assert sorted(f.name for f in EXACT) == sorted(ONE_INPUT + ("gelu_backward",))


@pytest.mark.parametrize("fn", EXACT, ids=lambda f: f.name)
def test_ordinary_form_is_the_general_form_in_range(fn):
    in_range, form = fn.ordinary_kernel("d")
    assert fn.ordinary_kernel("f") is None
    x = _in_range_sample()
    if fn.nin == 1:
        args = [x]
    else:
        dy = _dys(4 * x.size)
        dy = dy[(np.abs(dy) <= 2.0**900) & ((np.abs(dy) >= 2.0**-900) | (dy == 0))]
        args = [np.resize(dy, x.size), x]
    if fn.nin == 1:
        check = njit(lambda v: np.array([in_range(e) for e in v]))
    else:
        check = njit(lambda u, v: np.array([in_range(u[i], v[i]) for i in range(v.size)]))
    assert check(*args).all()
    outs = []
    for kernel in (fn.k64, form):
        out = np.empty_like(x)
        cpu.serial_loop(inline(kernel), "never")((*args, out))
        outs.append(out)
    assert np.array_equal(_bits(outs[0]), _bits(outs[1]))
    # the ordinary form raises no flag on its range (NumPy checks them after
    # each ufunc call)
    with np.errstate(all="raise"):
        getattr(gelu_numba, fn.name)(*args)


def test_in_range_is_the_stated_range():
    rng = np.random.default_rng(9)
    x = np.concatenate([_xs(), rng.standard_normal(1000) * 5,
                        np.array([4.0, np.nextafter(4.0, 0), 2.0**-900,
                                  np.nextafter(2.0**-900, 0), 0.0, -0.0, np.nan, -np.nan])])
    dy = np.concatenate([_dys(x.size - 4), [2.0**900, np.nextafter(2.0**900, np.inf),
                                             -np.inf, np.nan]])
    test, test2 = normal.in_range, normal.in_range_backward
    got = njit(lambda v: np.array([test(e) for e in v]))(x)
    got2 = njit(lambda u, v: np.array([test2(u[i], v[i]) for i in range(v.size)]))(dy, x)
    ax, ady = np.abs(x), np.abs(dy)
    with np.errstate(invalid="ignore"):
        want = (ax < 4) & ((ax >= 2.0**-900) | (ax == 0))
        want2 = want & (ady <= 2.0**900) & ((ady >= 2.0**-900) | (ady == 0))
    assert np.array_equal(got, want)
    assert np.array_equal(got2, want2)


def test_blocks_mix_both_forms():
    # one outlier per block: every other block takes the general form
    x = np.random.default_rng(3).standard_normal(cpu.ORDINARY_BLOCK * 9 + 17)
    x[:: 2 * cpu.ORDINARY_BLOCK] = 9.5
    for name in ONE_INPUT:
        f = getattr(gelu_numba, name)
        assert np.array_equal(_bits(f(x)), _bits(f(_strided(x))))
        assert np.array_equal(_bits(f(x[5:])), _bits(f(_strided(x[5:]))))


def _loop_instructions():
    # a fresh compilation of a long loop body (LLVM's own choice for it is
    # one vector an iteration)
    loop = cpu.serial_loop(inline(normal.norm_pdf), "never")
    x = np.ones(64)
    loop((x, np.empty_like(x)))
    return sum(len(a.splitlines()) for a in loop.inspect_asm().values())


def test_interleave_is_set_for_the_block_only():
    before = _loop_instructions()
    with cpu.interleaved(2):
        during = _loop_instructions()
    after = _loop_instructions()
    assert during > before + 50          # the option took effect
    assert after == before               # and was set back


def test_cached_loops_of_different_functions_keep_their_own_code(tmp_path):
    # Two processes, started together, each compile one function's loops
    # into one cache, the same number of functions into each, so that their
    # callees get the same counter values; a third loads both.  A callee's
    # symbol is its name and that counter, so callees sharing a name would
    # be linked to one another's code (this is how parallel.gelu once
    # returned gelu_grad2's values).  Every process's results, serial and
    # parallel, contiguous and strided, are checked against mpmath.
    from reference import mp
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import gelu_numba, gelu_numba.parallel
        # float32 (its loops compile faster; the symbols are the same story),
        # above the parallel threshold
        x = np.linspace(-3.5, 3.5, 80000, dtype=np.float32)
        s = np.empty(2 * x.size, np.float32); s[::2] = x; s = s[::2]
        out = sys.argv[1]
        for name in sys.argv[2:]:
            for mod in (gelu_numba, gelu_numba.parallel):
                f = getattr(mod, name)
                np.save(f"{out}.{name}.{mod.__name__}.npy", np.stack([f(x), f(s)]))
    """)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    # (two correctly rounded functions of the fastest-compiling ones: their
    # loops hold the same machinery as gelu's)
    runs = {"first": ["gelu_grad2"], "second": ["norm_pdf"], "both": ["gelu_grad2", "norm_pdf"]}

    def start(label):
        return subprocess.Popen([sys.executable, "-c", script, str(tmp_path / label),
                                 *runs[label]], env=env)

    together = [start("first"), start("second")]
    assert [p.wait(timeout=600) for p in together] == [0, 0]
    assert start("both").wait(timeout=600) == 0
    x = np.linspace(-3.5, 3.5, 80000, dtype=np.float32)
    sample = slice(0, None, 499)
    exact = {name: [getattr(mp, name)(float(v)) for v in x[sample]]
             for name in ("gelu_grad2", "norm_pdf")}
    for label, names in runs.items():
        for name in names:
            for mod in ("gelu_numba", "gelu_numba.parallel"):
                for y in np.load(tmp_path / f"{label}.{name}.{mod}.npy"):
                    worst = max(mp.ulp_error(float(v), e, np.float32)
                                for v, e in zip(y[sample], exact[name]))
                    assert worst < 0.51, (label, name, mod, worst)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_njit_callers_get_the_ufuncs_bits_through_its_loop(dtype):
    # @njit code calling the functions on contiguous arrays of the loop's
    # dtype runs the ufunc's own loops (the element loop's ordinary blocks
    # included)
    @njit
    def user(x, dy):
        return (gelu_numba.gelu(x), gelu_numba.ndtr(x), gelu_numba.gelu_grad2(x),
                gelu_numba.gelu_backward(dy, x))

    x = _xs().astype(dtype)
    with np.errstate(all="ignore"):
        dy = _dys(x.size).astype(dtype)
    got = user(x, dy)
    with np.errstate(all="ignore"):
        want = (gelu_numba.gelu(x), gelu_numba.ndtr(x), gelu_numba.gelu_grad2(x),
                gelu_numba.gelu_backward(dy, x))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert np.array_equal(g.view(np.uint8), w.view(np.uint8))


def test_njit_callers_take_every_layout_and_broadcast_as_the_ufunc_does():
    # views, Fortran order, negative steps, read-only operands, broadcasting
    # (NumPy's rule, its error included), scalars, other dtypes and empty
    # operands: the same dtype, shape and bits as the ufunc called from
    # Python, and the inputs left as they were
    @njit
    def backward(dy, x):
        return gelu_numba.gelu_backward(dy, x)

    @njit
    def forward(x):
        return gelu_numba.gelu(x)

    x = np.linspace(-9, 4, 960).astype(np.float32)
    grid = x.reshape(24, 40)
    row = grid[:1, ::-3]
    row.setflags(write=False)
    calls = [  # (four signatures, each compiled once)
        (forward, (x.reshape(4, 6, 40)[:, ::2, 1:],)),                    # a 3-D view
        (backward, (np.float32(0.75), np.asfortranarray(grid))),          # scalar, F order
        (backward, (x[:10].reshape(10, 1), row)),              # both broadcast, read-only
        (backward, (np.zeros((0, 1), np.float32), row)),                  # empty
        (backward, (np.arange(-480, 480, dtype=np.int16), x[::-1])),      # int16, reversed
    ]
    for f, args in calls:
        kept = [np.copy(a) for a in args]
        assert same_bits(f(*args), gelu_numba.gelu_backward(*args) if f is backward
                          else gelu_numba.gelu(*args))
        assert all(same_bits(np.asarray(a), k) for a, k in zip(args, kept))
    rows = grid[:2, ::-3]
    rows.setflags(write=False)      # (the signature of the broadcast call)
    with pytest.raises(ValueError, match="could not be broadcast"):
        backward(x[:3].reshape(3, 1), rows)


def test_njit_callers_differ_from_the_ufunc_only_where_numba_must():
    # Numba has no float16 arrays, so an 8-bit integer array, which NumPy's
    # call sends to the float16 loop, goes to the float32 loop (the ufunc's
    # own: its bits on the converted array); and Numba makes a new array in
    # C order, where NumPy's call keeps the operand's Fortran order
    @njit
    def forward(x):
        return gelu_numba.gelu(x)

    small = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    assert gelu_numba.gelu(small).dtype == np.float16
    assert same_bits(forward(small), gelu_numba.gelu(small.astype(np.float32)))
    fortran = np.asfortranarray(np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4))
    assert gelu_numba.gelu(fortran).flags.f_contiguous
    got = forward(fortran)
    assert got.flags.c_contiguous and same_bits(got, gelu_numba.gelu(fortran))
