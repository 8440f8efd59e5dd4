"""The XLA FFI handler of :mod:`gelu_numba.jax` on the CPU: one compiled
``@cfunc`` that runs the NumPy ufuncs' own inner loops on XLA's buffers.

XLA calls the FFI target :data:`TARGET` with the call frame of one
``custom_call``: the operands, one result and one string attribute,
``function``, the catalog name.  The handler

1. answers XLA's metadata query (at registration) with FFI API 0.3;
2. checks the frame (its size and stage, the API's major version, one
   string attribute, the number of operands, buffers of one dtype, each
   of the result's element count or of one element, which the loop reads
   with step 0 as NumPy broadcasts) and returns an FFI error naming what
   is wrong, never reading past what it checked;
3. finds the function's row in :data:`TABLE` by the 64-bit FNV-1a hash of
   the name, and in it the address of the loop for the dtype (float32,
   float64, float16, or bfloat16 on its bits) and the data the loop takes
   (its element loop's address: :class:`gelu_numba.targets.cpu.loops.Loop`);
4. asks Linux for 2 MiB pages on an output of 4 MiB or more (XLA maps a
   fresh buffer for each call, and each 4 KiB page would fault on the
   loop's first write);
5. clears the flush-to-zero and denormals-are-zero bits of MXCSR, which XLA's
   CPU threads set, runs the loop over the contiguous buffers, and restores
   them.  The results are the ufunc's bits, subnormal ones included.
   From ``2 * PARALLEL_CHUNK`` elements on, the call is split into chunks
   across XLA's intra-op thread pool (``XLA_FFI_ThreadPool_Schedule``, as
   many chunks as the pool has threads): the tasks and the calling thread
   claim chunks with an atomic counter until none is left, and the calling
   thread returns when every chunk is done.  A busy pool only leaves more
   chunks to the calling thread; nothing waits on a task that has not
   started (its shared state is freed by its last user).  The loop's bits
   do not depend on where a chunk starts, so the split changes no result.

The loops are the ones the ufuncs run (:mod:`gelu_numba.targets.cpu`,
:mod:`gelu_numba.targets.cpu.half_loops`), compiled on first use: the handler finds
a zero in a row's slot only for a loop not used yet in this process (a program
deserialized by ``jax.export``, say), and then calls :func:`_ensure`, a
:mod:`ctypes` callback, once (it takes the GIL, compiles the loop and fills
the slot).  Every later call runs machine code only.

The handler is compiled (or loaded from Numba's on-disk cache) when
:mod:`gelu_numba.jax` is imported.  It holds no address of this process:
it reads its table's and callback's from a module global of its own code
(:func:`gelu_numba.internals.xla_ffi.state`), written after loading.
"""

import ctypes
import functools
import threading

import numpy as np
from numba import cfunc, njit, types

from gelu_numba import catalog
from gelu_numba.internals import xla_ffi as ffi
from gelu_numba.internals import numba_core
from gelu_numba.internals.xla_ffi import (
    atomic_add, atomic_load, call_int1, call_int2, call_loop, call_madvise, create_error, load,
    spin_pause, stack, state, store, text,
)
from gelu_numba.targets import dtypes
from gelu_numba.targets.cpu import half_loops as half_target
from gelu_numba.targets.stamp import STAMP

#: the FFI target's name (one for every function: the ``function``
#: attribute names it)
TARGET = "gelu_numba"

#: the catalog's functions the handler serves from the start: every function
#: of the top-level module and of the approximations, in catalog order (a
#: record added later by :func:`gelu_numba.catalog.registered` gets a row
#: on its first use: :func:`serves`)
FUNCTIONS = tuple(dict.fromkeys(f.name for m in (catalog.TOP, catalog.APPROX)
                                for f in catalog.published(m)))
#: rows the table keeps for records registered after import
SPARE_ROWS = 64
# the loops of a row, in the handler's slot order (float32, float64,
# float16, bfloat16; b: on its bits, the uint16 loops of cpu.half_loops)
_CHARS = "".join(dtypes.CHARS.values())
# a row: name hash, nin, the four loop addresses, then their four data
_SLOTS = len(_CHARS)
_ROW = 2 + 2 * _SLOTS


