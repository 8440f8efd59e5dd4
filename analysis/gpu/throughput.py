"""GPU throughput of gelu_numba.gpu against the device-to-device copy roofline.

Usage::

    python -m analysis.gpu.throughput [--sizes 2**12,2**20,2**26]
        [--functions gelu,gelu_backward] [--all-functions] [--tune]
        [--peers all|none|torch_gelu,...] [--accuracy SWEEP.json]
        [--rounds 15] [--batch 20] [--out FILE]

For each function, dtype and size: standard-normal input already on the
device, ``out=`` preallocated, so a call is the kernel launch and nothing
else.  Time per call from CUDA events around ``batch`` back-to-back calls
(the host's launch overhead overlaps the device's work, as in a training
loop), median over ``rounds`` (minimum in the CSV).  Bytes moved are
``(inputs + 1) * n * itemsize``; the roofline is a device-to-device copy of
the same array timed the same way, ``2 * n * itemsize`` bytes: the faster
of ``cuMemcpyDtoDAsync`` (numba's ``copy_to_device``, whose host cost per
call bounded it at all but the largest size in the H200 run of 2026-11-26) and a
copy kernel in gelu_numba.gpu's own loop and fast launch
(:func:`_copy_call`); each function's bandwidth is quoted as a fraction of
the copy's.  Everything runs on one non-default stream.  Below about 2**22
elements a call costs its host-side launch (the report's host-time
table), not the kernel: the fractions there measure that overhead.

Peers (:mod:`analysis.gpu.peers`: PyTorch CUDA ``F.gelu`` in both forms
and ``aten.gelu_backward``, JAX, CuPy; those installed with GPU support)
run on the same device buffers, each as its users call it (a new output
from its own allocator), timed the same way on the same stream (JAX, which
launches on streams of its own, from the host around ``block_until_ready``;
marked in the table).  ``--accuracy`` adds the exhaustive float32 results
of a GPU sweep (``python -m analysis.sweep_float32 --device gpu --peers
all --out SWEEP.json``) beside them.

The 2-byte kernels (``--half``, the default: bfloat16 and float16
``gelu`` and ``gelu_backward`` of :mod:`gelu_numba.targets.cuda.half_kernels`,
through the fast launch that ``gelu_numba.torch`` takes) are timed the same
way on bit-pattern buffers, with the variants of :data:`HALF_TAGS` (through
numba-cuda's dispatcher: its host time dominates the smallest size) and
beside PyTorch's on the same buffers.  The float32 functions with lean
kernels are timed again through the kernels this device does not launch
(:data:`FORCED`: the lean kernel and the device functions' kernel) and
through the lean kernel with its table in shared memory
(:mod:`gelu_numba.targets.cuda.lean_shared`), ``gelu``'s on data spread 8x
too.

Host time per call: float32 ``gelu`` on ``--host-n`` elements (2**20)
already on the device, called back to back on the default stream through
the fast launch (with and without ``out=``), the general path, numba-cuda's
dispatcher alone, and (with PyTorch CUDA) ``F.gelu`` and our function on
PyTorch tensors.

Also measured: the float32 CPU ufunc on 2**26 elements (one thread, and
``gelu_numba.parallel`` on every core), with ``out=`` preallocated, for the
GPU/CPU ratio; ``--tune`` times a grid of launch configurations;
``--all-functions`` adds every other function of ``gelu_numba.gpu`` at the
largest size.  Prints a markdown report naming the device (and writes it to
``--out``).  Needs a CUDA GPU; under the simulator
(``NUMBA_ENABLE_CUDASIM=1``) it runs as a dry run on tiny sizes.
"""

import argparse
import statistics
import sys
import time
import warnings
from datetime import datetime, timezone

import numpy as np

from gelu_numba import catalog

CORE = catalog.names("exact")
DTYPES = ("float32", "float64")
#: the 2-byte formats (gelu_numba.targets.cuda.half_kernels: gelu and gelu_backward
#: on bit patterns; bfloat16 travels as uint16, NumPy having no bfloat16)
HALF = ("bfloat16", "float16")
HALF_FUNCTIONS = tuple(f.name for f in catalog.group("exact") if f.half)


