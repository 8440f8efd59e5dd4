"""The committed coefficient tables are exactly what the generator makes."""

import numpy as np

from gelu_numba.fitting import make_tables
from gelu_numba.tables import normal_cdf


def test_tables_regenerate_identically():
    fresh = {}
    exec(make_tables.generate(progress=False), fresh)  # noqa: S102 (our own text)
    names = [k for k in vars(normal_cdf) if k.isupper()]
    assert {"R_HI", "H_HI", "EXP_HI", "LN2_1", "Z0_HI"} <= set(names)
    for k in names:
        assert np.array_equal(np.asarray(fresh[k]), np.asarray(getattr(normal_cdf, k))), k


def test_ln2_split_is_exact_enough():
    # k*LN2_1 and k*LN2_2 must be exact for |k| < 2**12: 41-bit parts
    for part in (normal_cdf.LN2_1, normal_cdf.LN2_2):
        m, e = np.frexp(part)
        assert float(m * 2**41) == round(m * 2**41)


def test_float32_tables_regenerate_identically():
    from gelu_numba.fitting import make_tables32
    from gelu_numba.tables import normal_cdf32
    fresh = {}
    exec(make_tables32.generate(progress=False), fresh)  # noqa: S102 (our own text)
    names = [k for k in vars(normal_cdf32) if k.isupper()]
    assert {"R32_P", "R32_Q", "H32_P", "H32_Q", "EXP32", "A32"} <= set(names)
    for k in names:
        assert np.array_equal(np.asarray(fresh[k]), np.asarray(getattr(normal_cdf32, k))), k


def test_float32_rationals_within_their_certified_error():
    # independent spot check of the header's bounds (2**-32.4, 2**-33.6)
    # at points the certification grid does not use
    import mpmath as mp

    from gelu_numba.fitting.rational import horner
    from gelu_numba.tables import normal_cdf32 as t
    mp.mp.prec = 200
    phi0 = 1 / mp.sqrt(2 * mp.pi)

    def R(a):
        return mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2

    z0 = mp.findroot(lambda a: R(a) - phi0 * a, mp.mpf("0.75"))

    def rat(p, q, a):
        return horner([mp.mpf(c) for c in p], a) / horner([mp.mpf(c) for c in q], a)

    rng = np.random.default_rng(3)
    for a in rng.uniform(0, t.A32, 150):
        a = mp.mpf(float(a))
        r = R(a)
        assert abs(rat(t.R32_P, t.R32_Q, a) / r - 1) < mp.mpf(2) ** -32.3
        h = (r - phi0 * a) / (a - z0)
        assert abs(rat(t.H32_P, t.H32_Q, a) / h - 1) < mp.mpf(2) ** -33.5
