"""Error-free transformations and double-double ("dd") arithmetic.

Every accurate kernel in this package evaluates its final few operations in
double-double arithmetic: a value is carried as an unevaluated sum ``hi + lo``
with ``|lo| <= ulp(hi)/2``, which gives about 106 significant bits.  The
building blocks are the classical error-free transformations:

* ``two_sum(a, b)``: ``s + e == a + b`` exactly (Knuth, TAOCP vol. 2, 4.2.2).
* ``fast_two_sum(a, b)``: the same when ``|a| >= |b|`` (Dekker 1971).
* ``two_prod(a, b)``: ``p + e == a * b`` exactly, with ``e = fma(a, b, -p)``.

They are exact only under round-to-nearest with no reassociation, so nothing
here may be compiled with ``fastmath``.

Nine operations depend on the target and are the package's single switch
between targets: :func:`add_rn` and :func:`mul_rn` (a sum or a product that
is never fused into an FMA, which the error-free transformations need),
:func:`fma` (a fused multiply-add, rounded once), :func:`pow2` (the double
``2**n`` for an integer ``-1022 <= n <= 1023``), :func:`split_exponent`
(``y = m * 2**e`` with ``1 <= |m| < 2``), :func:`scale_shifted`
(``p * 2**k`` with ``k`` read off a rounding-shifter sum),
:func:`shifted_int` (that ``k`` as an integer), :func:`step_bits`
(the neighbouring double) and :func:`nan_to_zero`.  Their Python bodies are
exact reference implementations, used by pure-Python execution such as the
CUDA simulator.  Compiled code gets LLVM IR instead: ``llvm.fma.f64``,
bit-level constructions of ``2**n`` and of the scaling, an integer-domain
NaN test, integer-domain exponent extraction, so that on the CPU no libm
call is left to block vectorisation
(``llvm.fma.f64`` is one ``vfmadd``).  The same IR serves the CUDA target,
where NVVM turns it into ``fma.rn.f64`` and integer instructions (these
overloads are registered for the ``generic`` target).  ``add_rn`` and
``mul_rn`` are plain ``+`` and ``*`` on the CPU and NVVM's ``add.rn`` and
``mul.rn`` on CUDA (see the comment at their definition).
"""

import functools
import math
import struct
from fractions import Fraction
from types import MappingProxyType

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.core.errors import TypingError
from gelu_numba.internals.numba_core import CPUDispatcher
from numba.extending import intrinsic, overload

#: How every kernel and helper is compiled.  ``forceinline``: LLVM's
#: ``alwaysinline`` attribute, so each call is inlined into its caller by
#: LLVM and the element loops vectorise through it.  (Numba's own
#: ``inline="always"`` inlines at the IR level instead, deep-copying the
#: callee's IR at every call site: most of a cold first call's time, see
#: the first-call table of docs/guide/first_call.md.)  ``error_model="numpy"``: a helper is
#: compiled once, whoever calls it first, and a float division must not
#: grow the ZeroDivisionError branch that would keep the loops scalar.
JIT_OPTIONS = MappingProxyType({"forceinline": True, "error_model": "numpy"})


def inline(fn):
    """``fn`` compiled with :data:`JIT_OPTIONS` for whichever target calls
    it (the CPU's loops, a CUDA kernel, the user's ``@njit`` code)."""
    return njit(**JIT_OPTIONS)(fn)



def fma(a, b, c):
    """Return ``a*b + c`` rounded once to float64 (exact Python reference)."""
    if math.isfinite(a) and math.isfinite(b) and math.isfinite(c):
        exact = Fraction(a) * Fraction(b) + Fraction(c)
        if exact == 0:
            # The sign of an exact zero follows IEEE 754: -0 only if both
            # a*b and c are -0 (or their signs agree on a negative zero).
            return a * b + c
        return float(exact)
    return a * b + c


def pow2(n):
    """Return the float64 ``2.0**n`` for an integer ``-1022 <= n <= 1023``."""
    return math.ldexp(1.0, int(n))


def split_exponent(y):
    """``(m, e)`` with ``y == m * 2**e`` and ``1 <= |m| < 2`` for a normal y
    (``e`` an integer); ``(y, 0)`` for ``y = +-0``.  Subnormal y are not
    supported by the compiled version (scale them up first)."""
    if y == 0.0:
        return y, 0
    f, e = math.frexp(y)
    return 2.0 * f, e - 1


