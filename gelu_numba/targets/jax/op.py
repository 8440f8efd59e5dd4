"""JAX target: every function of the catalog as one JAX primitive on the
XLA FFI handler of :mod:`gelu_numba.targets.jax.ffi`.

Everything that knows about JAX's primitive, autodiff, batching and
lowering APIs is here; :mod:`gelu_numba.jax` is the user-facing layer.
Imported only by it (it imports jax).

The primitive ``gelu_numba`` (parameter ``function``: a catalog name) takes
operands of one shape and one dtype and gives ``function`` of them
elementwise, in that dtype.  It lowers to a ``stablehlo.custom_call`` of the
FFI target ``gelu_numba`` with the attribute ``function``: the program holds
no Python callback, and ``jax.export`` serialises it as it is.

Rules
    vmap: elementwise, so the batch axes of the operands are moved to the
    front (broadcast where an operand has none) and the primitive runs on
    the batched operands.
    jvp: the package's own derivatives, found by the catalog records'
    links (:func:`_tangent_rule`) and :data:`_JVP`'s formulas.  GELU's tangent
    is the fused ``gelu_backward(t, x)`` (one rounding, as the backward pass
    of :mod:`gelu_numba.torch`), which is linear in ``t``: its transpose is
    ``gelu_backward(ct, x)``, so ``grad`` and ``vjp`` take the same fused
    loop.  Every order of the exact GELU, Phi, phi and the generalised GELU
    differentiates: GELU'' is ``gelu_grad2`` and GELU^(n), n >= 3, is
    phi(x) P_n(x) by JAX operations on ``norm_pdf``
    (:func:`gelu_numba.kernels.formulas.gelu_derivative`, finite wherever
    the exact value is), whose own derivative is -x phi(x).  The
    approximations have their first derivatives (the ``_grad`` ufuncs),
    and from the second on JAX's autodiff of their formulas
    (:mod:`gelu_numba.kernels.formulas`, which the PyTorch target
    differentiates too).  SiLU, x-Cauchy and LaLU have
    their first derivatives; a second raises ``NotImplementedError``.

dtypes
    float32 and float64 run the ufuncs' loops; float16 and bfloat16 the
    correctly rounded 2-byte loops (bits in, bits out) where the function
    has them (its catalog record's ``half``), and otherwise the
    float32 loop between an exact conversion to float32 and one rounding
    back, as :mod:`gelu_numba.torch` does.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from gelu_numba import catalog
from gelu_numba.internals import jax_dtypes, jax_sharding, jax_tracing
from gelu_numba.kernels import formulas
from gelu_numba.targets import dtypes
from gelu_numba.targets.jax import ffi as jax_ffi

#: the accepted dtypes, in the words of the errors
ACCEPTED = "float16, bfloat16, float32 or float64"
_CHAR = {np.dtype(getattr(jnp, name)): c for name, c in dtypes.CHARS.items()}

_PRIMITIVE = Primitive("gelu_numba")


def _abstract(*operands, function):
    # elementwise: the widest operand's shape, dtype, sharding (explicit
    # mesh axes) and varying manual axes (shard_map's check_vma: call()
    # makes the operands' equal, as JAX's own elementwise primitives
    # require); an operand may be 0-d beside others, one value for every
    # element (prepare, _transpose)
    varying = {jax_sharding.varying_axes(o) for o in operands}
    if len(varying) > 1:
        raise ValueError(f"gelu_numba.jax: the operands of {function} vary over different "
                         f"manual mesh axes ({sorted(map(sorted, varying))})")
    widest = max(operands, key=lambda o: o.ndim)
    return widest.update(weak_type=all(o.weak_type for o in operands))


_PRIMITIVE.def_abstract_eval(_abstract)

# The FFI call itself, on the operands with a unit dimension appended: XLA
# partitions it along every other dimension, so a sharded operand runs
# shard by shard, whichever of its dimensions the mesh splits
# (:func:`gelu_numba.internals.jax_sharding.batch_rule`).
_FFI_CALL = Primitive("gelu_numba_ffi")
_FFI_CALL.def_abstract_eval(_abstract)
mlir.register_lowering(_FFI_CALL, jax_sharding.batch_rule({"call_target_name": jax_ffi.TARGET}),
                       platform="cpu")


def _lowered(*operands, function):
    return _FFI_CALL.bind(*(o[..., None] for o in operands), function=function)[..., 0]


_GENERAL = mlir.lower_fun(_lowered, multiple_results=False)


def _broadcast_lowered(*operands, function):
    return _lowered(*jnp.broadcast_arrays(*operands), function=function)


_BROADCAST = mlir.lower_fun(_broadcast_lowered, multiple_results=False)
_SCALAR_OPERAND = jax.ffi.ffi_lowering(jax_ffi.TARGET)


def _lowering(ctx, *operands, function):
    # A 0-d operand beside others (prepare; gelu_backward of one value for
    # every x: _transpose): on one device, the call takes it as it is and
    # the handler reads it with step 0, so XLA writes no broadcast into a
    # buffer first; a partitioned program broadcasts it, for the sharding
    # rules of the general form.
    if len({len(a.shape) for a in ctx.avals_in}) == 1:
        return _GENERAL(ctx, *operands, function=function)
    if jax_sharding.single_device(ctx):
        return _SCALAR_OPERAND(ctx, *operands, function=function)
    return _BROADCAST(ctx, *operands, function=function)


mlir.register_lowering(_PRIMITIVE, _lowering, platform="cpu")


@functools.cache
def _jitted(function):
    return jax.jit(functools.partial(_PRIMITIVE.bind, function=function))


def _impl(*operands, function):
    # compiled alone, as JAX's own primitives are (jax._src.dispatch's
    # apply_primitive), also under jax.disable_jit, where the jitted bind
    # would run eagerly and call this again
    with jax.disable_jit(False):
        return _jitted(function)(*operands)


_PRIMITIVE.def_impl(_impl)


def call(function, *operands):
    """``function`` (a catalog name) of ``operands``: arrays of one shape
    and one floating dtype of :data:`_CHAR`.  Its loop is compiled (or
    loaded from Numba's cache) now, at trace time, if it was not."""
    char = _CHAR[np.dtype(operands[0].dtype)]
    if not jax_ffi.has_loop(function, char):
        wide = call(function, *(o.astype(jnp.float32) for o in operands))
        return wide.astype(operands[0].dtype)
    jax_ffi.loop_address(function, char)
    return _PRIMITIVE.bind(*jax_sharding.vary_alike(operands), function=function)


def prepare(name, operands):
    """``operands`` promoted as ``jax.nn.gelu`` promotes (integers and
    bools to the default float, Python scalars weakly typed:
    :func:`gelu_numba.internals.jax_dtypes.promote_inexact`) and broadcast
    to one shape, but for 0-d operands beside others, which stay 0-d (the
    call reads them with step 0: no broadcast written to memory), or the
    ``TypeError`` naming the accepted dtypes."""
    for o in operands:
        dtype = getattr(o, "dtype", None)
        if dtype is not None and jnp.issubdtype(dtype, jnp.complexfloating):
            raise TypeError(f"gelu_numba.jax.{name}: supports {ACCEPTED} arrays, and "
                            f"integers and bools, which promote to a float (got {dtype})")
    arrays = jax_dtypes.promote_inexact(f"gelu_numba.jax.{name}", operands)
    dtype = np.dtype(arrays[0].dtype)
    if dtype not in _CHAR:
        raise TypeError(f"gelu_numba.jax.{name}: supports {ACCEPTED} arrays, and "
                        f"integers and bools, which promote to a float (got {dtype})")
    shaped = [a for a in arrays if a.ndim]
    if not shaped:
        return arrays
    shape = jnp.broadcast_shapes(*(a.shape for a in shaped))
    return [a if a.ndim == 0 else jnp.broadcast_to(a, shape) for a in arrays]


# --------------------------------------------------------------------- vmap

def _batch(operands, axes, *, function):
    size = next(o.shape[a] for o, a in zip(operands, axes) if a is not None)
    rank = 1 + max(o.ndim - (a is not None) for o, a in zip(operands, axes))
    moved = []
    for o, a in zip(operands, axes):
        if a is None and o.ndim == 0:
            moved.append(o)               # one value for all: stays 0-d
            continue
        o = batching.bdim_at_front(o, a, size)
        # (an example's 0-d operand beside others: its batch axis first)
        moved.append(o.reshape(o.shape[:1] + (1,) * (rank - o.ndim) + o.shape[1:]))
    shape = jnp.broadcast_shapes(*(o.shape for o in moved if o.ndim))
    moved = [o if o.ndim == 0 else jnp.broadcast_to(o, shape) for o in moved]
    return _PRIMITIVE.bind(*moved, function=function), 0


batching.primitive_batchers[_PRIMITIVE] = _batch


# ---------------------------------------------------------------------- jvp

def _where_finite(x, value):
    """``value`` at finite x, 0 at +-inf (where phi(x) times a polynomial
    would be 0 * inf), NaN stays NaN."""
    return jnp.where(jnp.isinf(x), jnp.zeros_like(value), value)


def _phi_prime(x):
    """phi'(x) = -x phi(x)."""
    return _where_finite(x, -x * call(catalog.PDF, x))


def _gelu_higher(order, x):
    """GELU^(order)(x), order >= 3: phi(x) P_n(x) with phi the ``norm_pdf``
    kernel (:func:`gelu_numba.kernels.formulas.gelu_derivative`: finite
    at every finite x, the limit's signed zero where phi underflows and at
    +-inf), in x's dtype or float32 if narrower."""
    w = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    return formulas.gelu_derivative(w, order, _JNP, phi=call(catalog.PDF, w)).astype(x.dtype)


@functools.cache
def _gelu_derivative(order):
    """:func:`_gelu_higher` whose derivative is the next order's, so that
    every order is the same formula, with the limit's signed zero."""
    derivative = jax.custom_jvp(functools.partial(_gelu_higher, order))

    @derivative.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return derivative(x), t * _gelu_derivative(order + 1)(x)

    return derivative


def _scaled(derivative):
    """The tangent rule t * derivative(x) of a one-operand function."""
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return ad.instantiate_zeros(t) * derivative(x)
    return rule


def _fused(backward):
    """The tangent rule of a function with a fused backward (its record's
    :attr:`~gelu_numba.catalog.Function.backward`): ``backward(t, x)``, one
    rounding, linear in ``t``."""
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return call(backward, ad.instantiate_zeros(t), x)
    return rule


def _backward(function, forward):
    """The tangent rule of ``function``, the fused backward ``dy f'(x)`` of
    record ``forward`` (f): ``function(t_dy, x) + dy t_x f''(x)``, f'' its
    derivative's derivative (GELU'': ``gelu_grad2``)."""
    second = catalog.lookup(forward.derivative).derivative

    def rule(primals, tangents):
        (dy, x), (t_dy, t_x) = primals, tangents
        out = jnp.zeros_like(x)
        if type(t_dy) is not ad.Zero:
            out = call(function, t_dy, x)
        if type(t_x) is not ad.Zero:
            out = out + dy * t_x * call(second, x)
        return out
    return rule


def _general_rule(primals, tangents):
    """x Phi(z), z = (x - mu)/sigma: d/dx = Phi(z) + x phi(z)/sigma,
    d/dmu = -x phi(z)/sigma, d/dsigma = -x phi(z) z/sigma; at sigma = 0,
    x H(x - mu): d/dx = H(x - mu), the others 0 (almost everywhere)."""
    (x, mu, sigma), tangents = primals, tangents
    degenerate = sigma == 0
    safe = jnp.where(degenerate, jnp.ones_like(sigma), sigma)
    z = (x - mu) / safe
    w = x * call(catalog.PDF, z) / safe
    step = jnp.where(x > mu, 1.0, jnp.where(x < mu, 0.0, 0.5)).astype(x.dtype)
    partials = (jnp.where(degenerate, step, call(catalog.CDF, z) + w),
                jnp.where(degenerate, 0, -w), jnp.where(degenerate, 0, -w * z))
    out = jnp.zeros_like(x)
    for t, d in zip(tangents, partials):
        if type(t) is not ad.Zero:
            out = out + t * d
    return out


def _undifferentiable(name):
    def rule(primals, tangents):
        raise NotImplementedError(
            f"gelu_numba.jax: {name} has no derivative here (its catalog record links "
            f"none: the package has the first derivatives of SiLU, x-Cauchy and LaLU, "
            f"not their second); differentiate a formula of your own for it")
    return rule


#: the formulas' operations in JAX (kernels.formulas)
def _clamp(w, lo=None, hi=None):
    # the bounds as arrays of w's shape and dtype: jax.experimental.jet's
    # max and min rules take no scalar operand
    def full(bound):
        return None if bound is None else jnp.full_like(w, bound)
    return jnp.clip(w, full(lo), full(hi))


_JNP = formulas.Ops(where=jnp.where, clamp=_clamp,
                    tanh=jnp.tanh, sigmoid=jax.nn.sigmoid, exp=jnp.exp,
                    const=lambda w, value: jnp.asarray(value, w.dtype))


def _formula_second(record):
    """f''(x) of approximation ``record``: JAX's autodiff of its formula
    (:attr:`gelu_numba.catalog.Function.formula`, the formula the PyTorch
    target differentiates), in x's dtype or float32 if narrower, at finite
    x; 0 at +-inf, NaN at NaN.  Its own derivatives are JAX's: every order."""
    f = functools.partial(record.formula, ops=_JNP)

    def first(v):
        return jax.jvp(f, (v,), (jnp.ones_like(v),))[1]

    def second(x):
        finite = jnp.isfinite(x)
        w = jnp.where(finite, x, 0).astype(jnp.promote_types(x.dtype, jnp.float32))
        d = jax.jvp(first, (w,), (jnp.ones_like(w),))[1].astype(x.dtype)
        return jnp.where(finite, d, jnp.where(jnp.isnan(x), x, jnp.zeros_like(x)))
    return second


# GELU and the derivatives of it that have records (GELU', GELU''): the
# derivative of the last, and every one after it, is phi P_n
_GELU_CHAIN = catalog.derivatives(catalog.GELU)
_LAST_RECORDED = _GELU_CHAIN[-1].name
# the derivatives the catalog has no record of, as formulas: GELU's third
# and on, phi' = -x phi, and the generalised GELU's partials
_JVP = {
    _LAST_RECORDED: _scaled(lambda x: _gelu_derivative(len(_GELU_CHAIN))(x)),
    catalog.PDF: _scaled(_phi_prime),
    "gelu_general": _general_rule,
}


def _tangent_rule(function):
    """``function``'s tangent rule, ``rule(primals, tangents)``, from its
    catalog record's links: its fused backward
    (:attr:`gelu_numba.catalog.Function.backward`, GELU's), the rule of a
    fused backward itself, its derivative
    (:attr:`~gelu_numba.catalog.Function.derivative`); else a formula of
    its own (:data:`_JVP`), else, for an approximation's derivative, JAX's
    derivative of its formula."""
    record = catalog.lookup(function)
    if record.backward is not None and jax_ffi.serves(record.backward):
        return _fused(record.backward)
    forward = catalog.forward(function)
    if forward is not None:
        return _backward(function, forward)
    rule = _JVP.get(function)
    if rule is not None:
        return rule
    derivative = record.derivative
    if derivative is not None and jax_ffi.serves(derivative):
        return _scaled(lambda x: call(derivative, x))
    primitive = catalog.antiderivative(function)
    if primitive is not None and primitive.formula is not None:
        return _scaled(_formula_second(primitive))
    return _undifferentiable(function)


def _jvp(primals, tangents, *, function):
    return call(function, *primals), _tangent_rule(function)(primals, tangents)


ad.primitive_jvps[_PRIMITIVE] = _jvp


def _transpose(ct, *operands, function):
    # only a fused backward is linear in an operand (dy): the tangent of GELU
    if (catalog.forward(function) is None or not ad.is_undefined_primal(operands[0])
            or ad.is_undefined_primal(operands[1])):
        raise NotImplementedError(f"gelu_numba.jax: {function} is not linear in its operands")
    dy, x = operands
    if type(ct) is ad.Zero:
        return ad.Zero(dy.aval), None
    # jax.grad of a sum, a mean or a scaled loss: ct is one value
    # broadcast; the call takes that value (its loop reads it with step 0)
    source = jax_tracing.broadcast_source(ct) if dy.aval.ndim == x.ndim else None
    ct_dy = call(function, ct if source is None else source, x)
    if dy.aval.ndim < ct_dy.ndim:       # a 0-d dy: its cotangent sums
        ct_dy = ct_dy.sum().astype(dy.aval.dtype)
    return ct_dy, None


ad.primitive_transposes[_PRIMITIVE] = _transpose


# ---------------------------------------------------------------------- jet

def _taylor(c, u):
    """The Taylor coefficients (unscaled) of f(x(t)) past f(x), from those
    of f'(x(t)), ``c``, and of x(t), ``u`` (u[0] = x): k v_k = sum_j j
    c_(k-j) u_j, as ``jax.experimental.jet``'s rule for a function with a
    known first derivative."""
    return [sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k for k in range(1, len(u))]


def _jet(primals_in, series_in, *, function):
    """``jax.experimental.jet``'s rule: the value is the primitive's; the
    series, from the function's first derivative (the jvp rule's, itself
    expanded by jet), phi's by exp's recurrence (phi(x(t)) = phi(x)
    exp(g(t) - g(0)), g = -x(t)**2/2), and GELU's fused backward as
    dy GELU'(x)."""
    from jax.experimental import jet

    primal = _PRIMITIVE.bind(*primals_in, function=function)
    if function == catalog.PDF:
        (x,), (series,) = primals_in, series_in
        _, g = jet.jet2(lambda v: -0.5 * v * v, (x,), (series,))
        v = [primal]
        for k in range(1, len(series) + 1):
            v.append(sum(j * v[k - j] * g[j - 1] for j in range(1, k + 1)) / k)
        return primal, v[1:]
    forward = catalog.forward(function)
    if forward is not None:
        _, series = jet.jet2(lambda dy, x: dy * call(forward.derivative, x), primals_in,
                             series_in)
        return primal, series
    if len(primals_in) != 1:
        raise NotImplementedError(
            f"gelu_numba.jax: jax.experimental.jet has no rule for {function} (it has one "
            f"for the one-operand functions and gelu_backward)")
    (x,), (series,) = primals_in, series_in

    def derivative(v):
        if function == _LAST_RECORDED:
            # (jet expands the formula itself: in JAX 0.10.2 it leaks a
            # tracer through a custom_jvp function)
            return _gelu_higher(len(_GELU_CHAIN), v)
        return _tangent_rule(function)((v,), (jnp.ones_like(v),))

    c0, cs = jet.jet2(derivative, (x,), (series,))
    return primal, _taylor([c0, *cs], [x, *series])


def _register_jet():
    from jax.experimental import jet
    jet.jet_rules[_PRIMITIVE] = _jet


@functools.cache
def register():
    """Register the FFI target with XLA on the CPU, once: needed before a
    program that calls it is compiled, including one deserialized by
    ``jax.export`` (importing :mod:`gelu_numba.jax` does it)."""
    jax.ffi.register_ffi_target(jax_ffi.TARGET, jax.ffi.pycapsule(jax_ffi.handler().address),
                                platform="cpu")
    jax.ffi.register_ffi_target_as_batch_partitionable(jax_ffi.TARGET)
    _register_jet()
