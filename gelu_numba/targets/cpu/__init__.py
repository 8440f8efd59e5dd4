"""CPU target: one scalar kernel per precision in, one NumPy ufunc out.

One job a module:

``intrinsics``
    Pointer arithmetic, calls and function attributes of the loops
    (``@intrinsic``): typed pointers, addresses, stack blocks, a call by
    address, the vector width, no inlining.
``operands``, ``bound``
    Tuples of a loop's operands; a plain loop function bound to one kernel
    under a name of its own.
``elements``
    The element loops (serial, split into ordinary blocks), plain
    functions of any number of operands.
``ufunc_loop``
    The ufunc loop around any element loop, for every layout, a plain
    function.
``interleave``
    LLVM's vector interleave count for the element loops' compilation.
``loops``
    The loops (``@cfunc``): each function's element loop, and the ufunc
    loop of each element type and arity that calls it, compiled and cached
    on disk.
``numpy_api``
    A ``numpy.ufunc`` from compiled loops, through NumPy's C API.
``njit``
    ``@njit`` callers: the ``@overload`` of each public ufunc.
``registry``
    The ``numpy.ufunc`` of each catalog function, its float16 loop, its
    public :class:`Ufunc` wrapper, and the registry pickles find them in.
``parallel``
    The multithreaded loops and ufuncs.
``half_loops``
    The 2-byte loops (float16 and bfloat16, correctly rounded).
``emulated``
    float32-only ufuncs (the production emulations, ``gelu_half32``).
``soi_loop``
    The loop of the stochastic 0-I map.

The names below are those that code outside the package reads; the
package's ``__getattr__`` gives the ``numpy.ufunc`` of a catalog function
by name (how they unpickle).  Values read at compile time (``BUFFER``,
``ORDINARY_BLOCK``, ``INTERLEAVE``) are read from their own modules, so
any change must be made there, not here.
"""

from gelu_numba.targets.cpu.interleave import INTERLEAVE, interleaved
from gelu_numba.targets.cpu.intrinsics import (
    address, apart, attributes, call, element, pointer, scratch,
)
from gelu_numba.targets.cpu.loops import (
    BUFFER, ENTRY_SIGNATURE, ITEMSIZE, LOOP_SIGNATURE, NUMBA_TYPES, ORDINARY_BLOCK, Loop, bits_loop,
    compile_loop, element_entry, element_signature, float_loop,
    kernel_loop, loop_llvm, ordinary_form, serial_loop, ufunc_loop,
)
from gelu_numba.targets.cpu.registry import REGISTRY, Registry, Ufunc, half_loop, loop

__all__ = [
    "BUFFER", "ENTRY_SIGNATURE", "INTERLEAVE", "ITEMSIZE", "LOOP_SIGNATURE", "Loop",
    "NUMBA_TYPES", "ORDINARY_BLOCK", "REGISTRY", "Registry", "Ufunc", "address", "apart",
    "attributes", "bits_loop", "call", "compile_loop", "element", "element_entry",
    "element_signature", "float_loop", "half_loop",
    "interleaved", "kernel_loop", "loop", "loop_llvm", "ordinary_form", "pointer", "scratch",
    "serial_loop", "ufunc_loop",
]


def __getattr__(name):
    return REGISTRY.attribute(name)
