"""Correctly rounded GELU, GELU' and the fused backward in float16 and bfloat16.

Method
------
A 2-byte format has 65,536 inputs, so the forward and the derivative are
tables: entry ``b`` is the float64 kernel's value at the input with bit
pattern ``b`` (:mod:`gelu_numba.kernels.normal`, below 0.5 + 2**-4 float64
ulp), rounded once to the format by :func:`round_bits`.  The loops are
lookups, bits in and bits out (:mod:`gelu_numba.targets.cpu.half_loops`).  The
backward ``dy * GELU'(x)`` has 2**32 inputs: it is the float64 product of
the input ``dy`` and a table of GELU' in float64, rounded once.

Rounding once from float64 can only go wrong where the float64 value lies
within its error of a midpoint of the format.  For GELU the one such case
is exact: for tiny ``x`` the float64 result is ``x/2`` exactly, and
``x/2`` of a subnormal bfloat16 or of float16's ``2**-24`` and ``-2**-24``
is a midpoint.  There the exact value is known to lie above:
``GELU(x) - x/2 = x (Phi(x) - 1/2) > 0`` for every ``x != 0``, so the table
rounds ``nextafter(x/2, +inf)`` (:func:`gelu_above_half_x`).  The backward
has the same case: for tiny ``x`` the float64 GELU' is 1/2 exactly and
``dy/2`` can be a midpoint; the sign of ``GELU'(x) - 1/2`` is that of x
(:func:`grad_off_half`).

Error bound
-----------
Correctly rounded (to nearest, ties to even, gradual underflow, overflow to
inf) at every finite input of both formats, forward and GELU', as the
gelu-numba repository's ``tests/test_half.py`` checks against mpmath for
all of them (``tests/data/half_reference.npz``); GELU(-0) = -0.  The
backward is correctly rounded at every pair of finite inputs (2**32 per
format): its float64 product is within 2**-50.9 of the exact one, and
``tests/test_half_backward_proof.py`` shows that no pair lies that close
to a midpoint of the format, but for tiny ``x`` where the side is known.

Formats: float16 (11-bit significand, exponents -14..15) and bfloat16
(8 bits, -126..127).  NaN gives the format's quiet NaN with the input's sign.
"""

import numpy as np

from gelu_numba.internals import numba_core
from gelu_numba.kernels.primitives import (float16_bits_rn, float16_value, float32_bits,
                                           float32_from_bits, inline, per_target)

_u16, _u32 = np.uint16, np.uint32
_F32_ABS = _u32(0x7FFFFFFF)
_F32_INF = _u32(0x7F800000)


def _decode_float16(b):
    """The float64 value of the float16 with bit pattern ``b``: its
    significand (the implicit bit included) as an integer, times the power
    of two of its exponent, both normal float32 numbers, so that the
    product is exact and no subnormal float32 appears anywhere (a CPU's
    denormals-are-zero mode, which ``torch.set_flush_denormal(True)``
    sets, would read one as zero, and a subnormal float16 is a normal
    float32 number); inf and NaN by their all-ones exponent.  Branch-free,
    so that a loop of it vectorises."""
    e = np.int32((b >> 10) & 0x1F)
    m = np.int32(b & 0x3FF)
    if e != 0:
        m = m | np.int32(0x400)
    # 2**(max(e, 1) - 25): m 2**-24 for a subnormal (e = 0), else
    # (2**10 + its fraction) 2**(e - 15 - 10); the float32 exponent field
    # is that power + 127
    scale = float32_from_bits(_u32(max(e, np.int32(1)) + 102) << 23)
    f = np.float32(m) * scale
    if e == 0x1F:
        f = float32_from_bits(_F32_INF | (_u32(b & 0x3FF) << 13))
    v = np.float64(f)
    return -v if b & 0x8000 else v


@inline
def decode_bfloat16(b):
    """The float64 value of the bfloat16 with bit pattern ``b`` (the upper
    half of a float32)."""
    return np.float64(float32_from_bits(_u32(b) << 16))


@inline
def _float32_round_to_odd(v):
    """float64 ``v`` rounded to float32 by truncation, with the last bit
    set when inexact (round to odd: rounding that once more to 13 or fewer
    bits is the correct rounding of ``v``); the float32's bits."""
    f = np.float32(v)
    b = float32_bits(f)
    if np.float64(f) != v and v == v and abs(v) != np.inf:
        if abs(np.float64(f)) > abs(v):
            b = _u32(b - 1)  # one float32 ulp towards zero (sign-magnitude)
        b = b | 1
    return b


@inline
def round_bfloat16(v):
    """float64 ``v`` correctly rounded to bfloat16: its bits."""
    b = _float32_round_to_odd(v)
    if (b & _F32_ABS) > _F32_INF:
        return _u16(((b >> 16) & 0x8000) | 0x7FC0)
    # to nearest even on the 16 bits dropped (a carry into the exponent is
    # the next binade, or inf)
    return _u16((b + _u32(0x7FFF) + ((b >> 16) & 1)) >> 16)


