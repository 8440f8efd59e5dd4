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


def _switch(k64, k32, nin):
    """A fresh pair ``(choose, body)``: ``choose`` is the overloadable
    name (its Python body serves pure-Python calls), ``body`` the function
    that gets compiled, which calls ``choose``.  The argument names must be
    the kernels' own."""
    stamp = _STAMP
    if nin == 1:
        def choose(x):
            return _pick(k64, k32, (x,))(x)

        def body(x):
            stamp  # noqa: B018 (part of the cache key, see _source_stamp)
            return choose(x)
    elif nin == 2:
        def choose(dy, x):
            return _pick(k64, k32, (dy, x))(dy, x)

        def body(dy, x):
            stamp  # noqa: B018 (part of the cache key, see _source_stamp)
            return choose(dy, x)
    elif nin == 3:
        def choose(x, mu, sigma):
            return _pick(k64, k32, (x, mu, sigma))(x, mu, sigma)

        def body(x, mu, sigma):
            stamp  # noqa: B018 (part of the cache key, see _source_stamp)
            return choose(x, mu, sigma)
    else:
        raise ValueError(f"nin must be 1, 2 or 3, got {nin}")
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
