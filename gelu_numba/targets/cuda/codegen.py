"""Kernel sources: the templates of the elementwise kernels and their fields.

Each kernel is a ``@cuda.jit`` function with a grid-stride loop around a
device function ``dev``, generated from a template by :func:`generate`:
contiguous operands of one shape, flattened, run through the 1-D loop
:data:`FLAT_LOOP`; anything else (strided views, broadcasting, other
ranks) through the N-D loop :data:`ELEMENTWISE`, which unravels the flat
index over the output shape and clamps size-1 input dimensions to 0.
Each loaded element is converted to the loop precision (:data:`CAST`:
NumPy's safe-casting rule, as on the CPU) before the device function sees
it.
"""

import math

import numpy as np
from numba import cuda

from gelu_numba.targets import dtypes

#: loop character -> the conversion of each loaded element
CAST = {c: dt.type for c, dt in dtypes.LOOP_DTYPES.items()}


def _index_code(names, ndims, full, out_ndim, flat):
    """Index expressions of each operand inside the loop over ``i``.

    ``flat``: every operand is a 1-D view of the same length (index ``i``).
    Otherwise ``j0 .. j{D-1}`` are the output's indices; an operand of rank
    ``d`` takes the trailing ``d`` of them, clamped to its extent unless it
    has the output's shape (``full``), which broadcasts size-1 dimensions.
    """
    if flat:
        return [], ["i"] * len(names)
    lines = ["r = i"]
    for k in range(out_ndim - 1, 0, -1):
        lines.append(f"j{k} = r % out.shape[{k}]")
        lines.append(f"r = r // out.shape[{k}]")
    lines.append("j0 = r")
    idx = []
    for name, d, f in zip(names, ndims, full):
        js = [f"j{out_ndim - d + k}" for k in range(d)]
        if not f:
            js = [f"min({j}, {name}.shape[{k}] - 1)" for k, j in enumerate(js)]
        idx.append(", ".join(js))
    return lines, idx


def generate(template, scope, **fields):
    """Compile generated kernel source (a ``@cuda.jit`` function named
    ``kernel``) with ``scope`` as its globals."""
    source = template.format(**fields)
    namespace = dict(scope, cuda=cuda, np=np, math=math)
    exec(compile(source, "<gelu_numba.gpu kernel>", "exec"), namespace)
    return cuda.jit(namespace["kernel"])


ELEMENTWISE = """
def kernel({args}, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
{unravel}
        out[{out_index}] = dev({loads})
"""


# Contiguous operands: UNROLL elements per thread and trip, all loaded
# before any is computed.  With one 4-byte load in flight per thread, an
# H100 SM (2048 threads) has 8 KiB outstanding, about half of what its share
# of HBM bandwidth times latency needs, and float32 gelu ran at 46 % of a
# copy's bandwidth (analysis/gpu/throughput.py).
# The indices are unsigned (uint64 throughout: a mixed signed/unsigned sum
# would be a float64 in Numba): with a signed index Numba adds the length to
# a negative one, about 5 integer instructions per array and element that
# ptxas cannot drop (python -m analysis.gpu.sass counts the loop; the rows of
# benchmarks/results/gpu_sass_sm90.md are with unsigned indices).
#
# With ``tables`` (a kernel whose coefficient tables are an argument:
# a catalog record's tabled) the kernel takes them as
# one float64 array ``coef`` after the inputs and reads them into a tuple
# before its loop, where ptxas keeps them in registers instead of moving
# each float64 literal into registers for every element.
FLAT_LOOP = """
def kernel({args}, out):
    n = np.uint64(out.size)
    step = np.uint64(cuda.gridsize(1))
    i = np.uint64(cuda.grid(1))
    s0 = np.uint64(0)
{offsets}
{setup}
    while i + s{last} < n:
{loads}
{stores}
        i += s{unroll}
    while i < n:
        out[i] = dev({tail})
        i += step
"""


