"""The catalog's derivative links are mathematics: a record's
``derivative`` is the derivative of its function and its ``backward`` is
``dy`` times that derivative, judged on the records' own mpmath references
(a central difference of the function's reference against the derivative's
reference), so a wrong link fails here whatever the targets do with it."""

import mpmath
import pytest

import reference
from gelu_numba import catalog

pytestmark = pytest.mark.unit

_LINKED = [f for f in catalog.FUNCTIONS if f.derivative is not None]
# points away from the kinks of the piecewise approximations (|x| = L)
_XS = (-2.75, -0.8125, 0.3125, 1.625)
# the step of the central difference: its truncation error (h**2 f'''/6)
# is about 1e-13 relative here, far below the tolerance
_H = 2.0**-22


def _value(ref, *args):
    return mpmath.mpf(ref(*args))


@pytest.mark.parametrize("fn", _LINKED, ids=lambda f: f.name)
def test_the_derivative_link_is_the_derivative(fn):
    f = reference.lookup(fn)
    d = reference.lookup(catalog.lookup(fn.derivative))
    with mpmath.workprec(200):
        for x in _XS:
            difference = (_value(f, x + _H) - _value(f, x - _H)) / (2 * _H)
            exact = _value(d, x)
            assert abs(difference - exact) <= 1e-9 * max(1, abs(exact)), (fn.name, x)


@pytest.mark.parametrize("fn", [f for f in _LINKED if f.backward], ids=lambda f: f.name)
def test_the_backward_link_is_dy_times_the_derivative(fn):
    backward = catalog.lookup(fn.backward)
    assert backward.nin == 2
    b, d = reference.lookup(backward), reference.lookup(catalog.lookup(fn.derivative))
    with mpmath.workprec(200):
        for dy, x in zip((0.75, -3.0, 1.5, 2.0**-10), _XS):
            assert abs(_value(b, dy, x) - dy * _value(d, x)) <= 1e-30


def test_every_link_names_a_record_and_antiderivative_inverts_it():
    for fn in _LINKED:
        assert catalog.antiderivative(fn.derivative) is fn
    assert catalog.antiderivative("gelu") is None
    for fn in catalog.FUNCTIONS:
        if fn.backward:
            catalog.lookup(fn.backward)


def test_the_roles_name_the_records_of_gelu_phi_and_its_density():
    # judged on the records' mpmath references against mpmath's own Phi and
    # phi, so a role naming the wrong record fails here
    refs = {role: reference.lookup(catalog.lookup(role))
            for role in (catalog.GELU, catalog.CDF, catalog.PDF)}
    with mpmath.workprec(200):
        for x in _XS:
            cdf = mpmath.ncdf(x)
            assert abs(_value(refs[catalog.CDF], x) - cdf) <= 1e-30
            assert abs(_value(refs[catalog.PDF], x) - mpmath.npdf(x)) <= 1e-30
            assert abs(_value(refs[catalog.GELU], x) - x * cdf) <= 1e-30
    assert catalog.approximate("none").name == catalog.GELU
    assert catalog.lookup(catalog.CDF).derivative == catalog.PDF
    # the chain of GELU's recorded derivatives follows the links, and ends
    # where a record has none
    chain = catalog.derivatives(catalog.GELU)
    assert [f.derivative for f in chain[:-1]] == [f.name for f in chain[1:]]
    assert chain[0].name == catalog.GELU and chain[-1].derivative is None and len(chain) >= 2
