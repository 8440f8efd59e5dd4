"""The stochastic 0-I map of Hendrycks & Gimpel, whose expectation is GELU.

Definition
----------
For each element x of the input, the map returns

    soi_map(x) = x * m,    m ~ Bernoulli(Phi(x)), independent per element,

Phi the standard normal CDF, so that E[soi_map(x)] = x * Phi(x) = gelu(x)
(Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)", 2016, section 2:
the stochastic regulariser whose expected transformation GELU is).  The
result is x where m = 1 and a zero with the sign of x where m = 0, so
``soi_map(-inf)`` is -0.0 and never NaN; NaN maps to NaN; +inf (Phi = 1)
maps to +inf; +-0 map to +-0.

Random numbers
--------------
Counter-based SplitMix64 (Steele, Lea & Flood, "Fast splittable
pseudorandom number generators", OOPSLA 2014; Vigna's ``splitmix64.c``).
The element with C-order flat index i (0-based, counted in the array as
given: an F-ordered or strided array is indexed as its C-order copy would
be) uses the 64-bit word

    z = seed + (i + 1) * 0x9E3779B97F4A7C15               (mod 2**64)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9               (mod 2**64)
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB               (mod 2**64)
    z =  z ^ (z >> 31)

which is exactly the i-th output of the SplitMix64 stream seeded with
``seed`` (the first output being i = 0).  Then u = (z >> 11) * 2**-53, a
uniform number of [0, 1) on the grid of step 2**-53, and m = (u < Phi(x)).

Reproducibility: the result is a pure function of (seed, the input values,
their dtype and shape); it depends neither on how the loop runs nor on the
machine (the loop reads no state).  The stream restarts at i = 0 for every
call, so a slice ``x[k:]`` does *not* reproduce ``soi_map(x, s)[k:]`` with
the same seed; since the counter enters only as seed + (i+1)*gamma, it does
with the seed shifted by k steps:

    soi_map(x, s)[k:] == soi_map(x[k:], (s + k * 0x9E3779B97F4A7C15) % 2**64)

(for 1-D x), which is how to process a large array in reproducible chunks.
Conversely, seeds differing by k * 0x9E3779B97F4A7C15 for a small k reuse
each other's random numbers shifted by k elements.  Small seeds are far
apart on the stream: any two in [0, 10**6] are more than 8e12 elements
apart, so arrays smaller than that never share random numbers.
With ``seed=None`` a fresh 64-bit seed is drawn from the operating system's
entropy (``numpy.random.SeedSequence``).  SplitMix64 passes BigCrush; it is
not a cryptographic generator.

Accuracy
--------
P(m = 1) = ceil(p * 2**53) / 2**53 where p is the computed Phi(x)
(:func:`gelu_numba.ndtr` of the same precision, below 1 ulp of Phi(x);
u takes each multiple of 2**-53 in [0, 1) with probability 2**-53, as far
as SplitMix64 is uniform).  Hence::

    |P(m = 1) - Phi(x)| < 2**-53 + ulp(Phi(x)) <= 2**-52       (float64)
    |P(m = 1) - Phi(x)| < 2**-53 + 2**-24                      (float32)

and ``|E[soi_map(x)] - gelu(x)|`` is ``|x|`` times that.  The bound is absolute,
not relative: for Phi(x) < 2**-53 (x below -8.21) m = 1 has probability
2**-53 if the computed p is nonzero and 0 if it underflows (x below -38.47
in float64, about -14.2 in float32), and above x = 8.29 (float64) or 5.42
(float32) p rounds to 1 and m = 1 always.  The products x * m are exact
(x or a signed zero).

Dtypes
------
float32 in, float32 out (the float32 Phi); float64 in, float64 out.  Other
inputs follow NumPy's safe casting onto those two loops, as the package's
ufuncs do (:mod:`gelu_numba.targets.dtypes`): bool, int8, uint8, int16,
uint16 and float16 to float32; int32, uint32, int64, uint64 and Python ints
to float64.  Complex, object, string and long double inputs raise
``TypeError``.  The work is one compiled Numba loop (``@njit``, cached),
with the normal CDF inlined and vectorised; it runs at about the speed of
:func:`gelu_numba.gelu`.
"""

