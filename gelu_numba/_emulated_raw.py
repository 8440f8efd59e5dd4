"""Where the raw ``numpy.ufunc`` objects of :mod:`gelu_numba.half` and
:mod:`gelu_numba.production` unpickle from.

Pickle stores a ufunc by reference, ``module.name`` (Dask ships the raw
``numpy.ufunc`` that ``__array_ufunc__`` receives to its workers).  The
float32-only and bfloat16 ufuncs are built by the targets layer, which
cannot import the public modules that own their kernels and names, so their
raw ufuncs name this module, which can: ``name`` here is the same object as
``<public module>.<name>.ufunc``.
"""


def __getattr__(name):
    from gelu_numba import half, production
    if name in half.__all__:
        return getattr(half, name).ufunc
    try:
        return production.ufunc(name).ufunc
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
