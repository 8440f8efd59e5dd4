"""One name per function, one algorithm per precision.

:func:`by_precision` joins a float64 kernel (double-double,
:mod:`gelu_numba.kernels.normal`) and a float32 kernel (plain float64
arithmetic, :mod:`gelu_numba.kernels.normal32`) into one scalar function.
Numba picks the body at compile time from the argument types (all float32:
the float32 kernel; anything else: the float64 one) and inlines it, so the
ufunc loop compiled for each signature sees a single straight-line body.
Called from Python (the CUDA simulator, tests), the same rule applies to
the argument values: NumPy float32 scalars run the float32 kernel,
anything else the float64 one.
"""

import hashlib
import inspect
from pathlib import Path

import numpy as np
from numba.core import types
from numba.extending import overload

_PACKAGE = Path(__file__).resolve().parents[1]


def _source_stamp():
    """A hash of every kernel and table source file.

    Numba's on-disk cache is invalidated only by the modification time of
    the file that defines the cached function (here, this one), not by the
    files of the functions and tables it calls.  Each compiled body below
    holds this stamp as a closure variable, and closure variables are part
    of Numba's cache key, so editing any kernel or table recompiles.
    """
    h = hashlib.sha256()
    for folder in ("kernels", "tables"):
        for path in sorted((_PACKAGE / folder).glob("*.py")):
            h.update(path.read_bytes())
    return int.from_bytes(h.digest()[:7], "little")


_STAMP = _source_stamp()


def _all_float32(args):
    return all(isinstance(a, types.Float) and a.bitwidth == 32 for a in args)


def _pick(k64, k32, args):
    """The kernel for argument values (pure-Python execution)."""
    return k32 if all(isinstance(a, np.float32) for a in args) else k64


def _register(choose, k64, k32, target, **options):
    """Compile calls of ``choose`` on ``target`` to ``k32`` when every
    argument type is float32, to ``k64`` otherwise."""
    # Numba wants the typing function's parameter names to be choose's own
    names = ", ".join(inspect.signature(choose).parameters)
    scope = {"k64": k64, "k32": k32, "_all_float32": _all_float32}
    exec(f"def typing({names}):\n"
         f"    return k32 if _all_float32(({names},)) else k64\n", scope)
    overload(choose, target=target, **options)(scope["typing"])


_SWITCH = """
def choose({args}):
    return _pick(k64, k32, ({args},))({args})


def make(stamp):
    def body({args}):
        stamp  # noqa: B018 (the cache key, see below)
        return choose({args})
    return body
"""
_ARGS = {1: "x", 2: "dy, x", 3: "x, mu, sigma"}


def _switch(k64, k32, nin):
    """A fresh pair ``(choose, body)``: ``choose`` is the overloadable
    name (its Python body serves pure-Python calls), ``body`` the function
    that gets compiled, which calls ``choose``.  The argument names must be
    the kernels' own.

    Numba's cache key holds the pickled closure variables of ``body``; a
    kernel made by a factory (the fitted approximations) pickles by value,
    differently in every process, so ``body`` finds ``choose`` among its
    globals and closes over the source stamp alone: the key is then the
    same in every process and still changes with any kernel or table file.
    """
    if nin not in _ARGS:
        raise ValueError(f"nin must be 1, 2 or 3, got {nin}")
    scope = {"__name__": __name__, "_pick": _pick, "k64": k64, "k32": k32}
    # compiled under this file's name: Numba's cache locates it by its file
    exec(compile(_SWITCH.format(args=_ARGS[nin]), __file__, "exec"), scope)
    choose, body = scope["choose"], scope["make"](_STAMP)
    body.__name__ = body.__qualname__ = k64.__name__
    body.__doc__ = k64.__doc__
    return choose, body


def by_precision(k64, k32, nin):
    """A scalar function of ``nin`` arguments running ``k32`` on float32
    arguments and ``k64`` otherwise (compile-time choice).

    The result is the CPU body; its attribute ``cuda`` is the same switch
    for the CUDA target (:mod:`gelu_numba.gpu`), with its own ``choose``.
    The CPU inlines the chosen kernel at the Numba-IR level (the ufunc loop
    then vectorises it); CUDA gets a plain call, which NVVM inlines.  They
    cannot share one ``choose``: Numba caches a function's resolved
    overload per argument types, not per target, so CUDA would reuse the
    CPU's inlined IR, which numba-cuda 0.30 cannot lower ("No implementation
    of function lt(omitted, omitted)").
    """
    choose, body = _switch(k64, k32, nin)
    _register(choose, k64, k32, "cpu", inline="always")
    cuda_choose, cuda_body = _switch(k64, k32, nin)
    _register(cuda_choose, k64, k32, "cuda")
    body.cuda = cuda_body
    body.k64, body.k32, body.nin = k64, k32, nin
    return body
