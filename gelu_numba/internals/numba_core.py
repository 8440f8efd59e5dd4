"""Numba's dispatcher class and CPU typing context.

* ``numba.core.registry.CPUDispatcher``, subclassed by
  :func:`gelu_numba.kernels.primitives.bits32.inline_helper` so that a float32
  helper called from Python (the CUDA simulator runs device code as Python)
  runs its Python body and keeps float32 arithmetic, and by
  :func:`gelu_numba.kernels.primitives.intrinsics.inline`, whose kernels
  are compiled with the CPU target options ``no_cpython_wrapper`` and
  ``no_cfunc_wrapper`` (no wrappers compiled for functions only compiled
  code calls) and give a Python call a twin compiled with them.  If they
  change: a plain Python function for the simulator and ``@njit`` for the
  compiled targets, chosen by the caller; ``@njit`` with wrappers for the
  kernels (first calls slower).
* ``numba.core.typing.templates.make_intrinsic_template``, ``infer`` and
  ``infer_global``: :func:`lowered_on_cpu` registers an ``@intrinsic``'s
  typing function as the CPU's typing and lowering of a plain Python
  function, the way ``@intrinsic`` registers its own handle, so that a
  call compiles to the intrinsic's IR in place, where an ``@overload``
  returning a call of the intrinsic compiled a function of its own for
  every argument types.  If they change: the probe fails by name, and
  ``@overload(function, target="cpu")`` around the intrinsic.
* ``numba.core.dispatcher.Dispatcher``, to tell an already compiled kernel
  from a plain function (:mod:`gelu_numba.targets.cpu.emulated`).  If it
  changes: ``hasattr(kernel, "py_func")``.
* ``numba.core.registry.cpu_target.typing_context.refresh()``, so that an
  ``@overload`` registered while Numba types a caller (a public module's
  ``__getattr__`` runs then) is seen at once (:mod:`gelu_numba.targets.cpu`).
  If it changes: register every overload at import.
* ``numba.np.numpy_support.as_dtype``, a Numba type's NumPy dtype (the dtype
  rule in ``@njit`` callers), and ``from_dtype``, the reverse (the kernel
  signature of :class:`gelu_numba.targets.cuda.fast_launch.FastLaunch`).  If they
  change: a table of the float and integer types.

* ``numba.core.caching.FunctionCache`` and its index file's
  ``_load_index``, ``_load_data`` and ``flush``: whether a function's
  on-disk cache entry can be read, and emptying its index when it cannot
  (:func:`compile_repairing`).  Numba reads the entry with ``pickle`` and
  lets every error out of it, so a damaged index or data file (a disk
  error, a writer killed mid-write) made every later compilation of the
  function fail, in every process, until the files were deleted by hand.
  If they change: the probe fails by name.

* ``CFunc._library._codegen._engine.get_global_value_address``: the
  address of a module global of a compiled ``cfunc`` (the state of the XLA
  FFI handler, :func:`global_address`), whether compiled now or loaded from
  the cache.  If it changes: importing :mod:`gelu_numba.jax` fails with an
  ``AttributeError`` naming the attribute.

* The code library's ``_reload_init``, the functions Numba runs before it
  links a function loaded from its on-disk cache (its own use: starting
  the parallel backend), inherited by every caller's library that links
  it: :func:`before_load`, which publishes the ufunc and element loops
  that ``@njit`` callers call by symbol (:mod:`gelu_numba.targets.cpu.njit`)
  before a user's cached function that calls them is linked.  If it
  changes: the probe fails by name, and ``@njit`` callers can run the
  element loops compiled into their own code.

* ``numba.np.unsafe.ndarray.to_fixed_tuple``, the first ``n`` elements of
  an integer array as a tuple in ``@njit`` code (``n`` a compile-time
  constant): the output shape of ``@njit`` callers on arrays, broadcast
  one dimension at a time.  If it changes: a recursive ``@overload``
  building the tuple.

* The CPU codegen's ``magic_tuple()`` (the triple, CPU name and features
  Numba compiles for, the key of its cache index): whether that target
  converts between float32 and float16 in one instruction
  (:func:`converts_float16`, x86's F16C), asked of LLVM itself.  If it changes: the probe fails by
  name, and the integer code can be chosen everywhere.

``numba.core.types``, ``cgutils`` and ``errors`` are the extension API that
Numba documents for ``@intrinsic`` and ``@overload``; they are used directly.
"""

import functools
import os
import threading
import warnings

import llvmlite.binding as ll

from numba.core import types
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.core.registry import CPUDispatcher, cpu_target
from numba.core.typing import templates
from numba.np.numpy_support import as_dtype, from_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple


def refresh_typing():
    """Load new ``@overload`` declarations into the CPU typing context."""
    cpu_target.typing_context.refresh()


def lowered_on_cpu(function):
    """Decorator: an ``@intrinsic``-style typing function ``definition(typingctx,
    *argument_types)``, returning ``(signature, codegen)`` or None, becomes
    the typing and lowering of calls of ``function`` in code compiled for
    the CPU.  A call is typed by ``definition`` and lowered by its codegen
    in the caller, with the arguments cast to the signature's types: no
    function of its own is compiled for each argument types, as an
    ``@overload`` around an intrinsic's call would be.  Other targets
    (CUDA) keep their ``@overload`` of ``function``."""
    def register(definition):
        template = templates.make_intrinsic_template(
            function, definition, function.__name__, kwargs={"target": "cpu"})
        templates.infer(template)
        templates.infer_global(function, types.Function(template))
        return definition

    return register


#: cache entries already reported as damaged (each is reported once)
_REPORTED = set()
_LOCK = threading.Lock()


