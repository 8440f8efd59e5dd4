"""Conformance: each package ufunc behaves as NumPy's own ufuncs do.

The same battery of calls runs against a NumPy ufunc of the same arity
(``np.exp`` for one input, ``np.arctan2`` for two) and against every ufunc
of :mod:`gelu_numba`, :mod:`gelu_numba.approximations` and
:mod:`gelu_numba.parallel`; what is compared is the behaviour, not the
values: the result's type, dtype and shape, the warnings, the exception
types, ``where=`` semantics, duck-array dispatch (Dask laziness and values,
xarray DataArray and Dataset, any ``__array_ufunc__`` object, ndarray
subclasses), the ufunc methods.

Deliberate differences, tested here too:
* the dtype set: float32 and float64 loops only, so float16 and small
  integers compute in float32, complex and long double raise ``TypeError``
  (whose message names the accepted dtypes) where ``np.exp`` has loops;
  the CPU ``gelu``, ``gelu_grad`` and ``gelu_backward`` also have float16
  loops, so there float16, bool and uint8 go to float16 as for ``np.exp``;
* three-input ``gelu_general`` has no NumPy counterpart (its broadcasting
  and keywords are NumPy's all the same: test_api.py).
"""

import pickle
import warnings

import numpy as np
import pytest

import gelu_numba as g
import gelu_numba.approximations as approx
import gelu_numba.parallel as gp
from gelu_numba import catalog

pytestmark = pytest.mark.unit

da = pytest.importorskip("dask.array")
xr = pytest.importorskip("xarray")

_MODULES = {catalog.TOP: g, catalog.APPROX: approx, catalog.PARALLEL: gp}
OURS = sorted({(module, fn.name) for module in _MODULES for fn in catalog.published(module)
               if fn.nin in (1, 2)})
REFERENCE = {1: np.exp, 2: np.arctan2}


def ours(module, name):
    return getattr(_MODULES[module], name)


