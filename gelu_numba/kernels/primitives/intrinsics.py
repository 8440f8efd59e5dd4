"""The operations that depend on the target, and how kernels are compiled.

:data:`JIT_OPTIONS` and :func:`inline` say how every kernel and every
function it calls is compiled; :func:`per_target` makes one operation with
a CPU form and a CUDA form.  Everything else here is an operation whose
compiled form differs between the CPU and CUDA: the package's single switch
between targets.

Nine of them serve the arithmetic of the kernels: :func:`add_rn` and
:func:`mul_rn` (a sum or a product that is never fused into an FMA, which
the error-free transformations of
:mod:`~gelu_numba.kernels.primitives.double_double` need), :func:`fma` (a
fused multiply-add, rounded once), :func:`pow2` (the double ``2**n`` for an
integer ``-1022 <= n <= 1023``), :func:`split_exponent` (``y = m * 2**e``
with ``1 <= |m| < 2``), :func:`scale_shifted` (``p * 2**k`` with ``k`` read
off a rounding-shifter sum), :func:`shifted_int` (that ``k`` as an
integer), :func:`step_bits` (the neighbouring double) and
:func:`nan_to_zero`.  Their Python bodies are exact reference
implementations, used by pure-Python execution such as the CUDA simulator.
Compiled code gets LLVM IR instead: ``llvm.fma.f64``, bit-level
constructions of ``2**n`` and of the scaling, an integer-domain NaN test,
integer-domain exponent extraction, so that on the CPU no libm call is left
to block vectorisation (``llvm.fma.f64`` is one ``vfmadd``).  The same IR
serves the CUDA target, where NVVM turns it into ``fma.rn.f64`` and integer
instructions.  ``add_rn`` and ``mul_rn`` are plain ``+`` and ``*`` on the
CPU and NVVM's ``add.rn`` and ``mul.rn`` on CUDA (see the comment at their
definition).  On the CPU the exponent and bit operations are lowered in
their caller (:func:`~gelu_numba.internals.numba_core.lowered_on_cpu`), so
that a first call compiles no function of its own for each; ``fma``,
``pow2``, ``add_rn`` and ``mul_rn`` stay functions (see the comment at
``add_rn``'s overload).  CUDA calls every intrinsic through an
``@overload``.

The others are for the CUDA target's own code: :func:`opaque_zero` (a zero
the CUDA compilers cannot fold, which keeps a constant-memory load a load)
and the float16 conversions :func:`float16_bits_rn` (also the CPU's where
it converts in one instruction) and :func:`float16_value`; and for the
CPU's, :func:`out_of_line`, which keeps a rarely called function a call.
"""

import functools
import inspect
import math
import struct
from fractions import Fraction
from types import MappingProxyType

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from gelu_numba.internals.numba_core import CPUDispatcher, lowered_on_cpu

#: How every kernel and helper is compiled.  ``forceinline``: LLVM's
#: ``alwaysinline`` attribute, so each call is inlined into its caller by
#: LLVM and the element loops vectorise through it.  (Numba's own
#: ``inline="always"`` inlines at the IR level instead, deep-copying the
#: callee's IR at every call site: most of a cold first call's time, see
#: the first-call table of docs/guide/first_call.md.)  ``error_model="numpy"``: a helper is
#: compiled once, whoever calls it first, and a float division must not
#: grow the ZeroDivisionError branch that would keep the loops scalar.
#: ``no_cpython_wrapper`` and ``no_cfunc_wrapper``: compiled code calls
#: the helpers directly, Python and C do not, and compiling the two
#: wrappers of each took a large part of a cold first call (:func:`inline`
#: gives a Python call a twin).
JIT_OPTIONS = MappingProxyType({"forceinline": True, "error_model": "numpy",
                                "no_cpython_wrapper": True, "no_cfunc_wrapper": True})


class _Kernel(CPUDispatcher):
    """A dispatcher compiled with :data:`JIT_OPTIONS` (no wrappers),
    whose call from Python runs a twin compiled with one: the same code,
    compiled again, only where Python calls it (tests, the CUDA simulator,
    a user's call of a helper)."""

    def __call__(self, *args, **kws):
        twin = self.__dict__.get("_twin")
        if twin is None:
            options = {k: v for k, v in JIT_OPTIONS.items() if not k.endswith("_wrapper")}
            twin = self.__dict__["_twin"] = njit(**options)(self.py_func)
        return twin(*args, **kws)


def inline(fn):
    """``fn`` compiled with :data:`JIT_OPTIONS` for whichever target calls
    it (the CPU's loops, a CUDA kernel, the user's ``@njit`` code); called
    from Python, the same code compiled with a CPython wrapper."""
    return _Kernel(py_func=fn, locals={}, targetoptions={"nopython": True, **JIT_OPTIONS})


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
# transformations, which need the rounded product or sum itself (a
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


