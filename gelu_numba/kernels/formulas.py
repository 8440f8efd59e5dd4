"""Each approximation of GELU, and the exact GELU's higher derivatives, as
one formula over an array library: the one symbolic source of the targets
that differentiate a formula rather than run a kernel.

The scalar kernels (:mod:`~gelu_numba.kernels.logistic`,
:mod:`~gelu_numba.kernels.erf_as`, :mod:`~gelu_numba.kernels.fitted`)
evaluate these formulas to within an ulp, each by its own careful method;
a formula here is the plain composition of a few array operations, from the
same constants (:mod:`gelu_numba.tables.approximations`), written so that
automatic differentiation gives every derivative.  Each approximation's
catalog record holds its formula (:attr:`gelu_numba.catalog.Function.formula`),
which serves:

* the PyTorch target's derivatives from order 2 on (autograd of the
  formula in float64) and its ONNX subgraph where ONNX has no operator
  (:mod:`gelu_numba.targets.torch.formulas`);
* the JAX target's derivatives from order 2 on
  (:mod:`gelu_numba.targets.jax.op`).

A formula is a function ``f(w, ops)`` of an array ``w`` and an
:class:`Ops`: the array library's ``where``, ``clamp``, ``tanh``,
``sigmoid``, ``exp`` and ``const`` (a constant as an array of ``w``'s dtype:
an exporter may write a bare float as float32, which would change 1.702 in
float64 arithmetic).  Arithmetic is the arrays' own operators.
"""

import functools
from dataclasses import dataclass

from gelu_numba.tables.approximations import AS26_A_HI, AS26_Q, SIGMOID_BETA, TANH_C2, TANH_K
from gelu_numba.tables.normal_cdf import A_MAX, PHI0_HI


@dataclass(frozen=True)
class Ops:
    """The array operations a formula uses, of one array library."""

    where: object      # where(cond, a, b)
    clamp: object      # clamp(w, lo=None, hi=None)
    tanh: object
    sigmoid: object
    exp: object
    const: object      # const(w, value): value as an array of w's dtype


def horner(s, coefficients, ops):
    """sum c_j s**j, at least two coefficients (no zeros start: an exporter
    would fold it into a constant of the traced shape)."""
    c = [ops.const(s, v) for v in coefficients]
    acc = s * c[-1] + c[-2]
    for cj in reversed(c[:-2]):
        acc = acc * s + cj
    return acc


def magnitude(w, cap, ops):
    """min(|w|, cap), differentiable at 0 to every order (|w| by a select,
    so that d|w|/dw = 1 at w = 0, not abs's subgradient 0: the fits and A&S
    are x/2 + g(|x|) with g'(0) = 0, whose second derivative at 0 is g''(0)
    from both sides, which a subgradient 0 would lose).  Clamped where the
    tail is 0 (the fits) or underflows (A&S)."""
    return ops.clamp(ops.where(w < 0, -w, w), hi=cap)


def tail_form(w, cap, tail, ops):
    """x tail (x < 0), x (1 - tail) (x >= 0), where tail >= 0 vanishes from
    x = -cap down.  x is clamped to -cap there (-inf * 0 would be NaN), and
    the select comes before the product: the sign of a zero result is the
    product's (ONNX Runtime's Where returns +0 for a selected -0)."""
    return ops.clamp(w, lo=-cap) * ops.where(w < 0, tail, 1 - tail)


#: |x| from which the tanh form's tanh argument, sqrt(2/pi) (x + 0.044715
#: x**3), exceeds 397: tanh is +-1 there and its derivatives (multiples of
#: sech**2 < 4 exp(-794)) are 0 in float64, so clamping x inside tanh
#: changes no value and no derivative, and keeps x**3 from overflowing
#: (at 1e13 in float32, 1e103 in float64), where the derivatives' 0 * inf
#: would be NaN
TANH_SATURATED = 24.0
#: |x| from which 1.702 |x| > 745 (500: 851): sigma is 0 or 1 there and its
#: derivatives (multiples of exp(-851)) are 0 in float64; clamping x inside
#: sigma keeps 1.702 x from overflowing in float32 near its largest values
SIGMOID_SATURATED = 500.0


