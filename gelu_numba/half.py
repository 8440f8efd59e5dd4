"""GELU for float16 and bfloat16.

Correctly rounded, bits in and bits out
    ``gelu_numba.gelu``, ``gelu_grad`` and ``gelu_backward`` have float16
    loops (float16 in, float16 out, one rounding; correctly rounded at
    every finite input, the backward wherever ``dy GELU'(x)`` is not within
    2**-50 of a tie: :mod:`gelu_numba.kernels.half_rounding`).  NumPy has no
    bfloat16 dtype, so its functions take and return bit patterns as
    ``uint16`` (a ``torch.bfloat16`` tensor ``.view(torch.int16)``, an
    ``ml_dtypes.bfloat16`` array ``.view(np.uint16)``):

    ``gelu_bfloat16(bits)``, ``gelu_grad_bfloat16(bits)``,
    ``gelu_backward_bfloat16(dy_bits, x_bits)``

    >>> import numpy as np
    >>> from gelu_numba.half import gelu_bfloat16
    >>> bits = (np.float32([-3.0, 0.5, 2.0]).view(np.uint32) >> 16).astype(np.uint16)
    >>> y = (gelu_bfloat16(bits).astype(np.uint32) << 16).view(np.float32)  # doctest: +SKIP

In float32 arithmetic: ``gelu_half32``

``gelu_half32(x)`` computes GELU in float32 arithmetic (no float64, no libm
call; the loop vectorises) with the accuracy that rounding to a half format
needs: over every finite input, its result rounded once to the format equals
the correctly rounded GELU for all but <<half32_float16>> float16 inputs and all
but <<half32_bfloat16>> bfloat16 inputs.  The floor of "compute in float32, round
once", reached by a correctly rounded float32 GELU, is <<half_floor>>: no
float32 result can do better, because those inputs sit on a half-format tie
that only the exact value breaks.  Measured speed against
:func:`gelu_numba.gelu` (float32) and the fits in the gelu-numba repository's
``analysis/results/approximations/approximations.md``; method and error
bound in :mod:`gelu_numba.kernels.half32`.

Domain: all float32 (float16 and small integer inputs are cast to float32);
float64 raises TypeError (this is a float32 kernel: use
:func:`gelu_numba.gelu`).  Float32 error over all 2^32 inputs: max <<half32_max_ulp>> ulp,
<<half32_max_rel>> relative on the normal range (not a correctly rounded float32 GELU:
:func:`gelu_numba.gelu` is).

Example::

    >>> import numpy as np
    >>> from gelu_numba.half import gelu_half32
    >>> x = np.float16([-3.0, 0.5, 2.0])
    >>> gelu_half32(x).astype(np.float16)     # doctest: +SKIP
"""

import sys

from gelu_numba.figures import fill as _fill

__doc__ = _DOC = _fill(__doc__)

from gelu_numba.targets.cpu.half_loops import BFLOAT16 as _BFLOAT16  # noqa: E402

_NAMES = ("gelu_half32", *_BFLOAT16)


def _build(name):
    if name in _BFLOAT16:
        from gelu_numba.targets import cpu
        from gelu_numba.targets.cpu import half_loops as half
        return cpu.Ufunc(half.bfloat16_ufunc(name), name, __name__, _DOC,
                         accepted="uint16 bfloat16 bit patterns (bool and uint8 are cast "
                                  "to them: view bfloat16 data as uint16 instead)")
    from gelu_numba.kernels.half32 import gelu_half32 as kernel
    from gelu_numba.targets.cpu import emulated
    return emulated.ufunc(name, kernel, 1, __name__, _DOC, _public,
                          accepted="float32 (float16, bool and 8/16-bit integers are cast "
                                   "to it; for float64 use gelu_numba.gelu)")


from gelu_numba.targets import publish as _publish  # noqa: E402

__getattr__, __dir__, __all__ = _publish.module(__name__, names=_NAMES, build=_build)


def _public(name):
    """``gelu_numba.half.<name>`` (how its ufuncs unpickle)."""
    return getattr(sys.modules[__name__], name)
