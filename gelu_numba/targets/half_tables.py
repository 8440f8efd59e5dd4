"""The tables of the 2-byte formats, and the scalar kernels on their bits
(method and proof: :mod:`gelu_numba.kernels.half_rounding`).

A table holds a function's correctly rounded result at each of the 65,536
bit patterns of a format, made on its first use from the float64 loop of
the function's ufunc.  The caller passes the ufuncs (``ufunc_of``: a
catalog record to its ufunc, the CPU registry's ``get``), since the float16
loops of those same ufuncs are built on these tables.  A kernel freezes
its table into the loop compiled around it as a constant.  A table is built
in the default floating-point environment (:mod:`gelu_numba.targets.fp_env`),
whatever flush-to-zero or rounding mode its first caller runs in.
"""

import functools

import numpy as np
from numba import njit

from gelu_numba import catalog
from gelu_numba.kernels import half_rounding as kernels
from gelu_numba.targets import fp_env
from gelu_numba.targets.cpu.bound import bound
from gelu_numba.targets.cpu.operands import at

_ALL = np.arange(65536, dtype=np.uint16)


# (the kernel a table loop runs: bound for one kernel by _mapped)
kernel = None


def _run(*ops):
    out = ops[-1]
    for i in range(out.size):
        out[i] = kernel(*at(ops[:-1], i))


def _mapped(kernel):
    """An @njit loop applying the compiled scalar ``kernel`` to arrays, the
    output last (the tables are built with the kernels themselves)."""
    return njit(bound(_run, f"table_{kernel.__name__}", kernel=kernel))


@functools.cache
@fp_env.default_environment()
def format_values(fmt):
    """The float64 value of every bit pattern of ``fmt``."""
    decode, _ = kernels.FORMATS[fmt]
    out = np.empty(65536)
    _mapped(decode)(_ALL, out)
    return out


@functools.cache
@fp_env.default_environment()
def table(name, fmt, ufunc_of):
    """The table of ``name`` ("gelu" or "gelu_grad") in ``fmt``: entry
    ``b`` is the bits of the correctly rounded value at input bits ``b``;
    for "gelu_backward", GELU' at every input as float64.  The values are
    those of ``ufunc_of(record)`` on float64."""
    def float64(name, x):
        return ufunc_of(catalog.lookup(name))(x)

    x = format_values(fmt)
    _, round_ = kernels.FORMATS[fmt]
    if name == "gelu_backward":
        grad = np.empty(65536)
        _mapped(kernels.grad_off_half)(x, float64("gelu_grad", x), grad)
        return grad
    y = float64(name, x)
    if name == "gelu":
        above = np.empty_like(y)
        _mapped(kernels.gelu_above_half_x)(x, y, above)
        y = above
    bits = np.empty(65536, dtype=np.uint16)
    _mapped(round_)(y, bits)
    return bits


def kernel(name, fmt, ufunc_of):
    """The scalar kernel on bit patterns: a lookup, or for the backward
    ``round(value(dy) * GELU'(x))``, the product in float64 (the tables:
    :func:`table`)."""
    if name != "gelu_backward":
        values = table(name, fmt, ufunc_of)

        def lookup(b):
            return values[b]
        return lookup
    grad = table(name, fmt, ufunc_of)
    decode, round_ = kernels.FORMATS[fmt]

    def backward(dy, x):
        # dy decoded by arithmetic (vector operations), GELU' by lookup
        return round_(decode(dy) * grad[x])
    return backward
