"""Memory accesses the kernels shape: 16-byte loads and stores of four
float32 elements, and loads and stores of streamed data with the
evict-first cache hint.

``load4(a, i)`` returns elements ``4i .. 4i+3`` of the contiguous float32
array ``a`` as a 4-tuple, and ``store4(a, i, x0, x1, x2, x3)`` writes them:
in a kernel one ``ld.global.v4.f32`` / ``st.global.v4.f32`` each (PTX), so
that a thread has all 16 bytes in flight at once, which ptxas cannot undo
by interleaving the loads with the arithmetic (as it does with four 4-byte
loads: ``analysis.gpu.sass.bytes_in_flight``).  The access is declared
16-byte aligned: the caller checks that the array's data pointer is, since
a misaligned vector access is an error on the device.

``load_streaming(a, i)`` and ``store_streaming(a, i, v)`` access element
``i`` with ``ld.global.cs`` / ``st.global.cs`` (numba-cuda's ``cuda.ldcs``
and ``cuda.stcs``): data read or written once, which the caches evict
first, so that it does not push a kernel's table out of L1.

Called from Python (numba-cuda's simulator runs kernels as Python), they
all index the array.
"""

from llvmlite import ir
from numba import cuda, types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

#: float32 elements per 16-byte access
LANES = 4
#: the alignment, in bytes, the data pointer of an array accessed so needs
ALIGNMENT = 16


def load4(a, i):
    """Elements ``4i .. 4i+3`` of ``a``."""
    k = LANES * int(i)
    return a[k], a[k + 1], a[k + 2], a[k + 3]


def store4(a, i, x0, x1, x2, x3):
    """Write ``x0 .. x3`` to elements ``4i .. 4i+3`` of ``a``."""
    k = LANES * int(i)
    a[k], a[k + 1], a[k + 2], a[k + 3] = x0, x1, x2, x3


def _check(a, i):
    if not (isinstance(a, types.Array) and a.dtype == types.float32 and a.layout == "C"):
        raise TypingError(f"16-byte accesses take a contiguous float32 array, not {a}")
    if not isinstance(i, types.Integer):
        raise TypingError(f"16-byte accesses take an integer index, not {i}")


def _vector_pointer(context, builder, aryty, array, i):
    """The ``<4 x float>*`` at element ``4 i`` of ``array``."""
    data = context.make_array(aryty)(context, builder, array).data
    first = builder.mul(i, ir.Constant(i.type, LANES))
    vector = ir.VectorType(ir.FloatType(), LANES)
    return builder.bitcast(builder.gep(data, [first]), vector.as_pointer())


@intrinsic
def _load4(typingctx, a, i):
    _check(a, i)
    result = types.UniTuple(types.float32, LANES)

    def codegen(context, builder, signature, args):
        v = builder.load(_vector_pointer(context, builder, signature.args[0], *args),
                         align=ALIGNMENT)
        lanes = [builder.extract_element(v, ir.Constant(ir.IntType(32), k)) for k in range(LANES)]
        return context.make_tuple(builder, signature.return_type, lanes)

    return result(a, i), codegen


@intrinsic
def _store4(typingctx, a, i, x0, x1, x2, x3):
    _check(a, i)

    def codegen(context, builder, signature, args):
        v = ir.Constant(ir.VectorType(ir.FloatType(), LANES), ir.Undefined)
        for k in range(LANES):
            x = context.cast(builder, args[2 + k], signature.args[2 + k], types.float32)
            v = builder.insert_element(v, x, ir.Constant(ir.IntType(32), k))
        builder.store(v, _vector_pointer(context, builder, signature.args[0], *args[:2]),
                      align=ALIGNMENT)
        return context.get_dummy_value()

    return types.none(a, i, x0, x1, x2, x3), codegen


@overload(load4, target="generic")
def _load4_compiled(a, i):
    def impl(a, i):
        return _load4(a, i)

    return impl


@overload(store4, target="generic")
def _store4_compiled(a, i, x0, x1, x2, x3):
    def impl(a, i, x0, x1, x2, x3):
        _store4(a, i, x0, x1, x2, x3)

    return impl


def load_streaming(a, i):
    """Element ``i`` of ``a``, read once."""
    return a[i]


def store_streaming(a, i, v):
    """Write ``v`` to element ``i`` of ``a``, written once."""
    a[i] = v


@overload(load_streaming, target="cuda")
def _load_streaming_compiled(a, i):
    def impl(a, i):
        return cuda.ldcs(a, i)

    return impl


@overload(store_streaming, target="cuda")
def _store_streaming_compiled(a, i, v):
    def impl(a, i, v):
        cuda.stcs(a, i, v)

    return impl
