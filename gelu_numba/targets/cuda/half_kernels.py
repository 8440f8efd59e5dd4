"""CUDA kernels of the 2-byte formats: GELU and the fused backward on float16
and bfloat16 bit patterns, correctly rounded (method and proof:
:mod:`gelu_numba.kernels.half_rounding`; the tables: :mod:`gelu_numba.targets.cpu.half_loops`).

The forward is one load from a 128 KB table (65,536 uint16 results, kept in
L2 by the hardware): bits in, bits out, 4 bytes of traffic per element.  The
backward decodes ``dy`` by arithmetic, loads GELU'(x) from a 512 KB float64
table, multiplies in float64 and rounds once (:func:`round_float16` /
:func:`round_bfloat16`).  The same scalar code and tables as the CPU loops,
so the results are the CPU's bit for bit.

The launched kernels (:func:`wide_kernel`) move 8-byte words: each thread
loads :data:`WORDS` words of every operand (16 bytes) before its first
table read, so that an SM keeps enough bytes in flight to cover the
memory's latency; one 2-byte load per thread and trip (:func:`lookup_kernel`)
kept an eighth of that, and ran well below a copy's bandwidth (the GPU
results page).  Operands not all on an 8-byte boundary take
the one-element loop.

Operands: contiguous 1-D device arrays of uint16, int16 or float16 bits (a
``torch`` half tensor ``.view(torch.int16)``; a CuPy float16 array), of one
size; the tables are copied to each device once.  Callers that hold raw
pointers (``gelu_numba.torch``) launch through :func:`fast_launcher`: the
same kernels, the table's pointer fixed, no array import.
"""

import functools

import numpy as np
from numba import cuda, typeof
from numba.core import types

from gelu_numba import catalog
from gelu_numba.kernels import half_rounding as kernels
from gelu_numba.targets.cpu import half_loops as half
# (modules whose values the tests and tools set: read at each use)
from gelu_numba.targets.cuda import fast_launch, launch, variants
from gelu_numba.targets.cuda.codegen import FLAT_LOOP, flat_fields, generate
from gelu_numba.targets.cuda.fast_launch import AlignedLaunch
from gelu_numba.targets.cuda.vector_io import load_streaming, store_streaming

# One element of each kernel, as a device function of the bits and the table.
@cuda.jit(device=True)
def _gelu_element(x, table):
    return table[np.uint16(x)]


@functools.cache
def _backward_element(fmt):
    decode, round_ = kernels.FORMATS[fmt]   # (numba-cuda compiles them for the device)

    @cuda.jit(device=True)
    def element(dy, x, grad):
        return round_(decode(np.uint16(dy)) * grad[np.uint16(x)])
    return element


# Grid-stride loops over unsigned indices (uint64 throughout), which Numba
# does not wrap around as it does signed ones (see targets.cuda.codegen.FLAT_LOOP):
# one 2-byte element per thread and trip, for operands that are not all
# 8-byte aligned.
@cuda.jit
def lookup_kernel(x, table, out):
    n, step = np.uint64(x.size), np.uint64(cuda.gridsize(1))
    i = np.uint64(cuda.grid(1))
    while i < n:
        out[i] = _gelu_element(x[i], table)
        i += step


@functools.cache
def backward_kernel(fmt):
    element = _backward_element(fmt)

    @cuda.jit
    def backward(dy, x, grad, out):
        n, step = np.uint64(x.size), np.uint64(cuda.gridsize(1))
        i = np.uint64(cuda.grid(1))
        while i < n:
            out[i] = element(dy[i], x[i], grad)
            i += step
    return backward


