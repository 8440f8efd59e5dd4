"""CPU target: one scalar kernel per precision in, one NumPy ufunc out.

Loops
    :func:`loop` compiles a kernel into a NumPy inner loop with Numba's
    public ``@cfunc`` (``void loop(char **args, npy_intp *dims, npy_intp
    *steps, void *data)``), cached on disk.  The kernel is inlined by LLVM
    (``alwaysinline``: :data:`gelu_numba.kernels.primitives.JIT_OPTIONS`)
    into the element loop (:func:`serial_loop`) over ``carray`` views,
    which LLVM vectorises (packed FMAs on ``ymm``/``zmm``, no call:
    :func:`loop_llvm`, the gelu-numba repository's ``tests/test_api.py``).
    Every layout runs that loop: unit-stride operands as views of their
    memory, other strides gathered into (the output: scattered from)
    contiguous blocks of :data:`BUFFER` elements on the stack, a broadcast
    scalar filled into one block once; the same kernel, so every layout
    gives the contiguous call's bits (``tests/test_layouts.py``).  The
    element loop of a kernel with an ordinary form (the
    float64 exact functions) runs it on each block of elements all in its
    range (:func:`serial_loop`), and the element loops of the catalog's
    functions (serial, parallel, and those ``@njit`` callers run) are
    compiled with :data:`INTERLEAVE` independent vectors an iteration
    (:func:`interleaved`: the element loop's own compilation; the ufunc
    loop's block copies, and the float16 and emulation loops, are not).

Ufuncs
    :func:`ufunc` registers the float32 loop, then the float64 loop (NumPy
    takes the first one the inputs cast to safely: this order *is* the dtype
    rule of :mod:`gelu_numba.targets.dtypes`) in a real ``numpy.ufunc``
    (:mod:`gelu_numba.targets.numpy_api`), each compiled (or loaded from
    the cache) on the first call for its dtype, and wraps it in :class:`Ufunc`,
    which adds two things and changes nothing else: the ``TypeError`` for
    inputs with no loop names the accepted dtypes, and ``@njit`` code can
    call it (:func:`_register_njit`).  Every argument, keyword and method
    goes to the ``numpy.ufunc`` as given, so NumPy dispatches duck arrays
    (``__array_ufunc__``: Dask, xarray, CuPy, subclasses) and applies
    ``where=``, ``casting=``, ``dtype=``, ``signature=``, ``out=``, its
    warnings and its floating-point error state exactly as for ``np.exp``.

Pickling
    A :class:`Ufunc` pickles by reference, as ``module.name`` of its public
    module; its ``numpy.ufunc`` (which is what ``__array_ufunc__``
    implementations such as Dask receive and ship to workers) as
    ``gelu_numba.targets.cpu.<name>`` (this module's ``__getattr__``).
"""

import contextlib
import functools
import inspect
import threading

import llvmlite.binding as ll
import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.errors import NumbaNotImplementedError, TypingError
from numba.extending import intrinsic, overload

from gelu_numba import catalog
from gelu_numba.internals import numba_core
from gelu_numba.kernels.primitives import inline
from gelu_numba.targets import dtypes, half, numpy_api
from gelu_numba.targets.stamp import STAMP

#: NumPy's inner-loop signature
LOOP_SIGNATURE = types.void(types.CPointer(types.voidptr), types.CPointer(types.intp),
                            types.CPointer(types.intp), types.voidptr)

#: the loops' element types; "e" (float16) loops work on the bit patterns
_NUMBA_TYPES = {"e": types.uint16, "f": types.float32, "d": types.float64}
#: the loops of a ufunc, in registration order (float32 first: the dtype
#: rule of gelu_numba.targets.dtypes); the functions of
#: gelu_numba.targets.half have a float16 loop before them
_CHARS = "fd"
_HALF_CHARS = "efd"
_HALF_DTYPE = np.dtype(np.float16)
#: numpy_api's list of failed compilations (the same list, mutated in
#: place): tested after each call, as a global name for speed
_FAILED = numpy_api.FAILED