# 1.5 * 2**52: for |t| < 2**51, ``(t + SHIFTER) - SHIFTER`` is t rounded to
# the nearest integer k, branch-free, and the low bits of ``t + SHIFTER``
# hold k in two's complement.
SHIFTER = 6755399441055744.0


def scale_shifted(p, kb):
    """``p * 2**k`` where ``kb = k + SHIFTER`` (k an integer, ``|k| < 2**51``).

    Exact when ``p * 2**k`` is a normal double.  On the CPU this is one
    integer addition to the bits of p: ``bits(kb) << 52 == k << 52`` modulo
    2**64, because the shifter's own bits are shifted out.
    """
    return math.ldexp(p, int(kb - SHIFTER))


def shifted_int(kb):
    """The integer k (an int64) of ``kb = k + SHIFTER``, ``|k| < 2**51``.

    Compiled, the difference of the bit patterns of kb and SHIFTER, which
    share their binade: integer arithmetic, where ``int64(kb - SHIFTER)``
    would be a float-to-integer conversion, which 256-bit vector code has
    no instruction for (LLVM converts each lane on its own there)."""
    return np.int64(kb - SHIFTER)


def step_bits(v, n):
    """The double whose bit pattern is ``bits(v) + n`` (``n`` = +-1: the next
    double away from or towards zero, for a finite non-zero ``v``)."""
    (bits,) = struct.unpack("<q", struct.pack("<d", v))
    return struct.unpack("<d", struct.pack("<q", bits + int(n)))[0]


def nan_to_zero(x):
    """``x``, or ``0.0`` if ``x`` is NaN.

    The kernels remove NaN before any ordered comparison, because ``<`` on
    NaN raises the invalid flag, which NumPy turns into a RuntimeWarning.
    On the CPU the test is done on the integer bits: a float ``x == x``
    select is folded by LLVM back into the later comparisons.
    """
    return x if x == x else 0.0


def add_rn(a, b):
    """``a + b``, rounded on its own: never fused with a product into an FMA."""
    return a + b


def mul_rn(a, b):
    """``a * b``, rounded on its own: never fused with a sum into an FMA."""
    return a * b


def _nvvm_binary(name, irty=ir.DoubleType(), nbty=types.float64):
    """An intrinsic calling the NVVM intrinsic ``name`` on two doubles (or
    two values of the given LLVM and Numba types)."""
    @intrinsic
    def call(typingctx, a, b):
        sig = nbty(nbty, nbty)

        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(irty, [irty] * 2)
            fn = cgutils.get_or_insert_function(builder.module, fnty, name)
            return builder.call(fn, args)

        return sig, codegen

    return call


# NVVM fuses a product and a sum into an FMA wherever it can (its default
# -fma=1, which numba-cuda does not turn off).  That breaks the error-free
# transformations below, which need the rounded product or sum itself (a
# contracted two_prod or two_sum loses the low part of a double-double:
# measured 30 to 700 ulp in the logistic forms' float64 tail on an H100).
# PTX add.rn / mul.rn, with their explicit rounding, are never fused and
# cost the same as add / mul.
_add_rn_nvvm = _nvvm_binary("llvm.nvvm.add.rn.d")
_mul_rn_nvvm = _nvvm_binary("llvm.nvvm.mul.rn.d")
# (float32: the float32-arithmetic kernels' float-float steps need the same)
_add_rn_nvvm_f = _nvvm_binary("llvm.nvvm.add.rn.f", ir.FloatType(), types.float32)
_mul_rn_nvvm_f = _nvvm_binary("llvm.nvvm.mul.rn.f", ir.FloatType(), types.float32)


def _is_f64(*tys):
    return all(isinstance(t, types.Float) and t.bitwidth == 64 for t in tys)


def _is_f32(*tys):
    return all(isinstance(t, types.Float) and t.bitwidth == 32 for t in tys)


@overload(add_rn, target="cpu")
def _add_rn_cpu(a, b):
    # LLVM on the CPU contracts nothing without fast-math flags
    return lambda a, b: a + b


@overload(mul_rn, target="cpu")
def _mul_rn_cpu(a, b):
    return lambda a, b: a * b