def _cache_of(function):
    """The on-disk cache of a dispatcher (its own), or of a Python function
    that a ``cfunc(..., cache=True)`` compiles."""
    cache = getattr(function, "_cache", None)
    return cache if isinstance(cache, FunctionCache) else FunctionCache(function)


def _flush_if_damaged(function):
    """Empty ``function``'s cache index if its entry cannot be read, and
    return the index's path; None if it reads (or there is none)."""
    cache = _cache_of(function)
    files = cache._cache_file
    try:
        for name in files._load_index().values():
            try:
                files._load_data(name)
            except OSError:
                pass   # (Numba's own rule: a missing data file is a miss)
    except Exception:  # noqa: BLE001 (whatever unpickling random bytes raises)
        cache.flush()
        return os.path.join(cache.cache_path, files._index_name)
    return None


def compile_repairing(compile, functions, what):
    """``compile()``; if it raises and the on-disk cache entry of one of
    ``functions`` (dispatchers, or the Python functions of cached ``cfunc``
    loops)
    cannot be read, empty that entry's index, warn once naming its path,
    and ``compile()`` again, which compiles afresh and writes the entry
    anew.  Errors with readable entries are raised as they are."""
    try:
        return compile()
    except Exception as error:  # noqa: BLE001 (re-raised below unless the cache is damaged)
        with _LOCK:
            damaged = [path for path in map(_flush_if_damaged, functions) if path]
            new = [path for path in damaged if path not in _REPORTED]
            _REPORTED.update(damaged)
        if not damaged:
            raise
        if new:
            warnings.warn(f"gelu_numba: Numba's cache entry of {what} could not be read "
                          f"({type(error).__name__}: {error}); compiled afresh and written "
                          f"anew: {', '.join(new)}", RuntimeWarning, stacklevel=3)
        return compile()


def before_load(context, function):
    """Have ``function()`` run in any later process before the code being
    lowered now (and every caller that links it) is loaded from Numba's
    on-disk cache, before its machine code is linked; ``function`` is
    pickled into the cache entry (by reference: a module-level function,
    or a ``functools.partial`` of one)."""
    context.active_code_library._reload_init.add(function)


def publish_symbol(name, address):
    """Make ``name`` resolve to ``address`` in the machine code Numba links
    from now on (LLVM's process-wide symbol table, as Numba does for its
    own C helpers)."""
    ll.add_symbol(name, address)


def global_address(compiled, name):
    """The address of module global ``name`` in the machine code of
    ``cfunc`` ``compiled``."""
    return compiled._library._codegen._engine.get_global_value_address(name)


# (the two conversions, float32 -> float16 bits and back; a target without
# the instructions calls runtime functions, __truncsfhf2 and
# __extendhfsf2, which Numba does not link)
_CONVERSION = """
define i16 @narrow(float %x) {
  %h = fptrunc float %x to half
  %b = bitcast half %h to i16
  ret i16 %b
}
define float @widen(i16 %b) {
  %h = bitcast i16 %b to half
  %x = fpext half %h to float
  ret float %x
}
"""


@functools.cache
def converts_float16(target=None):
    """Whether the CPU Numba compiles for (its name and features: the host,
    or ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``) converts float32 to
    float16 bits and back in one instruction each, rather than calls:
    LLVM's own code for the conversions, compiled once for that target and
    read.  ``target``: ``(triple, cpu name, features)`` of another
    target."""
    triple, cpu, features = target or cpu_target.target_context.codegen().magic_tuple()
    machine = ll.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features)
    module = ll.parse_assembly(_CONVERSION)
    module.triple = triple
    return "call" not in machine.emit_assembly(module)


def probe():
    """Raise ``ImportError`` naming what moved, if anything did."""
    if not (isinstance(CPUDispatcher, type) and issubclass(CPUDispatcher, Dispatcher)):
        raise ImportError("gelu_numba: numba.core.registry.CPUDispatcher is not a "
                          "Dispatcher class in this Numba")
    from numba.core.cpu import CPUTargetOptions
    missing = [o for o in ("no_cpython_wrapper", "no_cfunc_wrapper")
               if not hasattr(CPUTargetOptions, o)]
    if missing:
        raise ImportError(f"gelu_numba: Numba's CPU target has no {', '.join(missing)} option")
    if not callable(getattr(cpu_target.typing_context, "refresh", None)):
        raise ImportError("gelu_numba: Numba's CPU typing context has no refresh()")
    files = FunctionCache(probe)._cache_file
    missing = [n for n in ("_load_index", "_load_data", "flush", "_index_name")
               if not hasattr(files, n)]
    if missing:
        raise ImportError("gelu_numba: Numba's cache index file has no "
                          + ", ".join(missing))
    missing = [n for n in ("make_intrinsic_template", "infer", "infer_global")
               if not callable(getattr(templates, n, None))]
    if missing:
        raise ImportError("gelu_numba: Numba's typing templates have no " + ", ".join(missing))
    codegen = cpu_target.target_context.codegen()
    if not callable(getattr(codegen, "magic_tuple", None)):
        raise ImportError("gelu_numba: Numba's CPU codegen has no magic_tuple()")
    if not isinstance(getattr(codegen.create_library("probe"), "_reload_init", None), set):
        raise ImportError("gelu_numba: Numba's code library has no _reload_init set")


__all__ = ["CPUDispatcher", "Dispatcher", "as_dtype", "from_dtype", "refresh_typing",
           "lowered_on_cpu", "before_load", "compile_repairing", "converts_float16",
           "global_address", "probe", "publish_symbol", "to_fixed_tuple"]