#: 2-byte elements per 8-byte word, the wide kernels' unit of load and store
LANES = 4
#: words per thread and trip of the wide kernels, all loaded before the
#: first table read: 16 bytes of each operand in flight per thread, eight
#: times what one 2-byte load per thread keeps (an SM's share of the
#: memory's bandwidth times its latency: analysis.gpu.sass.latency_bound)
WORDS = 2
#: the bytes of a word, the alignment the wide kernels need
WORD_BYTES = 8
_MASK = np.uint64(0xFFFF)
#: the fused backward (GELU's), whose kernels take two operands and a
#: float64 table
_BACKWARD = catalog.lookup(catalog.GELU).backward


@functools.cache
def _word(name, fmt):
    """The device function of ``name`` on one word of each operand: its
    four lanes, each the element's bits, packed back in their places."""
    if name == _BACKWARD:
        element = _backward_element(fmt)

        @cuda.jit(device=True)
        def word(dy, x, grad):
            r = np.uint64(0)
            for k in range(LANES):
                s = np.uint64(16 * k)
                r |= np.uint64(element((dy >> s) & _MASK, (x >> s) & _MASK, grad)) << s
            return r
    else:
        @cuda.jit(device=True)
        def word(x, table):
            r = np.uint64(0)
            for k in range(LANES):
                s = np.uint64(16 * k)
                r |= np.uint64(_gelu_element((x >> s) & _MASK, table)) << s
            return r
    return word


# Each operand comes twice: its 8-byte words (w<k>, the first n // LANES *
# LANES elements) and its elements (a<k>, for the n % LANES left over, which
# the first threads of the grid take after the loop).
WIDE_LOOP = """
def kernel({args}, {table}, wout, out):
{prologue}
    nw = np.uint64(wout.size)
    step = np.uint64(cuda.gridsize(1))
    t = np.uint64(cuda.grid(1))
    i = t
    s0 = np.uint64(0)
{offsets}
    while i + s{last} < nw:
{loads}
{stores}
        i += s{words}
    while i < nw:
        wout[i] = word({tail}, table)
        i += step
    k = nw * np.uint64(LANES) + t
    while k < np.uint64(out.size):
        out[k] = element({rest}, table)
        k += step
"""


@functools.cache
def wide_kernel(name, fmt, words, streaming=False, shared=False):
    """The kernel of ``name`` ("gelu", "gelu_grad", "gelu_backward") on
    ``fmt`` bits, 8-byte words at a time: ``words`` words of each operand
    per thread and trip, loaded (in the source) before any is looked up;
    ptxas keeps them ahead for two words, not all of four
    (``analysis.gpu.sass.bytes_in_flight``).  Arguments:
    each input as (words, elements), the table, then ``out`` the same way
    (:func:`wide_operands`); same bits as :func:`lookup_kernel` and
    :func:`backward_kernel`.  ``streaming``: the words loaded and stored
    with the evict-first hint (:func:`~gelu_numba.targets.cuda.vector_io.load_streaming`),
    so that the data streaming through L1 leaves the table's lines there: a
    variant ``analysis.gpu.throughput`` times, not launched.  ``shared``:
    the table, passed as 8-byte words, copied into each block's shared
    memory first (:func:`shared_kernel`)."""
    nin = catalog.lookup(name).nin
    pad = " " * 8
    load, store = (("load_streaming(w{k}, i + s{u})", "store_streaming(wout, i + s{u}, r{u})")
                   if streaming else ("w{k}[i + s{u}]", "wout[i + s{u}] = r{u}"))
    loads = [f"{pad}v{k}_{u} = " + load.format(k=k, u=u) for u in range(words) for k in range(nin)]
    # (every word's table reads before the first store: ptxas keeps a load
    # below a store it cannot prove apart from the table)
    stores = ([f"{pad}r{u} = word(" + ", ".join(f"v{k}_{u}" for k in range(nin)) + ", table)"
               for u in range(words)] + [pad + store.format(u=u) for u in range(words)])
    source = WIDE_LOOP.format(
        args=", ".join(f"w{k}, a{k}" for k in range(nin)),
        table="table_words" if shared else "table", prologue=SHARED_PROLOGUE if shared else "",
        last=words - 1, words=words,
        offsets="\n".join(f"    s{u} = s{u - 1} + step" for u in range(1, words + 1)),
        loads="\n".join(loads), stores="\n".join(stores),
        tail=", ".join(f"w{k}[i]" for k in range(nin)),
        rest=", ".join(f"a{k}[k]" for k in range(nin)))
    element = _backward_element(fmt) if nin == 2 else _gelu_element
    return generate(source, {"word": _word(name, fmt), "element": element, "LANES": LANES,
                             "load_streaming": load_streaming,
                             "store_streaming": store_streaming, "types": types})


