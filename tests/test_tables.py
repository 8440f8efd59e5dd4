"""The committed coefficient tables are exactly what the generator makes."""

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from numba import njit

from fitting import make_tables
from gelu_numba.tables import normal_cdf

pytestmark = pytest.mark.proof


def test_tables_regenerate_identically():
    fresh = {}
    exec(make_tables.generate(progress=False), fresh)  # noqa: S102 (our own text)
    names = [k for k in vars(normal_cdf) if k.isupper()]
    assert {"R_PIECES", "H_PIECES", "EXP_PIECES", "LN2_1", "Z0_HI"} <= set(names)
    for k in names:
        assert fresh[k] == getattr(normal_cdf, k), k


@pytest.mark.parametrize("dd_variable", [True, False])
def test_generated_polynomial_is_the_chosen_piece_in_double_double(dd_variable):
    # make_poly_dd against exact rational arithmetic: the piece is chosen by
    # `upper`, and the double-double steps are exact to 2**-98 (the plain
    # part's coefficients are scaled by 2**-50, so that its rounding errors,
    # 2**-53 of it, are below that: what is left is the dd arithmetic, the
    # low parts of the coefficients and of v)
    from gelu_numba.kernels.primitives import make_poly_dd
    rng = np.random.default_rng(7)
    pieces = []
    for scale in (1.0, -3.0):
        hi = tuple(float(scale * 0.6**j * rng.uniform(0.5, 1.0) * (2.0**-50 if j >= 4 else 1.0))
                   for j in range(12))
        lo = tuple(float(h * 2.0**-60 * rng.uniform(-1, 1)) for h in hi[:4])
        pieces.append((hi, lo))
    poly = make_poly_dd("p", pieces, exact_steps=(0,), dd_variable=dd_variable)
    if dd_variable:
        run = njit(lambda vh, vl, up: poly(vh, vl, up))
    else:
        run = njit(lambda vh, vl, up: poly(vh, up))
    for vh in rng.uniform(-0.5, 0.5, 50):
        vl = float(vh * 2.0**-53 * rng.uniform(-1, 1)) if dd_variable else 0.0
        for upper in (False, True):
            hi, lo = pieces[upper]
            v = Fraction(float(vh)) + Fraction(vl)
            exact = sum((Fraction(h) + (Fraction(lo[j]) if j < len(lo) else 0)) * v**j
                        for j, h in enumerate(hi))
            s, low = run(float(vh), vl, upper)
            err = abs(Fraction(s) + Fraction(low) - exact) / abs(exact)
            assert err < Fraction(1, 2**98), (vh, upper, float(err))


@pytest.mark.parametrize("which", ["R", "H", "R lower", "H lower", "exp"])
def test_the_cuda_form_of_the_polynomials_is_the_same_code(which):
    # the CUDA target reads a polynomial's coefficients from constant memory
    # (poly_dd_table_source) where the CPU has literals (and selects, for
    # two pieces): run as Python, the constant array standing for itself and
    # the opaque zero for 0, it must give the literal code's bits in every
    # piece; the one-piece forms (exp's, and R's and H's first pieces, which
    # the ordinary forms call) are the two-piece forms' first pieces
    from types import SimpleNamespace

    from gelu_numba.kernels import primitives as pr
    from gelu_numba.tables import normal_cdf as t
    pieces, steps = {"R": (t.R_PIECES, t.R_EXACT_STEPS), "H": (t.H_PIECES, t.H_EXACT_STEPS),
                     "exp": (t.EXP_PIECES, t.EXP_EXACT_STEPS)}[which.split()[0]]
    if which.endswith("lower"):
        pieces = pieces[:1]
    dd = which != "exp"
    helpers = {"fma": pr.fma, "two_prod": pr.two_prod, "two_sum": pr.two_sum,
               "fast_two_sum": pr.fast_two_sum}
    literal, table = dict(helpers), dict(helpers)
    exec(pr.poly_dd_source("p", pieces, steps, dd), literal)
    source, table["COEFFICIENTS"] = pr.poly_dd_table_source("p", pieces, steps, dd)
    assert "if upper else" not in source.split("base =", 1)[1].split("\n", 1)[1]
    assert ("opaque_zero()" in source) == (len(pieces) == 1)
    table["cuda"] = SimpleNamespace(const=SimpleNamespace(array_like=lambda a: a))
    table["opaque_zero"] = lambda: 0
    exec(source, table)
    rng = np.random.default_rng(5)
    two = t.R_PIECES if which.startswith("R") else t.H_PIECES
    for vh in rng.uniform(-0.5, 0.5, 100):
        vl = float(vh * 2.0**-53 * rng.uniform(-1, 1))
        for upper in ((False, True) if len(pieces) == 2 else (False,)):
            args = (float(vh), vl, upper) if dd else (float(vh), upper)
            want = literal["p"](*args)
            got = table["p"](*args)
            assert [float(v).hex() for v in got] == [float(v).hex() for v in want]
            if which.endswith("lower"):
                # the first piece alone is the two-piece code below 4
                full = {}
                full.update(helpers)
                exec(pr.poly_dd_source("p", two, steps), full)
                assert [float(v).hex() for v in full["p"](*args)] == \
                    [float(v).hex() for v in want]