@intrinsic
def element(typingctx, base, offset, ty):
    """A typed pointer to the ``ty`` at ``base + offset`` bytes (NumPy's
    steps are in bytes and may be negative or zero)."""
    sig = types.CPointer(ty.dtype)(base, offset, ty)

    def codegen(context, builder, sig, args):
        ptr = builder.gep(builder.bitcast(args[0], ir.IntType(8).as_pointer()), [args[1]])
        return builder.bitcast(ptr, context.get_value_type(sig.return_type))

    return sig, codegen


@intrinsic
def prefer_wide_vectors(typingctx):
    """Let LLVM vectorise the function being compiled with the widest
    vectors the CPU has.

    LLVM's tuning for Intel server cores (Skylake-X to Emerald Rapids)
    prefers 256-bit vectors even where AVX-512 is available, to spare the
    clock on code with few vector instructions; the element loops here are
    nothing but vector arithmetic, and 512-bit vectors make the float64
    loops about 1.6 times faster there (the gelu-numba repository's
    ``benchmarks.anatomy``).  The function attribute
    ``"prefer-vector-width"="512"`` changes that for the loop alone: no
    global setting of Numba or LLVM is touched, and CPUs without AVX-512
    keep their widest legal vectors.
    """
    def codegen(context, builder, sig, args):
        # a string attribute, which llvmlite's checked add() does not know
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def address(typingctx, base):
    """The address ``base`` points to, as an integer."""
    def codegen(context, builder, sig, args):
        return builder.ptrtoint(args[0], context.get_value_type(types.intp))

    return types.intp(base), codegen


@functools.cache
def scratch(count):
    """An intrinsic ``scratch(ty)``: a pointer to ``count`` elements of
    ``ty`` on the stack, allocated in the function's entry block and left
    uninitialised (Numba's ``cgutils.alloca_once`` zero-fills: a memset of
    every block on every call, contiguous calls too, a cost a one-element
    call shows); every element is written before it is read."""
    @intrinsic
    def allocate(typingctx, ty):
        sig = types.CPointer(ty.dtype)(ty)

        def codegen(context, builder, sig, args):
            element_type = context.get_value_type(sig.return_type.dtype)
            with builder.goto_entry_block():
                array = builder.alloca(ir.ArrayType(element_type, count))
            return builder.bitcast(array, element_type.as_pointer())

        return sig, codegen

    return allocate


@njit(inline="always")
def apart(a, sa, out, sout, n, size):
    """Whether operand ``a`` (pointer, byte step) can be read a block ahead
    of ``out`` being written: the two are the same elements, or their byte
    ranges over ``n`` elements are disjoint (not so for NumPy's
    ``accumulate`` and ``reduce``, whose input is the output one element
    back)."""
    pa, po = address(a), address(out)
    if pa == po and sa == sout:
        return True
    reach_a, reach_o = (n - 1) * sa, (n - 1) * sout
    lo_a, hi_a = pa + min(0, reach_a), pa + max(0, reach_a) + size
    lo_o, hi_o = po + min(0, reach_o), po + max(0, reach_o) + size
    return hi_a <= lo_o or hi_o <= lo_a


#: elements per block of the buffered loop, by loop dtype: about 4 KB an
#: operand, so that the four operands of the widest function stay in L1; a
#: multiple of the ordinary form's block and of every vector step
BUFFER = {"e": 1920, "f": 960, "d": 480}


@intrinsic
def never_inlined(typingctx):
    """Keep LLVM from inlining the function being compiled into its
    callers (Numba's ``inline="never"`` is about Numba's own IR inlining;
    LLVM still inlined a small element loop, norm_pdf's float32 one for
    AVX2, into the ufunc loop's two call sites)."""
    def codegen(context, builder, sig, args):
        builder.function.attributes.add("noinline")
        return context.get_dummy_value()

    return types.none(), codegen


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
# instructions with benchmarks.anatomy.vector_loop).  Generated per arity; compiled under this file's
# name, so Numba's cache finds it here, and closed over the source stamp
# alone.  The parallel target hands long unit-stride runs to ``blocks``.
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


# A kernel with an ordinary form (Function.ordinary) runs each block of
# ORDINARY_BLOCK elements through that form when every element is in its
# range (a vectorised count: benchmarks.anatomy times it), else through the
# general kernel: the same bits either way.  The block is a multiple of
# every loop's step (vector lanes times INTERLEAVE), so that no element of
# a full block falls to the scalar remainder loop.
ORDINARY_BLOCK = 240

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


