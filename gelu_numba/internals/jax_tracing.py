"""What a ``jit`` trace records of a value, for :mod:`gelu_numba.targets.jax.op`.

Used: ``DynamicJaxprTracer.parent`` (``jax._src.interpreters.partial_eval``),
the equation that made a traced value, with its ``primitive`` and
``in_tracers``.  Why: ``jax.grad`` of a sum, of a mean or of a scaled loss
hands GELU's backward a cotangent that is one value broadcast to x's
shape.  XLA would write that broadcast into a buffer before the custom call
reads it (its own GELU fuses it); the backward instead takes the one value
and the loop reads it with step 0.  If it moves: :func:`probe` raises
``ImportError`` naming it (and without it the broadcast is only slower).
"""


def broadcast_source(value):
    """The 0-d value that ``value`` is a ``broadcast_in_dim`` of, where the
    current ``jit`` trace records it; else None."""
    eqn = getattr(value, "parent", None)
    if eqn is None or getattr(eqn.primitive, "name", None) != "broadcast_in_dim":
        return None
    (source,) = eqn.in_tracers[:1] or (None,)
    return source if source is not None and getattr(source, "ndim", None) == 0 else None


def probe():
    """Raise ``ImportError`` naming what moved, if anything did."""
    try:
        from jax._src.interpreters.partial_eval import DynamicJaxprTracer, TracingEqn
    except ImportError as error:
        raise ImportError("gelu_numba.jax: jax._src.interpreters.partial_eval has no "
                          f"DynamicJaxprTracer or TracingEqn ({error})") from None
    if "parent" not in DynamicJaxprTracer.__slots__ or not {"primitive", "in_tracers"} <= set(
            TracingEqn.__init__.__code__.co_varnames):
        raise ImportError("gelu_numba.jax: a jit trace's tracer has no parent equation "
                          "(DynamicJaxprTracer.parent, TracingEqn.primitive/in_tracers)")
