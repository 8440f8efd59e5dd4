"""gelu_numba.parallel: the same results, bit for bit, as the single-threaded ufuncs."""

import numpy as np
import pytest
from bits import same_bits

import gelu_numba as g
import gelu_numba.parallel as gp
from gelu_numba import catalog

pytestmark = pytest.mark.unit

#: the exact functions of one argument
UNARY = [f.name for f in catalog.group("exact") if f.nin == 1]
SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-300, -1e-300, 5e-324, -40.0,
           -38.5, -14.2, -0.7517915246935645, 1.4142135623730951, 1e300]


def _inputs(dtype):
    rng = np.random.default_rng(42)
    # more elements than threads x vector width, with an odd remainder, a
    # wide range of magnitudes and the special values
    x = np.concatenate([rng.standard_normal(50_001) * 6,
                        rng.uniform(-45, 10, 20_001),
                        np.ldexp(1.0, rng.integers(-160, 10, 5001)),
                        np.array(SPECIAL)])
    with np.errstate(over="ignore"):
        return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY)
def test_bit_identical_unary(name, dtype):
    x = _inputs(dtype)
    assert same_bits(getattr(gp, name)(x), getattr(g, name)(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bit_identical_backward(dtype):
    x = _inputs(dtype)
    dy = np.random.default_rng(7).permutation(x)
    assert same_bits(gp.gelu_backward(dy, x), g.gelu_backward(dy, x))


def test_interface():
    x = np.linspace(-5, 5, 1001, dtype=np.float32)
    assert isinstance(gp.gelu.ufunc, np.ufunc)
    assert set(gp.gelu.types) == {"f->f", "d->d"}
    # the same text but the interface: the serial gelu has a float16 loop
    assert gp.gelu.__doc__.split("Parameters")[0] == g.gelu.__doc__.split("Parameters")[0]
    assert "float16" in g.gelu.__doc__ and "float16" not in gp.gelu.__doc__
    out = np.full_like(x, 7.0)
    gp.gelu(x, out=out, where=x > 0)
    assert np.all(out[x <= 0] == 7.0) and same_bits(out[x > 0], g.gelu(x[x > 0]))
    assert gp.gelu(np.arange(5)).dtype == np.float64
    with pytest.raises(TypeError, match="float32 or float64"):
        gp.gelu(np.ones(3, dtype=np.complex128))


def test_import_changes_no_global_state():
    # importing (and using) gelu_numba.parallel leaves Numba's threading-layer
    # choice alone; the old module switched it to workqueue, which aborts
    # the process on concurrent calls
    import subprocess
    import sys
    code = ("import os; os.environ.pop('NUMBA_THREADING_LAYER', None)\n"
            "import numba; before = numba.config.THREADING_LAYER\n"
            "import numpy as np, gelu_numba.parallel as gp\n"
            "gp.gelu(np.ones(100_000))\n"
            "print(before, numba.config.THREADING_LAYER)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=600)
    before, after = out.stdout.split()
    assert before == after == "default", out.stderr[-2000:]


def test_concurrent_calls_from_python_threads():
    # several Python threads calling parallel ufuncs at once (what Dask's
    # threaded scheduler does): same bits as the serial ufunc, no abort
    import subprocess
    import sys
    code = """
import threading, numpy as np, numba, gelu_numba as g, gelu_numba.parallel as gp
x = np.random.default_rng(0).standard_normal(300_000) * 8
want = g.gelu(x)
bad = []
def work():
    for _ in range(20):
        if not np.array_equal(gp.gelu(x), want):
            bad.append(1)
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(numba.threading_layer(), len(bad))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    layer, bad = out.stdout.split()
    assert layer in ("omp", "tbb") and bad == "0", out.stdout


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_worker_threads_report_floating_point_flags(dtype):
    # NumPy reads the calling thread's flags; the parallel loop forwards the
    # workers' flags, so a flag raised anywhere in a long array is reported
    # as by the serial ufunc.  float32: gelu(-13.5) is subnormal (underflow);
    # float64: dy * gelu_grad(2) overflows for dy = 1.7e308 (float64 results
    # in the subnormal range raise no underflow: see gelu_numba.kernels.normal)
    n = 1_000_000
    x = np.zeros(n, dtype)
    dy = np.ones(n, dtype)
    if dtype == np.float32:
        x[-1], flag = -13.5, "underflow"  # in the last block: a worker's
    else:
        x[-1], dy[-1], flag = 2.0, 1.7e308, "overflow"
    for f in (g.gelu_backward, gp.gelu_backward):
        with np.errstate(all="raise"):
            with pytest.raises(FloatingPointError, match=flag):
                f(dy, x)
        with np.errstate(all="raise"):
            f(dy[:-1], x[:-1])  # and nothing without that element
