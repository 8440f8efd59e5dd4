"""Polynomial evaluation, as straight-line code generated for each polynomial.

* :func:`horner` (FMA Horner) and :func:`horner_dd` (double-double Horner)
  of a coefficient tuple, and :func:`taylor_at_zero` (a function next to a
  simple zero, through :func:`horner`);
* :func:`poly_dd_source`, the source of a polynomial of one or two pieces
  with literal coefficients (Estrin's scheme for the high-order terms, lean
  double-double steps for the last ones), compiled by
  :func:`make_poly_dd`; :func:`poly_dd_table_source`, the CUDA target's
  form of the same operations, its coefficients read from constant memory;
  :func:`first_piece`, the first of two pieces alone; :func:`choose`, the
  coefficient of the piece an element uses (a select, lowered in its
  caller on the CPU).

A loop over a coefficient tuple would stay a loop in compiled code and keep
a kernel's element loop scalar (see the comment above :func:`horner_dd`),
so each polynomial is generated as straight-line code, with constant
indices or literal coefficients, and run with ``fma``
(:mod:`~gelu_numba.kernels.primitives.intrinsics`) and the error-free
transformations ``two_prod``, ``two_sum`` and ``fast_two_sum``
(:mod:`~gelu_numba.kernels.primitives.double_double`) in its namespace.
"""

import functools

import numpy as np
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import overload

from gelu_numba.internals.numba_core import lowered_on_cpu
from gelu_numba.kernels.primitives.double_double import fast_two_sum, two_prod, two_sum
from gelu_numba.kernels.primitives.intrinsics import (
    JIT_OPTIONS, fma, inline, opaque_zero, per_target,
)


def choose(upper, a, b):
    """``b if upper else a``: a coefficient of the piece chosen per element."""
    return b if upper else a


@lowered_on_cpu(choose)
def _choose(typingctx, upper, a, b):
    # an LLVM select in the caller, where ``b if upper else a`` is two
    # blocks of Numba IR for each coefficient (typed and lowered one by one
    # on a first call; LLVM makes the same select of them)
    if not (isinstance(upper, types.Boolean) and a == b == types.float64):
        return None

    def codegen(context, builder, signature, args):
        return builder.select(args[0], args[2], args[1])

    return types.float64(upper, a, b), codegen


def _compile_source(source, name, jit=True):
    """Run generated ``source`` with ``fma`` and the error-free
    transformations in scope and return the function ``name`` (``@inline``
    unless ``jit`` is false: an overload's implementation is compiled by
    Numba for the caller's target)."""
    scope = {"fma": fma, "two_prod": two_prod, "two_sum": two_sum,
             "fast_two_sum": fast_two_sum, "choose": choose}
    exec(source, scope)
    return inline(scope[name]) if jit else scope[name]


# horner_dd and horner (and taylor_at_zero through horner) are straight-line
# code generated for the coefficient tuple's length, with constant indices.
# A loop over the tuple is compiled by Numba as a loop, which LLVM fully
# unrolls only while it is short; a loop left inside the element loop stops
# the element loop's vectorisation (the float64 poly12 and poly14 ufuncs,
# and gelu_sigmoid_grad, x_cauchy_grad and gelu_rat22_grad in both dtypes,
# ran scalar: poly14 at 54 ns per element instead of 10).  One generator per
# function: pure-Python execution (the CUDA simulator) runs the generated
# function, compiled code gets it through the overloads below.


def horner_dd(th, tl, hi, lo):
    """``sum_j c_j t**j`` in dd arithmetic throughout, for a dd ``t`` and
    dd coefficients ``c_j = hi[j] + lo[j]`` (tuples, ascending powers).
    The error is about 2**-100 times ``sum |c_j t**j|``.

    Each step is a lean one (as in :func:`poly_dd_source`): the running
    value is an unnormalised pair, the product ``th * sh`` exact
    (:func:`two_prod`), the sum with the coefficient exact (:func:`two_sum`),
    and every low-order term (``th sl + tl sh``, the product's and the sum's
    errors, the coefficient's low part) is gathered in the low part, which
    is normalised once at the end: twelve operations a step instead of the
    nineteen of :func:`~gelu_numba.kernels.primitives.double_double.dd_mul`
    and :func:`~gelu_numba.kernels.primitives.double_double.dd_add`, for the
    same error (the term left out, ``tl sl``, is 2**-104 of the step)."""
    return _horner_dd_n(len(hi))(th, tl, hi, lo)


