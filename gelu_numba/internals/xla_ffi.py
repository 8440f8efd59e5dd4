"""XLA's typed FFI, read from Numba ``nopython`` code: the call frame's
layout, error creation and the handler metadata, for
:mod:`gelu_numba.targets.jax.ffi`.

Used: the C ABI of ``xla/ffi/api/c_api.h`` (``XLA_FFI_API_MAJOR`` 0,
``XLA_FFI_API_MINOR`` 3), as jaxlib ships it under
``jax.ffi.include_dir()``.  The structs are read by byte offset on x86-64
(8-byte pointers and ``size_t``, 4-byte enums): the offsets below are those
of the header's structs under the C layout rules.  Why: XLA's own C++
helpers (``ffi.h``) need a C++ compiler at install time; reading the frame
from a Numba ``@cfunc`` puts compiled code, and no Python, on the call path.

Checked twice: :func:`probe` (at import) parses the installed header and
raises ``ImportError`` if a struct this module reads has other fields, in
another order, or if the API version differs; and every call checks the
frame's ``struct_size`` and the API's major version, returning an FFI error
(never reading past the frame) when they disagree.
"""

import os
import re

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

#: the FFI API version this module reads and reports in the metadata
API_MAJOR, API_MINOR = 0, 3

# XLA_FFI_CallFrame: struct_size, extension_start, api, ctx, stage (enum),
# args (XLA_FFI_Args: struct_size, extension_start, size, types, args),
# rets (the same), attrs (struct_size, extension_start, size, types, names,
# attrs), future.  Its XLA_FFI_STRUCT_SIZE ends at attrs.
FRAME_SIZE, FRAME_EXTENSION, FRAME_API, FRAME_STAGE = 0, 8, 16, 32
ARGS_SIZE, ARGS_TYPES, ARGS = 56, 64, 72
RETS_SIZE, RETS_TYPES, RETS = 96, 104, 112
ATTRS_SIZE, ATTRS_TYPES, ATTRS = 136, 144, 160
FRAME_STRUCT_SIZE = 168
# XLA_FFI_Buffer: struct_size, extension_start, dtype (enum), data, rank, dims
BUFFER_DTYPE, BUFFER_DATA, BUFFER_RANK, BUFFER_DIMS = 16, 24, 32, 40
# XLA_FFI_Extension_Base: struct_size, type (enum), next; the metadata
# extension adds a pointer to XLA_FFI_Metadata: struct_size,
# api_version (XLA_FFI_Api_Version: struct_size, extension_start,
# major_version, minor_version), traits, state_type_id
EXTENSION_TYPE, METADATA = 8, 24
EXTENSION_METADATA = 1
META_VERSION_SIZE, META_VERSION_EXTENSION, META_MAJOR, META_MINOR = 8, 16, 24, 28
META_TRAITS, META_STATE_TYPE = 32, 40
VERSION_STRUCT_SIZE = 24
# XLA_FFI_Api: struct_size, extension_start, api_version (24 bytes),
# internal_api, then the function pointers, XLA_FFI_Error_Create first
API_VERSION_MAJOR = 32
API_ERROR_CREATE, API_ERROR_DESTROY = 48, 64
API_THREADPOOL_SCHEDULE, API_THREADPOOL_NUM_THREADS = 136, 144
# XLA_FFI_Error_Destroy_Args: struct_size, extension_start, error;
# XLA_FFI_ThreadPool_Schedule_Args: struct_size, extension_start, ctx, task,
# data; XLA_FFI_ThreadPool_NumThreads_Args: struct_size, extension_start,
# ctx, num_threads (an int64 out-pointer)
ERROR_DESTROY_ARGS_SIZE, SCHEDULE_ARGS_SIZE, NUM_THREADS_ARGS_SIZE = 24, 40, 32
FRAME_CTX = 24
# XLA_FFI_Error_Create_Args: struct_size, extension_start, message, errc
ERROR_ARGS_SIZE = 28

STAGE_EXECUTE = 3
ARG_BUFFER = RET_BUFFER = 1
ATTR_STRING = 4
ERROR_INVALID_ARGUMENT, ERROR_INTERNAL = 3, 13
#: XLA_FFI_DataType of the loops' dtypes
F16, F32, F64, BF16 = 10, 11, 12, 16

