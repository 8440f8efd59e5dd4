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
from gelu_numba.kernels.primitives import inline
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
    """The table of ``name`` in ``fmt``: for a one-operand function
    ("gelu", "gelu_grad"), entry ``b`` is the bits of the correctly rounded
    value at input bits ``b``; for a fused backward ("gelu_backward"), its
    forward's derivative (GELU') at every input as float64.  The values are
    those of ``ufunc_of(record)`` on float64."""
    x = format_values(fmt)
    forward = catalog.forward(name)
    if forward is not None:
        grad = np.empty(65536)
        _mapped(kernels.grad_off_half)(x, ufunc_of(catalog.lookup(forward.derivative))(x), grad)
        return grad
    y = ufunc_of(catalog.lookup(name))(x)
    if name == catalog.GELU:
        above = np.empty_like(y)
        _mapped(kernels.gelu_above_half_x)(x, y, above)
        y = above
    _, round_ = kernels.FORMATS[fmt]
    bits = np.empty(65536, dtype=np.uint16)
    _mapped(round_)(y, bits)
    return bits


def stages(name, fmt, ufunc_of):
    """The two steps of a fused backward's kernel on bit patterns, compiled
    as kernels are: the lookup of GELU' at ``x``, ``look(dy, x)``, and
    ``finish(grad, dy, x) = round(value(dy) * grad)``, the product in
    float64 rounded once; None for a one-operand function (its kernel is
    the lookup alone)."""
    if catalog.forward(name) is None:
        return None
    grad = table(name, fmt, ufunc_of)
    decode, round_ = kernels.FORMATS[fmt]

    def look(dy, x):
        return grad[x]

    def finish(g, dy, x):
        # dy decoded by arithmetic (vector operations)
        return round_(decode(dy) * g)
    return inline(look), inline(finish)


def kernel(name, fmt, ufunc_of):
    """The scalar kernel on bit patterns: a lookup, or for a fused backward
    its two steps (:func:`stages`) one after the other (the tables:
    :func:`table`)."""
    two = stages(name, fmt, ufunc_of)
    if two is None:
        values = table(name, fmt, ufunc_of)

        def lookup(b):
            return values[b]
        return lookup
    look, finish = two

    def backward(dy, x):
        return finish(look(dy, x), dy, x)
    return backward
