"""CPU target for float32-only kernels: the emulations of other libraries'
GELUs (:mod:`gelu_numba.production`) and :func:`gelu_numba.half.gelu_half32`:
a float32 scalar kernel in, a NumPy ufunc with a single float32 loop out.

The loop is the CPU target's own (:func:`gelu_numba.targets.cpu.kernel_loop`:
the vectorised element loop, on buffered blocks for other strides, cached
on disk under the source stamp), so an emulation is timed on the same footing
as the package's ufuncs.  There is no float64 loop: the emulated code is
float32 code.  float64 inputs are refused rather than cast down (NumPy's
safe-casting rule does the refusing); float16, bool and small integers are
cast to float32 as for every ufunc of the package.
"""

import threading

import numpy as np
from gelu_numba.internals.numba_core import Dispatcher

from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import cpu
from gelu_numba.targets.cpu import numpy_api

ACCEPTED = ("float32 (the emulated libraries compute in float32; float16, bool "
            "and 8/16-bit integers are cast to it; cast float64 explicitly)")

_LOCK = threading.RLock()
_BUILT = {}


class Ufunc(cpu.Ufunc):
    """A float32-only ufunc; its ``TypeError`` names float32."""

    accepted = ACCEPTED

    #: ``(function, args)`` that finds this object again on unpickling: set
    #: by the public module that owns it (:func:`ufunc`'s ``reducer``)
    _reduce = None

    def __reduce__(self):
        return self._reduce


def raw(name, kernel, nin):
    """The ``numpy.ufunc`` ``name`` (built once): ``kernel`` on float32,
    compiled on the first call (:class:`numpy_api.LazyLoops`)."""
    with _LOCK:
        u = _BUILT.get(name)
        if u is None:
            def build():
                # kernels call one another, so they arrive compiled (primitives.inline)
                k = kernel if isinstance(kernel, Dispatcher) else inline(kernel)
                return cpu.kernel_loop(k, "f", nin, f"emulated_{name}", cache=True)

            u = numpy_api.LazyLoops(name, nin, [(np.float32, build)]).ufunc
            # pickles as gelu_numba._emulated_raw.<name>: the public layer,
            # which knows the kernels behind the names
            u.__module__ = "gelu_numba._emulated_raw"
            _BUILT[name] = u
        return u


def ufunc(name, kernel, nin, module, doc, reducer, accepted=ACCEPTED):
    """The public :class:`Ufunc` of ``kernel``, documented by ``doc``;
    ``accepted`` is what its TypeError names; ``reducer(name)``, a function
    of the public module ``module``, returns it again (pickling by
    reference)."""
    u = Ufunc(raw(name, kernel, nin), name, module, doc)
    u.accepted = accepted
    u._reduce = (reducer, (name,))
    return u