@overload(add_rn, target="cuda")
def _add_rn_cuda(a, b):
    if _is_f64(a, b):
        return lambda a, b: _add_rn_nvvm(a, b)
    if _is_f32(a, b):
        return lambda a, b: _add_rn_nvvm_f(a, b)
    return lambda a, b: a + b


@overload(mul_rn, target="cuda")
def _mul_rn_cuda(a, b):
    if _is_f64(a, b):
        return lambda a, b: _mul_rn_nvvm(a, b)
    if _is_f32(a, b):
        return lambda a, b: _mul_rn_nvvm_f(a, b)
    return lambda a, b: a * b


@intrinsic
def _fma_f64(typingctx, a, b, c):
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return sig, codegen


@intrinsic
def _pow2_f64(typingctx, n):
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        # 2**n has biased exponent n + 1023 and a zero significand.
        biased = builder.add(args[0], ir.Constant(ir.IntType(64), 1023))
        bits = builder.shl(biased, ir.Constant(ir.IntType(64), 52))
        return builder.bitcast(bits, ir.DoubleType())

    return sig, codegen


@intrinsic
def _nan_to_zero_f64(typingctx, x):
    sig = types.float64(types.float64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        bits = builder.bitcast(args[0], i64)
        mag = builder.and_(bits, ir.Constant(i64, 0x7FFFFFFFFFFFFFFF))
        isnan = builder.icmp_unsigned(">", mag, ir.Constant(i64, 0x7FF0000000000000))
        clean = builder.select(isnan, ir.Constant(i64, 0), bits)
        return builder.bitcast(clean, ir.DoubleType())

    return sig, codegen


@intrinsic
def _split_exponent_f64(typingctx, y):
    sig = types.Tuple((types.float64, types.int64))(types.float64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        bits = builder.bitcast(args[0], i64)
        biased = builder.and_(builder.lshr(bits, ir.Constant(i64, 52)),
                              ir.Constant(i64, 0x7FF))
        # +-0 has a zero exponent field (subnormals are excluded by contract)
        zero = builder.icmp_unsigned("==", biased, ir.Constant(i64, 0))
        e = builder.select(zero, ir.Constant(i64, 0),
                           builder.sub(biased, ir.Constant(i64, 1023)))
        # keep sign and significand, set the exponent of [1, 2)
        mbits = builder.or_(builder.and_(bits, ir.Constant(i64, 0x800FFFFFFFFFFFFF)),
                            ir.Constant(i64, 0x3FF0000000000000))
        m = builder.bitcast(builder.select(zero, bits, mbits), ir.DoubleType())
        return context.make_tuple(builder, signature.return_type, [m, e])

    return sig, codegen


@intrinsic
def _scale_shifted_f64(typingctx, p, kb):
    sig = types.float64(types.float64, types.float64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        pbits = builder.bitcast(args[0], i64)
        kbits = builder.bitcast(args[1], i64)
        shifted = builder.shl(kbits, ir.Constant(i64, 52))
        return builder.bitcast(builder.add(pbits, shifted), ir.DoubleType())

    return sig, codegen


@intrinsic
def _shifted_int_f64(typingctx, kb):
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        bits = builder.bitcast(args[0], i64)
        shifter = ir.Constant(i64, struct.unpack("<q", struct.pack("<d", SHIFTER))[0])
        return builder.sub(bits, shifter)

    return sig, codegen


@intrinsic
def _step_bits_f64(typingctx, v, n):
    sig = types.float64(types.float64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        bits = builder.add(builder.bitcast(args[0], i64), args[1])
        return builder.bitcast(bits, ir.DoubleType())

    return sig, codegen


@overload(step_bits, target="generic")
def _step_bits_cpu(v, n):
    def impl(v, n):
        return _step_bits_f64(v, n)

    return impl


@overload(shifted_int, target="generic")
def _shifted_int_cpu(kb):
    def impl(kb):
        return _shifted_int_f64(kb)

    return impl


@overload(split_exponent, target="generic")
def _split_exponent_cpu(y):
    def impl(y):
        return _split_exponent_f64(y)

    return impl


@overload(scale_shifted, target="generic")
def _scale_shifted_cpu(p, kb):
    def impl(p, kb):
        return _scale_shifted_f64(p, kb)

    return impl


@overload(nan_to_zero, target="generic")
def _nan_to_zero_cpu(x):
    def impl(x):
        return _nan_to_zero_f64(x)

    return impl


@overload(fma, target="generic")
def _fma_cpu(a, b, c):
    def impl(a, b, c):
        return _fma_f64(a, b, c)

    return impl


@overload(pow2, target="generic")
def _pow2_cpu(n):
    def impl(n):
        return _pow2_f64(n)

    return impl


@inline
def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly."""
    s = add_rn(a, b)
    bb = add_rn(s, -a)
    e = add_rn(add_rn(a, -add_rn(s, -bb)), add_rn(b, -bb))
    return s, e


@inline
def fast_two_sum(a, b):
    """``(s, e)`` with ``s + e == a + b`` exactly, assuming ``|a| >= |b|``."""
    s = add_rn(a, b)
    e = add_rn(b, -add_rn(s, -a))
    return s, e


@inline
def two_prod(a, b):
    """``(p, e)`` with ``p = fl(a*b)`` and ``p + e == a*b`` exactly."""
    p = mul_rn(a, b)
    return p, fma(a, b, -p)


@inline
def dd_mul(ah, al, bh, bl):
    """Product of two dd numbers; relative error below 2**-102."""
    p, e = two_prod(ah, bh)
    e = e + (ah * bl + al * bh)
    return fast_two_sum(p, e)


@inline
def dd_mul_d(ah, al, b):
    """Product of a dd number and a double; relative error below 2**-104."""
    p, e = two_prod(ah, b)
    e = fma(al, b, e)
    return fast_two_sum(p, e)


@inline
def one_minus_dd(qh, ql):
    """``1 - (qh + ql)`` as a dd number, for ``|qh| <= 1``."""
    s, e = two_sum(1.0, -qh)
    return fast_two_sum(s, e - ql)


# the smallest normal double; below it a multiplier is first scaled up by
# 2**64 (exactly), so that split_exponent sees a normal number
SMALLEST_NORMAL = 2.0**-1022
_SUB_SCALE = 2.0**64
_SUB_SHIFT = 64


@inline
def normalised(v):
    """``(m, e)`` with ``v == m * 2**e`` and ``1 <= |m| < 2`` for any finite
    non-zero v, subnormal ones included; ``(v, 0)`` for ``v = +-0``."""
    sub = abs(v) < SMALLEST_NORMAL
    m, e = split_exponent(v * (_SUB_SCALE if sub else 1.0))
    return m, e - (_SUB_SHIFT if sub else 0)


@inline
def scaled_mul(y, mh, ml, k, normal=False):
    """``y * (mh + ml) * 2**k`` rounded once, for any finite y.

    ``mh + ml`` is a dd number with ``2**-120 <= |mh| <= 2**20`` (or 0) and
    ``k <= 1`` an integer.  The product is formed from the significand of y,
    ``m = y 2**-e`` with ``1 <= |m| < 2``, so that every intermediate is a
    normal double of moderate size whatever y and k are: its error terms
    are exact, and no flag is raised that the result does not justify (no
    underflow in the error terms next to the subnormal range, no overflow
    unless the result overflows).  ``m (mh + ml) = p + pe`` to within
    2**-104 relative.

    The power of two is applied last, exactly.  A result in the subnormal
    range is rounded once, on the subnormal grid: adding ``b = +-2**-1022``
    (scaled like p) to ``p`` puts the sum in a binade whose spacing is that
    grid, the rounding error of that sum and ``pe`` are added back before
    the one rounding, and ``b`` is taken off again exactly.  Every result,
    subnormal ones included, is therefore the correctly rounded value of
    ``y (mh + ml) 2**k (1 + d)`` with ``|d| < 2**-104``; a subnormal result
    raises no underflow flag (the final scaling is exact).

    ``normal`` (a constant): the caller knows the result to be a normal
    double, far from both ends (``2**-960`` to ``2**960``).  Then ``b`` is
    0 and the two-step scaling is one exact product, so those steps are
    left out: the same bits, the same flags.
    """
    m, e = normalised(y)
    kk = k + e
    p = mul_rn(m, mh)
    pe = fma(m, mh, -p) + m * ml
    if normal:
        # b = 0: two_sum(0, p) = (p, 0), and p + 0 + pe differs from
        # p + pe only in the sign of a zero, which copysign sets as below
        return math.copysign(add_rn(p, pe), p) * pow2(kk)
    # 2**-1022 scaled like p (clamped: beyond 2**200 it only makes the
    # result 0, and below the smallest normal it is never used)
    bmag = pow2(max(min(-1022 - kk, 200), -1022))
    b = math.copysign(bmag, p) if abs(p) < bmag else 0.0
    s, t = two_sum(b, p)
    # s - b is exact (Sterbenz); a zero keeps the sign of the product
    w = math.copysign(add_rn(s, add_rn(t, pe)) - b, p)
    # 2**kk in two exact steps (w * 2**k1 is normal or the result is 0)
    k1 = min(max(kk, -900), 1000)
    return (w * pow2(k1)) * pow2(max(kk - k1, -1022))


# below this, unscale() replaces the scale 2**k of a value used beside 1
_UNSCALE_MIN = -300


@inline
def unscale(h, l, k):
    """``(h + l) * 2**k`` as a dd, for use beside 1 only (``1 +- that``).

    Below ``2**-300`` the value is taken as ``(h + l) * 2**-300``: beside 1
    either is far below the last bit of a dd (2**-106), so the sum rounds to
    the same result, and the low part stays clear of the subnormal range,
    where its product would raise the underflow flag for nothing.
    """
    f = pow2(max(k, _UNSCALE_MIN))
    return h * f, l * f


@inline
def mul_tail_or_complement(y, lower, h, l, k, ordinary=False):
    """``y * F``, rounded once, for a CDF-like F known by its lower tail
    ``T = (h + l) * 2**k``: ``F = T`` if ``lower``, else ``F = 1 - T``.

    One :func:`scaled_mul` of the chosen dd, so the unused form costs no
    product and raises no flag (a tail that underflows beside 1 is never
    scaled).  ``y = 1`` gives F itself, ``y = +-0`` a signed zero (the exact
    value at an infinite x where F or x F tends to 0).  ``ordinary`` (a
    constant): the result is known normal (:func:`scaled_mul`'s ``normal``).
    """
    uh, ul = unscale(h, l, k)
    ph, pl = one_minus_dd(uh, ul)
    mh = h if lower else ph
    ml = l if lower else pl
    kk = k if lower else np.int64(0)
    return scaled_mul(y, mh, ml, kk, ordinary)


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
        return f"({vals[1]!r} if upper else {vals[0]!r})" if two else repr(vals[0])

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


def _compile_source(source, name, jit=True):
    """Run generated ``source`` with this module's building blocks in scope
    and return the function ``name`` (``@inline`` unless
    ``jit`` is false: an overload's implementation is compiled by Numba
    for the caller's target)."""
    scope = {"fma": fma, "two_prod": two_prod, "two_sum": two_sum,
             "fast_two_sum": fast_two_sum}
    exec(source, scope)
    return inline(scope[name]) if jit else scope[name]


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
    return per_target(name, "vh, vl, upper" if dd_variable else "vh, upper", literal,
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
    return per_target(name, args, scope["on_cpu"], lambda: scope["on_cuda"])


def per_target(name, args, cpu, cuda):
    """A function ``name(args)`` (``args``: its parameters, as written)
    that runs the Python function ``cpu`` when called from Python (the CUDA
    simulator too) and compiled for the CPU, and ``cuda()`` (the CUDA
    implementation, made on first use) compiled for CUDA: one operation,
    two forms of it, which must give the same bits."""
    scope = {"cpu": cpu, "cuda": cuda}
    exec(f"def {name}({args}):\n    return cpu({args})\n"
         f"def on_cpu({args}):\n    return cpu\n"
         f"def on_cuda({args}):\n    return cuda()\n", scope)
    overload(scope[name], target="cpu", jit_options=JIT_OPTIONS)(scope["on_cpu"])
    overload(scope[name], target="cuda", jit_options=JIT_OPTIONS)(scope["on_cuda"])
    return scope[name]


def opaque_zero():
    """The int64 0, which the CUDA compilers cannot see to be 0 (an inline
    PTX ``mov``): an index made from it keeps a constant-memory load a
    load.  0 itself on the CPU and in Python."""
    return 0


@intrinsic
def _opaque_zero_ptx(typingctx):
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        return builder.asm(fnty, "mov.u64 $0, 0;", "=l", [], False)

    return types.int64(), codegen


@overload(opaque_zero, target="cpu")
def _opaque_zero_cpu():
    return lambda: 0


@overload(opaque_zero, target="cuda")
def _opaque_zero_cuda():
    return lambda: _opaque_zero_ptx()


@intrinsic
def float16_bits_rn(typingctx, f):
    """The bits of float32 ``f`` rounded to float16 (to nearest, ties to
    even; subnormal and infinite results included).  CUDA only: a CPU
    without F16C would need a runtime-library call that Numba does not link
    (``NUMBA_CPU_NAME=generic``: a segmentation fault)."""
    sig = types.uint16(types.float32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return sig, codegen


@intrinsic
def float16_value(typingctx, b):
    """The float32 value of the float16 with bit pattern ``b`` (exact; a
    NaN's payload may differ).  CUDA only, as :func:`float16_bits_rn`."""
    sig = types.float32(types.uint16)

    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return sig, codegen


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
    choose = f"{n + nd} if upper else 0" if len(pieces) == 2 else "opaque_zero()"
    source = (source[:head] + "    c = cuda.const.array_like(COEFFICIENTS)\n"
              f"    base = {choose}\n" + source[head:])
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


@inline
def dd_add(ah, al, bh, bl):
    """Sum of two dd numbers; relative error below 2**-102 unless they cancel
    (then the absolute error is below 2**-104 times the larger)."""
    s, e = two_sum(ah, bh)
    return fast_two_sum(s, e + (al + bl))


@inline
def dd_div(ah, al, bh, bl):
    """Quotient of two dd numbers (``bh != 0``); relative error below 2**-100."""
    q = ah / bh
    p, pe = two_prod(q, bh)
    r = (((ah - p) - pe) + al) - q * bl
    return fast_two_sum(q, r / bh)


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
    nineteen of :func:`dd_mul` and :func:`dd_add`, for the same error (the
    term left out, ``tl sl``, is 2**-104 of the step)."""
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


# Arguments below TINY_ARG are replaced by 0 (see clamp_abs).
TINY_ARG = 2.0**-200


@inline
def clamp_abs(x, hi, lo=TINY_ARG):
    """``|x|`` clamped to ``[0, hi]``, and 0 for ``|x| < lo`` (x not NaN).

    The upper clamp keeps table indices and exponents in range (every
    function here is constant, 0 or x beyond its ``hi``).  The lower one is
    for the flags: below ``lo = 2**-200`` each smooth function of ``|x|``
    here equals its value at 0 to within 2**-200 relative, far below any
    rounding, while the double-double error terms of products of such an
    argument (``a*a`` in ``exp(-a**2/2)``, the low parts of a polynomial in
    ``a``) would be subnormal and raise the underflow flag for a result like
    0.5.  The x that multiplies such a function is never flushed.  Kernels
    of float32 values pass ``lo = 0`` (their arguments are at least 2**-149
    and their products stay normal in float64): the test then folds away.
    """
    a = abs(x)
    a = a if a < hi else hi
    return 0.0 if a < lo else a


@inline
def is_finite(x):
    """Quiet test (no ordered compare on NaN) that x is finite."""
    return x == x and x != math.inf and x != -math.inf


# finite stand-in for an infinite x: beyond 2**100 every form x F(x) here is
# 0 or x, and the dd products of x stay finite.  It must be finite in float32
# too (LLVM may round both arms of a select to float32 before selecting).
BIG = 2.0**100


@inline
def stand_in(x):
    """x, or +-2**100 for +-inf: products with it raise no invalid flag."""
    return x if abs(x) < BIG else math.copysign(BIG, x)


@inline
def restore_inf(r, xs, xd):
    """Undo :func:`stand_in` for the forms ``x F(x)`` with F(-inf) = 0,
    F(inf) = 1: +inf for +inf, -0.0 for -inf.  (The sign test reads xs,
    which is never NaN: an ordered comparison of NaN raises "invalid".)"""
    return r if abs(xs) < BIG else (xd if xs > 0.0 else -0.0)


# ------------------------------------------------- float32 emulation helpers
#
# The emulations of other libraries' float32 code (gelu_numba.kernels.emulated)
# need three more operations on float32: a fused multiply-add rounded once to
# float32 (vfmadd*ps; C's fmaf), and the bit casts between a float32 and its
# 32-bit pattern (for bit-indexed tables and bit-level conversions).  They are
# separate from fma() on purpose: fma() promotes to float64, which the
# package's own float32 kernels rely on.

def _round_fraction_to_float32(q):
    """The float32 nearest to the Fraction ``q`` (ties to even), as a float."""
    f = np.float32(float(q))  # within one float32 step of the answer
    best = None
    for c in (np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))):
        if not np.isfinite(c):
            continue
        d = abs(Fraction(float(c)) - q)
        even = (int(np.float32(c).view(np.uint32)) & 1) == 0
        if best is None or d < best[0] or (d == best[0] and even):
            best = (d, c)
    return float(best[1])


def fma32(a, b, c):
    """``a*b + c`` for float32 operands, rounded once to float32 (exact
    Python reference; compiled code gets ``llvm.fma.f32``)."""
    a, b, c = np.float32(a), np.float32(b), np.float32(c)
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return np.float32(a * b + c)
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact == 0:
        return np.float32(a * b + c)
    return np.float32(_round_fraction_to_float32(exact))


def float32_bits(x):
    """The bit pattern of float32 ``x`` as a uint32."""
    return np.float32(x).view(np.uint32)


def float64_bits(x):
    """The bit pattern of float64 ``x`` as a uint64."""
    return np.float64(x).view(np.uint64)


def float32_from_bits(i):
    """The float32 whose bit pattern is ``i`` (taken modulo 2**32)."""
    return np.uint32(int(i) & 0xFFFFFFFF).view(np.float32)


@intrinsic
def _fma_f32(typingctx, a, b, c):
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return sig, codegen


def _bits_intrinsic(float_type, uint_type):
    """An intrinsic: the bit pattern of a ``float_type`` as ``uint_type``."""
    @intrinsic
    def bits(typingctx, x):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(uint_type.bitwidth))

        return uint_type(float_type), codegen

    return bits


_float32_bits = _bits_intrinsic(types.float32, types.uint32)
_float64_bits = _bits_intrinsic(types.float64, types.uint64)


@intrinsic
def _float32_from_bits(typingctx, i):
    if not isinstance(i, types.Integer):
        raise TypingError("float32_from_bits takes an integer")
    sig = types.float32(i)

    def codegen(context, builder, signature, args):
        v = args[0]
        width = signature.args[0].bitwidth
        if width > 32:
            v = builder.trunc(v, ir.IntType(32))
        elif width < 32:
            v = builder.zext(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())

    return sig, codegen


@overload(fma32, target="generic")
def _fma32_generic(a, b, c):
    def impl(a, b, c):
        return _fma_f32(np.float32(a), np.float32(b), np.float32(c))

    return impl


class _PythonCallDispatcher(CPUDispatcher):
    """A Numba dispatcher whose Python call runs the Python function."""

    def __call__(self, *args, **kws):
        return self.py_func(*args, **kws)


def inline_helper(fn):
    """:func:`inline`, except that a call from Python runs
    the Python body.

    That is what float32 helpers need: a ``njit`` function called from
    Python (the CUDA simulator runs device functions as Python) boxes its
    float32 results as Python floats, so the caller's next operations would
    round to float64, not float32, and the simulator would not compute what
    the GPU computes.  Compiled callers are unaffected."""
    return _PythonCallDispatcher(py_func=fn, locals={},
                                 targetoptions={"nopython": True, **JIT_OPTIONS})


@inline_helper
def horner32(coeffs, x):
    """``coeffs[0] x**n + ... + coeffs[n]`` (highest degree first) by Horner's
    rule with one float32 FMA per step: the float32 polynomial evaluation of
    the emulated libraries and of ``gelu_half32``."""
    p = coeffs[0]
    for c in coeffs[1:]:
        p = fma32(p, x, c)
    return p


@overload(float32_bits, target="generic")
def _float32_bits_generic(x):
    def impl(x):
        return _float32_bits(np.float32(x))

    return impl


@overload(float64_bits, target="generic")
def _float64_bits_generic(x):
    def impl(x):
        return _float64_bits(np.float64(x))

    return impl


@overload(float32_from_bits, target="generic")
def _float32_from_bits_generic(i):
    def impl(i):
        return _float32_from_bits(i)

    return impl
