"""JAX's type promotion of an elementwise function's operands, for
:mod:`gelu_numba.jax`.

Used: ``jax._src.numpy.util.promote_args_inexact`` (what ``jax.nn.gelu``,
``jnp.exp`` and JAX's other inexact elementwise functions call on their
operands).  Why: ``gelu_numba.jax``'s functions take what ``jax.nn.gelu``
takes and give its dtype: integers and bools become the default float
(float32; int64 and uint64 float64 under ``jax_enable_x64``), Python
scalars stay weakly typed, so ``gelu(2.0) * bfloat16_array`` stays
bfloat16, and a non-array raises JAX's ``TypeError``.  If it moves:
:func:`probe` raises ``ImportError`` naming it.
"""


def promote_inexact(name, operands):
    """``operands`` as JAX arrays of one inexact dtype, by JAX's rules
    (not yet broadcast)."""
    from jax._src.numpy.util import promote_args_inexact

    return promote_args_inexact(name, *operands)


def probe():
    """Raise ``ImportError`` naming what moved, if anything did."""
    try:
        from jax._src.numpy.util import promote_args_inexact  # noqa: F401
    except ImportError as error:
        raise ImportError("gelu_numba.jax: jax._src.numpy.util has no promote_args_inexact "
                          f"({error})") from None
