"""Pointer and function-attribute intrinsics of the CPU loops.

NumPy hands an inner loop raw pointers and byte steps; these turn them into
typed pointers (:func:`element`, :func:`pointer`), addresses
(:func:`address`, :func:`apart`) and uninitialised stack blocks
(:func:`scratch`), call an element loop by its address (:func:`call`), and
mark the function being compiled for LLVM (its vector width, no inlining:
:func:`attributes`).  Public Numba API only (``@intrinsic``).
"""

import functools

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def element(typingctx, base, offset, ty):
    """A typed pointer to the ``ty`` at ``base + offset`` bytes (NumPy's
    steps are in bytes and may be negative or zero)."""
    sig = types.CPointer(ty.dtype)(base, offset, ty)

    def codegen(context, builder, sig, args):
        ptr = builder.gep(builder.bitcast(args[0], ir.IntType(8).as_pointer()), [args[1]])
        return builder.bitcast(ptr, context.get_value_type(sig.return_type))

    return sig, codegen


def _prefer_wide(builder):
    # a string attribute, which llvmlite's checked add() does not know
    set.add(builder.function.attributes, '"prefer-vector-width"="512"')


def _no_inline(builder):
    builder.function.attributes.add("noinline")


@intrinsic
def pointer(typingctx, location, ty):
    """A typed pointer to the ``ty`` at integer address ``location``."""
    sig = types.CPointer(ty.dtype)(location, ty)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return sig, codegen


@intrinsic
def call(typingctx, function, n, addresses):
    """Call the element loop at integer address ``function``: its C
    signature is ``void loop(intp n, intp *addresses)``, ``n`` elements of
    the operands at ``addresses[0]``, ... (the output last)."""
    sig = types.void(function, n, addresses)

    def codegen(context, builder, sig, args):
        intp = context.get_value_type(types.intp)
        fnty = ir.FunctionType(ir.VoidType(), [intp, intp.as_pointer()])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1], args[2]])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def address(typingctx, base):
    """The address ``base`` points to, as an integer."""
    def codegen(context, builder, sig, args):
        return builder.ptrtoint(args[0], context.get_value_type(types.intp))

    return types.intp(base), codegen


@functools.cache
def scratch(count):
    """An intrinsic ``scratch(ty)``: a pointer to ``count`` elements of
    ``ty`` on the stack, allocated in the function's entry block and left
    uninitialised (Numba's ``cgutils.alloca_once`` zero-fills: a memset of
    every block on every call, contiguous calls too, a cost a one-element
    call shows); every element is written before it is read."""
    @intrinsic
    def allocate(typingctx, ty):
        sig = types.CPointer(ty.dtype)(ty)

        def codegen(context, builder, sig, args):
            element_type = context.get_value_type(sig.return_type.dtype)
            with builder.goto_entry_block():
                array = builder.alloca(ir.ArrayType(element_type, count))
            return builder.bitcast(array, element_type.as_pointer())

        return sig, codegen

    return allocate


@njit(inline="always")
def apart(a, sa, out, sout, n, size):
    """Whether operand ``a`` (pointer, byte step) can be read a block ahead
    of ``out`` being written: the two are the same elements, or their byte
    ranges over ``n`` elements are disjoint (not so for NumPy's
    ``accumulate`` and ``reduce``, whose input is the output one element
    back)."""
    pa, po = address(a), address(out)
    if pa == po and sa == sout:
        return True
    reach_a, reach_o = (n - 1) * sa, (n - 1) * sout
    lo_a, hi_a = pa + min(0, reach_a), pa + max(0, reach_a) + size
    lo_o, hi_o = po + min(0, reach_o), po + max(0, reach_o) + size
    return hi_a <= lo_o or hi_o <= lo_a


@functools.cache
def attributes(wide, alone):
    """An intrinsic ``opening()`` that marks the function being compiled
    for LLVM, in one statement (the opening of the element loops,
    :mod:`gelu_numba.targets.cpu.elements`):

    ``wide``
        vectorise with the widest vectors the CPU has.  LLVM's tuning for
        Intel server cores (Skylake-X to Emerald Rapids) prefers 256-bit
        vectors even where AVX-512 is available, to spare the clock on code
        with few vector instructions; the element loops are nothing but
        vector arithmetic, and 512-bit vectors make the float64 loops faster
        there (measured by the gelu-numba repository's
        ``benchmarks.anatomy``).  The function attribute
        ``"prefer-vector-width"="512"`` changes that for the loop alone: no
        global setting of Numba or LLVM is touched, and CPUs without
        AVX-512 keep their widest legal vectors.
    ``alone``
        keep LLVM from inlining the function into its callers (Numba's
        ``inline="never"`` is about Numba's own IR inlining; LLVM still
        inlined a small element loop, norm_pdf's float32 one for AVX2, into
        its caller's two call sites).
    """
    @intrinsic
    def opening(typingctx):
        def codegen(context, builder, sig, args):
            if wide:
                _prefer_wide(builder)
            if alone:
                _no_inline(builder)
            return context.get_dummy_value()

        return types.none(), codegen

    return opening