import operator

import numpy as np

from gelu_numba.targets import dtypes
from gelu_numba.targets.cpu.soi_loop import soi_loop

__all__ = ["soi_map", "seed64"]

_MASK64 = (1 << 64) - 1


def seed64(seed):
    """``seed`` as the ``numpy.uint64`` of the SOI streams: None draws one
    from the operating system's entropy; otherwise an integer in [0, 2**64)
    (``TypeError`` for other types and booleans, ``ValueError`` out of
    range).  Shared by the CPU and GPU maps."""
    if seed is None:
        return np.uint64(np.random.SeedSequence().entropy & _MASK64)
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("soi_map() seed must be None or an integer in "
                        f"[0, 2**64), not a boolean ({seed!r})")
    try:
        s = operator.index(seed)
    except TypeError:
        raise TypeError("soi_map() seed must be None or an integer in "
                        f"[0, 2**64), got {type(seed).__name__}") from None
    if not 0 <= s <= _MASK64:
        raise ValueError(f"soi_map() seed must be in [0, 2**64), got {s}")
    return np.uint64(s)


def _check_out(out, shape, dtype):
    if not isinstance(out, np.ndarray):
        raise TypeError("soi_map() out must be None or a numpy.ndarray of "
                        f"the input's shape {shape} and dtype {dtype}, got "
                        f"{type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"soi_map() out must have dtype {dtype} (the result "
                        f"dtype for this input), got {out.dtype}")
    if out.shape != shape:
        raise ValueError(f"soi_map() out must have the input's shape {shape}, "
                         f"got {out.shape}")
    if not out.flags.writeable:
        raise ValueError("soi_map() out must be a writeable array; "
                         "the one given is read-only")


def _same_layout(a, b):
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.strides == b.strides)


def soi_map(x, seed=None, out=None):
    """Stochastic 0-I map: ``x * m`` with ``m ~ Bernoulli(Phi(x))``.

    Parameters
    ----------
    x : array_like or scalar
        Real input, float32 or float64 (bool, integer and float16 are cast
        by NumPy's safe-casting rules); any shape and strides.  Not modified
        (unless passed as ``out``).
    seed : None or int, optional
        SplitMix64 seed, ``0 <= seed < 2**64``; None draws a fresh one.
        Element i (C-order flat index in ``x``) uses the i-th output of the
        stream, so equal seeds give identical bits.
    out : ndarray, optional
        Writeable array of ``x``'s shape and of the result dtype; written
        and returned.  May be ``x`` itself (in place).

    Returns
    -------
    ndarray or NumPy scalar
        ``x`` where ``m = 1``, a zero with the sign of ``x`` where ``m = 0``
        (NaN stays NaN); float32 for float32 input, else float64.  Its
        expectation is ``gelu(x) = x * Phi(x)``.  A scalar for scalar or
        0-d input without ``out``.

    See the module docstring for the RNG, chunking and accuracy.
    """
    if type(x) is int:
        arr = np.asarray(x, dtype=np.float64)  # NumPy: int64 -> float64
    else:
        arr = np.asarray(x)
    dtype = dtypes.LOOP_DTYPES[dtypes.loop_for("soi_map", arr.dtype)]
    s = seed64(seed)
    if out is not None:
        _check_out(out, arr.shape, dtype)

    src = np.asarray(arr, dtype=dtype, order="C")  # a copy only if needed
    if (out is not None and not _same_layout(src, out)
            and np.may_share_memory(src, out)):
        src = src.copy()  # out overlaps x elsewhere than element by element
    if out is not None and out.flags.c_contiguous:
        dst = out
    else:
        dst = np.empty(arr.shape, dtype)
    soi_loop(src.reshape(-1), s, dst.reshape(-1))
    if out is not None:
        if dst is not out:
            out[...] = dst
        return out
    return dst[()] if dst.ndim == 0 else dst
