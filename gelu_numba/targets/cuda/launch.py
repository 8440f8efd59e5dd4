"""Launch configuration, and the launch of a compiled kernel.

``THREADS_PER_BLOCK`` threads per block and at most ``BLOCKS_PER_SM``
blocks per multiprocessor of the current device (``grid-stride``: every
thread handles ``n / (blocks * threads)`` elements).  Under the CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``), where every thread is a Python
thread, four blocks of one thread.

The other modules of :mod:`gelu_numba.targets.cuda` read the launch
constants as attributes of this module at each use (``launch.UNROLL``),
so that a value set here (``analysis.gpu.throughput --tune``, the tests)
reaches every kernel and launcher built after it.
"""

import warnings

from numba import cuda
from numba.core import config

try:  # numba-cuda's own warning class (numba-cuda >= 0.2x)
    from numba.cuda.core.errors import NumbaPerformanceWarning
except ImportError:  # pragma: no cover
    from numba.core.errors import NumbaPerformanceWarning

#: True when numba-cuda's simulator runs kernels as Python (no GPU needed)
SIMULATOR = bool(config.ENABLE_CUDASIM)

#: threads per block of every elementwise launch
THREADS_PER_BLOCK = 256
#: grid size cap, in blocks per multiprocessor
BLOCKS_PER_SM = 16
#: elements per thread and trip of the contiguous loop (loaded together)
UNROLL = 4


def launch_config(n):
    """``(blocks, threads_per_block)`` for ``n`` elements on the current
    device (a grid-stride loop covers the rest)."""
    if SIMULATOR:
        return max(1, min(4, n)), 1
    return grid_blocks(n, THREADS_PER_BLOCK, sm_count() * BLOCKS_PER_SM), THREADS_PER_BLOCK


def grid_blocks(n, threads, max_blocks):
    """Blocks of ``threads`` for ``n`` elements: one element per thread up
    to ``max_blocks`` (a grid-stride loop covers the rest), at least one."""
    return max(min(-(-n // threads), max_blocks), 1)


_SMS = {}


def sm_count():
    """Multiprocessors of the current device (cached per device)."""
    dev = cuda.get_current_device()
    sms = _SMS.get(dev.id)
    if sms is None:
        sms = _SMS[dev.id] = dev.MULTIPROCESSOR_COUNT
    return sms


def launch(kernel, blocks, threads, stream, args):
    if blocks >= 128 and not SIMULATOR:
        kernel[blocks, threads, stream](*args)
        return
    with warnings.catch_warnings():
        # a small array needs few blocks: numba-cuda's low-occupancy warning
        # (below 128 blocks) would fire on every call and says nothing the
        # caller can act on
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        if SIMULATOR:
            # the simulator runs kernels on NumPy scalars, which warn on
            # overflow and invalid operations (the SOI generator's intended
            # uint64 wraparound, inf * 0 in an unused branch); a GPU raises
            # no floating-point exceptions.  The filter is process-wide, so
            # it also covers the simulator's thread per CUDA thread.
            warnings.simplefilter("ignore", RuntimeWarning)
        kernel[blocks, threads, stream](*args)