def behaviour(call):
    """What ``call()`` does: ``("returns", type, dtype, shape)`` or
    ``("raises", the exception's NumPy-independent base)``, and the warning
    categories it emits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = call()
            outcome = ("returns", type(r).__name__, getattr(r, "dtype", None),
                       getattr(r, "shape", None))
        except Exception as e:  # noqa: BLE001 (the type is what is compared)
            base = next(b for b in type(e).__mro__
                        if b.__module__ == "builtins" or b is FloatingPointError)
            outcome = ("raises", base.__name__)
    return outcome, sorted({w.category.__name__ for w in caught})


def args_for(nin, *values):
    return values[:1] * nin if len(values) == 1 else values


def same(f, ref, make_args, **kwargs):
    """``f`` and ``ref`` on the same (fresh) arguments behave the same."""
    mine = behaviour(lambda: f(*make_args(), **kwargs))
    theirs = behaviour(lambda: ref(*make_args(), **kwargs))
    assert mine == theirs, (f.__name__, kwargs, mine, theirs)
    return mine


# Inputs whose type, dtype and shape NumPy's rules fix the same way for both
# (float32 and float64 in, the same kind out); integer and float16 inputs
# differ deliberately (below).
_INPUTS = {
    "float64 array": lambda: np.linspace(-2, 2, 7),
    "float32 array": lambda: np.linspace(-2, 2, 7, dtype=np.float32),
    "0-d float64": lambda: np.array(0.5),
    "0-d float32": lambda: np.array(0.5, np.float32),
    "numpy float32 scalar": lambda: np.float32(0.5),
    "numpy float64 scalar": lambda: np.float64(0.5),
    "python float": lambda: 0.5,
    "list": lambda: [0.5, -1.0],
    "2-d F-ordered": lambda: np.asfortranarray(np.ones((3, 4))),
    "strided view": lambda: np.linspace(-2, 2, 12)[::-3],
    "empty": lambda: np.empty((0, 3)),
    "matrix subclass": lambda: np.asmatrix(np.ones((2, 2))),
    "masked array": lambda: np.ma.masked_array([1.0, 2.0], mask=[0, 1]),
}


@pytest.mark.parametrize("module, name", OURS)
@pytest.mark.parametrize("case", sorted(_INPUTS))
def test_result_types(module, name, case):
    f = ours(module, name)
    same(f, REFERENCE[f.nin], lambda: args_for(f.nin, _INPUTS[case]()))


_KEYWORDS = {
    "out": lambda x: {"out": np.empty_like(x)},
    "out tuple": lambda x: {"out": (np.empty_like(x),)},
    "out wrong shape": lambda x: {"out": np.empty(3)},
    "out read-only": lambda x: {"out": np.broadcast_to(np.empty(1), x.shape)},
    "out float32 from float64": lambda x: {"out": np.empty(x.shape, np.float32)},
    "out int": lambda x: {"out": np.empty(x.shape, np.int64)},
    "out complex": lambda x: {"out": np.empty(x.shape, np.complex128)},
    "where without out": lambda x: {"where": x > 0},
    "where with out": lambda x: {"where": x > 0, "out": np.zeros_like(x)},
    "casting no": lambda x: {"casting": "no"},
    "casting no, dtype float32": lambda x: {"casting": "no", "dtype": np.float32},
    "casting equiv": lambda x: {"casting": "equiv", "dtype": np.float32},
    "casting safe, dtype float32": lambda x: {"casting": "safe", "dtype": np.float32},
    "casting unsafe, dtype float32": lambda x: {"casting": "unsafe", "dtype": np.float32},
    "casting bogus": lambda x: {"casting": "bogus"},
    "dtype float32": lambda x: {"dtype": np.float32},
    "dtype float64": lambda x: {"dtype": np.float64},
    "order F": lambda x: {"order": "F"},
    "subok False": lambda x: {"subok": False},
    "unknown keyword": lambda x: {"bogus": 1},
}


@pytest.mark.parametrize("module, name", OURS)
@pytest.mark.parametrize("case", sorted(_KEYWORDS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_keywords(module, name, case, dtype):
    f = ours(module, name)
    x = np.linspace(-3, 3, 6, dtype=dtype)
    same(f, REFERENCE[f.nin], lambda: args_for(f.nin, x.copy()), **_KEYWORDS[case](x))


@pytest.mark.parametrize("module, name", OURS)
def test_signature_keyword(module, name):
    f = ours(module, name)
    ref = REFERENCE[f.nin]
    x = np.linspace(-3, 3, 6)
    for sig in ("f" * f.nin + "->f", "d" * f.nin + "->d", (np.float32,) * (f.nin + 1)):
        got = same(f, ref, lambda: args_for(f.nin, x), signature=sig)
        assert got[0][0] == "returns"


@pytest.mark.parametrize("module, name", OURS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_semantics(module, name, dtype):
    # masked-out elements of out= are left as they were, the others written
    f = ours(module, name)
    x = np.linspace(-3, 3, 11, dtype=dtype)
    mask = np.arange(11) % 3 == 0
    out = np.full_like(x, 7.0)
    r = f(*args_for(f.nin, x), out=out, where=mask)
    assert r is out
    assert np.all(out[~mask] == 7.0)
    assert np.array_equal(out[mask], f(*args_for(f.nin, x[mask])))
    # broadcast where, in place
    y = x.copy()
    f(*args_for(f.nin, y), out=y, where=np.array(False))
    assert np.array_equal(y, x)


@pytest.mark.parametrize("module, name", OURS)
@pytest.mark.parametrize("case", ["complex", "string", "object", "longdouble", "datetime"])
def test_unsupported_dtypes(module, name, case):
    # NumPy's np.exp has complex, object and long double loops; ours have
    # float32 and float64 only: a TypeError that names them
    f = ours(module, name)
    bad = {"complex": np.array([1 + 2j]), "string": np.array(["a"]),
           "object": np.array([1.0, None], dtype=object),
           "longdouble": np.array([1.0], np.longdouble),
           "datetime": np.array(["2026-01-01"], "datetime64[D]")}[case]
    with pytest.raises(TypeError, match=f"{name}\\(\\) does not support inputs of dtype "
                                        ".*accepted: float32 or float64"):
        f(*args_for(f.nin, bad))


@pytest.mark.parametrize("module, name", OURS)
@pytest.mark.parametrize("dt, want", [(np.int64, np.float64), (np.int32, np.float64),
                                      (np.uint64, np.float64), (np.int16, np.float32),
                                      (np.uint8, np.float32), (np.bool_, np.float32),
                                      (np.float16, np.float32)])
def test_integer_and_half_inputs(module, name, dt, want):
    # deliberately the float32/float64 loops: NumPy's safe casting picks them;
    # the CPU gelu, gelu_grad and gelu_backward have float16 loops first,
    # which bool, uint8 and float16 cast to, as for np.exp
    f = ours(module, name)
    if (module == "gelu_numba" and catalog.lookup(name).half
            and dt in (np.uint8, np.bool_, np.float16)):
        want = np.float16
        assert REFERENCE[f.nin](*args_for(f.nin, np.ones(3, dt))).dtype == want
    assert f(*args_for(f.nin, np.ones(3, dt))).dtype == want
    assert f.ufunc.resolve_dtypes((np.dtype(dt),) * f.nin + (None,))[-1] == want


@pytest.mark.parametrize("module, name", OURS)
def test_errstate_and_nan(module, name):
    # NaN in, NaN out, no flag; an exact result raises nothing
    f = ours(module, name)
    ref = REFERENCE[f.nin]
    for dtype in (np.float32, np.float64):
        x = np.array([np.nan, 1.0], dtype)
        with np.errstate(all="raise"):
            mine = behaviour(lambda: f(*args_for(f.nin, x)))
            theirs = behaviour(lambda: ref(*args_for(f.nin, x)))
        assert mine == theirs


# ------------------------------------------------------------- duck arrays

@pytest.mark.parametrize("module, name", OURS)
def test_dask_is_lazy_and_right(module, name):
    f = ours(module, name)
    ref = REFERENCE[f.nin]
    x = np.linspace(-4, 4, 10)
    d = da.from_array(x, chunks=3)
    for kwargs in ({}, {"where": d > 0, "out": da.zeros(10, chunks=3)}):
        r = f(*args_for(f.nin, d), **kwargs)
        assert type(r) is type(ref(*args_for(f.nin, d), **dict(kwargs, **(
            {"out": da.zeros(10, chunks=3)} if kwargs else {}))))
        assert isinstance(r, da.Array)  # nothing computed yet
    masked = f(*args_for(f.nin, d), where=d > 0, out=da.zeros(10, chunks=3)).compute()
    want = np.where(x > 0, f(*args_for(f.nin, x)), 0.0)
    assert np.array_equal(masked, want)
    assert np.array_equal(f(*args_for(f.nin, d)).compute(), f(*args_for(f.nin, x)))


@pytest.mark.parametrize("module, name", OURS)
def test_xarray(module, name):
    f = ours(module, name)
    ref = REFERENCE[f.nin]
    a = xr.DataArray(np.linspace(-2, 2, 5), dims="t", coords={"t": np.arange(5)})
    ds = xr.Dataset({"v": a, "w": a * 2})
    for make in (lambda: a, lambda: ds):
        same(f, ref, lambda: args_for(f.nin, make()))
    same(f, ref, lambda: args_for(f.nin, a), where=a.values > 0, out=np.zeros(5))
    r = f(*args_for(f.nin, ds))
    assert isinstance(r, xr.Dataset)
    assert np.array_equal(r["w"].values, f(*args_for(f.nin, ds["w"].values)))


class Duck:
    """An ``__array_ufunc__`` object with no dtype: it must receive the call."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("duck", ufunc, method, len(inputs), sorted(kwargs))