def test_tail_ratios_match_mpmath():
    # R(a) = erfcx(a/sqrt 2)/2 and H(a) = (R(a) - a phi0)/(a - z0) as the
    # kernels evaluate them (the division for t included), against mpmath:
    # the error analysis of kernels/normal.py counts 2**-59 for each
    from gelu_numba.kernels import normal
    from gelu_numba.tables.normal_cdf import A_MAX, C_T

    @njit
    def both(a):
        out = np.empty((a.size, 4))
        for i in range(a.size):
            out[i, 0], out[i, 1] = normal.tail_ratio_dd(a[i])
            out[i, 2], out[i, 3] = normal.grad_ratio_dd(a[i])
        return out

    rng = np.random.default_rng(11)
    a = np.concatenate([rng.uniform(0, 8, 300), rng.uniform(8, A_MAX, 100),
                        [0.0, C_T, np.nextafter(C_T, 0), 0.75, A_MAX]])
    got = both(a)
    with mp.workprec(160):
        phi0 = 1 / mp.sqrt(2 * mp.pi)
        def R(am):
            return mp.erfc(am / mp.sqrt(2)) * mp.exp(am * am / 2) / 2

        z0 = mp.findroot(lambda u: R(u) - phi0 * u, mp.mpf("0.75"))
        for x, (rh, rl, hh, hl) in zip(a, got):
            am = mp.mpf(float(x))
            r = R(am)
            h = (r - am * phi0) / (am - z0)
            assert abs((mp.mpf(rh) + rl) / r - 1) < mp.mpf(2)**-59, x
            assert abs((mp.mpf(hh) + hl) / h - 1) < mp.mpf(2)**-59, x


def test_ln2_split_is_exact_enough():
    # k*LN2_1 and k*LN2_2 must be exact for |k| < 2**12: 41-bit parts
    for part in (normal_cdf.LN2_1, normal_cdf.LN2_2):
        m, e = np.frexp(part)
        assert float(m * 2**41) == round(m * 2**41)


def _float32_tables(which):
    """``(spec, module)`` of the plain or the correctly rounded kernels'
    float32 tables."""
    from fitting import make_tables32_cpu_f64 as make
    from gelu_numba.tables import normal_cdf32_cpu_f64, normal_cdf32_rounded
    return {"plain": (make.PLAIN, normal_cdf32_cpu_f64),
            "rounded": (make.ROUNDED, normal_cdf32_rounded)}[which]


@pytest.mark.parametrize("which", ["plain", "rounded"])
def test_float32_tables_regenerate_identically(which):
    from fitting import make_tables32_cpu_f64
    spec, module = _float32_tables(which)
    fresh = {}
    text = make_tables32_cpu_f64.generate(progress=False, spec=spec)
    exec(text, fresh)  # noqa: S102 (our own text)
    names = [k for k in vars(module) if k.isupper()]
    assert {"R32_P", "R32_Q", "H32_P", "H32_Q", "EXP32", "A32"} <= set(names)
    for k in names:
        assert np.array_equal(np.asarray(fresh[k]), np.asarray(getattr(module, k))), k


# the headers' certified errors (R, H), a tenth of a bit looser
@pytest.mark.parametrize("which, r_bound, h_bound", [("plain", -32.3, -33.5),
                                                     ("rounded", -44.4, -45.9)])
def test_float32_rationals_within_their_certified_error(which, r_bound, h_bound):
    # independent spot check of the header's bounds at points the
    # certification grid does not use
    from fitting.rational import horner
    _, t = _float32_tables(which)
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
        assert abs(rat(t.R32_P, t.R32_Q, a) / r - 1) < mp.mpf(2) ** r_bound
        h = (r - phi0 * a) / (a - z0)
        assert abs(rat(t.H32_P, t.H32_Q, a) / h - 1) < mp.mpf(2) ** h_bound


def test_half_fit_tables_regenerate_identically():
    # gelu_half32's coefficients (gelu_numba.kernels.half32)
    from fitting import make_half
    from gelu_numba.tables import half_fit
    fresh = {}
    exec(make_half.generate(progress=False), fresh)  # noqa: S102 (our own text)
    for k in ("P", "COEFFS", "A", "MAX_REL_ERROR"):
        assert fresh[k] == getattr(half_fit, k), k