def tanh_form(w, ops):
    """0.5 x (1 + tanh(sqrt(2/pi) (v + 0.044715 v**3))), v = x clamped to
    +-TANH_SATURATED; TANH_C2 = 2 sqrt(2/pi)."""
    v = ops.clamp(w, -TANH_SATURATED, TANH_SATURATED)
    return 0.5 * w * (1 + ops.tanh(ops.const(w, 0.5 * TANH_C2[0])
                                   * (v + ops.const(w, TANH_K[0]) * v ** 3)))


def sigmoid_form(w, ops):
    """x sigma(1.702 v), v = x clamped to +-SIGMOID_SATURATED; below -800
    the product underflows to -0 (the factor -800, not -inf: -inf * 0 is
    NaN)."""
    v = ops.clamp(w, -SIGMOID_SATURATED, SIGMOID_SATURATED)
    return ops.clamp(w, lo=-800.0) * ops.sigmoid(ops.const(w, SIGMOID_BETA[0]) * v)


def as26_form(w, ops):
    """0.5 x (1 + erf(x/sqrt 2)), erf by A&S 7.1.26: Phi = K/2 (x < 0),
    1 - K/2 (x >= 0), K = t P(t) exp(-x**2/2), t = 1/(1 + p|x|/sqrt 2);
    from |x| = A_MAX on, K/2 underflows."""
    a = magnitude(w, A_MAX, ops)
    t = 1 / (1 + ops.const(w, AS26_Q[0]) * a)
    k = t * horner(t, AS26_A_HI, ops) * ops.exp(-0.5 * a * a)
    return tail_form(w, A_MAX, 0.5 * k, ops)


def t_form(fit):
    """The formula of fit ``fit``: x T(|x|) for x < 0, x (1 - T(|x|)) for
    x >= 0, T(a) = (L - a)**2 R(S a - 1) below L, 0 from L on."""
    L, S = float(fit["L"]), float(fit["S"])
    p = tuple(float(c) for c in fit["p"])
    q = tuple(float(c) for c in fit["q"])

    def f(w, ops):
        a = magnitude(w, L, ops)
        s = ops.const(w, S) * a - 1
        r = horner(s, p, ops) if len(q) == 1 else horner(s, p, ops) / horner(s, q, ops)
        return tail_form(w, L, (L - a) ** 2 * r, ops)
    return f


@functools.cache
def hermite_gelu(order):
    """The integer coefficients (ascending powers) of P_n with
    GELU^(n)(x) = phi(x) P_n(x), n >= 2: P_2 = 2 - x**2 and
    P_{n+1} = P_n' - x P_n (phi' = -x phi); P_3 = x**3 - 4x."""
    p = [2, 0, -1]
    for _ in range(order - 2):
        derivative = [k * c for k, c in enumerate(p)][1:] + [0, 0]
        shifted = [0] + p
        p = [a - b for a, b in zip(derivative, shifted)]
    while p and p[-1] == 0:
        p.pop()
    return tuple(p)


#: |w| beyond which phi(w) is 0 in float64 (exp(-800) is below the least
#: subnormal, 2**-1074 = exp(-744.4)) and so in float32: there GELU^(n)(w)
#: = phi(w) P_n(w) is the zero of P_n's sign at infinity (P_n's real zeros
#: lie below sqrt(4n + 2), Hermite's bound, checked to order 80: inside 40
#: to order 399), and P_n is evaluated at +-PHI_ZERO, where
#: at |w| = 1e13 (float32) or 1e103 (float64) it would overflow, and
#: 0 * inf be NaN
PHI_ZERO = 40.0


def hermite_value(w, order, ops):
    """P_n(w) at w clamped to [-PHI_ZERO, PHI_ZERO], order >= 3; P_3 =
    w (w - 2)(w + 2), whose zeros are exact (w - 2 and w + 2 are exact
    near them)."""
    v = ops.clamp(w, -PHI_ZERO, PHI_ZERO)
    if order == 3:
        return v * (v - ops.const(v, 2.0)) * (v + ops.const(v, 2.0))
    return horner(v, hermite_gelu(order), ops)


def gelu_derivative(w, order, ops, phi=None):
    """GELU^(order)(w) = phi(w) P_n(w), order >= 3: finite at every finite
    w (:data:`PHI_ZERO`), the limit's signed zero at +-inf, NaN at NaN.
    ``phi``: phi(w) if the caller has it (the JAX target's ``norm_pdf``
    kernel), else exp(-w**2/2)/sqrt(2 pi) by ``ops``."""
    if phi is None:
        phi = ops.exp(-0.5 * w * w) * PHI0_HI
    return phi * hermite_value(w, order, ops)