def _round_float16(v):
    """float64 ``v`` correctly rounded to float16: its bits."""
    b = _float32_round_to_odd(v)
    sign = _u16((b >> 16) & 0x8000)
    a = b & _F32_ABS
    if a > _F32_INF:
        return sign | _u16(0x7E00)
    if a >= _u32(0x477FF000):  # >= 65520: rounds to inf
        return sign | _u16(0x7C00)
    if a < _u32(0x38800000):  # below 2**-14: a multiple of 2**-24
        # |f| 2**24 is exact; adding and subtracting 2**23 rounds it to an
        # integer, to nearest even (float32 arithmetic)
        y = abs(float32_from_bits(a)) * np.float32(2.0**24)
        n = (y + np.float32(2.0**23)) - np.float32(2.0**23)
        return sign | _u16(np.uint32(n))
    # rebias the exponent (127 -> 15) and round the 13 bits dropped
    r = (a - _u32(112 << 23) + _u32(0xFFF) + ((a >> 13) & 1)) >> 13
    return sign | _u16(r)


def _decode_float16_hardware():
    def decode(b):
        # (x86's vcvtph2ps reads a subnormal float16 exactly whatever the
        # denormals-are-zero mode)
        return np.float64(float16_value(np.uint16(b)))
    return decode


def _decode_float16_cpu():
    return _decode_float16_hardware() if numba_core.converts_float16() else _decode_float16


def _round_float16_hardware():
    def round_(v):
        # the hardware conversion of the round-to-odd float32 (CUDA's
        # cvt.rn.f16.f32, x86's F16C vcvtps2ph): the same rounding as the
        # integer code, one instruction; a NaN is made the format's quiet
        # NaN with its sign, as there
        b = _float32_round_to_odd(v)
        if (b & _F32_ABS) > _F32_INF:
            return _u16(((b >> 16) & 0x8000) | 0x7E00)
        return float16_bits_rn(float32_from_bits(b))
    return round_


def _round_float16_cpu():
    return _round_float16_hardware() if numba_core.converts_float16() else _round_float16


# In Python the integer code above; compiled for CUDA the hardware's
# conversions, and for a CPU the hardware's where it has the instructions
# (x86's F16C: AVX2 CPUs have it; a vectorised loop converts four or eight
# lanes with one vcvtps2ph or vcvtph2ps), else the integer code (a CPU
# without F16C has no conversion instruction): the same values (the
# repository's tests/test_half_loops.py checks every form against NumPy's
# IEEE casts), in fewer instructions (python -m analysis.gpu.sass counts
# float16's backward kernel on the GPU; benchmarks.targets times the CPU's)
decode_float16 = per_target("decode_float16", _decode_float16, _decode_float16_hardware,
                            compiled_cpu=_decode_float16_cpu)
round_float16 = per_target("round_float16", _round_float16, _round_float16_hardware,
                           compiled_cpu=_round_float16_cpu)


@inline
def _next_up(y):
    """The float64 after ``y`` towards +inf (``y`` finite, nonzero): the
    magnitude's bits + 1 for y > 0, - 1 for y < 0."""
    step = np.int64(1) if y > 0.0 else np.int64(-1)
    return np.int64(np.float64(y).view(np.int64) + step).view(np.float64)


@inline
def _next_down(y):
    return -_next_up(-y)


@inline
def gelu_above_half_x(x, y):
    """The float64 GELU ``y`` of ``x``, one float64 ulp up where it is
    exactly ``x/2`` (x finite, nonzero): the exact value is above it,
    ``GELU(x) - x/2 = x (Phi(x) - 1/2) > 0``, which decides a rounding tie
    the right way."""
    if y == 0.5 * x and x != 0.0 and abs(x) != np.inf:
        return _next_up(y)
    return y


@inline
def grad_off_half(x, g):
    """The float64 GELU' ``g`` of ``x``, one float64 ulp towards the exact
    value where it is exactly 1/2 (x finite, nonzero):
    ``GELU'(x) - 1/2 = (Phi(x) - 1/2) + x phi(x)`` has the sign of x.  Then
    ``dy g`` in the backward is strictly on the exact product's side of
    ``dy/2``, which is a tie of the format for a subnormal ``dy`` with an
    odd last bit (the product moves by at least one float64 ulp: ``dy``
    has at most 11 significant bits)."""
    if g == 0.5 and x != 0.0 and abs(x) != np.inf:
        return _next_up(g) if x > 0.0 else _next_down(g)
    return g


#: format name -> (decode, round) scalar kernels
FORMATS = {"float16": (decode_float16, round_float16),
           "bfloat16": (decode_bfloat16, round_bfloat16)}
