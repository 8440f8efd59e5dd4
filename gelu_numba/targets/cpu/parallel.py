"""Parallel target: the CPU loop, with long unit-stride runs split among threads.

The loop is the CPU target's (:mod:`gelu_numba.targets.cpu`: its ufunc
loop, run on the serial ufunc's own compiled element loop, so results are
bit-identical), except that a unit-stride run of at least
:data:`THRESHOLD` elements goes to an ``@njit(parallel=True)`` function:
a ``prange`` over blocks of :data:`BLOCK` elements, each block the
element loop.  Shorter runs, and strided or broadcast operands (the
buffered blocks), stay on the calling thread: never slower than the
serial ufunc there.  Nothing here compiles a kernel: the runner and the
ufunc loop are compiled once per element type and arity, for every
function.

Threads: Numba's threading layer, whichever Numba selects (``tbb``, then
``omp``, then ``workqueue``, or ``NUMBA_THREADING_LAYER``); importing this
module does not choose one.  With ``tbb`` and ``omp``, calls from several
Python threads at once are safe; ``workqueue`` does not support them
(Numba aborts the process), see docs/guide/functions.md.

Floating-point flags: NumPy reads the calling thread's flags after the loop;
on x86-64 each block's SSE status flags (MXCSR) are collected and raised on
the calling thread, so ``np.errstate`` sees what the workers raised, as for
the serial ufunc.  On other architectures only the calling thread's blocks
report flags.
"""

import functools
import platform

import numpy as np
from llvmlite import ir
from numba import get_num_threads, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from gelu_numba.targets import cpu
from gelu_numba.targets.cpu.bound import bound
from gelu_numba.targets.cpu.intrinsics import call
# (the ufunc loop's stack block of operand addresses, and its type)
from gelu_numba.targets.cpu.ufunc_loop import addresses as on_stack, intp
from gelu_numba.targets.stamp import STAMP

#: elements per block of the parallel loop, by loop dtype (about 0.025 ms
#: of work: the float64 kernels take about ten times longer per element)
BLOCK = {"f": 16384, "d": 4096}
#: unit-stride runs from this many elements (four blocks) go parallel: below
#: it, a thread launch costs more than it saves (measured in docs/guide/functions.md with
#: ``python -m benchmarks.targets`` in the gelu-numba repository)
THRESHOLD = {char: 4 * block for char, block in BLOCK.items()}

_X86 = platform.machine().lower() in ("x86_64", "amd64")
_STATUS_BITS = 0x3F  # MXCSR exception flags: IE DE ZE OE UE PE


def _mxcsr_call(builder, name, ptr):
    fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()])
    fn = cgutils.get_or_insert_function(builder.module, fnty, name)
    builder.call(fn, [builder.bitcast(ptr, ir.IntType(8).as_pointer())])


@intrinsic
def _read_mxcsr(typingctx):
    def codegen(context, builder, sig, args):
        ptr = cgutils.alloca_once(builder, ir.IntType(32))
        _mxcsr_call(builder, "llvm.x86.sse.stmxcsr", ptr)
        return builder.load(ptr)
    return types.uint32(), codegen


@intrinsic
def _write_mxcsr(typingctx, value):
    def codegen(context, builder, sig, args):
        ptr = cgutils.alloca_once(builder, ir.IntType(32))
        builder.store(args[0], ptr)
        _mxcsr_call(builder, "llvm.x86.sse.ldmxcsr", ptr)
        return context.get_dummy_value()
    return types.void(types.uint32), codegen


_MASK = np.uint32(_STATUS_BITS)
_KEEP = np.uint32(~_STATUS_BITS & 0xFFFFFFFF)

# (the names the block runner binds for one element type and arity: set
# by _ufunc_loop)
block = size = count = blocks = threshold = None


def _runner(stamp):
    def blocks(function, addresses, n):
        """The element loop at ``function`` on each ``block`` of the ``n``
        elements of the ``count`` operands at ``addresses``, the blocks
        among the threads; the blocks' floating-point flags raised on the
        caller."""
        stamp  # noqa: B018 (the cache key, gelu_numba.targets.stamp)
        nblocks = (n + block - 1) // block
        status = np.zeros(nblocks, np.uint32)
        # (the calling thread's earlier flags, which its blocks clear)
        raised = _read_mxcsr() & _MASK if _X86 else np.uint32(0)
        for b in prange(nblocks):
            if _X86:
                _write_mxcsr(_read_mxcsr() & _KEEP)
            start = b * block
            here = on_stack(intp)
            for k in range(count):
                here[k] = addresses[k] + start * size
            call(function, min(n, start + block) - start, here)
            if _X86:
                status[b] = _read_mxcsr() & _MASK
        if _X86:
            for b in range(nblocks):
                raised |= status[b]
            _write_mxcsr(_read_mxcsr() | raised)
    return blocks


def _whole(function, n, here):
    # (the ufunc loop's unit-stride run: its addresses, the unused ones 0)
    if n >= threshold:
        blocks(function, (here[0], here[1] if count > 1 else 0,
                          here[2] if count > 2 else 0, here[3] if count > 3 else 0), n)
    else:
        call(function, n, here)


_BLOCKS = _runner(STAMP)


@functools.cache
def _ufunc_loop(char, count):
    """The parallel ufunc loop of ``count`` operands of dtype ``char``: the
    CPU target's, its long unit-stride runs given to the block runner."""
    ty = cpu.NUMBA_TYPES[char]
    runner = njit(parallel=True, cache=True, error_model="numpy")(bound(
        _BLOCKS, f"blocks_{count}_{ty}", block=BLOCK[char], size=cpu.ITEMSIZE[char],
        count=count))
    whole = njit(inline="always", error_model="numpy")(bound(
        _whole, f"whole_{count}_{ty}", threshold=THRESHOLD[char], blocks=runner,
        count=count))
    return cpu.ufunc_loop(char, count, whole, "_parallel", (runner,))


def loop(fn, char):
    """The :class:`~gelu_numba.targets.cpu.loops.Loop` of ``fn`` for dtype
    ``char``, parallel for long unit-stride runs: the serial ufunc's
    element loop (compiled, or loaded from the cache, by the serial
    registry) under the parallel ufunc loop."""
    # the parallel code links against the threading layer's scheduler,
    # which exists once Numba has launched its threads (a loop loaded from
    # the cache does not launch them: "Symbol not found: allocate_sched")
    get_num_threads()
    return cpu.Loop(_ufunc_loop(char, fn.nin + 1), cpu.REGISTRY.compile(fn, char).inner)


REGISTRY = cpu.Registry(__name__, loop)


def __getattr__(name):
    return REGISTRY.attribute(name)