@pytest.mark.parametrize("module, name", OURS)
def test_array_ufunc_objects_get_the_call(module, name):
    f = ours(module, name)
    got = f(*args_for(f.nin, Duck()), where=True)
    assert got[0] == "duck" and got[1] is f.ufunc and got[2] == "__call__"
    assert got[3:] == REFERENCE[f.nin](*args_for(f.nin, Duck()), where=True)[3:]
    if f.nin == 2:
        assert f.reduce(Duck())[2] == "reduce"


# ----------------------------------------------------------------- methods

@pytest.mark.parametrize("module, name", OURS)
def test_methods(module, name):
    f = ours(module, name)
    ref = REFERENCE[f.nin]
    x = np.linspace(0.5, 2, 4)
    for method, args in (("reduce", (x,)), ("accumulate", (x,)),
                         ("reduceat", (x, [0, 2])), ("outer", (x, x))):
        mine = behaviour(lambda: getattr(f, method)(*args))
        theirs = behaviour(lambda: getattr(ref, method)(*args))
        assert mine == theirs, (method, mine, theirs)
    y, z = x.copy(), x.copy()
    same(f, ref, lambda: ())  # a call without arguments
    if f.nin == 1:
        f.at(y, [0, 2])
        np.exp.at(z, [0, 2])
        assert np.array_equal(y[[1, 3]], x[[1, 3]]) and not np.array_equal(y, x)
    assert f.nin == ref.nin and f.nout == ref.nout and f.nargs == ref.nargs
    half = module == "gelu_numba" and catalog.lookup(name).half
    assert f.types == ["e" * f.nin + "->e"] * half + ["f" * f.nin + "->f", "d" * f.nin + "->d"]
    assert f.identity is None and f.signature is None


@pytest.mark.parametrize("module, name", OURS)
def test_pickles_by_reference(module, name):
    f = ours(module, name)
    assert pickle.loads(pickle.dumps(f)) is f
    assert pickle.loads(pickle.dumps(f.ufunc)) is f.ufunc
