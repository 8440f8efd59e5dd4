"""Device functions: a catalog record as a ``@cuda.jit(device=True)``
function.

:func:`device_function` turns a catalog record (the same Python kernels
the CPU ufuncs compile) into a lazily compiled ``@cuda.jit(device=True)``
function with a precision switch: a CUDA overload of ``choose`` picks the
float32 kernel when every argument is float32, else the float64 one, at
compile time; under the simulator the same rule applies to the argument
values.  For the normal-CDF family the float32 kernel is the record's
``gpu32`` (:mod:`gelu_numba.kernels.gpu32`: float32
arithmetic, no FP64 instruction), not the CPU's float64-arithmetic one.
The target-dependent primitives of
:mod:`gelu_numba.kernels.primitives.intrinsics` compile to ``fma.rn``,
``add.rn``/``mul.rn`` and integer instructions, so no formula exists
twice.
"""

import numpy as np
from numba import cuda
from numba.core import types
from numba.extending import overload

from gelu_numba.kernels.primitives import inline

# choose's Python body serves the simulator; compiled, its CUDA overload
# (typing, with choose's own parameter names, as Numba requires) decides
_SWITCH = """
def choose({args}):
    return pick(({args},))({args})


def typing({args}):
    return k32 if all_float32(({args},)) else k64


def {name}({args}):
    return choose({args})
"""


def _all_float32(tys):
    return all(isinstance(t, types.Float) and t.bitwidth == 32 for t in tys)


# The float64 kernel of a record with an ordinary form (the exact functions,
# gelu_numba.kernels.normal): a warp whose active elements are all in its
# range runs the ordinary form, any other warp the general kernel, so that
# no warp runs both (a per-element choice would diverge and run both where
# a warp mixes the two).  The same bits either way.
_ORDINARY_SWITCH = """
def {name}_float64({args}):
    if warp_all(in_range({args})):
        return ordinary({args})
    return general({args})
"""


def warp_all(p):
    """``p`` on every active lane of the warp (``all_sync`` over
    ``activemask()`` on CUDA); ``p`` itself in Python (the simulator, where
    the choice it makes changes no bit)."""
    return p


@overload(warp_all, target="cuda")
def _warp_all_cuda(p):
    return lambda p: cuda.all_sync(cuda.activemask(), p)


def float64_kernel(fn):
    """The float64 device kernel of catalog record ``fn``: its ordinary form
    for warps all in range where it has one (:data:`_ORDINARY_SWITCH`),
    else ``fn.k64``."""
    if fn.ordinary is None:
        return fn.k64
    in_range, form = fn.ordinary
    scope = {"warp_all": warp_all, "in_range": in_range, "ordinary": inline(form),
             "general": inline(fn.k64)}
    exec(_ORDINARY_SWITCH.format(name=fn.name, args=", ".join(fn.params)), scope)
    return scope[f"{fn.name}_float64"]


def device_function(fn, doc=None, full_fp64=False):
    """A lazily compiled CUDA device function of catalog record ``fn``:
    the float32 kernel for all-float32 arguments, else the float64 one.
    The float32 kernel is the GPU's own where the record has one (float32
    arithmetic), or with ``full_fp64`` the CPU's (float64 arithmetic: the
    better bound, for devices that run FP64 at half their FP32 rate)."""
    args = ", ".join(fn.params)
    k32 = fn.k32 if full_fp64 else (fn.gpu32 or fn.k32)
    k64 = float64_kernel(fn)

    def pick(values):  # (pure-Python execution: the simulator)
        return k32 if all(isinstance(v, np.float32) for v in values) else k64

    scope = {"pick": pick, "k32": k32, "k64": k64, "all_float32": _all_float32}
    exec(_SWITCH.format(args=args, name=fn.name), scope)
    overload(scope["choose"], target="cuda")(scope["typing"])
    dev = cuda.jit(device=True)(scope[fn.name])
    dev.__name__ = dev.__qualname__ = fn.name
    if doc is not None:
        dev.__doc__ = doc
    return dev