def _sizes(text):
    try:
        sizes = [int(eval(t, {"__builtins__": {}})) for t in text.split(",")]  # noqa: S307
    except Exception:
        raise argparse.ArgumentTypeError(
            f"sizes must be integers or powers like 2**20, comma-separated; got {text!r}")
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive; got {text!r}")
    return sizes


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m analysis.gpu.throughput",
                                description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=_sizes, default=_sizes("2**12,2**16,2**20,2**24,2**26"),
                   help="array sizes (default 2**12,2**16,2**20,2**24,2**26)")
    p.add_argument("--functions", default=",".join(CORE),
                   help="functions timed at every size (default: %(default)s)")
    p.add_argument("--all-functions", action="store_true",
                   help="also time every other gelu_numba.gpu function at the largest size")
    p.add_argument("--tune", action="store_true",
                   help="time gelu and gelu_backward under a grid of launch configurations")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--cpu-n", type=_sizes, default=[2**26],
                   help="size of the CPU comparison (default 2**26)")
    p.add_argument("--peers", default="all",
                   help="other libraries' GELUs on the same buffers: 'all' (those installed, "
                        "the default), 'none', or names from analysis.gpu.peers.PEERS")
    p.add_argument("--accuracy", default=None,
                   help="JSON of a GPU sweep (analysis.sweep_float32 --device gpu --peers all "
                        "--out ...) to report beside the timings")
    p.add_argument("--host-n", type=_sizes, default=[2**20],
                   help="array size of the host-cost-per-call table (default 2**20)")
    p.add_argument("--half", action=argparse.BooleanOptionalAction, default=True,
                   help="also time the bfloat16 and float16 kernels of gelu and "
                        "gelu_backward (default: on)")
    p.add_argument("--out", help="also write the markdown report here")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.batch < 1:
        p.error("--rounds and --batch must be at least 1")
    return args


def _event_time(call, rounds, batch, cuda, stream):
    """(median, min) seconds per call over ``rounds`` batches on ``stream``."""
    call()
    cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = cuda.event(), cuda.event()
        t0 = time.perf_counter()
        start.record(stream)
        for _ in range(batch):
            call()
        end.record(stream)
        end.synchronize()
        ms = start.elapsed_time(end)
        # (the simulator's events return -1: host time for the dry run)
        seconds = ms * 1e-3 if ms > 0 else time.perf_counter() - t0
        times.append(seconds / batch)
    return statistics.median(times), min(times)


def _host_time(call, rounds, batch, cuda):
    """(median, min) seconds per call, from the host: ``batch`` calls, then
    a wait for the last result (JAX launches on streams of its own)."""
    def wait(r):
        if hasattr(r, "block_until_ready"):
            r.block_until_ready()
        cuda.synchronize()

    wait(call())
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(batch):
            r = call()
        wait(r)
        times.append((time.perf_counter() - t0) / batch)
    return statistics.median(times), min(times)


def device_info(cuda):
    dev = cuda.get_current_device()
    name = getattr(dev, "name", "CUDA simulator")
    name = name.decode() if isinstance(name, bytes) else str(name)
    return {"name": name, "sms": getattr(dev, "MULTIPROCESSOR_COUNT", 1),
            "cc": ".".join(map(str, dev.compute_capability))}


