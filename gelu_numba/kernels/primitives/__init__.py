"""The building blocks of the kernels, one job per module.

* :mod:`.intrinsics`: the operations whose compiled form depends on the
  target, CPU or CUDA (``fma``, ``pow2``, ``split_exponent``,
  ``add_rn``/``mul_rn``, ``nan_to_zero``, ``opaque_zero``, the float16
  conversions, ...), :func:`~.intrinsics.per_target` for an operation with
  a form for each, and how every kernel is compiled (``JIT_OPTIONS``,
  ``inline``);
* :mod:`.double_double`: error-free transformations and double-double
  arithmetic (``two_sum``, ``two_prod``, ``dd_mul``, ``dd_div``, ...), the
  final product rounded once (``scaled_mul``, ``mul_tail_or_complement``)
  and the argument guards that keep its error terms free of spurious flags
  (``clamp_abs``, ``stand_in``, ``restore_inf``);
* :mod:`.polynomials`: polynomials as generated straight-line code
  (``horner``, ``horner_dd``, ``taylor_at_zero``, ``poly_dd_source``,
  ``make_poly_dd``, ``first_piece``, ``poly_dd_table_source``);
* :mod:`.bits32`: float32 arithmetic as other code computes it and bit
  casts (``fma32``, ``float32_bits``, ``float64_bits``,
  ``float32_from_bits``, ``horner32``, ``inline_helper``).

Each module imports only those listed before it (:mod:`.bits32` only
:mod:`.intrinsics`).  Every public name is re-exported here:
``from gelu_numba.kernels.primitives import two_sum``.  Importing the
package registers every overload, so compiled code finds the compiled form
of each operation whichever module its caller imported.
"""

from gelu_numba.kernels.primitives.intrinsics import (
    JIT_OPTIONS, SHIFTER, add_rn, float16_bits_rn, float16_value, fma, inline, mul_rn,
    nan_to_zero, opaque_zero, per_target, pow2, scale_shifted, shifted_int, split_exponent,
    step_bits,
)
from gelu_numba.kernels.primitives.double_double import (
    BIG, SMALLEST_NORMAL, TINY_ARG, clamp_abs, dd_add, dd_div, dd_mul, dd_mul_d, fast_two_sum,
    is_finite, mul_tail_or_complement, normalised, one_minus_dd, restore_inf, scaled_mul,
    stand_in, two_prod, two_sum, unscale,
)
from gelu_numba.kernels.primitives.polynomials import (
    first_piece, horner, horner_dd, make_poly_dd, poly_dd_source, poly_dd_table_source,
    taylor_at_zero,
)
from gelu_numba.kernels.primitives.bits32 import (
    float32_bits, float32_from_bits, float64_bits, fma32, horner32, inline_helper,
)

__all__ = [
    # intrinsics
    "JIT_OPTIONS", "SHIFTER", "add_rn", "float16_bits_rn", "float16_value", "fma", "inline",
    "mul_rn", "nan_to_zero", "opaque_zero", "per_target", "pow2", "scale_shifted",
    "shifted_int", "split_exponent", "step_bits",
    # double_double
    "BIG", "SMALLEST_NORMAL", "TINY_ARG", "clamp_abs", "dd_add", "dd_div", "dd_mul",
    "dd_mul_d", "fast_two_sum", "is_finite", "mul_tail_or_complement", "normalised",
    "one_minus_dd", "restore_inf", "scaled_mul", "stand_in", "two_prod", "two_sum", "unscale",
    # polynomials
    "first_piece", "horner", "horner_dd", "make_poly_dd", "poly_dd_source",
    "poly_dd_table_source", "taylor_at_zero",
    # bits32
    "float32_bits", "float32_from_bits", "float64_bits", "fma32", "horner32", "inline_helper",
]
