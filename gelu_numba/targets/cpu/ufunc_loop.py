"""The ufunc loop: NumPy's inner loop around any element loop.

One plain function, ``loop(args, dims, steps, data)`` (NumPy's
``PyUFuncGenericFunction``), bound for one element type, one number of
operands and one way of running a long unit-stride run (serial or
parallel) by :func:`gelu_numba.targets.cpu.bound.bound`, and compiled once for
every function of the catalog: the element loop it runs is the address in
the ufunc's ``data`` slot (an element loop's C entry point,
:func:`gelu_numba.targets.cpu.elements.entry`).  So the kernel is compiled
once, into its element loop, and no ufunc loop compiles or optimises it
again; the layouts below cost their compile once per element type.

The layouts:

* every operand unit-stride: the element loop on the whole run (``whole``:
  the parallel target splits a long one among threads);
* otherwise the element loop on blocks of ``block`` elements, an operand
  with unit stride as a view of its own memory, any other a row of one
  scratch block on the stack: a broadcast scalar (NumPy's zero step)
  filled once, a strided input gathered before each block, a strided
  output scattered after it (NumPy's iterator buffers the same way);
* only a call whose output overlaps an input other than element for
  element (``accumulate``, ``reduce``) runs the element loop one element
  at a time, in order.

Every layout runs the same element loop, so every layout gives the
contiguous call's bits (the gelu-numba repository's ``tests/test_layouts.py``).
"""

from numba import types

from gelu_numba.targets.cpu.intrinsics import address, apart, call, element, scratch
from gelu_numba.targets.cpu.operands import MOST

# (the names a loop binds: set by bound() in gelu_numba.targets.cpu.loops;
# rows: scratch(MOST * block), the stack block of a buffered call)
ty = size = count = block = whole = rows = None

#: the operands' addresses handed to the element loop, on the stack
addresses = scratch(MOST)
intp = types.intp


def ufunc_loop(stamp):
    """The ufunc loop, closed over the source stamp (the cache key,
    :mod:`gelu_numba.targets.stamp`)."""
    def loop(args, dims, steps, data):
        stamp  # noqa: B018 (the cache key)
        n = dims[0]
        function = address(data)
        here = addresses(intp)
        nin = count - 1
        unit = True
        for k in range(count):
            unit = unit and steps[k] == size
        if unit:
            for k in range(count):
                here[k] = address(args[k])
            whole(function, n, here)
            return
        separate = steps[nin] != 0
        for k in range(nin):
            separate = separate and apart(args[k], steps[k], args[nin], steps[nin], n, size)
        if not separate:
            for i in range(n):
                for k in range(count):
                    here[k] = address(args[k]) + i * steps[k]
                call(function, 1, here)
            return
        buffered = rows(ty)
        for k in range(nin):
            if steps[k] == 0:
                value = element(args[k], 0, ty)[0]
                for j in range(min(n, block)):
                    buffered[k * block + j] = value
        for start in range(0, n, block):
            m = min(block, n - start)
            for k in range(count):
                step = steps[k]
                if step == size:
                    here[k] = address(args[k]) + start * size
                else:
                    if k < nin and step != 0:
                        for j in range(m):
                            buffered[k * block + j] = element(args[k], (start + j) * step,
                                                              ty)[0]
                    here[k] = address(buffered) + k * block * size
            call(function, m, here)
            step = steps[nin]
            if step != size:
                for j in range(m):
                    element(args[nin], (start + j) * step, ty)[0] = buffered[nin * block + j]
    return loop
