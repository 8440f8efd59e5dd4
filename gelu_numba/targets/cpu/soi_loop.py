"""The CPU loop of the stochastic 0-I map (:mod:`gelu_numba.soi`).

One ``@njit`` loop over the flat input: element i draws the i-th output of
the SplitMix64 stream of the seed (:mod:`gelu_numba.kernels.splitmix`) and keeps
x where that uniform number is below Phi(x) (the catalog's ``ndtr`` kernel
of the input's precision, the one :func:`gelu_numba.ndtr` runs, inlined and
vectorised).
"""

import numpy as np
from numba import njit, types
from numba.extending import overload

from gelu_numba import catalog
from gelu_numba.internals import numba_core
from gelu_numba.kernels.splitmix import GAMMA, keep_or_zero, mix64
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import dtypes
from gelu_numba.targets.stamp import STAMP


def ndtr(x):
    """Phi(x) in ``@njit`` code: the kernel of x's precision (below)."""
    raise NotImplementedError("ndtr here is for the compiled loop only")


@overload(ndtr, inline="always")
def _ndtr_typing(x):
    # as the ufunc's loop: the kernel of x's precision, its result rounded
    # to that precision (the float32 kernel computes in float64)
    char = "f" if x == types.float32 else "d"
    kernel = inline(catalog.lookup(catalog.CDF).kernel(char))
    cast = dtypes.LOOP_DTYPES[char].type
    return lambda x: cast(kernel(cast(x)))


def make_loop(stamp):
    """The compiled element loop.  ``stamp`` (a hash of the kernel sources)
    is a closure variable, hence part of Numba's cache key: the loop inlines
    the ndtr kernel, and Numba's cache would otherwise not notice a change
    to it (see :mod:`gelu_numba.targets.stamp`)."""
    gamma = GAMMA
    s11 = np.uint64(11)
    one = np.uint64(1)
    ulp53 = 2.0 ** -53

    @njit(cache=True)
    def _soi_loop(x, seed, out):
        stamp  # noqa: B018 (part of the cache key)
        for i in range(x.size):
            z = mix64(seed + (np.uint64(i) + one) * gamma)
            # z >> 11 < 2**53: exact through int64 and float64
            u = np.float64(np.int64(z >> s11)) * ulp53
            v = x[i]
            # ndtr of a float32 scalar runs the float32 kernel, of a float64
            # the float64 one; p is widened exactly for the comparison
            out[i] = keep_or_zero(v, u, ndtr(v))

    return _soi_loop


_LOOP = make_loop(STAMP)


def soi_loop(x, seed, out):
    """The loop on 1-D ``x`` and ``out`` of one float dtype, ``seed`` a
    ``numpy.uint64``; compiled (or loaded from Numba's cache, written anew
    if it cannot be read) on the first call for a dtype."""
    numba_core.compile_repairing(lambda: _LOOP(x, seed, out), [_LOOP],
                                 "the stochastic 0-I map's loop")