# fma, pow2, add_rn and mul_rn stay functions of their own on the CPU (an
# @overload, compiled once per argument types), where the others are
# lowered in their caller: lowered in place, they changed how LLVM
# optimised the loops around them, and some loops ran slower (pow2:
# gelu_as26_grad's float64 loop; fma, add_rn and mul_rn: the float64
# kernels in a loop of their own, benchmarks.anatomy's), while the others
# leave every element loop's vector code as it was

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
@lowered_on_cpu(nan_to_zero)
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
@lowered_on_cpu(split_exponent)
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
@lowered_on_cpu(scale_shifted)
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
@lowered_on_cpu(shifted_int)
def _shifted_int_f64(typingctx, kb):
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        bits = builder.bitcast(args[0], i64)
        shifter = ir.Constant(i64, struct.unpack("<q", struct.pack("<d", SHIFTER))[0])
        return builder.sub(bits, shifter)

    return sig, codegen


@intrinsic
@lowered_on_cpu(step_bits)
def _step_bits_f64(typingctx, v, n):
    sig = types.float64(types.float64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        bits = builder.add(builder.bitcast(args[0], i64), args[1])
        return builder.bitcast(bits, ir.DoubleType())

    return sig, codegen


@overload(step_bits, target="cuda")
def _step_bits_cuda(v, n):
    def impl(v, n):
        return _step_bits_f64(v, n)

    return impl


@overload(shifted_int, target="cuda")
def _shifted_int_cuda(kb):
    def impl(kb):
        return _shifted_int_f64(kb)

    return impl


@overload(split_exponent, target="cuda")
def _split_exponent_cuda(y):
    def impl(y):
        return _split_exponent_f64(y)

    return impl


@overload(scale_shifted, target="cuda")
def _scale_shifted_cuda(p, kb):
    def impl(p, kb):
        return _scale_shifted_f64(p, kb)

    return impl


@overload(nan_to_zero, target="cuda")
def _nan_to_zero_cuda(x):
    def impl(x):
        return _nan_to_zero_f64(x)

    return impl


@overload(fma, target="generic")
def _fma_generic(a, b, c):
    def impl(a, b, c):
        return _fma_f64(a, b, c)

    return impl


@overload(pow2, target="generic")
def _pow2_generic(n):
    def impl(n):
        return _pow2_f64(n)

    return impl


def per_target(name, cpu, cuda, compiled_cpu=None):
    """A function ``name`` with ``cpu``'s parameters that runs the Python
    function ``cpu`` when called from Python (the CUDA simulator too) and
    compiled for the CPU, and ``cuda()`` (the CUDA implementation, made on
    first use) compiled for CUDA: one operation, two forms of it, which must
    give the same bits.  ``compiled_cpu()``, where given, makes the form
    compiled for the CPU instead (on first use: it may ask what the CPU
    has)."""
    signature = inspect.signature(cpu)

    def function(*args):
        return cpu(*args)

    @functools.cache
    def compiled():
        return inline(cpu if compiled_cpu is None else compiled_cpu())

    def on_cpu(*args):
        # a call of one dispatcher, not the form itself: Numba compiles an
        # overload's implementation anew for each set of argument types it
        # is typed with, and a literal argument makes a set of its own
        # (r_poly(vh, vl, upper), and r_poly(vh, vl, False) in the ordinary
        # forms' branch, which Numba types even where it is dead: the same
        # code compiled twice on a first call); a dispatcher compiles once
        # per signature, a literal taken as its type
        form = compiled()

        def call(*args):
            return form(*args)
        return call

    def on_cuda(*args):
        return cuda()

    # Numba checks an implementation's parameters against its typing
    # function's: cuda()'s are cpu's (PEP 362's __signature__), the CPU's
    # call takes *args as on_cpu does
    function.__name__ = function.__qualname__ = name
    for f in (function, on_cuda):
        f.__signature__ = signature
    overload(function, target="cpu", jit_options=JIT_OPTIONS)(on_cpu)
    overload(function, target="cuda", jit_options=JIT_OPTIONS)(on_cuda)
    return function


@intrinsic
def out_of_line(typingctx):
    """Mark the function being compiled ``noinline`` for LLVM, in one
    statement (CPU code only).  Numba's ``inline="never"`` is about its own
    IR; LLVM still inlines a callee into a loop, where a rarely taken
    branch to it is then if-converted: the loop runs the callee on every
    element (the correctly rounded float32 kernels' accurate path,
    :mod:`gelu_numba.kernels.rounded32`, in a caller's ``@njit`` loop of
    scalar calls: the float64 kernel on every element)."""
    def codegen(context, builder, sig, args):
        builder.function.attributes.add("noinline")
        return context.get_dummy_value()

    return types.none(), codegen


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
    even; subnormal and infinite results included).  CUDA, and a CPU that
    converts in one instruction
    (:func:`gelu_numba.internals.numba_core.converts_float16`: x86's F16C);
    another CPU would need a runtime-library call that Numba does not link
    (``NUMBA_CPU_NAME=x86-64``: a segmentation fault)."""
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
