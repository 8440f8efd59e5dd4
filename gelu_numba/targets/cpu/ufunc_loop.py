"""The ufunc loop: NumPy's inner loop ``loop(args, dims, steps, data)``
around an element loop (:mod:`gelu_numba.targets.cpu.elements`), for every
layout NumPy hands it.

Every operand unit-stride: the element loop (``serial``) over the whole run,
the operands as views of their memory (the parallel target hands runs of at
least ``threshold`` elements to ``blocks``).  Otherwise the same element
loop on blocks of ``block`` elements: an operand with unit stride as a view
of its own memory and any other as a row of a scratch block on the stack, a
broadcast input (NumPy's zero step) filled once, a strided input gathered
before each block, a strided output scattered after it (NumPy's iterator
buffers the same way).  Only a call whose output overlaps an input other
than element for element (accumulate, reduce) runs the element loop one
element at a time, in order.  The same kernel on every path, so every
layout gives the contiguous call's bits.

``serial`` is a function of its own (not inlined): one compiled copy of the
kernel serves every path, and its vector loop keeps its constants in
registers and stack slots (inlined under the block loop, LLVM rebuilt many
of them from immediates in every iteration, and the loop ran slower: count
its instructions with ``benchmarks.anatomy.vector_loop``).

One function for any number of operands: the names it reads are bound for
one loop by :func:`gelu_numba.targets.bound.bound`
(:func:`gelu_numba.targets.cpu.loops.loop_function`), ``operands`` being
the tuple of operand indices ``(0, ..., nin)`` whose length the tuple
builders of :mod:`gelu_numba.targets.operands` read from its type.  The
loop closes over the source stamp alone, the key of Numba's cache
(:mod:`gelu_numba.targets.stamp`).
"""

from numba import carray, njit

from gelu_numba.targets.cpu.intrinsics import apart, element
from gelu_numba.targets.operands import each

# (the names the loop binds: set for one loop by loops.loop_function)
ty = size = block = buffer = serial = blocks = threshold = operands = None


@njit(inline="always")
def _memory(k, p):
    """Operand ``k``'s ``n`` elements, unit stride."""
    args, n, ty = p
    return carray(element(args[k], 0, ty), n)


@njit(inline="always")
def _one(k, p):
    """Operand ``k``'s element ``i``."""
    args, steps, i, ty = p
    return carray(element(args[k], i * steps[k], ty), 1)


@njit(inline="always")
def _row(scratch, k, rows, ty, size):
    """Row ``k`` of the scratch block (``rows`` elements a row)."""
    return element(scratch, k * rows * size, ty)


@njit(inline="always")
def _block(k, p):
    """Operand ``k``'s ``m`` elements from ``start``: its memory where it
    has unit stride, else its scratch row."""
    args, steps, scratch, start, m, rows, ty, size = p
    if steps[k] == size:
        return carray(element(args[k], start * size, ty), m)
    return carray(_row(scratch, k, rows, ty, size), m)


def stamped(stamp):
    """The ufunc loop, closed over ``stamp`` (the source stamp: Numba's
    cache key)."""
    def loop(args, dims, steps, data):
        stamp  # noqa: B018 (the cache key, gelu_numba.targets.stamp)
        n = dims[0]
        nin = len(operands) - 1
        unit = True
        for k in range(nin + 1):
            unit = unit and steps[k] == size
        if unit:
            ops = each(_memory, operands, (args, n, ty))
            if n >= threshold:
                blocks(*ops)
            else:
                serial(*ops)
            return
        out, s_out = args[nin], steps[nin]
        ahead = s_out != 0
        for k in range(nin):
            ahead = ahead and apart(args[k], steps[k], out, s_out, n, size)
        if not ahead:
            for i in range(n):
                serial(*each(_one, operands, (args, steps, i, ty)))
            return
        scratch = buffer(ty)
        for k in range(nin):
            if steps[k] == 0:
                row, value = _row(scratch, k, block, ty, size), element(args[k], 0, ty)[0]
                for j in range(min(n, block)):
                    row[j] = value
        for start in range(0, n, block):
            m = min(block, n - start)
            for k in range(nin):
                if steps[k] != size and steps[k] != 0:
                    row = _row(scratch, k, block, ty, size)
                    for j in range(m):
                        row[j] = element(args[k], (start + j) * steps[k], ty)[0]
            serial(*each(_block, operands, (args, steps, scratch, start, m, block, ty, size)))
            if s_out != size:
                row = _row(scratch, nin, block, ty, size)
                for j in range(m):
                    element(out, (start + j) * s_out, ty)[0] = row[j]
    return loop
