"""Rounding float32 values to float16 and bfloat16, in compiled scalar
code and on NumPy arrays.

Frameworks store half-precision tensors and compute in float32; their
results are rounded once, to nearest with ties to even, with gradual
underflow and overflow to infinity (IEEE 754 binary16; bfloat16 is
binary32's upper half, rounded the same way).  Emulations call
:func:`round_float16` and :func:`round_bfloat16` on float32 scalars, or
:func:`to_format` on arrays; all return float32 values that are exactly
representable in the format.

Method (scalar): with ``q`` the format's quantum at ``|x|`` (``2**(e - p + 1)``,
p the significand bits, not below the subnormal quantum), ``|x|/q`` is an
exact float32 below ``2**p``; adding and subtracting ``1.5 * 2**23`` rounds
it to an integer, ties to even (float32 addition rounds that way); ``* q``
is exact.  Magnitudes at or above the midpoint between the largest finite
value and the next power of two go to infinity, as IEEE rounding does.
"""

import math

import numpy as np

from gelu_numba.kernels.primitives import inline, float32_bits, float32_from_bits

#: 1.5 * 2**23: adding and subtracting it rounds a float32 below 2**22 to an
#: integer, ties to even
_ROUND_INT = np.float32(12582912.0)
_ZERO = np.float32(0.0)
_INF = np.float32(np.inf)
_OVER16 = np.float32(65520.0)
_OVERBF16 = np.float32(float.fromhex("0x1.ffp127"))

#: format -> (significand bits p, exponent of the subnormal quantum,
#: overflow threshold: the midpoint between the largest finite value and
#: the next power of two)
FORMATS = {"float16": (11, -24, 65520.0),
           "bfloat16": (8, -133, float.fromhex("0x1.ffp127"))}


@inline
def _round(x, p, qmin_exp, overflow):
    a = abs(x)
    if not a < overflow:            # inf, overflow or NaN
        return x if a != a else math.copysign(_INF, x)
    e = np.int32((float32_bits(a) >> np.uint32(23)) & np.uint32(0xFF)) - np.int32(127)
    qe = max(e - (p - 1), qmin_exp)
    # 2**qe as a float32 (normal for qe >= -126, else subnormal bits)
    q = (float32_from_bits(np.uint32(qe + 127) << np.uint32(23)) if qe >= -126
         else float32_from_bits(np.uint32(1) << np.uint32(qe + 149)))
    r = ((a / q + _ROUND_INT) - _ROUND_INT) * q
    return math.copysign(r, x)


@inline
def round_float16(x):
    """float32 ``x`` rounded to the nearest float16, as a float32."""
    return np.float32(_round(np.float32(x), 11, -24, _OVER16))


@inline
def round_bfloat16(x):
    """float32 ``x`` rounded to the nearest bfloat16, as a float32."""
    return np.float32(_round(np.float32(x), 8, -133, _OVERBF16))


def to_format(a, fmt):
    """float32 array ``a`` rounded to ``fmt`` (``"float16"``,
    ``"bfloat16"`` or ``"float32"``), as a float32 array."""
    a = np.asarray(a, dtype=np.float32)
    if fmt == "float32":
        return a.copy()
    if fmt == "float16":
        with np.errstate(over="ignore"):
            return a.astype(np.float16).astype(np.float32)
    if fmt == "bfloat16":
        bits = a.view(np.uint32).astype(np.uint64)
        nan = np.isnan(a)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out = bits.astype(np.uint32).view(np.float32)
        return np.where(nan, a, out)
    raise ValueError(f"unknown format {fmt!r}; accepted: 'float16', 'bfloat16', 'float32'")


@inline
def float16_bits(v):
    """The binary16 bit pattern (as uint16 in a uint32) of a float32 ``v``
    that is exactly a float16 value (e.g. :func:`round_float16`'s result)."""
    b = float32_bits(v)
    sign = (b >> np.uint32(16)) & np.uint32(0x8000)
    a = abs(v)
    if a != a:
        return sign | np.uint32(0x7E00)
    if a == _INF:
        return sign | np.uint32(0x7C00)
    e = np.int32((b >> np.uint32(23)) & np.uint32(0xFF)) - np.int32(127)
    if e >= -14:
        return sign | (np.uint32(e + 15) << np.uint32(10)) | ((b >> np.uint32(13)) & np.uint32(0x3FF))
    # subnormal (or zero): an integer multiple of 2**-24
    return sign | np.uint32(a * np.float32(16777216.0))