def _operands(nin):
    return ", ".join([f"a{k}" for k in range(nin)] + ["out"])


def serial_loop(kernel, nin, inline, wide=True, ordinary=None, name="serial",
                interleave=False):
    """``serial(a0, ..., out)``: ``out[i] = kernel(a0[i], ...)`` over 1-D
    arrays, an ``@njit`` function with Numba's ``inline`` option
    (``"always"``: its loop becomes the caller's, at the Numba IR level, so
    that :func:`prefer_wide_vectors` marks the caller; cheap, since the
    kernel is a call there, inlined by LLVM; ``"never"``: a function of
    its own, vectorised by LLVM as such).  ``wide=False`` leaves the vector
    width to LLVM's tuning for the CPU (timing comparisons only; see
    :func:`prefer_wide_vectors`).  ``ordinary``: ``(in_range, form)``, the
    kernel's ordinary form (:data:`ORDINARY_BLOCK`).

    ``name``: the function's name, and the stem of those it calls.  A loop
    cached on disk (:func:`loop`, the parallel block runners) must give one
    of its own: the code of a function called and not inlined is stored in
    the caller's cache entry under a symbol made of its name and a counter
    of the compiling process, so two cached loops whose callees share a
    name can be linked to each other's code when both are loaded.

    ``interleave`` (with ``inline="never"``): the function compiles itself
    :func:`interleaved` (the count of an enclosing block, else
    :data:`INTERLEAVE`) whoever calls it, so that its caller, the ufunc
    loop, compiles its own code (the buffered blocks' copies) without."""
    scope = {"kernel": kernel, "prefer_wide_vectors": prefer_wide_vectors,
             "never_inlined": never_inlined, "uint64": np.uint64}
    prefer = "prefer_wide_vectors()" if wide else "pass"
    if inline == "never":
        prefer += "; never_inlined()"
    loads = ", ".join(f"a{k}[i]" for k in range(nin))
    make = (_interleaving if interleave and inline == "never"
            else njit(inline=inline, error_model="numpy"))
    if ordinary is None:
        exec(_SERIAL.format(name=name, operands=_operands(nin), prefer=prefer, loads=loads),
             scope)
        return make(scope[name])
    in_range, form = ordinary
    inputs = ", ".join(f"a{k}" for k in range(nin))
    exec(_ALL_IN_RANGE.format(name=name, inputs=inputs, loads=loads), scope)
    scope.update(
        block=ORDINARY_BLOCK, in_range=in_range,
        in_range_all=njit(inline="always", error_model="numpy")(scope[f"{name}_in_range"]),
        general=serial_loop(kernel, nin, "always", wide, name=f"{name}_general"),
        ordinary=serial_loop(form, nin, "always", wide, name=f"{name}_ordinary"))
    exec(_SERIAL_SPLIT.format(
        name=name, operands=_operands(nin), prefer=prefer,
        input_slices=", ".join(f"a{k}[start:stop]" for k in range(nin)),
        slices=", ".join(f"{n}[start:stop]" for n in _operands(nin).split(", "))), scope)
    return make(scope[name])


#: LLVM's vector interleave count for the element loops: each iteration
#: computes this many vectors of elements, as independent chains.  The exact
#: kernels are long dependency chains (the float64 ones longer than a
#: core's reorder buffer holds); one vector at a time leaves the core waiting
#: on latencies.  Measured, with the loops' instruction counts, by
#: ``python -m benchmarks.anatomy`` (its "one vector an iteration" rows).
INTERLEAVE = 3


@contextlib.contextmanager
def interleaved(count=INTERLEAVE):
    """Compile the element loops with ``count`` vectors an iteration.

    LLVM takes the count as a process-wide option only
    (``-force-vector-interleave``; its loop metadata is out of Numba's
    reach), so it is set for the compilation in the block and set back
    after it, under Numba's global compiler lock: no other compilation, the
    user's or this package's, can see it.  Back means LLVM's default (0:
    its own heuristic), or the count of an enclosing block; a value set by
    the user through llvmlite cannot be read, and is not restored."""
    with global_compiler_lock:
        outer = _INTERLEAVING[0]
        ll.set_option("", f"-force-vector-interleave={count}")
        _INTERLEAVING[0] = count
        try:
            yield
        finally:
            _INTERLEAVING[0] = outer
            ll.set_option("", f"-force-vector-interleave={outer}")