@functools.lru_cache(maxsize=None)
def _horner_dd_n(n):
    """The straight-line :func:`horner_dd` for ``n`` coefficients, a plain
    Python function: run as such by pure-Python execution, compiled by
    Numba for each target through the overloads below."""
    lines = ["def horner_dd_n(th, tl, hi, lo):",
             f"    sh = hi[{n - 1}]",
             f"    sl = lo[{n - 1}]"]
    for j in range(n - 2, -1, -1):
        lines += ["    p, pe = two_prod(th, sh)",
                  "    pe = fma(th, sl, fma(tl, sh, pe))",
                  f"    sh, e = two_sum(hi[{j}], p)",
                  f"    sl = e + (lo[{j}] + pe)"]
    lines.append("    return fast_two_sum(sh, sl)")
    return _compile_source("\n".join(lines) + "\n", "horner_dd_n", jit=False)


def _horner_dd_compiled(th, tl, hi, lo):
    if len(hi) != len(lo):
        raise TypingError("horner_dd: hi and lo of different lengths")
    return _horner_dd_n(len(hi))


def horner(t, coeffs):
    """``sum coeffs[j] t**j`` (a tuple of float64, ascending powers), FMA Horner."""
    return _horner_n(len(coeffs))(t, coeffs)


@functools.lru_cache(maxsize=None)
def _horner_n(n):
    """The straight-line :func:`horner` for ``n`` coefficients (as
    :func:`_horner_dd_n`)."""
    lines = ["def horner_n(t, coeffs):", f"    acc = coeffs[{n - 1}]"]
    lines += [f"    acc = fma(acc, t, coeffs[{j}])" for j in range(n - 2, -1, -1)]
    lines.append("    return acc")
    return _compile_source("\n".join(lines) + "\n", "horner_n", jit=False)


def _horner_compiled(t, coeffs):
    return _horner_n(len(coeffs))


# The generated code must be inlined: left to its cost model, LLVM's inliner
# leaves a long straight-line function a call, which blocks vectorisation
# (poly14 float64, x_cauchy_grad); JIT_OPTIONS forces it.  (numba-cuda 0.30
# fails to type these overloads when it inlines them at the IR level,
# "add(omitted, omitted)".)
overload(horner_dd, target="generic", jit_options=JIT_OPTIONS)(_horner_dd_compiled)
overload(horner, target="generic", jit_options=JIT_OPTIONS)(_horner_compiled)


@inline
def taylor_at_zero(x, z):
    """A function with a simple zero x0, next to it: ``(near, value)``.

    ``z = (x0_hi, x0_lo, delta, b0_hi, b0_lo, b1, ..., bJ)`` holds the zero
    as a dd and the Taylor coefficients of ``g(x0 + d)/d = sum b_j d**j``
    (generated in mpmath; ``b0 = g'(x0)`` as a dd).  ``near`` is
    ``|x - x0| < delta``; there ``value = d * sum b_j d**j`` with ``d`` carried
    as ``dh - x0_lo`` (``dh = x - x0_hi`` is exact near x0, by Sterbenz), so
    the relative error stays near 1 ulp however close x is to x0: the
    cancellation of the direct formula is replaced by an exact factor.
    """
    near = abs(x - z[0]) < z[2]
    # far from x0 the value is discarded; d = 0 there keeps d**J finite
    dh = x - z[0] if near else 0.0
    d = dh - z[1]
    s = z[3] + fma(d, horner(d, z[5:]), z[4])
    return near, fma(dh, s, -z[1] * s)


