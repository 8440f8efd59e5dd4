"""Coefficients of gelu_half32 (GENERATED: do not edit).

Regenerate with ``python -m fitting.make_half`` in the gelu-numba repository
(``--check`` compares); method and error in its fitting/make_half.py.
"""

#: t = 1/(1 + P a); chosen from (0.3, 0.325, 0.35, 0.375, 0.4) (float32)
P = 0.3499999940395355  # 0x1.6666660000000p-2
#: P(t), ascending powers of t, float32 values: Phi(-a) = exp(-a^2/2) t P(t)
COEFFS = (
    0.13962124288082123,  # 0x1.1df1be0000000p-3
    0.13986453413963318,  # 0x1.1e714c0000000p-3
    0.11981413513422012,  # 0x1.eac23a0000000p-4
    0.10558000952005386,  # 0x1.b074aa0000000p-4
    -0.02327577956020832,  # -0x1.7d59b20000000p-6
    0.1594098061323166,  # 0x1.4678a60000000p-3
    -0.2559162676334381,  # -0x1.060eea0000000p-2
    0.14406761527061462,  # 0x1.270cec0000000p-3
    -0.029165294021368027,  # -0x1.ddd81c0000000p-6
)
#: the fit covers 0 <= a <= A
A = 16.0
#: certified max |t P(t) / (erfcx(a/sqrt 2)/2) - 1| on [0, A], coefficients as
#: stored, and the a where it occurs
MAX_REL_ERROR = 6.454045252851327e-08
MAX_REL_ERROR_AT = 0.07123479396878145
