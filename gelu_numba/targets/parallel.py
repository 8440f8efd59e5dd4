"""Parallel target: the CPU loop, with long unit-stride runs split among threads.

The loop is the CPU target's (:mod:`gelu_numba.targets.cpu`, the same
inlined kernel, so results are bit-identical), except that a unit-stride run
of at least :data:`THRESHOLD` elements goes to an ``@njit(parallel=True)``
function: a ``prange`` over blocks of :data:`BLOCK` elements, each block
the vectorised serial loop.  Shorter runs, and strided or broadcast
operands (the serial loop's buffered blocks), stay on the calling thread:
never slower than the serial ufunc there.

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

import platform

import numpy as np
from llvmlite import ir
from numba import get_num_threads, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from gelu_numba import catalog
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import cpu, dtypes
from gelu_numba.targets.bound import bound
from gelu_numba.targets.operands import window
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

# (the names the block runner binds for one loop: set by _blocks)
serial = block = None


def _runner(stamp):
    def blocks(*ops):
        """``serial`` on each ``block`` of elements, the blocks among the
        threads; the blocks' floating-point flags raised on the caller."""
        stamp  # noqa: B018 (the cache key, gelu_numba.targets.stamp)
        n = ops[-1].size
        nblocks = (n + block - 1) // block
        status = np.zeros(nblocks, np.uint32)
        # (the calling thread's earlier flags, which its blocks clear)
        raised = _read_mxcsr() & _MASK if _X86 else np.uint32(0)
        for b in prange(nblocks):
            if _X86:
                _write_mxcsr(_read_mxcsr() & _KEEP)
            start = b * block
            serial(*window(ops, start, min(n, start + block)))
            if _X86:
                status[b] = _read_mxcsr() & _MASK
        if _X86:
            for b in range(nblocks):
                raised |= status[b]
            _write_mxcsr(_read_mxcsr() | raised)
    return blocks


_BLOCKS = _runner(STAMP)


def _blocks(fn, char, cache):
    """The ``@njit(parallel=True)`` block runner of ``fn``'s ``char`` loop."""
    stem = f"{fn.name}_{dtypes.LOOP_DTYPES[char]}"
    # each block is the serial loop as a function of its own: LLVM vectorises
    # it as in the serial ufunc (inlined into the parfor body, the float32
    # loop ran at half that speed)
    runner = bound(_BLOCKS, f"{stem}_blocks", block=BLOCK[char],
                   serial=cpu.element_loop(fn, char, f"{stem}_block"))
    return njit(parallel=True, cache=cache, error_model="numpy")(runner)


def loop(fn, char, cache=True):
    """The ``@cfunc`` loop of ``fn`` for dtype ``char``, parallel for long
    unit-stride runs, cached on disk (a record of the catalog's own:
    :func:`~gelu_numba.catalog.listed`)."""
    cache = cache and catalog.listed(fn)
    # the parallel code links against the threading layer's scheduler,
    # which exists once Numba has launched its threads (a loop loaded from
    # the cache does not launch them: "Symbol not found: allocate_sched")
    get_num_threads()
    blocks = _blocks(fn, char, cache)
    py = cpu.loop_function(inline(fn.kernel(char)), char, fn.nin,
                           f"{fn.name}_{dtypes.LOOP_DTYPES[char]}_parallel",
                           blocks=blocks, threshold=THRESHOLD[char],
                           ordinary=cpu.ordinary_form(fn, char), interleave=True)
    return cpu.compile_loop(py, cache, also=[blocks] if cache else [])


REGISTRY = cpu.Registry(__name__, loop)
#: the public ufunc of a catalog record (the factory of gelu_numba.targets.publish)
ufunc = REGISTRY.public


def __getattr__(name):
    return REGISTRY.attribute(name)