def poly_dd_source(name, pieces, exact_steps=(), dd_variable=True, table=False):
    """Source of ``name(vh, vl, upper)``: ``sum_j c_j v**j`` for the dd
    variable ``v = vh + vl`` (``name(vh, upper)`` for a double, without
    ``dd_variable``) and a polynomial chosen per element, without a
    table read: ``pieces`` is one ``(hi, lo)`` pair of coefficient tuples
    (ascending powers; ``lo`` the low parts of the first ``len(lo)``), or two,
    the second used where ``upper`` is true.  Every coefficient is a literal
    of the generated code and the choice a select (a blend in a vector
    loop), so a loop over elements that use different pieces needs no
    gather.  Numba does not unroll a loop over tuples this long, hence the
    generated straight-line code.

    The high-order terms are plain FMA arithmetic in ``vh`` (Estrin's
    scheme).  The last
    ``len(lo)`` steps are "lean" double-double steps: the running value is
    an unnormalised pair ``(s, low)`` with ``|low| <= 2**-52 |s|``; each step
    forms ``vh * s`` exactly (:func:`two_prod`), adds the coefficient with an
    exact sum (:func:`fast_two_sum`, valid when ``|c_j| >= |v S_{j+1}|``,
    which the table generator checks; the steps in ``exact_steps`` use
    :func:`two_sum`), and gathers every low-order term (``c_j``'s low part,
    the product's error, ``vh low + vl s``) into ``low``.  The rounding
    errors of the plain part are thus scaled by ``|v|**len(lo)``, those of
    the lean steps are about 2**-104, and the low part ``vl`` of the
    variable (``|vl| <= 2**-52 |vh|``) enters the last ``len(lo)`` steps:
    the only first-order term left out is ``vl v**n S_n'(v)``, ``n = len(lo)``.
    Returns the unnormalised ``(s, low)``.

    ``table``: each coefficient is read instead from ``c[base + j]``, the
    hi parts then the lo parts of each piece in turn (``c`` and ``base`` set
    by the caller's preamble: :func:`poly_dd_table_source`).
    """
    if len(pieces) not in (1, 2):
        raise ValueError(f"one or two pieces, not {len(pieces)}")
    two = len(pieces) == 2
    hi, lo = pieces[0]
    n, nd = len(hi), len(lo)
    if any(len(p[0]) != n or len(p[1]) != nd for p in pieces):
        raise ValueError("pieces must have the same degree and low parts")

    def coef(j, part=0):
        if table:
            return f"c[base + {j + part * n}]"
        vals = [p[part][j] for p in pieces]
        return f"choose(upper, {vals[0]!r}, {vals[1]!r})" if two else repr(vals[0])

    args = "vh, vl, upper" if dd_variable else "vh, upper"
    lines = [f"def {name}({args}):"]
    # the plain part sum_{j >= nd} c_j v**(j - nd) by Estrin's scheme: pairs
    # c_j + c_{j+1} v, then pairs of those with v**2, v**4, ...: a chain
    # of about log2(n - nd) FMAs instead of n - nd (the loops are
    # latency-bound), at the cost of the powers of v
    # below 2**-50 the plain part is its constant term to far within its
    # rounding (it is scaled by v**nd); the powers of a smaller v would
    # raise the underflow flag for a result that does not underflow
    lines.append("    vq = vh if abs(vh) >= 2.0**-50 else 0.0")
    terms = [coef(j) for j in range(nd, n)]
    power, level = "vq", 0
    while len(terms) > 1:
        nxt = []
        for k in range(0, len(terms), 2):
            if k + 1 < len(terms):
                lines.append(f"    e{level}_{k // 2} = fma({terms[k + 1]}, {power}, {terms[k]})")
                nxt.append(f"e{level}_{k // 2}")
            else:
                nxt.append(terms[k])
        terms = nxt
        if len(terms) > 1:
            lines.append(f"    v{level + 1} = {power} * {power}")
            power, level = f"v{level + 1}", level + 1
    lines.append(f"    s = {terms[0]}")
    for j in range(nd - 1, -1, -1):
        add = "two_sum" if j in exact_steps else "fast_two_sum"
        carry = "pe" if j == nd - 1 else "fma(vh, low, pe)"
        lines += [
            "    p, pe = two_prod(vh, s)",
            f"    pe = fma(vl, s, {carry})" if dd_variable else f"    pe = {carry}",
            f"    s, e = {add}({coef(j)}, p)",
            f"    low = e + ({coef(j, 1)} + pe)",
        ]
    lines.append("    return s, low")
    return "\n".join(lines) + "\n"