#: bytes of a 2-byte function's table of results (65,536 uint16): the
#: dynamic shared memory of :func:`shared_kernel`
TABLE_BYTES = 2 * 65536
#: threads per block of :func:`shared_kernel`: its table takes 128 KB of an
#: SM's 228 KB of shared memory (sm_80 and later), so one block per SM
SHARED_THREADS = 1024

# (every dynamic shared array of a kernel starts at the same address: the
# table is copied in as 8-byte words and read as uint16)
SHARED_PROLOGUE = """    words = cuda.shared.array(0, types.uint64)
    j = np.uint64(cuda.threadIdx.x)
    while j < np.uint64(table_words.size):
        words[j] = table_words[j]
        j += np.uint64(cuda.blockDim.x)
    cuda.syncthreads()
    table = cuda.shared.array(0, types.uint16)"""


@functools.cache
def shared_kernel(name, fmt):
    """The launched wide kernel of ``name`` ("gelu", "gelu_grad": a table
    of uint16 results) on ``fmt`` bits, with its table in shared memory:
    each block first copies the whole table (:data:`TABLE_BYTES`, passed as
    8-byte words where the wide kernel takes the table) into its dynamic
    shared memory, then runs the wide kernel's loop reading that copy.  A
    warp's 32 table reads are then served by shared memory's 32 banks (a
    pass per conflict: a few for random entries), where through L1 they
    touch up to 32 sectors (``python -m analysis.gpu.gathers``) and, for a
    table whose touched part the streamed data evicts from L1, go to L2.
    Same bits as :func:`wide_kernel`.  One block of
    :data:`SHARED_THREADS` per SM (:func:`launch_shared`); ``gelu_numba``
    launches it where a device's measurements chose it
    (:func:`fast_launcher`), and ``analysis.gpu.throughput`` times it beside
    :func:`wide_kernel`."""
    if name == _BACKWARD:
        raise ValueError("the shared-memory table is for the uint16 tables "
                         "(gelu, gelu_grad), not gelu_backward's 512 KB")
    return wide_kernel(name, fmt, WORDS, shared=True)


def shared_fits():
    """Whether a block on the current device may take :data:`TABLE_BYTES`
    of shared memory (compute capability 8.0, 9.0, 10.0 allow 163 KB or
    more; most others less); under the simulator, yes."""
    if launch.SIMULATOR:
        return True
    return cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN >= TABLE_BYTES


def launch_shared(name, fmt, x, out, stream=0):
    """``out = name(x)`` on 1-D uint16 device arrays of ``fmt`` bits, both
    8-byte aligned, through :func:`shared_kernel`: one block of
    :data:`SHARED_THREADS` threads per SM (one thread under the simulator),
    each with the table in :data:`TABLE_BYTES` of dynamic shared memory
    (over the 48 KB a kernel may take without asking: the kernel is
    allowed its table's size first)."""
    if not shared_fits():
        raise ValueError(f"the table in shared memory needs {TABLE_BYTES} bytes per block; "
                         "this device allows "
                         f"{cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN}")
    kernel = shared_kernel(name, fmt)
    table = table_on_device(name, fmt).view(np.uint64)
    w, a, wout, full = wide_operands((x, out), out.size)
    if launch.SIMULATOR:
        blocks, threads = 1, 1
    else:
        from gelu_numba.internals.numba_cuda import allow_dynamic_shared
        signature = tuple(typeof(v) for v in (w, a, table, wout, full))
        allow_dynamic_shared(kernel.compile(signature), TABLE_BYTES)
        blocks, threads = launch.sm_count(), SHARED_THREADS
    kernel[blocks, threads, stream, TABLE_BYTES](w, a, table, wout, full)


