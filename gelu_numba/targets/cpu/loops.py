"""The CPU loops: a compiled kernel in, a NumPy inner loop out.

:func:`float_loop` compiles a kernel into a NumPy inner loop with Numba's
public ``@cfunc`` (``void loop(char **args, npy_intp *dims, npy_intp
*steps, void *data)``), cached on disk.  The kernel is inlined by LLVM
(``alwaysinline``: :data:`gelu_numba.kernels.primitives.intrinsics.JIT_OPTIONS`)
into the element loop (:func:`serial_loop`) over ``carray`` views, which
LLVM vectorises (packed FMAs on ``ymm``/``zmm``, no call:
:func:`loop_llvm`, the gelu-numba repository's ``tests/test_api.py``).
Every layout runs that loop: unit-stride operands as views of their
memory, other strides gathered into (the output: scattered from)
contiguous blocks of :data:`BUFFER` elements on the stack, a broadcast
scalar filled into one block once; the same kernel, so every layout gives
the contiguous call's bits (``tests/test_layouts.py``).  The element loop
of a kernel with an ordinary form (the float64 exact functions) runs it on
each block of elements all in its range (:func:`serial_loop`), and the
element loops of the catalog's functions (serial, parallel, and those
``@njit`` callers run) are compiled with
:data:`~gelu_numba.targets.cpu.interleave.INTERLEAVE` independent vectors
an iteration (:mod:`gelu_numba.targets.cpu.interleave`).  The element
loops are the plain functions of :mod:`gelu_numba.targets.cpu.elements`,
bound to one kernel (:func:`gelu_numba.targets.bound.bound`); the ufunc
loop's source is :mod:`gelu_numba.targets.cpu.templates`'s, assembled for
the function's arity.
"""

import numpy as np
from numba import carray, cfunc, njit, types

from gelu_numba.internals import numba_core
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import dtypes
from gelu_numba.targets.cpu.interleave import interleaving
from gelu_numba.targets.bound import bound
from gelu_numba.targets.cpu import elements
from gelu_numba.targets.cpu.intrinsics import apart, attributes, element, scratch
from gelu_numba.targets.cpu.templates import loop_source
from gelu_numba.targets.stamp import STAMP

#: NumPy's inner-loop signature
LOOP_SIGNATURE = types.void(types.CPointer(types.voidptr), types.CPointer(types.intp),
                            types.CPointer(types.intp), types.voidptr)

#: the loops' element types; "e" (float16) loops work on the bit patterns
NUMBA_TYPES = {"e": types.uint16, "f": types.float32, "d": types.float64}

#: elements per block of the buffered loop, by loop dtype: about 4 KB an
#: operand, so that the four operands of the widest function stay in L1; a
#: multiple of the ordinary form's block and of every vector step
BUFFER = {"e": 1920, "f": 960, "d": 480}

# A kernel with an ordinary form (Function.ordinary) runs each block of
# ORDINARY_BLOCK elements through that form when every element is in its
# range (a vectorised count: benchmarks.anatomy times it), else through the
# general kernel: the same bits either way.  The block is a multiple of
# every loop's step (vector lanes times INTERLEAVE), so that no element of
# a full block falls to the scalar remainder loop.
ORDINARY_BLOCK = 240


def serial_loop(kernel, nin, inline, wide=True, ordinary=None, name="serial",
                interleave=False):
    """``serial(a0, ..., out)``: ``out[i] = kernel(a0[i], ...)`` over 1-D
    arrays, an ``@njit`` function with Numba's ``inline`` option
    (``"always"``: its loop becomes the caller's, at the Numba IR level, so
    that :func:`~gelu_numba.targets.cpu.intrinsics.prefer_wide_vectors`
    marks the caller; cheap, since the kernel is a call there, inlined by
    LLVM; ``"never"``: a function of its own, vectorised by LLVM as such).
    ``wide=False`` leaves the vector width to LLVM's tuning for the CPU
    (timing comparisons only; see
    :func:`~gelu_numba.targets.cpu.intrinsics.prefer_wide_vectors`).
    ``ordinary``: ``(in_range, form)``, the kernel's ordinary form
    (:data:`ORDINARY_BLOCK`).

    ``name``: the function's name, and the stem of those it calls.  A loop
    cached on disk (:func:`float_loop`, the parallel block runners) must
    give one of its own: the code of a function called and not inlined is
    stored in the caller's cache entry under a symbol made of its name and
    a counter of the compiling process, so two cached loops whose callees
    share a name can be linked to each other's code when both are loaded.

    ``interleave`` (with ``inline="never"``): the function compiles itself
    :func:`~gelu_numba.targets.cpu.interleave.interleaved` (the count of an
    enclosing block, else
    :data:`~gelu_numba.targets.cpu.interleave.INTERLEAVE`) whoever calls
    it, so that its caller, the ufunc loop, compiles its own code (the
    buffered blocks' copies) without."""
    opening = attributes(wide, inline == "never")
    make = (interleaving if interleave and inline == "never"
            else njit(inline=inline, error_model="numpy"))
    if ordinary is None:
        return make(bound(elements.serial, name, kernel=kernel, opening=opening))
    in_range, form = ordinary
    return make(bound(elements.split, name, kernel=kernel, opening=opening, ordinary=form,
                      in_range=in_range, block=ORDINARY_BLOCK))