#: the count in force (0: LLVM's default), for nested interleaved() blocks
_INTERLEAVING = [0]


class _InterleavingDispatcher(numba_core.CPUDispatcher):
    """An ``@njit`` function that compiles itself :func:`interleaved` (the
    count of an enclosing block, else :data:`INTERLEAVE`), also when a
    caller's compilation compiles it."""

    def compile(self, sig):
        with interleaved(_INTERLEAVING[0] or INTERLEAVE):
            return super().compile(sig)


def _interleaving(fn):
    return _InterleavingDispatcher(py_func=fn, locals={}, targetoptions={
        "nopython": True, "inline": "never", "error_model": "numpy"})


def _loop_source(qualname, nin, parallel):
    ops = range(nin + 1)
    pad = " " * 12
    views = "\n".join(f"{pad}{'out' if k == nin else f'a{k}'} = "
                      f"carray(element(args[{k}], 0, ty), n)" for k in ops)
    run = (_SERIAL_OR_BLOCKS if parallel else _SERIAL_RUN).format(operands=_operands(nin))
    head = _UNIT.format(unit=" and ".join(f"s{k} == size" for k in ops), views=views, run=run)
    return _LOOP.format(
        qualname=qualname, nin=nin, operands=_operands(nin), head=head,
        steps="\n".join(f"        s{k} = steps[{k}]" for k in ops),
        apart=" and ".join(f"apart(args[{k}], s{k}, args[{nin}], s{nin}, n, size)"
                           for k in range(nin)),
        scratch="\n".join([_FILL.format(k=k) for k in range(nin)]
                          + [f"            b{nin} = buffer(ty)"]),
        gathers="\n".join([_GATHER.format(k=k) for k in range(nin)]
                           + [_OUT.format(k=nin)]),
        singles=", ".join(f"carray(element(args[{k}], i * s{k}, ty), 1)" for k in ops))


def loop_function(kernel, char, nin, qualname, blocks=None, threshold=None, ordinary=None,
                  interleave=False):
    """The Python function of a loop (uncompiled): ``kernel`` (compiled for
    this target by the caller) applied to ``nin`` operands of dtype
    ``char``.  With ``blocks`` (an ``@njit`` function of the unit-stride
    operands), runs of at least ``threshold`` elements go to it.
    ``ordinary``: the kernel's ordinary form, ``interleave``: the element
    loop's compilation (:func:`serial_loop`)."""
    ty = _NUMBA_TYPES[char]
    scope = {"__name__": __name__, "ty": ty, "size": ty.bitwidth // 8,
             "carray": carray, "element": element, "blocks": blocks,
             "threshold": threshold, "apart": apart, "block": BUFFER[char],
             "buffer": scratch(BUFFER[char]),
             "serial": serial_loop(kernel, nin, "never", ordinary=ordinary,
                                   name=f"{qualname}_serial", interleave=interleave)}
    source = _loop_source(qualname, nin, blocks is not None)
    exec(compile(source, __file__, "exec"), scope)
    return scope["make"](STAMP)


def loop(fn, char, cache=True):
    """The ``@cfunc`` loop of catalog function ``fn`` for dtype ``char``
    (``"f"`` or ``"d"``, cached on disk; ``"e"``: float16, the tables of
    :mod:`gelu_numba.targets.half`)."""
    if char == "e":
        return half.loop(fn.name, "float16", fn.nin)
    py = loop_function(inline(fn.kernel(char)), char, fn.nin,
                       f"{fn.name}_{dtypes.LOOP_DTYPES[char]}",
                       ordinary=ordinary_form(fn, char), interleave=True)
    return compile_loop(py, cache)


