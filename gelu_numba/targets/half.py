"""CPU loops of the 2-byte formats (method and proof: :mod:`gelu_numba.kernels.half`).

* float16 loops of the ufuncs ``gelu``, ``gelu_grad`` and ``gelu_backward``
  (``e->e``, ``ee->e``): float16 in, float16 out, one rounding;
* bfloat16, which NumPy has no dtype for, as ufuncs on bit patterns
  (``uint16`` in and out: :data:`BFLOAT16`, published by
  :mod:`gelu_numba.half`, used by :mod:`gelu_numba.torch` on bfloat16
  tensors viewed as int16).

The tables are made on the first call for a format, from the float64 ufuncs
(65,536 values each), and frozen into the loop as constants; the loops are
not cached on disk (the tables are made afresh in each process).
"""

import functools

import numpy as np
from numba import cfunc, njit

from gelu_numba import catalog
from gelu_numba.kernels import half as kernels
from gelu_numba.kernels.primitives import inline

#: the functions with 2-byte loops: the catalog records with ``half``
FUNCTIONS = tuple(f.name for f in catalog.FUNCTIONS if f.half)
#: the bfloat16 bit-pattern ufuncs: public name -> function
BFLOAT16 = {f"{name}_bfloat16": name for name in FUNCTIONS}

_ALL = np.arange(65536, dtype=np.uint16)


def _mapped(kernel, nin):
    """An @njit loop applying the compiled scalar ``kernel`` to arrays (the
    tables are built with the kernels themselves)."""
    args = ", ".join(f"a{k}" for k in range(nin))
    loads = ", ".join(f"a{k}[i]" for k in range(nin))
    scope = {"kernel": kernel}
    exec(f"def run({args}, out):\n"
         f"    for i in range(out.size):\n"
         f"        out[i] = kernel({loads})\n", scope)
    return njit(scope["run"])


@functools.cache
def _values(fmt):
    """The float64 value of every bit pattern of ``fmt``."""
    decode, _ = kernels.FORMATS[fmt]
    out = np.empty(65536)
    _mapped(decode, 1)(_ALL, out)
    return out


def _float64(name, x):
    from gelu_numba.targets import cpu
    return cpu.REGISTRY.get(catalog.lookup(name))(x)


@functools.cache
def table(name, fmt):
    """The table of ``name`` ("gelu" or "gelu_grad") in ``fmt``: entry
    ``b`` is the bits of the correctly rounded value at input bits ``b``;
    for "gelu_backward", GELU' at every input as float64."""
    x = _values(fmt)
    _, round_ = kernels.FORMATS[fmt]
    if name == "gelu_backward":
        grad = np.empty(65536)
        _mapped(kernels.grad_off_half, 2)(x, _float64("gelu_grad", x), grad)
        return grad
    y = _float64(name, x)
    if name == "gelu":
        above = np.empty_like(y)
        _mapped(kernels.gelu_above_half_x, 2)(x, y, above)
        y = above
    bits = np.empty(65536, dtype=np.uint16)
    _mapped(round_, 1)(y, bits)
    return bits


def kernel(name, fmt):
    """The scalar kernel on bit patterns: a lookup, or for the backward
    ``round(value(dy) * GELU'(x))``, the product in float64."""
    if name != "gelu_backward":
        values = table(name, fmt)

        def lookup(b):
            return values[b]
        return lookup
    grad = table(name, fmt)
    decode, round_ = kernels.FORMATS[fmt]

    def backward(dy, x):
        # dy decoded by arithmetic (vector operations), GELU' by lookup
        return round_(decode(dy) * grad[x])
    return backward


def loop(name, fmt, nin):
    """The NumPy inner loop of ``name`` on the bits of ``fmt``."""
    from gelu_numba.targets import cpu
    py = cpu.loop_function(inline(kernel(name, fmt)), "e", nin, f"{name}_{fmt}")
    # not cached on disk: the tables are frozen into the code, and are
    # made afresh in each process anyway
    return cfunc(cpu.LOOP_SIGNATURE, cache=False, error_model="numpy")(py)


@functools.cache
def bfloat16_loops(public):
    """The :class:`~gelu_numba.targets.numpy_api.LazyLoops` of the bfloat16
    function ``public`` (a name of :data:`BFLOAT16`): its one ``uint16``
    loop, compiled on first use."""
    from gelu_numba.targets import numpy_api
    name = BFLOAT16[public]
    nin = catalog.lookup(name).nin
    lazy = numpy_api.LazyLoops(public, nin, [
        (np.dtype(np.uint16), functools.partial(loop, name, "bfloat16", nin))])
    lazy.ufunc.__module__ = "gelu_numba._emulated_raw"  # (pickled by reference)
    return lazy


def bfloat16_ufunc(public):
    """The ``uint16 -> uint16`` ufunc of the bfloat16 function ``public``
    (a name of :data:`BFLOAT16`), its loop compiled on the first call."""
    return bfloat16_loops(public).ufunc