def fnv1a(name):
    """The 64-bit FNV-1a hash of the ASCII ``name``, as a signed int64."""
    h = 0xCBF29CE484222325
    for byte in name.encode("ascii"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h - (1 << 64) if h >= 1 << 63 else h


#: name hash, nin, the loop addresses (0: not compiled yet) and their data
#: of each function; the handler reads its first rows (the count in its
#: state), :func:`loop_address` writes it.  Allocated once: the handler
#: holds its address.
TABLE = np.zeros((len(FUNCTIONS) + SPARE_ROWS, _ROW), dtype=np.int64)
_LOCK = threading.RLock()
# row -> the record it serves; the handler's state words, once compiled
_RECORDS = []
_STATE = []


def serves(name):
    """Whether the handler runs ``name``: a record of the catalog (its own
    or one registered since) published by ``gelu_numba`` or
    ``gelu_numba.approximations``."""
    try:
        fn = catalog.lookup(name)
    except KeyError:
        return False
    return catalog.TOP in fn.modules or catalog.APPROX in fn.modules


def _row(name):
    """``name``'s row of :data:`TABLE`, written now if it has none.  A row
    whose name now names another record (registered again) starts afresh:
    its loops are that record's."""
    with _LOCK:
        fn = catalog.lookup(name)
        for row, served in enumerate(_RECORDS):
            if served.name == name:
                if served is not fn:
                    TABLE[row, 2:] = 0
                    _RECORDS[row] = fn
                return row
        if not serves(name):
            raise KeyError(f"gelu_numba.jax: {name} is not a function of gelu_numba or "
                           "gelu_numba.approximations")
        row = len(_RECORDS)
        if row == len(TABLE):
            raise RuntimeError(f"gelu_numba.jax: the handler's table is full (it keeps "
                               f"{SPARE_ROWS} rows for registered records)")
        h = fnv1a(name)
        if h in TABLE[:row, 0]:
            raise RuntimeError(f"gelu_numba.jax: {name} has the hash of another function")
        TABLE[row, :2] = h, fn.nin
        _RECORDS.append(fn)
        if _STATE:
            _STATE[0][1] = row + 1   # (the row is written: the handler may read it)
        return row


for _name in FUNCTIONS:
    _row(_name)

# Linux's transparent huge pages: their size on x86-64, madvise's advice
# asking for them, and the output size from which the handler asks
HUGE_PAGE, MADV_HUGEPAGE, HUGE_OUTPUT = 1 << 21, 14, 1 << 22


def _libc(name):
    """The address of libc's ``name`` (0 where there is none: the handler
    then skips what needs it)."""
    try:
        return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value or 0
    except (OSError, AttributeError):
        return 0


def has_loop(name, char):
    """Whether ``name`` has a loop for ``char`` ("f", "d", "e" float16,
    "b" bfloat16): float32 and float64 always, the 2-byte formats for the
    functions whose catalog record has ``half``."""
    return char in "fd" or catalog.lookup(name).half


def _compile(name, char):
    from gelu_numba.targets import cpu
    if char == "b":
        return half_target.bfloat16_loops(f"{name}_bfloat16").compile(0)
    return cpu.REGISTRY.compile(catalog.lookup(name), char)


def loop_address(name, char):
    """The address of ``name``'s ``char`` loop, compiled (or loaded from
    Numba's cache) and written into :data:`TABLE` with its data now if it
    was not."""
    slot = 2 + _CHARS.index(char)
    with _LOCK:
        row = _row(name)
        if TABLE[row, slot] == 0:
            loop = _compile(name, char)
            # (the data first: a handler that reads the address reads both)
            TABLE[row, slot + _SLOTS] = loop.data
            TABLE[row, slot] = loop.address
        return int(TABLE[row, slot])


_ENSURE_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)


@_ENSURE_TYPE
def _ensure(row, slot):
    # the handler's cold path: 0 (an FFI error) where the loop cannot be had
    try:
        name, char = _RECORDS[row].name, _CHARS[slot]
        return loop_address(name, char) if has_loop(name, char) else 0
    except BaseException:  # noqa: BLE001 (nothing may leave a C callback)
        return 0


@njit(inline="always")
def _hash(pointer, length):
    h = np.uint64(0xCBF29CE484222325)
    for k in range(length):
        h = (h ^ np.uint64(load(pointer + k, types.uint8))) * np.uint64(0x100000001B3)
    return np.int64(h)


@njit(inline="always")
def _count(buffer):
    rank = load(buffer + ffi.BUFFER_RANK, types.int64)
    dims = load(buffer + ffi.BUFFER_DIMS, types.int64)
    n = 1
    for k in range(rank):
        n *= load(dims + 8 * k, types.int64)
    return n


@njit(inline="always")
def _run(loop, data, a0, a1, a2, out, n, nin, itemsize, scalars):
    if nin == 1:
        call_loop(loop, data, a0, out, 0, 0, n, 2, itemsize, scalars)
    elif nin == 2:
        call_loop(loop, data, a0, a1, out, 0, n, 3, itemsize, scalars)
    else:
        call_loop(loop, data, a0, a1, a2, out, n, 4, itemsize, scalars)