def make_poly_dd(name, pieces, exact_steps=(), dd_variable=True):
    """Compile :func:`poly_dd_source` (``@inline``).

    The CUDA target compiles another form of the same operations
    (:func:`poly_dd_table_source`): the coefficients read from a
    constant-memory array, one load each (or none: ptxas keeps loads of an
    index invariant in the loop in registers where it has them), where
    literals cost two register moves each (no SASS instruction takes a
    64-bit immediate, and ptxas moves them again for every element), for
    both pieces, and the select.  The same values in the same order: the
    same bits.  Pure-Python execution (the CUDA simulator) and the CPU run
    the literal code."""
    literal = _compile_source(poly_dd_source(name, pieces, exact_steps, dd_variable), name,
                              jit=False)
    return per_target(name, literal,
                      functools.partial(_poly_dd_cuda, name, tuple(pieces), tuple(exact_steps),
                                        dd_variable))


def first_piece(two, name, pieces, exact_steps=(), dd_variable=True):
    """``name(vh, vl)`` (``name(vh)`` without ``dd_variable``): the first
    of the two pieces of ``two`` (:func:`make_poly_dd`'s), for callers that
    know ``upper`` false.  On the CPU and in Python ``two`` itself with
    ``upper`` false (the same code, compiled once); on CUDA the first piece
    alone, whose constant-memory index NVVM cannot fold back into literals
    (:func:`poly_dd_table_source`), where ``two``'s, with ``upper`` a
    constant, would be."""
    args = "vh, vl" if dd_variable else "vh"
    scope = {"two": two, "one": make_poly_dd(f"{name}_piece", pieces[:1], exact_steps,
                                             dd_variable)}
    exec(f"def on_cpu({args}):\n    return two({args}, False)\n"
         f"def on_cuda({args}):\n    return one({args}, False)\n", scope)
    return per_target(name, scope["on_cpu"], lambda: scope["on_cuda"])


def poly_dd_table_source(name, pieces, exact_steps=(), dd_variable=True):
    """``(source, coefficients)``: :func:`poly_dd_source` with each
    coefficient read from ``c = cuda.const.array_like(COEFFICIENTS)``
    (``coefficients``: hi parts then lo parts of the first piece, then of
    the second) at ``base + j``.  ``base`` is chosen by ``upper`` for two
    pieces (a runtime index), and is :func:`opaque_zero` for one: with a
    constant index NVVM would fold each load back into its literal, and its
    two moves.  (Where ``upper`` is a constant, the kernels call a one-piece
    polynomial: the first piece alone, :mod:`gelu_numba.kernels.normal`'s
    ordinary forms.)"""
    source = poly_dd_source(name, pieces, exact_steps, dd_variable, table=True)
    n, nd = len(pieces[0][0]), len(pieces[0][1])
    head = source.index(":\n") + 2
    base = f"{n + nd} if upper else 0" if len(pieces) == 2 else "opaque_zero()"
    source = (source[:head] + "    c = cuda.const.array_like(COEFFICIENTS)\n"
              f"    base = {base}\n" + source[head:])
    return source, np.array([v for hi, lo in pieces for v in hi + lo], dtype=np.float64)


@functools.lru_cache(maxsize=None)
def _poly_dd_cuda(name, pieces, exact_steps, dd_variable):
    """:func:`poly_dd_table_source` compiled (by the CUDA target that
    calls it)."""
    from numba import cuda

    source, coefficients = poly_dd_table_source(name, pieces, exact_steps, dd_variable)
    scope = {"fma": fma, "two_prod": two_prod, "two_sum": two_sum, "fast_two_sum": fast_two_sum,
             "cuda": cuda, "COEFFICIENTS": coefficients, "opaque_zero": opaque_zero}
    exec(source, scope)
    return scope[name]
