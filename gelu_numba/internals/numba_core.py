"""Numba's dispatcher class and CPU typing context.

* ``numba.core.registry.CPUDispatcher``, subclassed by
  :func:`gelu_numba.kernels.primitives.inline_helper` so that a float32
  helper called from Python (the CUDA simulator runs device code as Python)
  runs its Python body and keeps float32 arithmetic.  If it changes: a
  plain Python function for the simulator and ``@njit`` for the compiled
  targets, chosen by the caller.
* ``numba.core.dispatcher.Dispatcher``, to tell an already compiled kernel
  from a plain function (:mod:`gelu_numba.targets.emulated`).  If it
  changes: ``hasattr(kernel, "py_func")``.
* ``numba.core.registry.cpu_target.typing_context.refresh()``, so that an
  ``@overload`` registered while Numba types a caller (a public module's
  ``__getattr__`` runs then) is seen at once (:mod:`gelu_numba.targets.cpu`).
  If it changes: register every overload at import.
* ``numba.np.numpy_support.as_dtype``, a Numba type's NumPy dtype (the dtype
  rule in ``@njit`` callers), and ``from_dtype``, the reverse (the kernel
  signature of :class:`gelu_numba.targets.cuda.FastLaunch`).  If they
  change: a table of the float and integer types.

``numba.core.types``, ``cgutils`` and ``errors`` are the extension API that
Numba documents for ``@intrinsic`` and ``@overload``; they are used directly.
"""

from numba.core.dispatcher import Dispatcher
from numba.core.registry import CPUDispatcher, cpu_target
from numba.np.numpy_support import as_dtype, from_dtype


def refresh_typing():
    """Load new ``@overload`` declarations into the CPU typing context."""
    cpu_target.typing_context.refresh()


def probe():
    """Raise ``ImportError`` naming what moved, if anything did."""
    if not (isinstance(CPUDispatcher, type) and issubclass(CPUDispatcher, Dispatcher)):
        raise ImportError("gelu_numba: numba.core.registry.CPUDispatcher is not a "
                          "Dispatcher class in this Numba")
    if not callable(getattr(cpu_target.typing_context, "refresh", None)):
        raise ImportError("gelu_numba: Numba's CPU typing context has no refresh()")


__all__ = ["CPUDispatcher", "Dispatcher", "as_dtype", "from_dtype", "refresh_typing", "probe"]
