"""The element loops: ``out[i] = kernel(a0[i], ...)`` over 1-D arrays of
one length, the loop the ufunc loop runs on each run or buffered block,
each block of the parallel loop, and ``@njit`` callers on contiguous arrays.

Plain functions of one tuple of any number of operands (``ops``, the
output last; a tuple, not ``*ops``: Numba inlines no function of ``*args``
into its caller, and the element loops are inlined into their C entry
point, :func:`entries`), which read what they call by free names, bound
for one kernel by
:func:`gelu_numba.targets.cpu.bound.bound`
(:func:`gelu_numba.targets.cpu.loops.serial_loop` binds them):

``kernel``
    the scalar kernel, compiled for the CPU and inlined by LLVM;
``opening``
    an intrinsic marking the function for LLVM
    (:func:`~gelu_numba.targets.cpu.intrinsics.attributes`: the vector
    width, no inlining into the caller);
``ordinary``, ``in_range``, ``block`` (:func:`split`)
    the kernel's ordinary form, the form's range test, and the elements a
    block;
``fast``, ``accurate``, ``bracket``, ``hold`` (:func:`rounded`)
    a correctly rounded kernel's fast path, accurate path and rounding
    test's bracket (:mod:`gelu_numba.kernels.rounded32`), and the intrinsic
    that allocates a block of scratch on the stack (``hold(dtype)``:
    float32 results, or the test's flags);
``look``, ``finish``, ``hold`` (:func:`staged`)
    a kernel in two steps: the lookup of a table entry, and the
    arithmetic on it;
``loop``, ``ty``, ``count`` (:func:`entries`)
    the element loop, the operands' element type and their number.
"""

import numpy as np
from numba import carray

from gelu_numba.kernels.rounded32 import differ
from gelu_numba.targets.cpu.operands import at, overlaps, views

# (the names each function binds: set for one kernel by bound())
kernel = opening = ordinary = in_range = block = loop = ty = count = None
fast = accurate = bracket = hold = look = finish = None


# The index is unsigned: for a signed one Numba emits the wraparound
# ``i + size if i < 0``, and where LLVM fails to prove i >= 0 it vectorises
# the loads and stores as gathers and scatters.  It did so for the float64
# ndtr and gelu_grad loops compiled as functions of their own
# (inline="never", as benchmarks.anatomy times kernels): 63 instead of 8.4
# ns per element on an Intel VM.
def serial(ops):
    """The kernel element by element."""
    opening()
    out = ops[-1]
    for i in range(np.uint64(out.size)):
        out[i] = kernel(*at(ops[:-1], i))


def split(ops):
    """Each ``block`` of elements through the kernel's ordinary form where
    all its elements are in the form's range (a vectorised count, not a
    search that stops early), else through the general kernel: the same
    bits either way.  The three loops are this function's own: no callee
    to compile and inline."""
    opening()
    out = ops[-1]
    inputs = ops[:-1]
    n = out.size
    for begin in range(0, n, block):
        start, stop = np.uint64(begin), np.uint64(min(n, begin + block))
        outside = 0
        for i in range(start, stop):
            outside += not in_range(*at(inputs, i))
        if outside == 0:
            for i in range(start, stop):
                out[i] = ordinary(*at(inputs, i))
        else:
            for i in range(start, stop):
                out[i] = kernel(*at(inputs, i))


def rounded(ops):
    """Each ``block`` of elements through a correctly rounded kernel's fast
    path and rounding test (a vectorised loop storing the bracket's lower
    end, whose rounding is the result wherever the test is sure, and noting
    whether any element is unsure); in the rare block with one, the test
    again, its flags kept (vectorised), then the accurate path on the
    flagged elements: the kernel's bits either way.  Where the output is
    one of the inputs (``out=x``), the block's results go into scratch and
    out once it is settled, so that the inputs stay for the rare second
    pass; where the output overlaps an input otherwise, the kernel runs
    element by element."""
    opening()
    out = ops[-1]
    inputs = ops[:-1]
    n = out.size
    held = carray(hold(np.float32), block)
    flags = carray(hold(np.uint8), block)
    shared = overlaps(inputs, out)
    if shared == 2:
        # an input is the output shifted (NumPy's accumulate): element by
        # element, each read after the writes before it
        for i in range(np.uint64(n)):
            out[i] = kernel(*at(inputs, i))
        return
    apart = shared == 0
    for begin in range(0, n, block):
        start, stop = np.uint64(begin), np.uint64(min(n, begin + block))
        doubtful = False
        # two loops, not one writing through a slice of out or of the
        # scratch: Numba types that slice as non-contiguous, and the loop
        # stored element by element
        if apart:
            for i in range(start, stop):
                lo, hi = bracket(fast(*at(inputs, i)))
                out[i] = lo
                doubtful |= differ(lo, hi)
        else:
            for i in range(start, stop):
                lo, hi = bracket(fast(*at(inputs, i)))
                held[i - start] = lo
                doubtful |= differ(lo, hi)
        if doubtful:
            for i in range(start, stop):
                lo, hi = bracket(fast(*at(inputs, i)))
                flags[i - start] = np.uint8(differ(lo, hi))
            for i in range(start, stop):
                if flags[i - start]:
                    y = np.float32(accurate(*at(inputs, i)))
                    if apart:
                        out[i] = y
                    else:
                        held[i - start] = y
        if not apart:
            for i in range(start, stop):
                out[i] = held[i - start]


def staged(ops):
    """Each ``block`` of elements in two passes: the table entry of each
    element into float64 scratch (``look``: scalar loads, where one loop
    doing both would stay scalar, as LLVM's cost of a gather is high on
    CPUs whose gathers are slow), then ``finish(entry, a0, ...)``, the
    kernel's arithmetic, vectorised into scratch and copied out (in place
    too); ``kernel`` itself, element by element,
    where the output overlaps an input one element off (each element's
    inputs read after the writes before it)."""
    opening()
    out = ops[-1]
    inputs = ops[:-1]
    n = out.size
    if overlaps(inputs, out) == 2:
        for i in range(np.uint64(n)):
            out[i] = kernel(*at(inputs, i))
        return
    held = carray(hold(np.float64), block)
    # (the results into scratch, then out: where out is an input (out=dy),
    # LLVM's run-time overlap check would send a loop that reads the inputs
    # and writes out to its scalar version)
    results = carray(hold(out.dtype), block)
    for begin in range(0, n, block):
        start, stop = np.uint64(begin), np.uint64(min(n, begin + block))
        for i in range(start, stop):
            held[i - start] = look(*at(inputs, i))
        for i in range(start, stop):
            results[i - start] = finish(held[i - start], *at(inputs, i))
        for i in range(start, stop):
            out[i] = results[i - start]


def entries(stamp):
    """The C entry point of the element loops, closed over the source stamp
    (the cache key, :mod:`gelu_numba.targets.stamp`)."""
    def entry(n, addresses):
        """The element loop ``loop`` (inlined here) as a C function, ``void
        entry(intp n, intp *addresses)``: ``n`` elements of the ``count``
        operands at ``addresses[0]``, ... (the output last).  Compiled and
        cached on its own, it is what every ufunc loop calls, by the
        address NumPy hands it (:mod:`gelu_numba.targets.cpu.ufunc_loop`)."""
        stamp  # noqa: B018 (the cache key)
        loop(views(addresses, n, ty, count))
    return entry
