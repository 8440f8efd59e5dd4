"""The CPU loops: a compiled kernel in, a NumPy inner loop out.

A loop is two ``@cfunc`` functions, each compiled once and cached on disk
(:class:`Loop`):

* the element loop's C entry point (:func:`element_entry`), one per
  function and dtype: the kernel, inlined by LLVM (``alwaysinline``:
  :data:`gelu_numba.kernels.primitives.intrinsics.JIT_OPTIONS`) into the
  element loop (:func:`serial_loop`, the plain functions of
  :mod:`gelu_numba.targets.cpu.elements` bound to one kernel), which LLVM
  vectorises (packed FMAs on ``ymm``/``zmm``, no call: :func:`loop_llvm`,
  the gelu-numba repository's ``tests/test_api.py``).  A kernel with an
  ordinary form (the float64 exact functions) runs it on each block of
  elements all in its range; the catalog's element loops are compiled
  with :data:`~gelu_numba.targets.cpu.interleave.INTERLEAVE` independent
  vectors an iteration (:mod:`gelu_numba.targets.cpu.interleave`).
* the ufunc loop (:func:`ufunc_loop`, NumPy's ``void loop(char **args,
  npy_intp *dims, npy_intp *steps, void *data)``), one per element type
  and number of operands for every function: it runs every layout through
  the element loop whose address is its ``data``
  (:mod:`gelu_numba.targets.cpu.ufunc_loop`).

So a kernel is compiled into one loop, once; the serial and parallel
ufuncs, the JAX handler and ``@njit`` callers on arrays call the same
element loop.
"""

import functools

from numba import cfunc, from_dtype, njit, types

from gelu_numba.internals import numba_core
from gelu_numba.kernels import rounded32
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import dtypes
from gelu_numba.targets.cpu.interleave import INTERLEAVE, interleaved
from gelu_numba.targets.cpu.bound import bound
from gelu_numba.targets.cpu import elements
from gelu_numba.targets.cpu.intrinsics import attributes, call, scratch
from gelu_numba.targets.cpu.operands import MOST
from gelu_numba.targets.cpu.ufunc_loop import ufunc_loop as _ufunc_loop
from gelu_numba.targets.stamp import STAMP

#: NumPy's inner-loop signature
LOOP_SIGNATURE = types.void(types.CPointer(types.voidptr), types.CPointer(types.intp),
                            types.CPointer(types.intp), types.voidptr)
#: an element loop's C entry point: ``void entry(intp n, intp *addresses)``
ENTRY_SIGNATURE = types.void(types.intp, types.CPointer(types.intp))

