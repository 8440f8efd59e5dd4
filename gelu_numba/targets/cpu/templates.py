"""The source template of the ufunc loop (NumPy's inner-loop signature),
assembled for one arity.

:func:`loop_source` returns Python source; :mod:`.loops` executes it in a
namespace that defines every free name the source uses: ``ty``, ``size``,
``carray``, ``element``, ``apart``, ``block``, ``buffer``, ``serial`` (the
element loop, :mod:`.elements`), ``blocks`` and ``threshold``.
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

def operands(nin):
    """The parameter list of an element loop: ``a0, ..., out``."""
    return ", ".join([f"a{k}" for k in range(nin)] + ["out"])


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
