"""Coefficients of the float32-arithmetic normal-CDF kernels (GENERATED: do not edit).

Regenerate in the gelu-numba repository with::

    python -m fitting.make_tables32_gpu32

mpmath 1.3.0, 256-bit working precision; t = 1/(1 + 0.5 a),
u = t - 0.5, 0 <= a <= 20.0.  Relative errors as stored (pairs summed),
evaluated exactly on 20000 points:

* R(a) = erfcx(a/sqrt 2)/2 = t P_R(u), degree 12: 2**-28.4
* H(a) = (R(a) - a/sqrt(2 pi))/(a - z0) = P_H(u), degree 12: 2**-29.8

*_PAIRS: the 2 lowest coefficients as float32 (hi, lo), ascending;
*_REST: the others as float32 values, ascending (from u**NCOMP).
Z0_F32: z0 = 0.7517915... (the zero of GELU'(-a)) as three float32 parts;
PHI0_F32: 1/sqrt(2 pi) as a float32 pair.
"""

A_F32 = 20.0
P_T = 0.5
T_C = 0.5
NCOMP = 2

R_F32_PAIRS = ((0.33620399236679077, 1.000989247046391e-08), (0.331404447555542, 6.967751708941705e-09))
R_F32_REST = (0.05759481340646744, -0.1468752771615982, -0.0037624326068907976, 0.10767509043216705, -0.06233455240726471, -0.0516425259411335, 0.10556735098361969, -0.04062313586473465, -0.06674399971961975, 0.08214261382818222, -0.023520473390817642)
H_F32_PAIRS = ((-0.5045492053031921, 2.752791239402086e-08), (-0.2747529447078705, -1.6256603840858475e-09))
H_F32_REST = (-0.11865922063589096, 0.041268251836299896, 0.03740490972995758, -0.033355679363012314, -0.00569792790338397, 0.027701977640390396, -0.016605518758296967, -0.011104115284979343, 0.022134602069854736, -0.00490403501316905, -0.006438588723540306)
Z0_F32 = (0.7517915368080139, -1.211444988769017e-08, 4.291324608861238e-16)
PHI0_F32 = (0.3989422917366028, -1.1335170135851058e-08)