@functools.cache
def unrolled_kernel(name, fmt):
    """The kernel of ``name`` ("gelu", "gelu_grad", "gelu_backward") on
    ``fmt`` bits in the float kernels' contiguous loop
    (:data:`gelu_numba.targets.cuda.codegen.FLAT_LOOP`): ``UNROLL`` 2-byte
    elements per thread and trip, all loaded before any is looked up; same
    arguments and bits as :func:`lookup_kernel`.  Not launched: timed by
    ``analysis.gpu.throughput`` beside the wide kernels, which keep twice
    its bytes in flight with a quarter of its loads."""
    nin = catalog.lookup(name).nin
    dev = _backward_element(fmt) if nin == 2 else _gelu_element
    return generate(FLAT_LOOP, {"dev": dev, "cast": np.uint16},
                    **flat_fields(nin, launch.UNROLL, passed="table"))


@functools.cache
def _device_table(name, fmt, device_id):
    return cuda.to_device(half.table(name, fmt))


def table_on_device(name, fmt):
    # (the simulator's device has no id: one device)
    return _device_table(name, fmt, getattr(cuda.get_current_device(), "id", 0))


def _check(fmt, *arrays):
    if fmt not in kernels.FORMATS:
        raise ValueError(f"fmt must be 'float16' or 'bfloat16' (got {fmt!r})")
    n = arrays[0].size
    for a in arrays:
        if np.dtype(a.dtype).itemsize != 2 or np.dtype(a.dtype).kind not in "uif":
            raise TypeError(f"expected 2-byte bit patterns (uint16, int16 or float16), "
                            f"got {a.dtype}")
        if np.dtype(a.dtype) == np.float16 and fmt != "float16":
            raise TypeError(f"a float16 array holds float16 values, not {fmt}: "
                            "pass fmt='float16', or bit patterns as uint16")
        if a.size != n:
            raise ValueError("the operands must have one size")


def _as_bits(a):
    # numba's device arrays as they are; anything else with
    # __cuda_array_interface__ (torch, CuPy) through numba's import
    return a if hasattr(a, "copy_to_host") else cuda.as_cuda_array(a)


def _uint16(a):
    # (the kernels read bits: a float16 element converted to uint16 would
    # be its value)
    return a if a.dtype == np.uint16 else a.view(np.uint16)


def _address(a):
    try:
        return a.device_ctypes_pointer.value or 0
    except AttributeError:   # (the simulator's arrays are NumPy's)
        return a.__array_interface__["data"][0]


def aligned(addresses):
    """Whether the wide kernels may take operands at ``addresses``: every
    one on an 8-byte boundary (a PyTorch or CuPy allocation is; a view
    that starts at an odd element is not)."""
    return fast_launch.aligned(addresses, WORD_BYTES)


def wide_operands(arrays, n):
    """The wide kernels' arguments for 1-D uint16 device ``arrays`` of
    ``n`` elements: each as (its first n // LANES words, itself)."""
    nw = n // LANES
    return tuple(v for a in arrays for v in (a[: nw * LANES].view(np.uint64), a))


