"""The lean float32 kernels with their table in shared memory: a variant
that :mod:`analysis.gpu.throughput` times beside the launched one, and
that a device launches where its measurements chose it
(:func:`~gelu_numba.targets.cuda.variants.measured_choice`).

The launched lean kernel (:mod:`gelu_numba.kernels.lean32`) reads its
table's columns from device memory through L1, where a warp's read of one
column touches as many 32-byte sectors as its lanes' rows fall in
(``python -m analysis.gpu.gathers``: a few for standard-normal data, many
for data spread wider).  Here each block first copies the whole table
(``ROWS * WIDTH`` float32) into its shared memory, then runs the loop the
launched kernel runs on 16-byte aligned operands (16-byte loads and stores,
:data:`~gelu_numba.targets.cuda.codegen.VEC4_LOOP`; the operands must be
so aligned) and the same device function on that copy: the same operations
on the same values, so the same bits; what differs is where a read is
served (shared memory's 32 banks, a conflict costing a pass, against L1's
sectors), and the copy, once per block.
"""

import functools

from gelu_numba import catalog
from gelu_numba.targets.cuda.codegen import CAST, VEC4_LOOP, generate, vec4_fields
from gelu_numba.targets.cuda.variants import lean_device
from gelu_numba.targets.cuda.vector_io import load4, store4


@functools.cache
def kernel(name):
    """The kernel of ``name``'s lean float32 function, its table (the
    argument after the inputs, as the launched kernel's) copied into shared
    memory first."""
    fn = catalog.lookup(name)
    scope = {"dev": lean_device(name), "cast": CAST["f"], "load4": load4, "store4": store4}
    return generate(VEC4_LOOP, scope, **vec4_fields(fn.nin, passed="tab",
                                                    shared=fn.lean32[1].size))
