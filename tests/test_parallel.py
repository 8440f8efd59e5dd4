"""gelu_numba.parallel: the same results, bit for bit, as the single-threaded ufuncs."""

import numpy as np
import pytest

import gelu_numba as g
import gelu_numba.parallel as gp

UNARY = ["gelu", "gelu_grad", "gelu_grad2", "ndtr", "norm_pdf"]
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


def _same_bits(a, b):
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY)
def test_bit_identical_unary(name, dtype):
    x = _inputs(dtype)
    assert _same_bits(getattr(gp, name)(x), getattr(g, name)(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bit_identical_backward(dtype):
    x = _inputs(dtype)
    dy = np.random.default_rng(7).permutation(x)
    assert _same_bits(gp.gelu_backward(dy, x), g.gelu_backward(dy, x))


def test_interface():
    x = np.linspace(-5, 5, 1001, dtype=np.float32)
    assert isinstance(gp.gelu.ufunc, np.ufunc)
    assert set(gp.gelu.types) == {"f->f", "d->d"}
    assert gp.gelu.__doc__ == g.gelu.__doc__
    out = np.full_like(x, 7.0)
    gp.gelu(x, out=out, where=x > 0)
    assert np.all(out[x <= 0] == 7.0) and _same_bits(out[x > 0], g.gelu(x[x > 0]))
    assert gp.gelu(np.arange(5)).dtype == np.float64
    with pytest.raises(TypeError, match="float32 or float64"):
        gp.gelu(np.ones(3, dtype=np.complex128))


def test_selects_workqueue_layer():
    # Numba's omp/tbb layers call a parallel ufunc's loop once per element
    # (no SIMD); importing gelu_numba.parallel picks workqueue when it can
    import subprocess
    import sys
    code = ("import os; os.environ.pop('NUMBA_THREADING_LAYER', None)\n"
            "import numpy as np, numba, gelu_numba.parallel as gp\n"
            "gp.gelu(np.ones(1000))\n"
            "print(numba.threading_layer())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=300)
    assert out.stdout.strip() == "workqueue", out.stderr[-2000:]