def loop_function(kernel, char, nin, qualname, blocks=None, threshold=None, ordinary=None,
                  interleave=False):
    """The Python function of a loop (uncompiled): ``kernel`` (compiled for
    this target by the caller) applied to ``nin`` operands of dtype
    ``char``.  With ``blocks`` (an ``@njit`` function of the unit-stride
    operands), runs of at least ``threshold`` elements go to it.
    ``ordinary``: the kernel's ordinary form, ``interleave``: the element
    loop's compilation (:func:`serial_loop`)."""
    ty = NUMBA_TYPES[char]
    scope = {"__name__": __name__, "ty": ty, "size": ty.bitwidth // 8,
             "carray": carray, "element": element, "blocks": blocks,
             "threshold": threshold, "apart": apart, "block": BUFFER[char],
             "buffer": scratch(BUFFER[char]),
             "serial": serial_loop(kernel, nin, "never", ordinary=ordinary,
                                   name=f"{qualname}_serial", interleave=interleave)}
    source = loop_source(qualname, nin, blocks is not None)
    # (this file's name: Numba's cache keys the loop by its defining file)
    exec(compile(source, __file__, "exec"), scope)
    return scope["make"](STAMP)


def float_loop(fn, char, cache=True):
    """The ``@cfunc`` loop of catalog function ``fn`` for dtype ``char``
    (``"f"`` or ``"d"``), cached on disk (with the float16 loop:
    :func:`gelu_numba.targets.cpu.registry.loop`)."""
    py = loop_function(inline(fn.kernel(char)), char, fn.nin,
                       f"{fn.name}_{dtypes.LOOP_DTYPES[char]}",
                       ordinary=ordinary_form(fn, char), interleave=True)
    return compile_loop(py, cache)


def bits_loop(kernel, nin, qualname):
    """The ``@cfunc`` loop ``qualname`` of scalar ``kernel`` on 2-byte bit
    patterns (``uint16`` operands: the float16 loops, the bfloat16
    ufuncs), not cached on disk: the kernel's tables are frozen into the
    code, and are made afresh in each process anyway."""
    py = loop_function(inline(kernel), "e", nin, qualname)
    return cfunc(LOOP_SIGNATURE, cache=False, error_model="numpy")(py)


def compile_loop(py, cache, also=()):
    """The ``@cfunc`` of loop function ``py`` (:func:`loop_function`): the
    serial and parallel loops of the catalog's functions, and the
    emulations'.  A cache entry that cannot be read (of the loop, or of the
    cached dispatchers ``also`` it calls) is written anew, with a warning
    naming it (:func:`numba_core.compile_repairing`)."""
    # error_model="numpy": no ZeroDivisionError check on float division,
    # whose branch would keep LLVM from vectorising the loop
    def compile():
        return cfunc(LOOP_SIGNATURE, cache=cache, error_model="numpy")(py)

    if not cache:
        return compile()
    return numba_core.compile_repairing(compile, [py, *also], py.__name__)


def ordinary_form(fn, char):
    """``(in_range, compiled form)`` of ``fn``'s loop ``char``, or None."""
    found = fn.ordinary_kernel(char)
    return None if found is None else (found[0], inline(found[1]))


def loop_llvm(make_loop, fn, char):
    """The optimised LLVM IR of the loop ``make_loop(fn, char, cache=False)``
    (compiled afresh: a loop loaded from the cache has machine code only).
    A vectorised loop shows packed operations (``<8 x double>``,
    ``@llvm.fma.v8f64``) and no call in its body."""
    return make_loop(fn, char, cache=False).inspect_llvm()


def element_loop(fn, char, name):
    """The element loop of catalog function ``fn`` for dtype ``char``: the
    function the ufunc loop runs on each run or block, and ``@njit``
    callers on contiguous arrays (:func:`serial_loop`, its own function,
    compiled :func:`~gelu_numba.targets.cpu.interleave.interleaved`)."""
    return serial_loop(inline(fn.kernel(char)), fn.nin, "never",
                       ordinary=ordinary_form(fn, char), name=name, interleave=True)


def element_loop_llvm(fn, char):
    """The optimised LLVM IR of ``fn``'s ``char`` element loop compiled
    alone: a cheaper look than :func:`loop_llvm`, which compiles the whole
    ufunc loop around it."""
    loop = element_loop(fn, char, f"{fn.name}_{dtypes.LOOP_DTYPES[char]}_serial")
    sig = element_signature([types.Array(NUMBA_TYPES[char], 1, "C")] * (fn.nin + 1))
    loop.compile(sig)
    return loop.inspect_llvm(sig)


def element_signature(operand_types):
    """The signature of an element loop (``loop(*ops)``) for these operand
    types, as Numba compiles it (``compile``, ``inspect_asm``): the
    operands folded into one tuple argument."""
    return (types.BaseTuple.from_types(tuple(operand_types)),)