@njit(inline="always")
def _at(address, offset, k, scalars):
    """Operand k's address at element offset ``offset`` (in bytes): a
    one-element operand (bit k of ``scalars``) stays where it is."""
    return address if (scalars >> k) & 1 else address + offset


# The shared state of a call split across XLA's thread pool (int64 words,
# malloc'd: a task may start after the handler has returned, so it cannot
# live on the handler's stack): the loop, the operands and the output, n,
# nin, itemsize, the number of chunks and their length, the next chunk to
# claim, the chunks done, the references left (the handler's and each
# task's; the last frees it), libc's free, the one-element operands' bit
# mask and the loop's data.
_LOOP, _A0, _A1, _A2, _OUT, _N, _NIN, _ITEM = 0, 8, 16, 24, 32, 40, 48, 56
_CHUNKS, _CHUNK, _NEXT, _DONE, _REFS, _FREE, _SCALARS, _DATA = 64, 72, 80, 88, 96, 104, 112, 120
_SHARED_BYTES = 128


@njit(inline="always")
def _work(shared):
    """Claim chunks and run the loop on them until none is left, with
    flush-to-zero and denormals-are-zero cleared (and restored)."""
    saved = ffi.mxcsr()
    ffi.set_mxcsr(saved & ~ffi.FLUSH_BITS)
    n, itemsize = load(shared + _N, types.int64), load(shared + _ITEM, types.int64)
    chunks, length = load(shared + _CHUNKS, types.int64), load(shared + _CHUNK, types.int64)
    nin = load(shared + _NIN, types.int64)
    scalars = load(shared + _SCALARS, types.int64)
    while True:
        c = atomic_add(shared + _NEXT, 1)
        if c >= chunks:
            break
        start = c * length
        offset = start * itemsize
        a1 = load(shared + _A1, types.int64)
        a2 = load(shared + _A2, types.int64)
        a0 = load(shared + _A0, types.int64)
        _run(load(shared + _LOOP, types.int64), load(shared + _DATA, types.int64),
             _at(a0, offset, 0, scalars),
             _at(a1, offset, 1, scalars) if nin > 1 else 0,
             _at(a2, offset, 2, scalars) if nin > 2 else 0,
             load(shared + _OUT, types.int64) + offset, min(length, n - start), nin, itemsize,
             scalars)
        atomic_add(shared + _DONE, 1)
    ffi.set_mxcsr(saved)


@njit(inline="always")
def _release(shared):
    if atomic_add(shared + _REFS, -1) == 1:
        call_int1(load(shared + _FREE, types.int64), shared)


@njit(inline="always")
def _destroy(api, error):
    args = stack(3)
    store(args, np.int64(ffi.ERROR_DESTROY_ARGS_SIZE))
    store(args + 8, np.int64(0))
    store(args + 16, error)
    call_int1(load(api + ffi.API_ERROR_DESTROY, types.int64), args)


@njit(inline="always")
def _pool_threads(api, ctx):
    """The threads of XLA's intra-op pool for this call (0 without one)."""
    args = stack(4)
    count = stack(1)
    store(args, np.int64(ffi.NUM_THREADS_ARGS_SIZE))
    store(args + 8, np.int64(0))
    store(args + 16, ctx)
    store(args + 24, count)
    error = call_int1(load(api + ffi.API_THREADPOOL_NUM_THREADS, types.int64), args)
    if error != 0:
        _destroy(api, error)
        return 0
    return load(count, types.int64)


def _task_source(stamp):
    """The task XLA's pool runs (``void task(void *shared)``)."""
    def task(shared):
        stamp  # noqa: B018 (the cache key, gelu_numba.targets.stamp)
        _work(shared)
        _release(shared)
    return task


#: the smallest chunk of a call split across XLA's thread pool, in
#: elements: below it a task's dispatch would cost more than it saves
PARALLEL_CHUNK = 1 << 16
#: pause instructions the handler spins before it yields its core while a
#: chunk runs on another thread (a few microseconds)
SPINS = 1 << 12