def compile_loop(py, cache, also=()):
    """The ``@cfunc`` of loop function ``py`` (:func:`loop_function`): the
    serial and parallel loops of the catalog's functions, and the
    emulations'.  A cache entry that cannot be read (of the loop, or of the
    cached dispatchers ``also`` it calls) is written anew, with a warning
    naming it (:func:`numba_core.compile_repairing`)."""
    # error_model="numpy": no ZeroDivisionError check on float division,
    # whose branch would keep LLVM from vectorising the loop
    def compile():
        return cfunc(LOOP_SIGNATURE, cache=cache, error_model="numpy")(py)

    if not cache:
        return compile()
    return numba_core.compile_repairing(compile, [py, *also], py.__name__)


def ordinary_form(fn, char):
    """``(in_range, compiled form)`` of ``fn``'s loop ``char``, or None."""
    found = fn.ordinary_kernel(char)
    return None if found is None else (found[0], inline(found[1]))


def loop_llvm(make_loop, fn, char):
    """The optimised LLVM IR of the loop ``make_loop(fn, char, cache=False)``
    (compiled afresh: a loop loaded from the cache has machine code only).
    A vectorised loop shows packed operations (``<8 x double>``,
    ``@llvm.fma.v8f64``) and no call in its body."""
    return make_loop(fn, char, cache=False).inspect_llvm()


def element_loop(fn, char, name):
    """The element loop of catalog function ``fn`` for dtype ``char``: the
    function the ufunc loop runs on each run or block, and ``@njit``
    callers on contiguous arrays (:func:`serial_loop`, its own function,
    compiled :func:`interleaved`)."""
    return serial_loop(inline(fn.kernel(char)), fn.nin, "never",
                       ordinary=ordinary_form(fn, char), name=name, interleave=True)


def element_loop_llvm(fn, char):
    """The optimised LLVM IR of ``fn``'s ``char`` element loop compiled
    alone: a cheaper look than :func:`loop_llvm`, which compiles the whole
    ufunc loop around it."""
    loop = element_loop(fn, char, f"{fn.name}_{dtypes.LOOP_DTYPES[char]}_serial")
    sig = (types.Array(_NUMBA_TYPES[char], 1, "C"),) * (fn.nin + 1)
    loop.compile(sig)
    return loop.inspect_llvm(sig)


class Ufunc:
    """A NumPy ufunc of gelu_numba: the ``numpy.ufunc`` :attr:`ufunc` with
    a clear ``TypeError`` for unsupported dtypes, callable from ``@njit``.

    Calls and the methods ``reduce``, ``accumulate``, ``reduceat``,
    ``outer``, ``at`` and ``resolve_dtypes`` are the ``numpy.ufunc``'s own;
    so are ``nin``, ``nout``, ``nargs``, ``types``, ``ntypes``,
    ``identity`` and ``signature``.
    """

    #: what the TypeError for inputs without a loop names as accepted
    accepted = dtypes.ACCEPTED

    def __init__(self, raw, name, module, doc, accepted=None):
        self.ufunc = raw
        self.__name__ = self.__qualname__ = name
        self.__module__ = module
        self.__doc__ = doc
        if accepted is not None:
            self.accepted = accepted

    def _explained(self, error, args):
        # NumPy's legacy type resolver (the one of ufuncs made from C
        # loops) raises a plain TypeError when no loop takes the inputs;
        # casting errors (casting='no', a bad out= dtype) and errors of
        # duck arrays stay as they are
        if not str(error).startswith(f"ufunc '{self.__name__}' not supported for the input types"):
            return error
        return dtypes.unsupported(self.__name__, [_dtype_of(a) for a in args[:self.ufunc.nin]],
                                  self.accepted)

    def __call__(self, *args, **kwargs):
        try:
            result = self.ufunc(*args, **kwargs)  # (direct: the per-call cost)
        except TypeError as error:
            self._reraise(error, args)
        if _FAILED:
            numpy_api.raise_failure()
        return result

    def _reraise(self, error, args):
        explained = self._explained(error, args)
        if explained is error:
            raise error
        raise explained from error

    def _method(name):
        def method(self, *args, **kwargs):
            try:
                result = getattr(self.ufunc, name)(*args, **kwargs)
            except TypeError as error:
                self._reraise(error, args)
            if _FAILED:
                numpy_api.raise_failure()
            return result
        method.__name__ = name
        method.__doc__ = f"``numpy.ufunc.{name}`` of :attr:`ufunc`."
        return method

    reduce = _method("reduce")
    accumulate = _method("accumulate")
    reduceat = _method("reduceat")
    outer = _method("outer")
    at = _method("at")
    del _method

    def __getattr__(self, name):
        if name.startswith("__"):  # (pickle probes a bare instance)
            raise AttributeError(name)
        return getattr(self.ufunc, name)

    def __reduce__(self):
        return self.__name__

    def __repr__(self):
        return f"<ufunc '{self.__name__}' ({self.__module__})>"


