"""float32 arithmetic as other code computes it, and bit casts.

The emulations of other libraries' float32 code
(:mod:`gelu_numba.kernels.emulated`) and the float32-arithmetic kernels
need three more operations on float32: a fused multiply-add rounded once to
float32 (:func:`fma32`: vfmadd*ps; C's fmaf), and the bit casts between a
float32 and its 32-bit pattern (:func:`float32_bits`,
:func:`float32_from_bits`: for bit-indexed tables and bit-level
conversions; :func:`float64_bits` for a double).  :func:`fma32` is separate
from :func:`~gelu_numba.kernels.primitives.intrinsics.fma` on purpose:
``fma`` promotes to float64, which the package's own float32 kernels in
float64 arithmetic rely on.

:func:`inline_helper` compiles a float32 function so that a call from
Python runs its Python body, in float32 (the CUDA simulator runs device
code as Python); :func:`horner32` is the float32 FMA Horner rule compiled
so.
"""

from fractions import Fraction

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

from gelu_numba.internals.numba_core import CPUDispatcher, lowered_on_cpu
from gelu_numba.kernels.primitives.intrinsics import JIT_OPTIONS


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


def _bits_intrinsic(function, float_type, uint_type):
    """An intrinsic: the bit pattern of a ``float_type`` as ``uint_type``,
    also ``function``'s lowering on the CPU."""
    @intrinsic
    @lowered_on_cpu(function)
    def bits(typingctx, x):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(uint_type.bitwidth))

        return uint_type(float_type), codegen

    return bits


_float32_bits = _bits_intrinsic(float32_bits, types.float32, types.uint32)
_float64_bits = _bits_intrinsic(float64_bits, types.float64, types.uint64)


@intrinsic
@lowered_on_cpu(float32_from_bits)
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


# (a function of its own on the CPU too, as fma is: intrinsics.py)
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
    """:func:`~gelu_numba.kernels.primitives.intrinsics.inline`, except that
    a call from Python runs the Python body.

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


@overload(float32_bits, target="cuda")
def _float32_bits_cuda(x):
    def impl(x):
        return _float32_bits(np.float32(x))

    return impl


@overload(float64_bits, target="cuda")
def _float64_bits_cuda(x):
    def impl(x):
        return _float64_bits(np.float64(x))

    return impl


@overload(float32_from_bits, target="cuda")
def _float32_from_bits_cuda(i):
    def impl(i):
        return _float32_from_bits(i)

    return impl