#: the loops' element types; "e" (float16) loops work on the bit patterns
NUMBA_TYPES = {"e": types.uint16, **{c: from_dtype(dt) for c, dt in dtypes.LOOP_DTYPES.items()}}
#: the loops' element sizes in bytes
ITEMSIZE = {c: t.bitwidth // 8 for c, t in NUMBA_TYPES.items()}

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
# A correctly rounded kernel (Function.rounded) runs each block of
# ROUNDED_BLOCK elements through its fast path and rounding test, and the
# unsure elements of the rare block with one through its accurate path,
# after the test again over the block: a smaller block costs the rare
# block less and the common one no more (benchmarks.rounding's rows on
# sparse unsure inputs, and the dense ones).  A multiple of every loop's
# step, as ORDINARY_BLOCK (its flags and float32 scratch, 480 bytes, on
# the stack).
ROUNDED_BLOCK = 96
# A kernel in two steps (a table lookup, then arithmetic) runs each block of
# STAGED_BLOCK elements through the lookups, then the arithmetic (its
# float64 scratch, 2 KB, on the stack); a multiple of every loop's step.
STAGED_BLOCK = 240


def serial_loop(kernel, inline, wide=True, ordinary=None, name="serial", rounded=None,
                staged=None):
    """``serial((a0, ..., out))``: ``out[i] = kernel(a0[i], ...)`` over 1-D
    arrays, an ``@njit`` function with Numba's ``inline`` option
    (``"always"``: its loop becomes the caller's, at the Numba IR level, so
    that its opening (:func:`~gelu_numba.targets.cpu.intrinsics.attributes`)
    marks the caller; cheap, since the kernel is a call there, inlined by
    LLVM; ``"never"``: a function of its own, vectorised by LLVM as such).
    ``wide=False`` leaves the vector width to LLVM's tuning for the CPU
    (timing comparisons only; see
    :func:`~gelu_numba.targets.cpu.intrinsics.attributes`).
    ``ordinary``: ``(in_range, form)``, the kernel's ordinary form
    (:data:`ORDINARY_BLOCK`).

    ``name``: the function's name, and the stem of those it calls.  A loop
    inside a cached one must have one of its own: the code of a function
    called and not inlined is stored in the caller's cache entry under a
    symbol made of its name and a counter of the compiling process, so two
    cached loops whose callees share a name can be linked to each other's
    code when both are loaded.

    ``rounded``: ``(fast, accurate, bracket)``, a correctly rounded
    kernel's fast path, accurate path and rounding test's bracket, which
    its loop runs in blocks (:data:`ROUNDED_BLOCK`), ``kernel`` itself only
    where the output overlaps an input one element off.

    ``staged``: ``(look, finish)``, a kernel in two steps, the table lookup
    and the arithmetic on the entry found, which its loop runs in blocks
    (:data:`STAGED_BLOCK`, :func:`~gelu_numba.targets.cpu.elements.staged`)."""
    opening = attributes(wide, inline == "never")
    make = njit(inline=inline, error_model="numpy")
    if rounded is not None:
        fast, accurate, bracket = rounded
        return make(bound(elements.rounded, name, kernel=kernel, opening=opening, fast=fast,
                          accurate=accurate, bracket=bracket, block=ROUNDED_BLOCK,
                          hold=scratch(ROUNDED_BLOCK)))
    if staged is not None:
        look, finish = staged
        return make(bound(elements.staged, name, kernel=kernel, opening=opening, look=look,
                          finish=finish, block=STAGED_BLOCK, hold=scratch(STAGED_BLOCK)))
    if ordinary is None:
        return make(bound(elements.serial, name, kernel=kernel, opening=opening))
    in_range, form = ordinary
    return make(bound(elements.split, name, kernel=kernel, opening=opening, ordinary=form,
                      in_range=in_range, block=ORDINARY_BLOCK))


class Loop:
    """A compiled ufunc loop: :attr:`address`, the ufunc loop NumPy calls
    (:attr:`outer`, shared by every function of its element type and
    arity), and :attr:`data`, what NumPy passes it as ``data``: the address
    of the function's element loop (:attr:`inner`, :func:`element_entry`)."""

    def __init__(self, outer, inner):
        self.outer, self.inner = outer, inner
        self.address, self.data = outer.address, inner.address

    @property
    def cache_hits(self):
        """Whether both were loaded from Numba's cache rather than compiled
        (by this object or an earlier one): 0 or 1."""
        return int(bool(self.outer.cache_hits) and bool(self.inner.cache_hits))


_ENTRY = elements.entries(STAMP)
_LOOP = _ufunc_loop(STAMP)


def element_entry(kernel, char, nin, name, cache, ordinary=None, interleave=False, rounded=None,
                  staged=None):
    """The element loop of compiled ``kernel`` on ``nin`` inputs of dtype
    ``char`` as a C function (:data:`ENTRY_SIGNATURE`,
    :func:`~gelu_numba.targets.cpu.elements.entries`), a ``@cfunc`` named
    ``name``, compiled (cached on disk where ``cache``) on its own: the one
    place the kernel is compiled into a loop.  ``ordinary``: the kernel's
    ordinary form, ``rounded`` its correctly rounded form, ``staged`` its
    two steps (:func:`serial_loop`); ``interleave``: compiled with
    :data:`~gelu_numba.targets.cpu.interleave.INTERLEAVE` vectors an
    iteration."""
    # the loop inlined into the entry at Numba's IR level: LLVM optimises
    # the kernel in one module, once (a callee of its own is optimised
    # alone, then again in its caller's module)
    loop = serial_loop(kernel, "always", ordinary=ordinary, name=f"{name}_loop", rounded=rounded,
                       staged=staged)
    py = bound(_ENTRY, name, loop=loop, ty=NUMBA_TYPES[char], count=nin + 1)
    # (a loop loaded from the cache holds its accurate path's code; one
    # compiled loads or compiles the accurate path, whose cache entry is
    # then repaired as the loop's own)
    with interleaved(INTERLEAVE if interleave else 0):  # (0: LLVM's own count)
        return compile_loop(py, cache, ENTRY_SIGNATURE,
                            also=rounded32.ACCURATE if rounded is not None else ())


@functools.cache
def ufunc_loop(char, count, whole=call, stem="", also=()):
    """The ufunc loop (:func:`gelu_numba.targets.cpu.ufunc_loop.ufunc_loop`)
    of ``count`` operands of dtype ``char``, compiled once (cached on disk).
    ``whole(function, n, addresses)`` runs a unit-stride run: the element
    loop at ``function`` on all of it (:func:`~.intrinsics.call`), or the
    parallel target's runner, named by ``stem``, which calls the cached
    dispatchers ``also``."""
    ty = NUMBA_TYPES[char]
    py = bound(_LOOP, f"ufunc_loop_{count}_{ty}{stem}", ty=ty, size=ITEMSIZE[char],
               count=count, block=BUFFER[char], whole=whole,
               rows=scratch(MOST * BUFFER[char]))
    return compile_loop(py, True, also=also)


def kernel_loop(kernel, char, nin, name, cache, ordinary=None, interleave=False, rounded=None,
                staged=None):
    """The :class:`Loop` of compiled scalar ``kernel`` on ``nin`` inputs of
    dtype ``char``, its element loop named ``name``."""
    return Loop(ufunc_loop(char, nin + 1), element_entry(
        kernel, char, nin, name, cache, ordinary=ordinary, interleave=interleave,
        rounded=rounded, staged=staged))


def float_loop(fn, char, cache=True):
    """The :class:`Loop` of catalog function ``fn`` for dtype ``char``
    (``"f"`` or ``"d"``), cached on disk (with the float16 loop:
    :func:`gelu_numba.targets.cpu.registry.loop`)."""
    return kernel_loop(inline(fn.kernel(char)), char, fn.nin,
                       f"{fn.name}_{dtypes.LOOP_DTYPES[char]}", cache,
                       ordinary=ordinary_form(fn, char), interleave=True,
                       rounded=rounded_form(fn, char))


def bits_loop(kernel, nin, qualname, staged=None):
    """The :class:`Loop` ``qualname`` of scalar ``kernel`` on 2-byte bit
    patterns (``uint16`` operands: the float16 loops, the bfloat16
    ufuncs), run in its two compiled steps ``staged`` where given
    (:func:`serial_loop`); its element loop is not cached on disk: the
    kernel's tables are frozen into the code, and are made afresh in each
    process anyway."""
    return kernel_loop(inline(kernel), "e", nin, qualname, cache=False, staged=staged)


def compile_loop(py, cache, signature=LOOP_SIGNATURE, also=()):
    """The ``@cfunc`` of loop function ``py`` (NumPy's inner loop, or an
    element loop's entry point).  A cache entry that cannot be read (of
    the loop, or of the cached dispatchers ``also`` it calls) is written
    anew, with a warning naming it (:func:`numba_core.compile_repairing`)."""
    # error_model="numpy": no ZeroDivisionError check on float division,
    # whose branch would keep LLVM from vectorising the loop
    def compile():
        return cfunc(signature, cache=cache, error_model="numpy")(py)

    if not cache:
        return compile()
    return numba_core.compile_repairing(compile, [py, *also], py.__name__)


def ordinary_form(fn, char):
    """``(in_range, compiled form)`` of ``fn``'s loop ``char``, or None."""
    found = fn.ordinary_kernel(char)
    return None if found is None else (found[0], inline(found[1]))


def rounded_form(fn, char):
    """``(fast path, accurate path, bracket)`` of ``fn``'s loop ``char``
    (compiled as kernels are:
    :func:`~gelu_numba.kernels.primitives.intrinsics.inline`, the accurate
    path a function of its own, cached on its own: its entry is repaired
    with the loop's, :func:`element_entry`), or None."""
    return fn.rounded_kernel(char)


def load_accurate(fn, char):
    """Load ``fn``'s accurate path for loop ``char`` from Numba's cache, or
    compile it (and cache it), where ``fn`` is correctly rounded there: the
    code compiled next calls it (an ``@njit`` caller's).  A cache entry of
    the accurate paths that cannot be read is written anew, with a warning
    naming it (:func:`numba_core.compile_repairing`)."""
    rounded = fn.rounded_kernel(char)
    if rounded is None:
        return
    accurate = rounded[1]
    signature = (NUMBA_TYPES[char],) * fn.nin
    numba_core.compile_repairing(lambda: accurate.compile(signature), rounded32.ACCURATE,
                                 f"{fn.name}'s accurate path")


def loop_llvm(fn, char):
    """The optimised LLVM IR of ``fn``'s ``char`` element loop as the ufuncs
    run it (:func:`element_entry`, compiled afresh: a loop loaded from the
    cache has machine code only).  A vectorised loop shows packed
    operations (``<8 x double>``, ``@llvm.fma.v8f64``) and no call in its
    body."""
    return element_entry(inline(fn.kernel(char)), char, fn.nin,
                         f"{fn.name}_{dtypes.LOOP_DTYPES[char]}", False,
                         ordinary=ordinary_form(fn, char), interleave=True,
                         rounded=rounded_form(fn, char)).inspect_llvm()


def element_signature(operand_types):
    """The signature of an element loop (``loop(ops)``: one tuple of its
    operands) for these operand types, as Numba compiles it (``compile``,
    ``inspect_asm``)."""
    return (types.BaseTuple.from_types(tuple(operand_types)),)