def _handler_source(stamp):
    """The handler (its table, row count, callback, the task and the libc
    functions it calls: :func:`state`)."""
    row_bytes = 8 * _ROW
    invalid = ffi.ERROR_INVALID_ARGUMENT

    def handler(frame):
        stamp  # noqa: B018 (the cache key, gelu_numba.targets.stamp)
        table, rows, ensure, madvise = state(0), state(1), state(2), state(3)
        task, malloc, free, yield_ = state(4), state(5), state(6), state(7)
        api = load(frame + ffi.FRAME_API, types.int64)
        if load(frame + ffi.FRAME_SIZE, types.int64) < ffi.FRAME_STRUCT_SIZE:
            return create_error(api, invalid, text(
                "gelu_numba: the XLA_FFI_CallFrame is smaller than FFI API 0.3's"))
        if load(api + ffi.API_VERSION_MAJOR, types.int32) != ffi.API_MAJOR:
            return create_error(api, invalid, text(
                "gelu_numba: XLA's FFI API major version is not 0"))
        extension = load(frame + ffi.FRAME_EXTENSION, types.int64)
        if extension != 0 and load(extension + ffi.EXTENSION_TYPE, types.int32) == ffi.EXTENSION_METADATA:
            meta = load(extension + ffi.METADATA, types.int64)
            store(meta + ffi.META_VERSION_SIZE, np.int64(ffi.VERSION_STRUCT_SIZE))
            store(meta + ffi.META_VERSION_EXTENSION, np.int64(0))
            store(meta + ffi.META_MAJOR, np.int32(ffi.API_MAJOR))
            store(meta + ffi.META_MINOR, np.int32(ffi.API_MINOR))
            store(meta + ffi.META_TRAITS, np.uint32(0))
            if load(meta, types.int64) >= ffi.META_STATE_TYPE + 8:
                store(meta + ffi.META_STATE_TYPE, np.int64(0))
            return 0
        if load(frame + ffi.FRAME_STAGE, types.int32) != ffi.STAGE_EXECUTE:
            return create_error(api, invalid, text(
                "gelu_numba: called at an execution stage other than execute"))
        if (load(frame + ffi.ATTRS_SIZE, types.int64) != 1
                or load(load(frame + ffi.ATTRS_TYPES, types.int64), types.int32) != ffi.ATTR_STRING):
            return create_error(api, invalid, text(
                "gelu_numba: expected one attribute, the string 'function'"))
        span = load(load(frame + ffi.ATTRS, types.int64), types.int64)
        h = _hash(load(span, types.int64), load(span + 8, types.int64))
        row = -1
        for r in range(rows):
            if load(table + r * row_bytes, types.int64) == h:
                row = r
                break
        if row < 0:
            return create_error(api, invalid, text(
                "gelu_numba: unknown function (not one of gelu_numba's or its "
                "approximations')"))
        base = table + row * row_bytes
        nin = load(base + 8, types.int64)
        if load(frame + ffi.ARGS_SIZE, types.int64) != nin or load(frame + ffi.RETS_SIZE, types.int64) != 1:
            return create_error(api, invalid, text(
                "gelu_numba: wrong number of operands or results for the function"))
        if load(load(frame + ffi.RETS_TYPES, types.int64), types.int32) != ffi.RET_BUFFER:
            return create_error(api, invalid, text("gelu_numba: the result is not a buffer"))
        result = load(load(frame + ffi.RETS, types.int64), types.int64)
        dtype = load(result + ffi.BUFFER_DTYPE, types.int32)
        if dtype == ffi.F32:
            slot, itemsize = 0, 4
        elif dtype == ffi.F64:
            slot, itemsize = 1, 8
        elif dtype == ffi.F16:
            slot, itemsize = 2, 2
        elif dtype == ffi.BF16:
            slot, itemsize = 3, 2
        else:
            return create_error(api, invalid, text(
                "gelu_numba: supports float16, bfloat16, float32 and float64 buffers"))
        n = _count(result)
        operands = load(frame + ffi.ARGS, types.int64)
        kinds = load(frame + ffi.ARGS_TYPES, types.int64)
        a0 = a1 = a2 = 0
        scalars = 0
        for k in range(nin):
            if load(kinds + 4 * k, types.int32) != ffi.ARG_BUFFER:
                return create_error(api, invalid, text("gelu_numba: an operand is not a buffer"))
            buffer = load(operands + 8 * k, types.int64)
            count = _count(buffer)
            if count == 1 and n != 1:
                scalars |= 1 << k   # one element, broadcast (step 0)
            elif count != n:
                return create_error(api, invalid, text(
                    "gelu_numba: an operand has neither the result's size nor one element"))
            if load(buffer + ffi.BUFFER_DTYPE, types.int32) != dtype:
                return create_error(api, invalid, text(
                    "gelu_numba: the operands and the result differ in dtype"))
            data = load(buffer + ffi.BUFFER_DATA, types.int64)
            if k == 0:
                a0 = data
            elif k == 1:
                a1 = data
            else:
                a2 = data
        out = load(result + ffi.BUFFER_DATA, types.int64)
        loop = load(base + 16 + 8 * slot, types.int64)
        if loop == 0:
            loop = call_int2(ensure, row, slot)
            if loop == 0:
                return create_error(api, invalid, text(
                    "gelu_numba: no loop of the function for the dtype, or it failed to compile"))
        inner = load(base + 16 + 8 * (slot + _SLOTS), types.int64)
        if madvise != 0 and n * itemsize >= HUGE_OUTPUT:
            # 2 MiB pages for the part of a large output that spans whole
            # ones: a few faults instead of one per 4 KiB page as the loop
            # first writes XLA's freshly mapped buffer (what NumPy does for
            # its own large arrays); a hint, its result ignored
            start = (out + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
            end = (out + n * itemsize) & ~(HUGE_PAGE - 1)
            if end > start:
                call_madvise(madvise, start, end - start, MADV_HUGEPAGE)
        threads = 0
        if n >= 2 * PARALLEL_CHUNK and task != 0 and malloc != 0:
            threads = _pool_threads(api, load(frame + ffi.FRAME_CTX, types.int64))
        chunks = min(threads, n // PARALLEL_CHUNK)
        shared = call_int1(malloc, _SHARED_BYTES) if chunks > 1 else 0
        if shared == 0:
            if n > 0:
                saved = ffi.mxcsr()
                ffi.set_mxcsr(saved & ~ffi.FLUSH_BITS)
                _run(loop, inner, a0, a1, a2, out, n, nin, itemsize, scalars)
                ffi.set_mxcsr(saved)
            return 0
        # split across XLA's intra-op pool: chunks - 1 tasks and this
        # thread claim chunks until none is left, so that a busy pool only
        # leaves more of them to this thread
        store(shared + _LOOP, np.int64(loop))
        store(shared + _DATA, np.int64(inner))
        store(shared + _A0, np.int64(a0))
        store(shared + _A1, np.int64(a1))
        store(shared + _A2, np.int64(a2))
        store(shared + _OUT, np.int64(out))
        store(shared + _N, np.int64(n))
        store(shared + _NIN, np.int64(nin))
        store(shared + _ITEM, np.int64(itemsize))
        store(shared + _CHUNKS, np.int64(chunks))
        store(shared + _CHUNK, np.int64((n + chunks - 1) // chunks))
        store(shared + _NEXT, np.int64(0))
        store(shared + _DONE, np.int64(0))
        store(shared + _REFS, np.int64(chunks))
        store(shared + _FREE, np.int64(free))
        store(shared + _SCALARS, np.int64(scalars))
        ctx = load(frame + ffi.FRAME_CTX, types.int64)
        args = stack(5)
        for _ in range(chunks - 1):
            store(args, np.int64(ffi.SCHEDULE_ARGS_SIZE))
            store(args + 8, np.int64(0))
            store(args + 16, ctx)
            store(args + 24, task)
            store(args + 32, shared)
            error = call_int1(load(api + ffi.API_THREADPOOL_SCHEDULE, types.int64), args)
            if error != 0:
                _destroy(api, error)
                _release(shared)   # (that task's reference)
        _work(shared)
        spins = 0
        while atomic_load(shared + _DONE) < chunks:
            # a chunk still runs on a pool thread: spin briefly, then give
            # the core away (that thread may be waiting for this one's core)
            spins += 1
            if spins < SPINS or yield_ == 0:
                spin_pause()
            else:
                call_int1(yield_, 0)
        _release(shared)
        return 0

    return handler


@functools.cache
def handler():
    """The compiled handler (a ``cfunc``; ``address`` is its entry point),
    compiled or loaded from Numba's cache, its state written."""
    task_py = _task_source(STAMP)
    task = numba_core.compile_repairing(
        lambda: cfunc(types.void(types.int64), cache=True)(task_py), [task_py],
        "the XLA FFI task")
    py = _handler_source(STAMP)
    compiled = numba_core.compile_repairing(
        lambda: cfunc(types.int64(types.int64), cache=True)(py), [py], "the XLA FFI handler")
    _KEEP.append(task)
    words = (ctypes.c_int64 * ffi.STATE_WORDS).from_address(
        numba_core.global_address(compiled, ffi.STATE))
    with _LOCK:
        words[:8] = (TABLE.ctypes.data, len(_RECORDS),
                     ctypes.cast(_ensure, ctypes.c_void_p).value, _libc("madvise"),
                     task.address, _libc("malloc"), _libc("free"), _libc("sched_yield"))
        _STATE.append(words)
    return compiled


_KEEP = []