def _launch_bits(name, fmt, arrays, stream):
    """``arrays`` (inputs, then out): the wide kernel where every operand is
    8-byte aligned, else the one-element loop."""
    n = arrays[-1].size
    table = table_on_device(name, fmt)
    if aligned(_address(a) for a in arrays):
        *ins, out = wide_operands(arrays, n)
        blocks, threads = launch.launch_config(max(n // LANES, 1))
        launch.launch(wide_kernel(name, fmt, WORDS), blocks, threads, stream,
                      (*ins[:-1], table, ins[-1], out))
        return
    kernel = backward_kernel(fmt) if name == _BACKWARD else lookup_kernel
    blocks, threads = launch.launch_config(n)
    launch.launch(kernel, blocks, threads, stream, (*arrays[:-1], table, arrays[-1]))


def gelu_bits(x, out, fmt, name=catalog.GELU, stream=0):
    """``out = f(x)`` on 2-byte bit patterns of ``fmt`` (f: "gelu" or
    "gelu_grad"), correctly rounded."""
    x, out = _as_bits(x), _as_bits(out)
    _check(fmt, x, out)
    if x.size:
        _launch_bits(name, fmt, (_uint16(x), _uint16(out)), stream)
    return out


def gelu_backward_bits(dy, x, out, fmt, stream=0):
    """``out = dy * GELU'(x)`` on 2-byte bit patterns of ``fmt``, rounded
    once (correctly, at every pair of finite inputs)."""
    dy, x, out = _as_bits(dy), _as_bits(x), _as_bits(out)
    _check(fmt, dy, x, out)
    if x.size:
        _launch_bits(_BACKWARD, fmt, tuple(map(_uint16, (dy, x, out))), stream)
    return out


_FAST = {}


def fast_launcher(name, fmt):
    """The fast launch of ``name`` ("gelu", "gelu_grad": :func:`gelu_bits`;
    "gelu_backward": :func:`gelu_backward_bits`) on ``fmt`` bit patterns,
    for the current device and launch constants: an
    :class:`~gelu_numba.targets.cuda.fast_launch.AlignedLaunch`
    whose operands are ``(x, out)`` or ``(dy, x, out)`` as 2-byte pointers,
    the table in its place.  The aligned launch is :func:`wide_kernel`'s,
    or :func:`shared_kernel`'s where the device's measurements chose the
    table in shared memory (:func:`~gelu_numba.targets.cuda.variants.measured_choice`
    of ``"gelu float16"``, say).  Built on first use and checked against the
    general path on every bit pattern; None where there is none (the
    simulator, a launcher that failed its check)."""
    if not fast_launch.FAST_LAUNCH:
        return None
    shared = variants.measured_choice(f"{name} {fmt}") == "shared" and shared_fits()
    key = (name, fmt, WORDS, shared) + fast_launch.fast_key(None)
    try:
        return _FAST[key]
    except KeyError:
        pass
    nin = catalog.lookup(name).nin
    narrow = backward_kernel(fmt) if nin == 2 else lookup_kernel
    # (uint16: a pointer has no dtype, and the kernel's stores need no cast)
    patterns = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    if nin == 1:
        def general(xs, out):
            gelu_bits(xs[0], out, fmt, name)
    else:
        def general(xs, out):
            gelu_backward_bits(xs[0], xs[1], out, fmt)

    def build():
        table = {nin: table_on_device(name, fmt)}
        if shared:   # (one block per SM, each with the table as 8-byte words)
            wide = fast_launch.FastLaunch(
                shared_kernel(name, fmt), nin, None, np.uint16,
                {nin: table[nin].view(np.uint64)}, lanes=LANES, threads=SHARED_THREADS,
                blocks_per_sm=1, shared_bytes=TABLE_BYTES)
        else:
            wide = fast_launch.FastLaunch(wide_kernel(name, fmt, WORDS), nin, None, np.uint16,
                                          table, lanes=LANES)
        return AlignedLaunch(wide, fast_launch.FastLaunch(narrow, nin, None, np.uint16, table),
                             WORD_BYTES)

    _FAST[key] = launcher = fast_launch.checked_launcher(
        f"gelu_numba.targets.cuda.half_kernels ({name}, {fmt})", build,
        lambda fast: fast.agrees([patterns[::-1].copy(), patterns][-nin:], general))
    return launcher
