"""The implementations the benchmarks compare, each as ``make(x[, dy]) -> f``.

``f()`` computes the function on the prepared inputs and returns a new array
(every implementation allocates its output, as a user's call would).  Torch
and JAX are optional: they appear when installed (``pip install -e
'.[compare]'``), pinned to one thread, since the comparisons are per core.
"""

import math
import os

# one thread for XLA; must be set before jax is imported
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy.special as sc  # noqa: E402

import gelu_numba as g  # noqa: E402
from gelu_numba import catalog  # noqa: E402
import gelu_numba.parallel as gp  # noqa: E402
from benchmarks.machine import machine_info  # noqa: E402

try:
    import torch
    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - optional peer
    torch = None
try:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
except ImportError:  # pragma: no cover - optional peer
    jax = None

FUNCTIONS = list(catalog.names("exact"))
_SQRT1_2 = 1 / math.sqrt(2)
_PHI0 = 1 / math.sqrt(2 * math.pi)
_SIGS = ["float32(float32)", "float64(float64)"]
_SIGS2 = ["float32(float32, float32)", "float64(float64, float64)"]


# --- naive Numba: the textbook formulas on libm's erf/exp (scalar calls) ---
@numba.vectorize(_SIGS, cache=True)
def naive_gelu(x):
    return 0.5 * x * (1.0 + math.erf(x * _SQRT1_2))


@numba.vectorize(_SIGS, cache=True)
def naive_ndtr(x):
    return 0.5 * math.erfc(-x * _SQRT1_2)


@numba.vectorize(_SIGS, cache=True)
def naive_norm_pdf(x):
    return _PHI0 * math.exp(-0.5 * x * x)


@numba.vectorize(_SIGS, cache=True)
def naive_gelu_grad(x):
    return 0.5 * (1.0 + math.erf(x * _SQRT1_2)) + x * _PHI0 * math.exp(-0.5 * x * x)


@numba.vectorize(_SIGS, cache=True)
def naive_gelu_grad2(x):
    return _PHI0 * math.exp(-0.5 * x * x) * (2.0 - x * x)


@numba.vectorize(_SIGS2, cache=True)
def naive_gelu_backward(dy, x):
    return dy * (0.5 * (1.0 + math.erf(x * _SQRT1_2))
                 + x * _PHI0 * math.exp(-0.5 * x * x))


# --- NumPy / SciPy formulas ---
def _np_pdf(x):
    return (_PHI0 * np.exp(-0.5 * x * x)).astype(x.dtype, copy=False)


_NUMPY = {
    "gelu": lambda x: x * sc.ndtr(x),
    "gelu_grad": lambda x: sc.ndtr(x) + x * _np_pdf(x),
    "gelu_grad2": lambda x: _np_pdf(x) * (2 - x * x),
    "gelu_backward": lambda dy, x: dy * (sc.ndtr(x) + x * _np_pdf(x)),
    "ndtr": sc.ndtr,
    "norm_pdf": _np_pdf,
}

_TORCH = {} if torch is None else {
    "gelu": lambda x: torch.nn.functional.gelu(x, approximate="none"),
    "gelu_backward": lambda dy, x: torch.ops.aten.gelu_backward(dy, x),
    "ndtr": torch.special.ndtr,
}


def _jax_table():
    if jax is None:
        return {}

    def gelu(x):
        return jax.nn.gelu(x, approximate=False)

    def backward(dy, x):
        return jax.vjp(gelu, x)[1](dy)[0]

    return {
        "gelu": jax.jit(gelu),
        "gelu_backward": jax.jit(backward),
        "ndtr": jax.jit(jax.scipy.special.ndtr),
    }


_JAX = _jax_table()


def implementations(name):
    """``{label: make}`` for one function; ``make(*arrays)`` returns ``f``."""
    impls = {
        "gelu_numba": lambda *a: (lambda: getattr(g, name)(*a)),
        "gelu_numba.parallel": lambda *a: (lambda: getattr(gp, name)(*a)),
        "numpy/scipy": lambda *a: (lambda: _NUMPY[name](*a)),
        "naive numba": lambda *a: (lambda: globals()["naive_" + name](*a)),
    }
    if name in _TORCH:
        def make_torch(*a):
            t = [torch.from_numpy(v) for v in a]
            return lambda: _TORCH[name](*t)
        impls["torch"] = make_torch
    if name in _JAX:
        def make_jax(*a):
            j = [jnp.asarray(v) for v in a]
            fn = _JAX[name]
            fn(*j).block_until_ready()  # compile outside the timing
            return lambda: fn(*j).block_until_ready()
        impls["jax"] = make_jax
    # the memory roofline: a copy into a new array, and a cheap NumPy ufunc
    impls["np.copy (roofline)"] = lambda *a: (lambda: np.copy(a[-1]))
    impls["np.add (overhead)"] = lambda *a: (lambda: np.add(a[-1], a[-1]))
    return impls


def inputs(name, dtype, n, seed=0):
    """Standard normal inputs (``(dy, x)`` for the backward pass)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(dtype)
    if name == "gelu_backward":
        return (rng.standard_normal(n).astype(dtype), x)
    return (x,)


def machine():
    """One line describing this machine and the library versions."""
    info = machine_info()
    parts = [f"{info['cpu']}, {info['cpu_count']} cores", f"Python {info['python']}",
             f"numba {info['numba']}", f"numpy {info['numpy']}"]
    if torch is not None:
        parts.append(f"torch {torch.__version__} (1 thread)")
    if jax is not None:
        parts.append(f"jax {jax.__version__} (1 thread)")
    return ", ".join(parts)