def flat_fields(nin, unroll, tables=None, passed=None, shared=None):
    """Fields of :data:`FLAT_LOOP` for ``nin`` inputs.  ``tables``: read into
    registers before the loop (see above); ``passed``: the name of one more
    argument (after the inputs) handed to every call of ``dev`` as it is (a
    table the kernel indexes per element); ``shared``: that table's length
    (float32), copied by each block into its shared memory before the loop
    and handed to ``dev`` from there."""
    names = [f"a{k}" for k in range(nin)]
    pad = " " * 8
    offsets = [f"    s{u} = s{u - 1} + step" for u in range(1, unroll + 1)]
    loads = [f"{pad}v{k}_{u} = cast({n}[i + s{u}])"
             for u in range(unroll) for k, n in enumerate(names)]
    extra, setup, args = "", "", ", ".join(names)
    if tables is not None:
        extra, args = ", t", args + ", coef"
        at, parts = 0, []
        for part in tables:
            parts.append("(" + "".join(f"coef[{at + j}], " for j in range(len(part))) + ")")
            at += len(part)
        setup = "    t = (" + ", ".join(parts) + ",)"
    if passed is not None:
        extra, args = f", {passed}", args + f", {passed}"
    if shared:
        setup = "\n".join([
            f"    here = cuda.shared.array({shared}, np.float32)",
            "    k = cuda.threadIdx.x",
            f"    while k < {shared}:",
            f"        here[k] = {passed}[k]",
            "        k += cuda.blockDim.x",
            "    cuda.syncthreads()"])
        extra = ", here"
    stores = [f"{pad}out[i + s{u}] = dev("
              + ", ".join(f"v{k}_{u}" for k in range(nin)) + extra + ")"
              for u in range(unroll)]
    return {"args": args, "last": unroll - 1, "unroll": unroll,
            "offsets": "\n".join(offsets), "setup": setup, "loads": "\n".join(loads),
            "stores": "\n".join(stores),
            "tail": ", ".join(f"cast({n}[i])" for n in names) + extra, "extra": extra}


# Contiguous float32 operands whose data are all 16-byte aligned: one
# 16-byte load of each input per thread and trip (four elements,
# :mod:`~gelu_numba.targets.cuda.vector_io`), so all of its bytes are in
# flight at once, and one 16-byte store; the last ``n % 4`` elements one
# at a time after the loop, by the first threads of the grid.
VEC4_LOOP = """
def kernel({args}, out):
    n = np.uint64(out.size)
    nv = n // np.uint64(4)
    step = np.uint64(cuda.gridsize(1))
    first = np.uint64(cuda.grid(1))
    i = first
{setup}
    while i < nv:
{loads}
{stores}
        i += step
    i = nv * np.uint64(4) + first
    while i < n:
        out[i] = dev({tail})
        i += step
"""


def vec4_fields(nin, tables=None, passed=None, shared=None):
    """Fields of :data:`VEC4_LOOP`: those of :func:`flat_fields` (same
    arguments, tables and shared copy) with the loop's loads and store
    16 bytes wide."""
    fields = flat_fields(nin, 4, tables, passed, shared)
    extra = fields["extra"]   # what each call of dev takes after the inputs
    pad = " " * 8
    loads = [f"{pad}" + ", ".join(f"v{k}_{u}" for u in range(4)) + f" = load4(a{k}, i)"
             for k in range(nin)]
    results = ", ".join("dev(" + ", ".join(f"v{k}_{u}" for k in range(nin)) + extra + ")"
                        for u in range(4))
    return dict(fields, loads="\n".join(loads), stores=f"{pad}store4(out, i, {results})")


def loop_fields(layout, nin, pad, passed=None):
    """Template fields for ``nin`` inputs ``a0 ..`` and ``out`` laid out as
    ``layout`` (see :func:`~gelu_numba.targets.cuda.inputs.operands`): the
    unravelling lines, the output index and each input's converted load.
    ``passed``: as in :func:`flat_fields`."""
    flat, out_ndim, ndims, full = layout
    names = [f"a{k}" for k in range(nin)]
    lines, idx = _index_code(names + ["out"], ndims + (out_ndim,),
                             full + (True,), out_ndim, flat)
    extra = "" if passed is None else f", {passed}"
    return {"args": ", ".join(names) + extra,
            "unravel": "\n".join(" " * pad + line for line in lines),
            "out_index": idx[-1],
            "loads": ", ".join(f"cast({n}[{j}])" for n, j in zip(names, idx)) + extra}


def flat_layout(nin):
    """The layout (see :func:`~gelu_numba.targets.cuda.inputs.operands`) of
    ``nin`` inputs and the output as 1-D views of one length: the flat
    loop's."""
    return (True, 1, (1,) * nin, (True,) * nin)
