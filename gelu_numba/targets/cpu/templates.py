"""The source templates of the CPU loops, assembled for one arity.

:func:`loop_source` is the ufunc loop (NumPy's inner-loop signature) and
:func:`serial_source`, :func:`split_source` and :func:`in_range_source` the
element loops it runs.  Each returns Python source; :mod:`.loops` executes
it in a namespace that defines every free name the source uses:

* the ufunc loop: ``ty``, ``size``, ``carray``, ``element``, ``apart``,
  ``block``, ``buffer``, ``serial``, ``blocks`` and ``threshold``;
* the element loops: ``kernel``, ``prefer_wide_vectors``,
  ``never_inlined`` and ``uint64``; the split one also ``block``,
  ``in_range``, ``in_range_all``, ``general`` and ``ordinary``.
"""

# The loop: every operand unit-stride, the vectorised element loop
# (``serial``) over the whole run; otherwise the same element loop on
# blocks of BUFFER elements, an operand with unit stride as a view of its
# own memory and any other as a contiguous scratch block on the stack: a
# broadcast scalar (NumPy's zero step) filled once, a strided input
# gathered before each block, a strided output scattered after it (NumPy's
# iterator buffers the same way).  Only a call whose output overlaps an
# input other than element for element (accumulate, reduce) runs the
# element loop one element at a time, in order.  ``serial`` is a function
# of its own (not inlined): one compiled copy of the kernel serves every
# path, and its vector loop keeps its constants in registers and stack
# slots (inlined under the block loop, LLVM rebuilt many of them from
# immediates in every iteration, and the loop ran slower: count its
# instructions with benchmarks.anatomy.vector_loop).  Generated per arity;
# compiled under the file name of the module that compiles it
# (gelu_numba.targets.cpu.loops), so Numba's cache finds it there, and
# closed over the source stamp alone.  The parallel target hands long
# unit-stride runs to ``blocks``.
_LOOP = """
def make(stamp):
    def {qualname}(args, dims, steps, data):
        stamp  # noqa: B018 (the cache key, gelu_numba.targets.stamp)
        n = dims[0]
{steps}
{head}if s{nin} != 0 and {apart}:
{scratch}
            for start in range(0, n, block):
                m = min(block, n - start)
{gathers}
                serial({operands})
                if s{nin} != size:
                    for j in range(m):
                        element(args[{nin}], (start + j) * s{nin}, ty)[0] = b{nin}[j]
        else:
            for i in range(n):
                serial({singles})
    return {qualname}
"""

# every operand unit-stride: the element loop over the whole run (the
# parallel target's blocks from its threshold on)
_UNIT = """        if {unit}:
{views}
{run}
        el"""

_SERIAL_RUN = """            serial({operands})"""

_SERIAL_OR_BLOCKS = """            if n >= threshold:
                blocks({operands})
            else:
                serial({operands})"""

_FILL = """            b{k} = buffer(ty)
            if s{k} == 0:
                v{k} = element(args[{k}], 0, ty)[0]
                for j in range(min(n, block)):
                    b{k}[j] = v{k}"""

_GATHER = """                if s{k} == size:
                    a{k} = carray(element(args[{k}], start * size, ty), m)
                else:
                    if s{k} != 0:
                        for j in range(m):
                            b{k}[j] = element(args[{k}], (start + j) * s{k}, ty)[0]
                    a{k} = carray(b{k}, m)"""

_OUT = """                if s{k} == size:
                    out = carray(element(args[{k}], start * size, ty), m)
                else:
                    out = carray(b{k}, m)"""

# The element loop over unit-stride operands: the ufunc loop calls it on
# the whole run or on each buffered block, each block of the parallel one
# calls it too (gelu_numba.targets.parallel).
# The index is unsigned: for a signed one Numba emits the wraparound
# ``i + size if i < 0``, and where LLVM fails to prove i >= 0 it vectorises
# the loads and stores as gathers and scatters.  It did so for the float64
# ndtr and gelu_grad loops compiled as functions of their own
# (``inline="never"``, as benchmarks.anatomy times kernels): 63 instead of
# 8.4 ns per element on the Intel VM.  The ufuncs' loops were not affected
# (same speed either way, both dtypes), but nothing now depends on that proof.
_SERIAL = """
def {name}({operands}):
    {prefer}
    for i in range(uint64(out.size)):
        out[i] = kernel({loads})
"""

_SERIAL_SPLIT = """
def {name}({operands}):
    {prefer}
    n = out.size
    for start in range(0, n, block):
        stop = min(n, start + block)
        if in_range_all({input_slices}):
            ordinary({slices})
        else:
            general({slices})
"""

_ALL_IN_RANGE = """
def {name}_in_range({inputs}):
    outside = 0
    for i in range(uint64(a0.size)):
        outside += not in_range({loads})
    return outside == 0
"""


def operands(nin):
    """The parameter list of an element loop: ``a0, ..., out``."""
    return ", ".join([f"a{k}" for k in range(nin)] + ["out"])


def _loads(nin):
    return ", ".join(f"a{k}[i]" for k in range(nin))


def serial_source(name, nin, prefer):
    """``def name(a0, ..., out)``: the kernel element by element;
    ``prefer``: the statement that opens the function."""
    return _SERIAL.format(name=name, operands=operands(nin), prefer=prefer, loads=_loads(nin))


def in_range_source(name, nin):
    """``def name_in_range(a0, ...)``: whether every element is in the
    range of the kernel's ordinary form (a vectorised count)."""
    inputs = ", ".join(f"a{k}" for k in range(nin))
    return _ALL_IN_RANGE.format(name=name, inputs=inputs, loads=_loads(nin))


def split_source(name, nin, prefer):
    """``def name(a0, ..., out)``: each block through the ordinary form
    where all its elements are in range, else through the general kernel."""
    return _SERIAL_SPLIT.format(
        name=name, operands=operands(nin), prefer=prefer,
        input_slices=", ".join(f"a{k}[start:stop]" for k in range(nin)),
        slices=", ".join(f"{n}[start:stop]" for n in operands(nin).split(", ")))


def loop_source(qualname, nin, parallel):
    """The ufunc loop ``qualname`` for ``nin`` inputs, inside ``make(stamp)``;
    ``parallel``: long unit-stride runs go to ``blocks``."""
    ops = range(nin + 1)
    pad = " " * 12
    views = "\n".join(f"{pad}{'out' if k == nin else f'a{k}'} = "
                      f"carray(element(args[{k}], 0, ty), n)" for k in ops)
    run = (_SERIAL_OR_BLOCKS if parallel else _SERIAL_RUN).format(operands=operands(nin))
    head = _UNIT.format(unit=" and ".join(f"s{k} == size" for k in ops), views=views, run=run)
    return _LOOP.format(
        qualname=qualname, nin=nin, operands=operands(nin), head=head,
        steps="\n".join(f"        s{k} = steps[{k}]" for k in ops),
        apart=" and ".join(f"apart(args[{k}], s{k}, args[{nin}], s{nin}, n, size)"
                           for k in range(nin)),
        scratch="\n".join([_FILL.format(k=k) for k in range(nin)]
                          + [f"            b{nin} = buffer(ty)"]),
        gathers="\n".join([_GATHER.format(k=k) for k in range(nin)]
                           + [_OUT.format(k=nin)]),
        singles=", ".join(f"carray(element(args[{k}], i * s{k}, ty), 1)" for k in ops))