def _dtype_of(value):
    if isinstance(value, (bool, int, float, complex)):
        return value
    dtype = getattr(value, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else np.asarray(value).dtype


class Registry:
    """The ``numpy.ufunc`` of each catalog function for one target, built
    once (thread-safe), each loop compiled from ``make_loop(fn, char)`` on
    its first call (:class:`~gelu_numba.targets.numpy_api.LazyLoops`) or by
    :meth:`compile`; pickles find them as attributes of module ``home``
    (whose ``__getattr__`` calls :meth:`get`)."""

    def __init__(self, home, make_loop, half=False):
        self.home = home
        self.make_loop = make_loop
        self.half = half  # whether the functions of targets.half get float16 loops
        self._lock = threading.RLock()
        self._built = {}

    def _loops(self, fn):
        with self._lock:
            lazy = self._built.get(fn.name)
            if lazy is None:
                lazy = numpy_api.LazyLoops(fn.name, fn.nin, [
                    (_HALF_DTYPE if c == "e" else dtypes.LOOP_DTYPES[c],
                     functools.partial(self.make_loop, fn, c))
                    for c in self._chars(fn)])
                lazy.ufunc.__module__ = self.home
                self._built[fn.name] = lazy
            return lazy

    def _chars(self, fn):
        return _HALF_CHARS if self.half and fn.half else _CHARS

    def get(self, fn):
        """The ``numpy.ufunc`` of ``fn`` (no loop compiled yet)."""
        return self._loops(fn).ufunc

    def compile(self, fn, char):
        """The compiled ``char`` loop of ``fn``, compiled (or loaded from
        Numba's cache) now if it was not."""
        return self._loops(fn).compile(self._chars(fn).index(char))

    def attribute(self, name):
        """Module ``__getattr__`` of ``home``: the ufunc of catalog ``name``."""
        try:
            fn = catalog.lookup(name)
        except KeyError:
            raise AttributeError(f"module {self.home!r} has no attribute {name!r}") from None
        return self.get(fn)

    def public(self, fn, module, doc):
        """The public :class:`Ufunc` of ``fn``, published in ``module``;
        ``doc`` gets the ufunc's Parameters and Returns (its loops')."""
        doc += _interface(fn, "e" in self._chars(fn))
        wrapper = Ufunc(self.get(fn), fn.name, module, doc)
        _register_njit(wrapper, fn)
        return wrapper


def _interface(fn, half):
    """The ufunc's parameters and return value, NumPy-style (after the
    catalog's mathematics and accuracy); ``half``: it has a float16 loop."""
    names = ", ".join(fn.params)
    inputs = "Real inputs, broadcast together" if fn.nin > 1 else "Real input"
    f16 = "float16 (correctly rounded), " if half else ""
    f16_out = "float16 for float16, bool and 8-bit integer inputs, " if half else ""
    return f"""

    Parameters
    ----------
    {names} : array_like or scalar
        {inputs}: {f16}float32 or float64 (other real dtypes by NumPy's
        safe casting, :mod:`gelu_numba.targets.dtypes`).
    out, where, casting, order, dtype, subok
        As for every NumPy ufunc.

    Returns
    -------
    ndarray or scalar
        The result in the dtype of the loop that ran: {f16_out}float32
        for float32 inputs, float64 for float64 and wider integer inputs.
"""


REGISTRY = Registry(__name__, loop, half=True)
#: the public ufunc of a catalog record (the factory of gelu_numba.targets.publish)
ufunc = REGISTRY.public


def __getattr__(name):
    return REGISTRY.attribute(name)


# ------------------------------------------------------------- @njit callers

_NJIT_SCALAR = """
def impl({args}):
    return cast(kernel({casts}))
"""

# Arrays: same-shape C-contiguous operands run a flat loop (vectorised by
# LLVM), the ufunc's own element loop where every operand is an array of the
# loop's dtype (serial_loop: its ordinary blocks, compiled interleaved);
# anything else broadcasts and walks the indices.
_NJIT_ARRAY = """
def impl({args}):
    shape = np.broadcast_shapes({shapes})
    out = np.empty(shape, cast)
    if {flat_ok}:
        flat = out.reshape(out.size)
{flat_views}
{flat_loop}
        return out
{views}
    for idx in np.ndindex(shape):
        out[idx] = cast(kernel({loads}))
    return out
"""


def _njit_impl(fn, argtys):
    """The implementation of ``fn(*args)`` in ``@njit`` code for these Numba
    argument types: the loop NumPy would select (the dtype rule), then the
    kernel of that precision, element by element."""
    found = []
    for t in argtys:
        scalar = t.dtype if isinstance(t, types.Array) else t
        try:
            found.append(numba_core.as_dtype(scalar))
        except NumbaNotImplementedError:
            raise TypingError(str(dtypes.unsupported(fn.name, [np.dtype(object)]))) from None
    char = dtypes.loop_char(*found)
    if char is None:
        raise TypingError(str(dtypes.unsupported(fn.name, found)))
    names = list(fn.params)
    arrays = [n for n, t in zip(names, argtys) if isinstance(t, types.Array)]
    scope = {"np": np, "kernel": inline(fn.kernel(char)),
             "cast": np.float32 if char == "f" else np.float64}
    if not arrays:
        source = _NJIT_SCALAR.format(args=", ".join(names),
                                     casts=", ".join(f"cast({n})" for n in names))
    else:
        contiguous = all(t.layout == "C" for t in argtys if isinstance(t, types.Array))
        pad = " " * 8
        if contiguous and len(arrays) == fn.nin and all(
                t.dtype == _NUMBA_TYPES[char] for t in argtys):
            scope["serial"] = _njit_serial(fn, char, argtys)
            flat_loop = f"{pad}serial({', '.join(f'{n}_' for n in names)}, flat)"
        else:
            flat_loop = (f"{pad}for i in range(out.size):\n{pad}    flat[i] = cast(kernel("
                         + ", ".join(f"cast({n}_[i])" if n in arrays else f"cast({n})"
                                     for n in names) + "))")
        source = _NJIT_ARRAY.format(
            args=", ".join(names),
            shapes=", ".join(f"{n}.shape" for n in arrays),
            # (reshape types only for C-layout arrays)
            flat_ok=" and ".join(f"{n}.shape == shape" for n in arrays) if contiguous else "False",
            flat_views="\n".join(f"{pad}{n}_ = {n}.reshape({n}.size)" if contiguous else
                                  f"{pad}{n}_ = {n}" for n in arrays),
            flat_loop=flat_loop,
            views="\n".join(f"    {n}_ = np.broadcast_to({n}, shape)" for n in arrays),
            loads=", ".join(f"cast({n}_[idx])" if n in arrays else f"cast({n})"
                            for n in names))
    exec(source, scope)
    return scope["impl"]


def _njit_serial(fn, char, argtys):
    """The ufunc's unit-stride element loop of ``fn`` for ``@njit`` callers
    with these (C-contiguous, loop-dtype) array types, compiled now
    (interleaved: :func:`element_loop`)."""
    loop = element_loop(fn, char, f"{fn.name}_{dtypes.LOOP_DTYPES[char]}_njit")
    flat = [t.copy(ndim=1, layout="C") for t in argtys]
    loop.compile((*flat, types.Array(_NUMBA_TYPES[char], 1, "C")))
    return loop


def _register_njit(wrapper, fn):
    """Make ``wrapper`` callable from ``@njit`` code (scalars and arrays),
    with the kernel's parameter names."""
    params = ", ".join(inspect.signature(fn.k64).parameters)
    scope = {"_njit_impl": _njit_impl, "fn": fn}
    exec(f"def typing({params}):\n    return _njit_impl(fn, ({params},))\n", scope)
    overload(wrapper, inline="always")(scope["typing"])
    # the name may be first looked up while Numba types a caller (a module
    # __getattr__ runs then): load the new declaration into the context now
    numba_core.refresh_typing()