# the fields this module reads, in order, as the header declares them
_LAYOUT = {
    "XLA_FFI_CallFrame": ["struct_size", "extension_start", "api", "ctx", "stage", "args",
                          "rets", "attrs", "future"],
    "XLA_FFI_Args": ["struct_size", "extension_start", "size", "types", "args"],
    "XLA_FFI_Rets": ["struct_size", "extension_start", "size", "types", "rets"],
    "XLA_FFI_Attrs": ["struct_size", "extension_start", "size", "types", "names", "attrs"],
    "XLA_FFI_Buffer": ["struct_size", "extension_start", "dtype", "data", "rank", "dims"],
    "XLA_FFI_Extension_Base": ["struct_size", "type", "next"],
    "XLA_FFI_Metadata_Extension": ["extension_base", "metadata"],
    "XLA_FFI_Metadata": ["struct_size", "api_version", "traits", "state_type_id"],
    "XLA_FFI_Api_Version": ["struct_size", "extension_start", "major_version", "minor_version"],
    "XLA_FFI_Error_Create_Args": ["struct_size", "extension_start", "message", "errc"],
    "XLA_FFI_ByteSpan": ["ptr", "len"],
    "XLA_FFI_Error_Destroy_Args": ["struct_size", "extension_start", "error"],
    "XLA_FFI_ThreadPool_Schedule_Args": ["struct_size", "extension_start", "ctx", "task", "data"],
    "XLA_FFI_ThreadPool_NumThreads_Args": ["struct_size", "extension_start", "ctx",
                                           "num_threads"],
}
_API_HEAD = ["struct_size", "extension_start", "api_version", "internal_api",
             "XLA_FFI_Error_Create", "XLA_FFI_Error_GetMessage", "XLA_FFI_Error_Destroy",
             "XLA_FFI_Handler_Register", "XLA_FFI_Stream_Get", "XLA_FFI_Type_Register",
             "XLA_FFI_ExecutionContext_Get", "XLA_FFI_State_Set", "XLA_FFI_State_Get",
             "XLA_FFI_DeviceMemory_Allocate", "XLA_FFI_DeviceMemory_Free",
             "XLA_FFI_ThreadPool_Schedule", "XLA_FFI_ThreadPool_NumThreads"]


def _fields(body):
    body = re.sub(r"//[^\n]*", "", body)
    names = []
    for declaration in body.split(";"):
        declaration = declaration.strip()
        if not declaration:
            continue
        if declaration.startswith("_XLA_FFI_API_STRUCT_FIELD"):
            names.append(re.search(r"\((\w+)\)", declaration).group(1))
        else:
            names.append(re.search(r"(\w+)\s*(\[[^\]]*\])?$", declaration).group(1))
    return names


def probe(header=None):
    """Raise ``ImportError`` unless jaxlib's ``c_api.h`` declares the API
    version and the struct fields this module reads (``header``: the
    file's path; by default the one of the installed jaxlib)."""
    if header is None:
        import jax.ffi
        header = os.path.join(jax.ffi.include_dir(), "xla", "ffi", "api", "c_api.h")
    try:
        with open(header) as f:
            text = f.read()
    except OSError as error:
        raise ImportError(f"gelu_numba.jax: cannot read XLA's FFI header {header} "
                          f"({error}); the call-frame layout cannot be checked") from None
    found = {m.group(1): int(m.group(2))
             for m in re.finditer(r"#define XLA_FFI_API_(MAJOR|MINOR) (\d+)", text)}
    problems = []
    if (found.get("MAJOR"), found.get("MINOR")) != (API_MAJOR, API_MINOR):
        problems.append(f"API version {found.get('MAJOR')}.{found.get('MINOR')}, "
                        f"not {API_MAJOR}.{API_MINOR}")
    bodies = {m.group(1): m.group(2)
              for m in re.finditer(r"struct (\w+) \{([^{}]*)\}", text)}
    for struct, fields in {**_LAYOUT, "XLA_FFI_Api": _API_HEAD}.items():
        have = _fields(bodies[struct]) if struct in bodies else None
        if have is None or have[:len(fields)] != fields:
            problems.append(f"{struct} has fields {have}, not {fields}")
    if problems:
        raise ImportError("gelu_numba.jax: XLA's FFI (" + header + ") is not the one this "
                          "package reads: " + "; ".join(problems))


# ------------------------------------------------------ nopython primitives

