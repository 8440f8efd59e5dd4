"""gelu_numba.jax: the exact GELU family for JAX, as XLA FFI calls of
compiled code.

Swapping is one line::

    import gelu_numba.jax as gj
    y = gj.gelu(x)                      # was jax.nn.gelu(x, approximate=False)
    model = nnx.Sequential(nnx.Linear(64, 128, rngs=rngs), gj.GELU(),
                           nnx.Linear(128, 10, rngs=rngs))

Every function of :mod:`gelu_numba` and :mod:`gelu_numba.approximations` is
here under its name, taking arrays (NumPy or JAX, any shape, 0-d included;
operands broadcast together and promote by JAX's rules) and returning a JAX
array.  Each call is a JAX primitive that lowers to one ``custom_call`` of
the XLA FFI target ``"gelu_numba"``: a Numba ``@cfunc`` that reads XLA's
call frame and runs the NumPy ufunc's own loop on XLA's buffers, so the
results are the ufunc's bits, and no Python runs on the call path
(:mod:`gelu_numba.targets.jax.ffi`).  XLA's CPU threads flush subnormals to
zero; the handler clears that mode around its loop, so subnormal results
(gelu(-14.2) in float32) are kept.

Transformations
    ``jit``, ``vmap`` (any batch axes), ``grad``, ``vjp``, ``jvp``,
    ``jacfwd``, ``jacrev``, ``hessian``, ``jax.checkpoint``, ``lax.scan``,
    ``shard_map`` (its ``check_vma`` too), ``jax.disable_jit``,
    ``jax.export`` (symbolic shapes too) and ``jax.experimental.jet``.
    Derivatives come from the package's own functions: GELU' through the
    fused ``gelu_backward(t, x)`` in both modes, GELU'' by ``gelu_grad2``,
    and every higher order, phi(x) P_n(x), by JAX operations on
    ``norm_pdf`` (phi' = -x phi), finite wherever the exact value is.  ``ndtr``, ``norm_pdf``
    and ``gelu_general`` differentiate to every order too; the
    approximations once by their ``_grad`` loops and from the second
    derivative on by JAX's autodiff of their formulas
    (:mod:`gelu_numba.kernels.formulas`, in the input's dtype or float32);
    ``silu``, ``x_cauchy`` and ``lalu`` once (their ``_grad``), and a
    second derivative of them raises ``NotImplementedError``.  ``jet``
    expands every one-operand function whose derivatives are known, and
    ``gelu_backward``; for ``gelu_general`` it raises
    ``NotImplementedError``.

Exported programs
    ``jax.export.export(f, disabled_checks=gelu_numba.jax.EXPORT_CHECKS)``:
    JAX serialises custom calls only with their safety check disabled by
    name.  The program holds the target's name (:data:`TARGET`) and the
    ``function`` attribute, not the code: the process that deserializes and
    runs it must import ``gelu_numba.jax`` first (which registers the
    target with XLA), or XLA stops naming the unknown custom-call target.

Dtypes and accuracy
    Operands promote as ``jax.nn.gelu``'s: integers and bools to the
    default float (float32; int64 to float64 under ``jax_enable_x64``),
    Python scalars weakly typed, complex numbers rejected.
    float32 and float64 (under ``jax_enable_x64``): the ufunc's bits.
    float16 and bfloat16: correctly rounded, forward and backward, for
    ``gelu``, ``gelu_grad`` and ``gelu_backward`` (the 2-byte loops of
    :mod:`gelu_numba.half`); the other functions run in float32 and round
    once to the input's dtype.

Devices
    The CPU.  Arrays on other devices fail when the program is compiled
    (XLA has no ``gelu_numba`` target for them).
"""

import dataclasses
import inspect

import jax as _jax

from gelu_numba import catalog
from gelu_numba.internals import jax_dtypes as _jax_dtypes
from gelu_numba.internals import jax_sharding as _jax_sharding
from gelu_numba.internals import jax_tracing as _jax_tracing
from gelu_numba.internals import xla_ffi as _xla_ffi
from gelu_numba.targets.jax import ffi as _jax_ffi
from gelu_numba.targets.jax import op as _op

_xla_ffi.probe()
_jax_sharding.probe()
_jax_dtypes.probe()
_jax_tracing.probe()
_op.register()

#: the XLA FFI target every function calls
TARGET = _jax_ffi.TARGET
#: ``jax.export.export``'s ``disabled_checks`` for a program that calls
#: these functions: JAX refuses to serialise a custom call whose target it
#: does not know to be stable (this one is as stable as the installed
#: gelu_numba: the process that loads the program needs it too)
EXPORT_CHECKS = (_jax.export.DisabledSafetyCheck.custom_call(TARGET),)

