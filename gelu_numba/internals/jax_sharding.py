"""JAX's lowering of an FFI call that XLA may partition: the attributes
that JAX's own LAPACK calls carry, for :mod:`gelu_numba.targets.jax.op`.

Used: ``jax._src.custom_partitioning_sharding_rule.str_to_sdy_sharding_rule``
and ``sdy_sharding_rule_to_mlir`` (a Shardy ``sdy.sharding_rule`` from an
einsum-like string, as ``jax._src.lax.linalg`` builds it), and the
``mhlo.frontend_attributes`` entry ``num_batch_dims`` that XLA's batch
partitioner reads for a target registered with
``jax.ffi.register_ffi_target_as_batch_partitionable``.  Why: by default
XLA gathers a custom call's operands onto every device and runs it
replicated; these tell both partitioners (Shardy, the default, and GSPMD)
that every dimension is a batch dimension, so each shard runs on its own
device with no collective.  Also the varying manual axes of ``shard_map``
(:func:`varying_axes`).  If they move: :func:`probe` raises
``ImportError`` naming them.
"""

import jax
from jax.interpreters import mlir


def batch_rule(lowering):
    """The lowering rule ``lowering`` (of :func:`jax.ffi.ffi_lowering`'s
    keyword arguments) of an FFI call whose operands and result share
    every dimension but the last, which must be 1: all the others are batch
    dimensions.  (XLA's batch partitioner wants at least one dimension that
    is not: with every dimension a batch dimension it gathers, so the
    elementwise primitive calls this one on its operands with a unit
    dimension appended, :mod:`gelu_numba.targets.jax.op`.)"""
    from jax._src.custom_partitioning_sharding_rule import (
        sdy_sharding_rule_to_mlir, str_to_sdy_sharding_rule,
    )

    def rule(ctx, *operands, **attributes):
        shape = ctx.avals_out[0].shape
        if not all(isinstance(d, int) for d in shape):
            # a symbolic shape (jax.export): the call gets the result's
            # shape as one more operand, which the rules do not map; as
            # JAX's own LAPACK lowerings, such a call is not partitioned
            return jax.ffi.ffi_lowering(**lowering)(ctx, *operands, **attributes)
        rank = len(shape)
        extra = {"mhlo.frontend_attributes": mlir.ir_attribute({"num_batch_dims": str(rank - 1)})}
        if jax.config.jax_use_shardy_partitioner:
            text = ", ".join(["... z"] * len(operands)) + " -> ... z"
            types = [mlir.aval_to_ir_type(ctx.module_context, a) for a in ctx.avals_in]
            extra["sdy.sharding_rule"] = sdy_sharding_rule_to_mlir(
                str_to_sdy_sharding_rule(text), types,
                [mlir.aval_to_ir_type(ctx.module_context, ctx.avals_out[0])])
        return jax.ffi.ffi_lowering(**lowering, extra_attributes=extra)(ctx, *operands, **attributes)
    return rule


def varying_axes(aval):
    """The manual mesh axes that values of ``aval`` vary over inside
    ``shard_map`` (its ``check_vma`` type; empty outside).  Used:
    ``ShapedArray.mat.varying`` (JAX 0.10's manual-axis type, which JAX's
    own elementwise primitives carry from their operands to their result).
    Why: a primitive whose result drops it makes ``shard_map`` accept a
    wrong ``out_specs`` and its ``grad`` fail."""
    return aval.mat.varying


def vary_alike(arrays):
    """``arrays``, each made varying (``jax.lax.pcast(..., to="varying")``)
    over the manual axes that any of them varies over, as JAX's own n-ary
    operations do with their operands."""
    axes = [varying_axes(jax.typeof(a)) for a in arrays]
    union = frozenset().union(*axes)
    return [a if own == union else
            jax.lax.pcast(a, tuple(n for n in union if n not in own), to="varying")
            for a, own in zip(arrays, axes)]


def single_device(ctx):
    """Whether the lowering context ``ctx`` is of a program that runs on
    one device, unpartitioned (``ctx.module_context.axis_context``, a
    ``ShardingContext`` of one device): there a call needs no partitioning
    rule, and an operand may have another shape than the result."""
    return getattr(ctx.module_context.axis_context, "num_devices", None) == 1


def probe():
    """Raise ``ImportError`` naming what moved, if anything did."""
    try:
        from jax._src.custom_partitioning_sharding_rule import (  # noqa: F401
            sdy_sharding_rule_to_mlir, str_to_sdy_sharding_rule,
        )
    except ImportError as error:
        raise ImportError("gelu_numba.jax: jax._src.custom_partitioning_sharding_rule has no "
                          f"str_to_sdy_sharding_rule or sdy_sharding_rule_to_mlir ({error})") from None
    if not hasattr(mlir, "aval_to_ir_type"):
        raise ImportError("gelu_numba.jax: jax.interpreters.mlir has no aval_to_ir_type")
    from jax._src.sharding_impls import ShardingContext
    if getattr(ShardingContext(1), "num_devices", None) != 1:
        raise ImportError("gelu_numba.jax: jax._src.sharding_impls.ShardingContext has no "
                          "num_devices")
    if not isinstance(getattr(getattr(jax.core.ShapedArray((), "float32"), "mat", None),
                              "varying", None), frozenset):
        raise ImportError("gelu_numba.jax: jax.core.ShapedArray has no mat.varying (the "
                          "varying manual axes of shard_map's check_vma)")