#: the name of a handler's state: a module global of ``STATE_WORDS`` int64s
#: that the compiled code reads (:func:`state`) and the process writes after
#: loading it (the addresses of its own table and callback), so that the
#: code holds no address and can be cached on disk
STATE = "gelu_numba_xla_ffi_state"
STATE_WORDS = 8


@intrinsic
def state(typingctx, k):
    """Word ``k`` of the handler's state (see :data:`STATE`)."""
    def codegen(context, builder, signature, args):
        module = builder.module
        array = ir.ArrayType(ir.IntType(64), STATE_WORDS)
        variable = module.globals.get(STATE)
        if variable is None:
            variable = ir.GlobalVariable(module, array, STATE)
            variable.initializer = ir.Constant(array, None)
        return builder.load(builder.gep(variable, [ir.Constant(ir.IntType(32), 0), args[0]]))
    return types.int64(types.int64), codegen


@intrinsic
def load(typingctx, address, ty):
    """The ``ty`` (a Numba number type) stored at integer ``address``."""
    value = ty.instance_type

    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], context.get_value_type(value).as_pointer())
        return builder.load(pointer)
    return value(types.int64, ty), codegen


@intrinsic
def store(typingctx, address, value):
    """Store ``value`` at integer ``address``, in its own type."""
    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], context.get_value_type(value).as_pointer())
        builder.store(args[1], pointer)
    return types.void(types.int64, value), codegen


@intrinsic
def text(typingctx, message):
    """The address of a constant NUL-terminated copy of the string literal
    ``message`` in the compiled module."""
    if not isinstance(message, types.StringLiteral):
        return None
    literal = message.literal_value

    def codegen(context, builder, signature, args):
        pointer = context.insert_const_string(builder.module, literal)
        return builder.ptrtoint(pointer, ir.IntType(64))
    return types.int64(message), codegen


@intrinsic
def create_error(typingctx, api, code, message):
    """``api->XLA_FFI_Error_Create({message, code})``: the ``XLA_FFI_Error*``
    a handler returns (``message``: a constant C string's address)."""
    def codegen(context, builder, signature, args):
        api_, code_, message_ = args
        i8p, i64, i32 = ir.IntType(8).as_pointer(), ir.IntType(64), ir.IntType(32)
        struct = cgutils_alloca(builder, 4)
        builder.store(ir.Constant(i64, ERROR_ARGS_SIZE), struct)
        builder.store(ir.Constant(i64, 0), builder.gep(struct, [ir.Constant(i32, 1)]))
        builder.store(message_, builder.gep(struct, [ir.Constant(i32, 2)]))
        builder.store(builder.zext(builder.trunc(code_, i32), i64),
                      builder.gep(struct, [ir.Constant(i32, 3)]))
        slot = builder.inttoptr(builder.add(api_, ir.Constant(i64, API_ERROR_CREATE)),
                                i8p.as_pointer())
        fnty = ir.FunctionType(i8p, [i64.as_pointer()])
        fn = builder.bitcast(builder.load(slot), fnty.as_pointer())
        return builder.ptrtoint(builder.call(fn, [struct]), i64)
    return types.int64(types.int64, types.int64, types.int64), codegen


def cgutils_alloca(builder, words):
    """``words`` zeroed int64s on the stack, in the function's entry block."""
    from numba.core import cgutils
    i64 = ir.IntType(64)
    pointer = cgutils.alloca_once(builder, i64, size=ir.Constant(i64, words))
    for k in range(words):
        builder.store(ir.Constant(i64, 0), builder.gep(pointer, [ir.Constant(i64, k)]))
    return pointer


@intrinsic
def call_loop(typingctx, loop, data, a0, a1, a2, a3, n, nops, itemsize, scalars):
    """NumPy inner loop ``loop(args, dims, steps, data)`` on ``nops``
    operands of ``itemsize`` bytes, ``n`` elements (``a0`` ... ``a3``: the
    operands' addresses, the unused ones 0), contiguous but for those of
    bit mask ``scalars`` (bit k: operand k is one element, read with step
    0, NumPy's broadcast)."""
    def codegen(context, builder, signature, args):
        loop_, data_, *operands, n_, nops_, itemsize_, scalars_ = args
        i64, i8p = ir.IntType(64), ir.IntType(8).as_pointer()
        pointers = cgutils_alloca(builder, 4)
        steps = cgutils_alloca(builder, 4)
        dims = cgutils_alloca(builder, 1)
        zero = ir.Constant(i64, 0)
        for k, a in enumerate(operands):
            builder.store(a, builder.gep(pointers, [ir.Constant(i64, k)]))
            bit = builder.and_(builder.lshr(scalars_, ir.Constant(i64, k)), ir.Constant(i64, 1))
            step = builder.select(builder.icmp_unsigned("!=", bit, zero), zero, itemsize_)
            builder.store(step, builder.gep(steps, [ir.Constant(i64, k)]))
        builder.store(n_, dims)
        fnty = ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), i64.as_pointer(),
                                               i64.as_pointer(), i8p])
        fn = builder.inttoptr(loop_, fnty.as_pointer())
        builder.call(fn, [builder.bitcast(pointers, i8p.as_pointer()), dims, steps,
                          builder.inttoptr(data_, i8p)])
    sig = types.void(*([types.int64] * 10))
    return sig, codegen