#: every ``approximate`` of :func:`gelu`: False or "none" (the exact GELU),
#: True or "tanh", and the names of :data:`gelu_numba.approximations.APPROXIMATIONS`
#: (``catalog.registered`` records add theirs while registered:
#: :func:`gelu_numba.catalog.approximate_keys`)
APPROXIMATE = catalog.APPROXIMATE


def _approximation(approximate):
    """The catalog record that ``approximate`` selects."""
    if not isinstance(approximate, str):
        # as jax.nn.gelu: any value by its truth (np.False_, 0, 1, ...)
        approximate = "tanh" if approximate else "none"
    try:
        return catalog.approximate(approximate)
    except ValueError:
        raise ValueError("gelu_numba.jax.gelu: approximate must be a bool or one of "
                         f"{', '.join(map(repr, catalog.approximate_keys()))} "
                         f"(got {approximate!r})") from None


def _function(name):
    fn = catalog.lookup(name)

    def function(*operands):
        if len(operands) != fn.nin:
            raise TypeError(f"gelu_numba.jax.{name}() takes {fn.nin} operand"
                            f"{'s' if fn.nin > 1 else ''} ({', '.join(fn.params)}), "
                            f"got {len(operands)}")
        return _op.call(name, *_op.prepare(name, operands))

    function.__name__ = function.__qualname__ = name
    function.__module__ = __name__
    function.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in fn.params])
    function.__doc__ = fn.doc + f"""

    Parameters
    ----------
    {", ".join(fn.params)} : array_like
        float16, bfloat16, float32 or float64 arrays or scalars, broadcast
        together; integers and bools promote to the default float, and
        Python scalars are weakly typed (JAX's promotion, as for
        ``jax.nn.gelu``).

    Returns
    -------
    jax.Array
        In the operands' dtype: the ufunc's bits in float32 and float64
        (see :mod:`gelu_numba.jax` for the 2-byte formats).
"""
    return function


def gelu(x, approximate=False):
    """The GELU, x Phi(x), or an approximation of it.

    Parameters
    ----------
    x : array_like
        float16, bfloat16, float32 or float64; integers and bools promote
        to the default float, as for ``jax.nn.gelu``.
    approximate : bool or str, default False
        A false value (False, 0, ``np.False_``) or ``"none"``: the exact
        GELU (:func:`gelu_numba.gelu`'s bits).  A true value or
        ``"tanh"``: the tanh form, as
        ``jax.nn.gelu(x, approximate=True)`` defines it, computed
        faithfully.  Any other name of
        :data:`gelu_numba.approximations.APPROXIMATIONS` picks that
        approximation (and the key of one added with
        :func:`gelu_numba.catalog.registered`, while it is registered).
        Unlike ``jax.nn.gelu``, the default is the exact GELU.

    Returns
    -------
    jax.Array
        In x's dtype after promotion.
    """
    name = _approximation(approximate).name
    # (a record registered after this import has no entry: made on demand)
    return (_FUNCTIONS.get(name) or _function(name))(x)


def soi_map(key, x):
    """The paper's stochastic 0-I map: x where a Bernoulli(Phi(x)) draw is 1,
    0 where it is 0; its mean is GELU(x).

    Parameters
    ----------
    key : jax.Array
        A JAX PRNG key (``jax.random.key``): the same key, the same draws.
    x : array_like
        float16, bfloat16, float32 or float64.

    Returns
    -------
    jax.Array
        In x's dtype.  Phi(x) is :func:`ndtr`; the draw is
        ``jax.random.bernoulli(key, Phi(x))``.
    """
    (x,) = _op.prepare("soi_map", (x,))
    keep = _jax.random.bernoulli(key, _op.call(catalog.CDF, x))
    return _jax.numpy.where(keep, x, _jax.numpy.zeros_like(x))


@dataclasses.dataclass(frozen=True)
class GELU:
    """The GELU as an activation object: ``GELU(approximate=False)(x)`` is
    ``gelu(x, approximate)``.  Flax takes it wherever it takes an
    activation (``nnx.Sequential``, ``linen.Sequential``, a module's
    ``activation`` field): it is a plain callable, hashable and equal by
    ``approximate``, with no parameters."""

    approximate: object = False

    def __post_init__(self):
        _approximation(self.approximate)

    def __call__(self, x):
        return gelu(x, self.approximate)


_FUNCTIONS = {name: _function(name) for name in _jax_ffi.FUNCTIONS}
globals().update({name: f for name, f in _FUNCTIONS.items() if name != catalog.GELU})


def __getattr__(name):
    # a record added by gelu_numba.catalog.registered after this import
    if not name.startswith("_") and _jax_ffi.serves(name):
        return _function(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["APPROXIMATE", "EXPORT_CHECKS", "GELU", "TARGET", "soi_map", *_FUNCTIONS]