def _host_values(rng, n, dt, sort):
    """n standard-normal values of ``dt`` (bfloat16: their bit patterns as
    uint16, rounded by truncation)."""
    host = rng.standard_normal(n)
    if sort:
        host.sort()
    if dt == "bfloat16":
        return (host.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return host.astype(dt)


def _copy_call(x, out, stream):
    """``out[:] = x`` by a kernel: gelu_numba.gpu's flat loop (``UNROLL``
    elements per thread and trip, its launch configuration) around the
    identity, through a fast launch where there is one (the simulator:
    numba-cuda's launch)."""
    from gelu_numba.targets import cuda as target

    kernel = _copy_kernel(x.dtype.str)
    blocks, threads = target.launch_config(out.size)
    call = lambda: kernel[blocks, threads, stream](x, out)  # noqa: E731
    if target.FAST_LAUNCH:
        try:
            fast = target.FastLaunch(kernel, 1, None, x.dtype)
        except Exception as e:  # (the copy's own failure: memcpy remains)
            print(f"copy kernel: no fast launch ({type(e).__name__}: {e})", file=sys.stderr)
        else:
            pointers = (x.device_ctypes_pointer.value, out.device_ctypes_pointer.value)
            call = lambda: fast(pointers, out.size, stream)  # noqa: E731
    # a roofline that copied less would flatter nobody: check both ends once
    out[:] = 0
    call()
    stream.synchronize()
    for part in (slice(0, 1024), slice(max(0, out.size - 1024), out.size)):
        if not np.array_equal(out[part].copy_to_host(), x[part].copy_to_host()):
            raise RuntimeError("the copy kernel did not copy its input")
    return call


_COPY_KERNELS = {}


def _copy_kernel(typestr):
    """The copy kernel for one dtype (cached: compiled once per process)."""
    from numba import cuda

    from gelu_numba.targets import cuda as target
    from gelu_numba.targets.cuda import launch

    if typestr not in _COPY_KERNELS:
        identity = cuda.jit(device=True)(lambda v: v)
        _COPY_KERNELS[typestr] = target.generate(
            target.FLAT_LOOP, {"dev": identity, "cast": np.dtype(typestr).type},
            **target.flat_fields(1, launch.UNROLL))
    return _COPY_KERNELS[typestr]


#: the 2-byte kernels timed beside the launched ones (the wide kernel, 16
#: bytes of each operand in flight per thread): in the float kernels'
#: unrolled loop (4 elements of 2 bytes a trip), the one-element loop that
#: operands off an 8-byte boundary take, the wide kernel with twice the
#: words a trip, and the wide kernel with evict-first hints
#: (gelu_numba.targets.cuda.half_kernels)
HALF_UNROLLED_TAG = "(loads first, x4 per trip: not launched)"
HALF_NARROW_TAG = "(one element per trip: unaligned operands)"
HALF_WIDE4_TAG = "(4 words per trip: not launched)"
#: the wide kernel with its words loaded and stored evict-first, so that the
#: streamed data leaves the table's lines in L1
HALF_STREAMING_TAG = "(evict-first loads and stores: not launched)"
HALF_TAGS = (HALF_UNROLLED_TAG, HALF_NARROW_TAG, HALF_WIDE4_TAG, HALF_STREAMING_TAG)
#: gelu's 2-byte kernel with its 128 KB table in shared memory, one block of
#: 1024 threads per SM (half_kernels.shared_kernel; gelu_backward's 512 KB
#: table does not fit), launched where a device's run timed it faster
#: (analysis.gpu.choice): timed on a device only (under the simulator each
#: block copies the table in Python)
HALF_SHARED_TAG = "(table in shared memory)"


def _half_variant_call(tag):
    """A maker of calls (as :func:`_half_call`) of the 2-byte kernel that
    ``tag`` names, on numba's dispatcher, the launched kernels' table."""
    def make(name, fmt, args, out, stream):
        from gelu_numba.targets import cuda as target
        from gelu_numba.targets.cuda import half_kernels as cuda_half
        table = cuda_half.table_on_device(name, fmt)
        if tag in (HALF_WIDE4_TAG, HALF_STREAMING_TAG):
            kernel = (cuda_half.wide_kernel(name, fmt, 4) if tag == HALF_WIDE4_TAG else
                      cuda_half.wide_kernel(name, fmt, cuda_half.WORDS, streaming=True))
            *ins, wout, full = cuda_half.wide_operands((*args, out), out.size)
            blocks, threads = target.launch_config(max(out.size // cuda_half.LANES, 1))
            return lambda: kernel[blocks, threads, stream](*ins, table, wout, full)
        if tag == HALF_UNROLLED_TAG:
            kernel = cuda_half.unrolled_kernel(name, fmt)
        else:
            kernel = (cuda_half.backward_kernel(fmt) if name == "gelu_backward"
                      else cuda_half.lookup_kernel)
        blocks, threads = target.launch_config(out.size)
        return lambda: kernel[blocks, threads, stream](*args, table, out)
    return make


def _shared_fits():
    """Whether this device's blocks take the 2-byte table in shared memory."""
    from gelu_numba.targets.cuda import half_kernels as cuda_half
    return cuda_half.shared_fits()


def _half_shared_call(name, fmt, x, out, stream):
    """A launch of ``name``'s 2-byte kernel with its table in shared memory
    (one block per SM)."""
    from gelu_numba.targets.cuda import half_kernels as cuda_half
    return lambda: cuda_half.launch_shared(name, fmt, x, out, stream)


def _half_call(name, fmt, args, out, stream):
    """The 2-byte kernel of ``name`` on numba device arrays: through its
    fast launch where there is one (gelu_numba.torch's path), else the
    general one."""
    from gelu_numba.targets.cuda import half_kernels as cuda_half
    launcher = cuda_half.fast_launcher(name, fmt)
    if launcher is not None:
        pointers = tuple(a.device_ctypes_pointer.value for a in (*args, out))
        return lambda: launcher(pointers, out.size, stream)
    if len(args) == 1:
        return lambda: cuda_half.gelu_bits(args[0], out, fmt, name=name, stream=stream)
    return lambda: cuda_half.gelu_backward_bits(*args, out, fmt, stream=stream)


#: the row of float64 gelu on data where nearly every warp holds an element
#: out of the ordinary range (targets.cuda.device.float64_kernel: the general kernel)
WIDE = "gelu (x spread 8x: general kernel)"


# The float32 kernels of the records with lean32 kernels besides the one this device
# launches, each forced through gelu_numba.gpu's own flat kernel (its
# configuration and fixed arguments): the lean kernel, which GPUs without
# full-rate FP64 launch (it reads 11 float32 of a table row an element,
# traffic that the SASS count's issue bound leaves out), and the
# float32-arithmetic kernel of the device functions, which they launched
# before 2026-11-26
LEAN_TAG = "(lean32: what GPUs with slow FP64 launch)"
F32_TAG = "(float32 arithmetic: the device functions' kernel)"
#: lean gelu on standard-normal data spread 8 times wider: a warp's lanes
#: read rows far apart (more L1 sectors per table read)
LEAN_WIDE = "gelu (lean32, x spread 8x)"
#: the tags of these rows in reports of runs before the lean kernels were
#: launched (2026-11-26 08:31 and earlier), which analysis.gpu.docs reads
OLD_LEAN_TAG = "(lean32: one table row, not launched yet)"
OLD_F32_TAG = "(float32 arithmetic: what GPUs with slow FP64 launch)"
#: the forced choices of each tag (GpuFunction.variant's arguments); each
#: the kernel of 16-byte loads, what aligned operands launch
FORCED = {LEAN_TAG: {"fp64": False, "lean32": True, "vec4": True},
          F32_TAG: {"fp64": False, "lean32": False, "vec4": True}}
#: the words of a report whose float32 rows timed the loops of 16-byte loads
#: and stores (analysis.gpu.sass counts the kernels a report names)
VEC4_MARK = "16-byte loads and stores"
#: the launched float32 call on views one element into their arrays: not
#: 16-byte aligned, so the loop of 4-byte loads (a tensor's view, say)
F32_NARROW_TAG = "(4-byte loads: unaligned operands)"
#: the lean kernel with its table copied into each block's shared memory
#: (gelu_numba.targets.cuda.lean_shared: the same bits; launched where a
#: device's run timed it fastest, analysis.gpu.choice), on standard-normal
#: data and spread 8x
LEAN_SHARED_TAG = "(lean32, table in shared memory)"
LEAN_SHARED_WIDE = "gelu (lean32, table in shared memory, x spread 8x)"


def _lean_shared_call(name, args, out, stream):
    """A launch of ``name``'s lean kernel with its table in shared memory,
    in the launched kernel's configuration."""
    from gelu_numba.targets import cuda as target
    from gelu_numba.targets.cuda import lean_shared, variants

    kernel = lean_shared.kernel(name)
    table = variants.lean_table(name, variants.device_key())
    blocks, threads = target.launch_config(out.size)
    return lambda: kernel[blocks, threads, stream](*args, table, out)


def _forced_call(f, args, out, stream, **choice):
    """A launch of ``f``'s float32 flat kernel of the forced ``choice``
    (:meth:`GpuFunction.variant`'s arguments) on contiguous operands,
    whatever this device's FP64 rate, with its fixed arguments."""
    from gelu_numba.targets import cuda as target

    layout = target.flat_layout(f.nin)
    vec4 = choice.pop("vec4", False)
    kernel = f.kernel("f", layout, vec4=vec4, **choice)
    fixed = tuple(f.fixed_arguments("f", layout, **choice).values())
    blocks, threads = target.launch_config(out.size)
    return lambda: kernel[blocks, threads, stream](*args, *fixed, out)


def measure(names, sizes, rounds, batch, cuda, gpu, sort=False, peers=(), dtypes=DTYPES):
    """Rows of timings: ``names`` of gelu_numba.gpu, then the ``peers``
    (:class:`analysis.gpu.peers.Peer`) on the same buffers, for each of
    ``dtypes`` (those of :data:`HALF`: the 2-byte kernels of ``names`` in
    :data:`HALF_FUNCTIONS`)."""
    from gelu_numba.targets import cuda as target
    rows = []
    rng = np.random.default_rng(0)
    # a stream of its own: on the default stream numba's device-to-device
    # copy is synchronous, and its host round trip would be timed too
    stream = cuda.stream()
    for n in sizes:
        for dt in dtypes:
            host = _host_values(rng, n, dt, sort)
            x = cuda.to_device(host)
            y = cuda.to_device(host[::-1].copy())
            out = cuda.device_array(n, host.dtype)
            copy = min(_event_time(lambda: out.copy_to_device(x, stream=stream),
                                   rounds, batch, cuda, stream),
                       _event_time(_copy_call(x, out, stream), rounds, batch, cuda, stream))
            item = host.dtype.itemsize
            copy_bw = 2 * n * item / copy[0]
            for name in names:
                if dt in HALF:
                    if name in HALF_FUNCTIONS:
                        nin = catalog.lookup(name).nin
                        for label, make in ((name, _half_call), *(
                                (f"{name} {tag}", _half_variant_call(tag))
                                for tag in HALF_TAGS)):
                            t = _event_time(make(name, dt, (x, y, y)[:nin], out, stream),
                                            rounds, batch, cuda, stream)
                            rows.append(_row(label, dt, n, t, (nin + 1) * n * item, copy_bw))
                        if name == "gelu" and not target.SIMULATOR and _shared_fits():
                            t = _event_time(_half_shared_call(name, dt, x, out, stream),
                                            rounds, batch, cuda, stream)
                            rows.append(_row(f"{name} {HALF_SHARED_TAG}", dt, n, t,
                                             2 * n * item, copy_bw))
                    continue
                f = getattr(gpu, name)
                args = (x, y, y)[:f.nin] if name != "soi_map" else (x,)
                call = ((lambda: f(x, seed=1, out=out, stream=stream))
                        if name == "soi_map" else
                        (lambda f=f, args=args: f(*args, out=out, stream=stream)))
                t = _event_time(call, rounds, batch, cuda, stream)
                nbytes = ((f.nin if name != "soi_map" else 1) + 1) * n * item
                rows.append(_row(name, dt, n, t, nbytes, copy_bw))
                if dt == "float32" and name != "soi_map" and \
                        catalog.lookup(name).lean32 is not None:
                    # (the same n values, one element into arrays of n + 1)
                    views = [cuda.to_device(np.concatenate([host[:1], a]))[1:]
                             for a in (host, host[::-1])[:f.nin]]
                    shifted = cuda.device_array(n + 1, host.dtype)[1:]
                    t = _event_time(lambda f=f, views=views, shifted=shifted:
                                    f(*views, out=shifted, stream=stream),
                                    rounds, batch, cuda, stream)
                    rows.append(_row(f"{name} {F32_NARROW_TAG}", dt, n, t, nbytes, copy_bw))
                    del views, shifted
                    for tag, choice in FORCED.items():
                        t = _event_time(_forced_call(f, args, out, stream, **choice),
                                        rounds, batch, cuda, stream)
                        rows.append(_row(f"{name} {tag}", dt, n, t, nbytes, copy_bw))
                    # (not in the simulator's dry run: there each block
                    # copies the table in Python, seconds a launch;
                    # tests/test_lean32.py runs the call once)
                    if not target.SIMULATOR:
                        t = _event_time(_lean_shared_call(name, args, out, stream),
                                        rounds, batch, cuda, stream)
                        rows.append(_row(f"{name} {LEAN_SHARED_TAG}", dt, n, t, nbytes,
                                         copy_bw))
                    if name == "gelu":
                        wide = cuda.to_device(host * np.float32(8.0))
                        t = _event_time(_forced_call(f, (wide,), out, stream,
                                                     **FORCED[LEAN_TAG]),
                                        rounds, batch, cuda, stream)
                        rows.append(_row(LEAN_WIDE, dt, n, t, nbytes, copy_bw))
                        if not target.SIMULATOR:
                            t = _event_time(_lean_shared_call(name, (wide,), out, stream),
                                            rounds, batch, cuda, stream)
                            rows.append(_row(LEAN_SHARED_WIDE, dt, n, t, nbytes, copy_bw))
                        del wide
                if name == "gelu" and dt == "float64":
                    # standard-normal data runs the ordinary form (a warp
                    # with |x| >= 4 is rare); spread 8 times wider, nearly
                    # every warp holds one: the general kernel
                    wide = cuda.to_device(host * 8.0)
                    t = _event_time(lambda: f(wide, out=out, stream=stream),
                                    rounds, batch, cuda, stream)
                    rows.append(_row(WIDE, dt, n, t, nbytes, copy_bw))
                    del wide
            for peer in peers:
                if dt not in peer.dtypes:
                    continue
                args = (x, y)[:peer.nin]
                try:
                    if peer.event_timed:
                        with peer.stream(stream):
                            t = _event_time(lambda: peer.call(*args), rounds, batch, cuda,
                                            stream)
                    else:
                        t = _host_time(lambda: peer.call(*args), rounds, batch, cuda)
                except Exception as e:  # (a peer's failure costs its row, not the run)
                    print(f"peer {peer.name} {dt} n={n} failed: {type(e).__name__}: {e}",
                          file=sys.stderr, flush=True)
                    continue
                rows.append(_row(peer.name, dt, n, t, (peer.nin + 1) * n * item, copy_bw,
                                 peer=True, host_timed=not peer.event_timed))
            del x, y, out
    return rows


def host_costs(cuda, gpu, n, rounds, batch):
    """Host time per call of float32 ``gelu`` on ``n`` elements already on
    the device, default stream: back-to-back calls, then one wait (the
    kernel, about 3 µs at 2**20 on an H100, hides behind the host's
    launches, so this is what the host spends per call).  The fast launch
    with and without ``out=`` (a new output from the output pool, and from
    numba-cuda's ``device_array`` as before the pool), the general path it
    bypasses, numba-cuda's dispatcher alone (the same kernel, launched as
    ``kernel[grid, block]``),
    parts of the fast call alone (the launcher on packed pointers, and the
    same launch through ``cuLaunchKernel``; the operands'
    ``__cuda_array_interface__``; the current-device lookup)
    and, with PyTorch CUDA, a tensor's ``F.gelu`` and our function on
    tensors, and with CuPy, on its arrays (a new output is the input's
    library's array).  Rows: ``(what, median s, min s)``."""
    from gelu_numba.targets import cuda as target
    f = gpu.gelu
    x = cuda.to_device(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    out = cuda.device_array_like(x)
    layout = target.flat_layout(1)
    kernel = f.kernel("f", layout)
    # (on a device with full-rate FP64 that kernel takes its tables after x)
    fixed = tuple(f.fixed_arguments("f", layout).values())
    blocks, threads = target.launch_config(n)
    fast = "fast launch" if target.FAST_LAUNCH else "fast launch off (simulator)"
    calls = [(f"`gpu.gelu(x, out=out)`, numba arrays ({fast})", lambda: f(x, out=out)),
             (f"`gpu.gelu(x)`, numba arrays, new output ({fast})", lambda: f(x)),
             (f"`gpu.gelu(x)`, numba arrays, new output from numba-cuda's `device_array` "
              f"(before the output pool; {fast})", lambda: _without_pool(f, x)),
             ("general path (numba-cuda import and dispatch; before the fast launch)",
              lambda: f._call((x,), out, 0)),
             ("numba-cuda dispatcher alone (`kernel[grid, block](x, out)`)",
              lambda: kernel[blocks, threads](x, *fixed, out))]
    launcher = f.fast_launcher("f")
    if launcher is not None:
        # what the fast call's host time is made of, each part alone
        from gelu_numba.targets.cuda import fast_launch
        pointers = (x.device_ctypes_pointer.value, out.device_ctypes_pointer.value)
        one = launcher.wide if hasattr(launcher, "wide") else launcher   # (16-byte aligned)
        calls += [(HOST_CORE_LAUNCH, lambda: launcher(pointers, n, 0)),
                  (HOST_DRIVER_LAUNCH, lambda: one.via_driver(pointers, n, 0)),
                  ("part: reading `__cuda_array_interface__` of two numba arrays (no launch)",
                   lambda: (x.__cuda_array_interface__, out.__cuda_array_interface__)),
                  ("part: numba-cuda's current device (no launch)",
                   fast_launch.current_device_id)]
    try:
        import torch
        if torch.cuda.is_available():
            import torch.nn.functional as F
            tx = torch.as_tensor(x, device="cuda")
            tout = torch.empty_like(tx)
            calls += [("PyTorch `F.gelu(t)` on a CUDA tensor", lambda: F.gelu(tx)),
                      (f"`gpu.gelu(t, out=t_out)`, PyTorch tensors ({fast})",
                       lambda: f(tx, out=tout)),
                      (f"`gpu.gelu(t)`, PyTorch tensor, new tensor output ({fast})",
                       lambda: f(tx))]
    except ImportError:
        pass
    try:
        import cupy
        cx = cupy.asarray(x)
        cout = cupy.empty_like(cx)
        calls += [(f"`gpu.gelu(c, out=c_out)`, CuPy arrays ({fast})", lambda: f(cx, out=cout)),
                  (f"`gpu.gelu(c)`, CuPy array, new CuPy output ({fast})", lambda: f(cx))]
    except ImportError:
        pass
    rows = []
    for label, call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the dispatcher's occupancy warning)
            t = _host_time(call, rounds, batch, cuda)
        rows.append((label, *t))
    return rows


#: the host table's rows of the fast launch's two ways to call the driver
#: (analysis.gpu.choice chooses between them)
HOST_CORE_LAUNCH = "part: the fast launcher alone (packed pointers; `cuda.core.launch`)"
HOST_DRIVER_LAUNCH = ("part: the same launch through `cuLaunchKernel` (cuda.bindings; "
                      "the parameters written into a kept buffer)")


def _without_pool(f, *args):
    """``f(*args)`` with its new output from numba-cuda's allocation."""
    from gelu_numba.targets.cuda import output_pool
    before, output_pool.POOL = output_pool.POOL, False
    try:
        return f(*args)
    finally:
        output_pool.POOL = before


def _row(name, dt, n, t, nbytes, copy_bw, peer=False, host_timed=False):
    return {"function": name, "dtype": dt, "n": n, "t_median": t[0], "t_min": t[1],
            "gelem_s": n / t[0] / 1e9, "gb_s": nbytes / t[0] / 1e9,
            "copy_gb_s": copy_bw / 1e9, "fraction": nbytes / t[0] / copy_bw,
            "peer": peer, "host_timed": host_timed}


def cpu_comparison(n, rows, rounds=5):
    """Seconds per call of the float32 CPU gelu (one thread; all cores)."""
    import gelu_numba
    import gelu_numba.parallel as gpar
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    res = {}
    for label, f in (("cpu 1 thread", gelu_numba.gelu), ("cpu parallel", gpar.gelu)):
        f(x, out=out)
        ts = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            f(x, out=out)
            ts.append(time.perf_counter() - t0)
        res[label] = statistics.median(ts)
    gpu_t = {r["dtype"]: r["t_median"] for r in rows
             if r["function"] == "gelu" and r["n"] == n}
    return res, gpu_t.get("float32")


def tune(cuda, gpu, launch, n, rounds, batch):
    """gelu and gelu_backward under a grid of launch configurations and
    unroll factors (set in ``launch``, :mod:`gelu_numba.targets.cuda.launch`,
    where every kernel and launcher reads them); then on sorted input (a
    warp's elements then take the same branches and, in kernels with
    tables, the same table rows)."""
    rows = []
    saved = launch.THREADS_PER_BLOCK, launch.BLOCKS_PER_SM, launch.UNROLL
    try:
        for unroll in (1, 2, 4, 8):
            for tpb in (256, 512):
                for bps in (4, 8, 16):
                    launch.THREADS_PER_BLOCK, launch.BLOCKS_PER_SM = tpb, bps
                    launch.UNROLL = unroll
                    for r in measure(["gelu", "gelu_backward"], [n], rounds, batch,
                                     cuda, gpu):
                        r.update(tpb=tpb, bps=bps, unroll=unroll)
                        rows.append(r)
    finally:
        launch.THREADS_PER_BLOCK, launch.BLOCKS_PER_SM, launch.UNROLL = saved
    sorted_rows = measure(["gelu", "gelu_backward"], [n], rounds, batch, cuda, gpu,
                          sort=True)
    return rows, sorted_rows


def registers(gpu, names, simulated=False):
    """Registers per thread of each compiled kernel of ``names`` (none under
    the simulator, which still walks the kernels' keys)."""
    out = {}
    for name in names:
        for loop, layout, variant, vec4, shared, k in getattr(gpu, name).compiled():
            regs = {} if simulated else k.get_regs_per_thread()
            kind = "float64" if loop == "d" else {
                "fp64": "float32 (float64 arithmetic)", "lean32": "float32 (lean32)",
                "gpu32": "float32 (float32 arithmetic)"}.get(variant, "float32")
            shape = (" 16-byte loads" if vec4 else "" if layout[0] else " (N-D)") + (
                ", table in shared memory" if shared else "")
            out[f"{name} {kind}{shape}"] = sorted(set(regs.values()))
    return out


def report(dev, rows, extra_rows, cpu, tune_rows, regs, argv, missing=None, accuracy=None,
           host=None):
    lines = [f"# GPU throughput: {dev['name']} ({dev['sms']} SMs, compute capability {dev['cc']})",
             "",
             f"`python -m analysis.gpu.throughput {' '.join(argv)}`, "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.  Input on the device, "
             "`out=` preallocated; time per call from CUDA events around back-to-back "
             "calls, median of the rounds.  Fraction: bandwidth over that of a "
             "device-to-device copy of the same array (bytes = inputs + output).  "
             f"float32: {VEC4_MARK} (every operand 16-byte aligned) but in the "
             f"`{F32_NARROW_TAG}` rows.",
             "",
             "| function | dtype | n | time (µs) | G elem/s | GB/s | copy GB/s | of copy |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows + extra_rows:
        n = r["n"]
        size = f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)
        mark = " (host-timed)" if r.get("host_timed") else ""
        lines.append(f"| `{r['function']}`{mark} | {r['dtype']} | {size} "
                     f"| {r['t_median'] * 1e6:.1f} | {r['gelem_s']:.3g} | {r['gb_s']:.3g} "
                     f"| {r['copy_gb_s']:.3g} | {r['fraction']:.0%} |")
    for name, why in (missing or {}).items():
        lines.append(f"\n- peer `{name}` not measured: {why}")
    if host:
        rows_, n = host
        lines += ["", f"## Host time per call (float32 `gelu`, {n} elements on the device, "
                  "default stream)", "",
                  "Back-to-back calls, then one wait; median (min) of the rounds.", "",
                  "| call | µs per call | min |", "|---|---|---|"]
        lines += [f"| {label} | {t * 1e6:.1f} | {tmin * 1e6:.1f} |" for label, t, tmin in rows_]
    if accuracy:
        lines += ["", f"## Exhaustive float32 accuracy on {accuracy.get('gpu', 'the GPU')} "
                  "(against gelu_numba's float64 GPU kernels)", "",
                  "| function | max ulp | worst input | correctly rounded | > 1 ulp | "
                  "NaN/inf mismatches |", "|---|---|---|---|---|---|"]
        for r in accuracy["results"]:
            share = r["correctly_rounded_share"]
            lines.append(f"| `{r['function']}` | {r['max_ulp']:.4g} | {r['worst_input']!r} | "
                         f"{100 * share:.3f} % | {r['over_1ulp']} | {r['special_mismatches']} |")
    if cpu is not None:
        (times, g32), n = cpu
        lines += ["", f"## Against the CPU ufunc (float32 `gelu`, {n} elements, `out=` preallocated)", ""]
        for label, t in times.items():
            ratio = f"{t / g32:.0f}x" if g32 else "-"
            lines.append(f"- {label}: {t * 1e3:.2f} ms; GPU kernel "
                         f"{g32 * 1e3 if g32 else float('nan'):.3f} ms: GPU is {ratio} faster")
    if tune_rows:
        grid, sorted_rows = tune_rows
        lines += ["", "## Launch configurations (fraction of copy, standard-normal input)", "",
                  "| unroll | threads/block | blocks/SM | gelu f32 | gelu f64 | backward f32 | backward f64 |",
                  "|---|---|---|---|---|---|---|"]
        for u, tpb, bps in sorted({(r["unroll"], r["tpb"], r["bps"]) for r in grid}):
            cell = {(r["function"], r["dtype"]): r["fraction"] for r in grid
                    if (r["unroll"], r["tpb"], r["bps"]) == (u, tpb, bps)}
            lines.append(f"| {u} | {tpb} | {bps} | " + " | ".join(
                f"{cell[(f, d)]:.0%}" for f in ("gelu", "gelu_backward") for d in DTYPES) + " |")
        lines += ["", "Sorted input (each warp's elements close together), default "
                  "configuration: " + "; ".join(
                      f"{r['function']} {r['dtype']} {r['fraction']:.0%}" for r in sorted_rows)]
    if any(regs.values()):
        lines += ["", "Registers per thread: " + "; ".join(
            f"{k} {', '.join(map(str, v))}" for k, v in sorted(regs.items()))]
    from benchmarks.machine import machine_info
    info = machine_info()
    lines += ["", f"Host: {info['cpu']} ({info['cpu_count']} cores), Python {info['python']}, "
              f"NumPy {info['numpy']}, Numba {info['numba']}"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    try:
        from numba import cuda
        from gelu_numba import gpu
        from gelu_numba.targets import cuda as target
        from gelu_numba.targets.cuda import launch
    except ImportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not cuda.is_available():
        print("error: no CUDA GPU here (set NUMBA_ENABLE_CUDASIM=1 for a dry "
              "run on tiny sizes under the simulator)", file=sys.stderr)
        return 2
    names = [s for s in args.functions.split(",") if s]
    unknown = [s for s in names if not hasattr(gpu, s) or s in ("device", "target")]
    if unknown:
        print(f"error: unknown functions {unknown}; choose from {', '.join(gpu.__all__)}",
              file=sys.stderr)
        return 2
    if target.SIMULATOR:
        # the simulator runs the generator's wrapping uint64 arithmetic in NumPy
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
    dev = device_info(cuda)
    print(f"device: {dev['name']} ({dev['sms']} SMs, cc {dev['cc']})", flush=True)
    peers, missing = {}, {}
    if args.peers != "none":
        from analysis.gpu import peers as gpu_peers
        try:
            peers, missing = gpu_peers.available(
                None if args.peers == "all" else [s for s in args.peers.split(",") if s])
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    accuracy = None
    if args.accuracy:
        import json
        with open(args.accuracy) as fh:
            accuracy = json.load(fh)
    rows = measure(names, args.sizes, args.rounds, args.batch, cuda, gpu,
                   peers=list(peers.values()), dtypes=DTYPES + (HALF if args.half else ()))
    host_n = args.host_n[0] if not target.SIMULATOR else min(args.host_n[0], 64)
    host = (host_costs(cuda, gpu, host_n, args.rounds, args.batch), host_n)
    extra = []
    if args.all_functions:
        others = [s for s in gpu.__all__ if s not in names and s != "device"]
        extra = measure(others, [max(args.sizes)], args.rounds, args.batch, cuda, gpu)
    cpu = None
    if "gelu" in names and args.cpu_n[0] in args.sizes:
        cpu = (cpu_comparison(args.cpu_n[0], rows), args.cpu_n[0])
    tune_rows = tune(cuda, gpu, launch, max(args.sizes), args.rounds, args.batch) if args.tune else None
    regs = registers(gpu, [n for n in ("gelu", "gelu_backward") if n in names],
                     target.SIMULATOR)
    text = report(dev, rows, extra, cpu, tune_rows, regs, argv, missing, accuracy, host)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
