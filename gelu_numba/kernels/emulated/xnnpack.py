"""XNNPACK's float32 GELUs, emulated.

Code paths (google/XNNPACK @ 75db3c093b6d74fe90b8df82670cd8a01102ba38):
every x86 and ARM configuration selects the ``rational_12_10_div``
microkernels (the FMA variant on AVX2/AVX-512 and NEON-FMA):

* :func:`f32_gelu` (``src/f32-vgelu/rational-12-10.c.in``): erf(x/sqrt 2)
  by an odd rational of degrees 12/10 in x, ``p = x P(x**2)``, ``q =
  Q(x**2)`` by Horner's rule in FMAs, ``erf = p / q`` (a true division),
  on x clamped to +-5.1638283730 (where the rational reaches 1), and
  ``y = (x * 0.5) * (erf + 1)``.  XNNPACK's unary GELU operator (TFLite /
  LiteRT's and ExecuTorch's XNNPACK delegate) runs it.
* :func:`f32_approxgelu` (``src/f32-vapproxgelu``): the same structure
  fitted to the tanh form's ``tanh(sqrt(2/pi)(x + 0.044715 x**3))``, clamp
  +-4.84974098.

The order of the final product and sum is read from the template; the
tests check the emulation against the rational evaluated in float64 with
the same float32 coefficients.  Source-only: XNNPACK is not installable
here.  float16 has its own 6/4 rational in native half arithmetic on ARM
(f16-vgelu); on x86 half tensors are converted to float32, which is the
path emulated here (``half`` None).
"""

import numpy as np

from gelu_numba.kernels.primitives import inline, fma32

_f = np.float32
HALF = _f(0.5)
ONE = _f(1.0)

# f32-vgelu rational-12-10 (FMA variant): clamp, numerator a1..a11 (odd
# powers of x), denominator b2..b10 (even powers, b0 = 1)
GELU_CLAMP = _f(5.1638283730e+00)
GELU_A = tuple(_f(c) for c in (7.9788452387e-01, 6.6972173750e-02, 9.3065137044e-03,
                               3.2973114867e-04, 1.2609783880e-05, 4.5835321316e-08))
GELU_B = tuple(_f(c) for c in (2.5060352683e-01, 2.8431978077e-02, 1.8622842617e-03,
                               7.2267655923e-05, 1.1988805682e-06))
# f32-vapproxgelu rational-12-10 (FMA variant)
APPROX_CLAMP = _f(4.84974098e+00)
APPROX_A = tuple(_f(c) for c in (7.9788458347e-01, 6.0803253204e-02, 7.2898347862e-03,
                                 2.6887017884e-04, 1.4302649106e-05, 4.9544411240e-08))
APPROX_B = tuple(_f(c) for c in (2.4369759858e-01, 2.4381054565e-02, 1.3060354395e-03,
                                 7.6477612311e-05, 1.3433452750e-06))


@inline
def _rational(x, clamp, a, b):
    xc = min(max(x, -clamp), clamp)
    x2 = xc * xc
    p = fma32(x2, a[5], a[4])
    p = fma32(x2, p, a[3])
    p = fma32(x2, p, a[2])
    p = fma32(x2, p, a[1])
    p = fma32(x2, p, a[0])
    p = xc * p
    q = fma32(x2, b[4], b[3])
    q = fma32(x2, q, b[2])
    q = fma32(x2, q, b[1])
    q = fma32(x2, q, b[0])
    q = fma32(x2, q, ONE)
    return p / q


@inline
def f32_gelu(x):
    """xnn_f32_vgelu_ukernel__*_rational_12_10_div."""
    return (x * HALF) * (_rational(x, GELU_CLAMP, GELU_A, GELU_B) + ONE)


@inline
def f32_approxgelu(x):
    """xnn_f32_vapproxgelu_ukernel__*_rational_12_10_div."""
    return (x * HALF) * (_rational(x, APPROX_CLAMP, APPROX_A, APPROX_B) + ONE)


_SRC = ("google/XNNPACK @ 75db3c093b6d74fe90b8df82670cd8a01102ba38: "
        "src/f32-vgelu/rational-12-10.c.in, src/f32-vapproxgelu/rational-12-10.c.in")
_CHECKED = ("source only (XNNPACK is not installable here); tests check it against the "
            "rational in float64 with the same float32 coefficients and XNNPACK's own "
            "test tolerance")

ENTRIES = (
    dict(name="xnnpack_f32_gelu", library="XNNPACK",
         runs="XNNPACK's GELU operator on CPU, float32 (TFLite/LiteRT and ExecuTorch "
              "XNNPACK delegates, x86 and ARM)",
         formula="(x*0.5)*(x P(x^2)/Q(x^2) + 1), rational 12/10 for erf(x/sqrt2), clamp 5.16",
         source=_SRC, forward=f32_gelu, grad=None, half=None, checked=_CHECKED),
    dict(name="xnnpack_f32_approxgelu", library="XNNPACK",
         runs="XNNPACK's approximate (tanh) GELU operator on CPU, float32",
         formula="(x*0.5)*(x P(x^2)/Q(x^2) + 1), rational 12/10 for the tanh form, clamp 4.85",
         source=_SRC, forward=f32_approxgelu, grad=None, half=None, checked=_CHECKED),
)
