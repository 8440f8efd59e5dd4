"""LLVM's vector interleave count for the element loops.

The catalog's element loops (which the serial and parallel ufuncs, the
JAX handler and ``@njit`` callers run) are compiled with :data:`INTERLEAVE`
independent vectors an iteration (:func:`interleaved`): the element loop's
own compilation; the ufunc loop's block copies, and the float16 and
emulation loops, are not.
"""

import contextlib

import llvmlite.binding as ll
from numba.core.compiler_lock import global_compiler_lock


#: LLVM's vector interleave count for the element loops: each iteration
#: computes this many vectors of elements, as independent chains.  The exact
#: kernels are long dependency chains (the float64 ones longer than a
#: core's reorder buffer holds); one vector at a time leaves the core waiting
#: on latencies.  Measured, with the loops' instruction counts, by
#: ``python -m benchmarks.anatomy`` (its "one vector an iteration" rows).
INTERLEAVE = 3


@contextlib.contextmanager
def interleaved(count=INTERLEAVE):
    """Compile the element loops with ``count`` vectors an iteration.

    LLVM takes the count as a process-wide option only
    (``-force-vector-interleave``; its loop metadata is out of Numba's
    reach), so it is set for the compilation in the block and set back
    after it, under Numba's global compiler lock: no other compilation, the
    user's or this package's, can see it.  Back means LLVM's default (0:
    its own heuristic), or the count of an enclosing block; a value set by
    the user through llvmlite cannot be read, and is not restored."""
    with global_compiler_lock:
        outer = _INTERLEAVING[0]
        ll.set_option("", f"-force-vector-interleave={count}")
        _INTERLEAVING[0] = count
        try:
            yield
        finally:
            _INTERLEAVING[0] = outer
            ll.set_option("", f"-force-vector-interleave={outer}")


#: the count in force (0: LLVM's default), for nested interleaved() blocks
_INTERLEAVING = [0]