@intrinsic
def call_int2(typingctx, function, a, b):
    """``int64 function(int64 a, int64 b)`` at address ``function``."""
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64, i64])
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), list(args[1:]))
    return types.int64(types.int64, types.int64, types.int64), codegen


@intrinsic
def call_int1(typingctx, function, a):
    """``int64 function(int64 a)`` at address ``function`` (the FFI API's
    functions take a pointer to their arguments and return an error
    pointer; a task and ``free`` return nothing, read as 0)."""
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64])
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1]])
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def stack(typingctx, words):
    """The address of ``words`` (a literal) zeroed int64s on the calling
    function's stack, valid until it returns."""
    if not isinstance(words, types.IntegerLiteral):
        return None
    count = words.literal_value

    def codegen(context, builder, signature, args):
        return builder.ptrtoint(cgutils_alloca(builder, count), ir.IntType(64))
    return types.int64(words), codegen


@intrinsic
def atomic_add(typingctx, address, value):
    """Atomically add ``value`` to the int64 at ``address`` (sequentially
    consistent); the value before."""
    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        return builder.atomic_rmw("add", pointer, args[1], "seq_cst")
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def atomic_load(typingctx, address):
    """The int64 at ``address``, read atomically (sequentially consistent)."""
    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        return builder.load_atomic(pointer, "seq_cst", 8)
    return types.int64(types.int64), codegen


@intrinsic
def spin_pause(typingctx):
    """The x86 ``pause`` hint of a spin-wait loop."""
    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic(
            "llvm.x86.sse2.pause", fnty=ir.FunctionType(ir.VoidType(), []))
        builder.call(fn, [])
    return types.void(), codegen


@intrinsic
def call_madvise(typingctx, function, start, length, advice):
    """``int madvise(void *start, size_t length, int advice)`` at address
    ``function``."""
    def codegen(context, builder, signature, args):
        i64, i32 = ir.IntType(64), ir.IntType(32)
        fnty = ir.FunctionType(i32, [ir.IntType(8).as_pointer(), i64, i32])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        result = builder.call(fn, [builder.inttoptr(args[1], ir.IntType(8).as_pointer()), args[2],
                                   builder.trunc(args[3], i32)])
        return builder.sext(result, i64)
    return types.int64(types.int64, types.int64, types.int64, types.int64), codegen


# MXCSR bits 15 (FTZ: flush results to zero) and 6 (DAZ: read denormals
# as zero).  XLA's CPU threads run with both set; the loops give IEEE
# results (subnormal outputs, such as gelu(-14.2) = -7e-45 in float32,
# included) only with both clear.
FLUSH_BITS = (1 << 15) | (1 << 6)


@intrinsic
def mxcsr(typingctx):
    """The SSE control and status register."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        slot = builder.alloca(i32)
        fn = builder.module.declare_intrinsic(
            "llvm.x86.sse.stmxcsr", fnty=ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()]))
        builder.call(fn, [builder.bitcast(slot, ir.IntType(8).as_pointer())])
        return builder.zext(builder.load(slot), ir.IntType(64))
    return types.int64(), codegen


@intrinsic
def set_mxcsr(typingctx, value):
    """Write the SSE control and status register."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        slot = builder.alloca(i32)
        builder.store(builder.trunc(args[0], i32), slot)
        fn = builder.module.declare_intrinsic(
            "llvm.x86.sse.ldmxcsr", fnty=ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()]))
        builder.call(fn, [builder.bitcast(slot, ir.IntType(8).as_pointer())])
    return types.void(types.int64), codegen
