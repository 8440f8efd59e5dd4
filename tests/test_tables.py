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
