"""Public modules as loops over the catalog.

:func:`module` gives a public module its ``__getattr__`` (PEP 562), its
``__dir__`` and its ``__all__``: every catalog record that names the module
becomes an attribute, built by the module's target on first access and then
stored in the module's namespace; the target compiles (or loads) each loop
only when first called (:class:`gelu_numba.targets.cpu.numpy_api.LazyLoops`).
"""

import importlib
import sys

from gelu_numba import catalog

#: public module of ufuncs -> the registry that builds them, "module:name"
#: (imported when first needed)
_TARGETS = {
    catalog.TOP: "gelu_numba.targets.cpu:REGISTRY",
    catalog.APPROX: "gelu_numba.targets.cpu:REGISTRY",
    catalog.PARALLEL: "gelu_numba.targets.cpu.parallel:REGISTRY",
}


def registry(module):
    """The :class:`~gelu_numba.targets.cpu.registry.Registry` that builds
    the ufuncs of public module ``module``."""
    path, name = _TARGETS[module].split(":")
    return getattr(importlib.import_module(path), name)


def registries():
    """``[(module, registry)]``: each public module of ufuncs and its
    :func:`registry`, in order (the warmup compiles their loops)."""
    return [(module, registry(module)) for module in _TARGETS]


def build_ufunc(fn, module):
    """The public object of record ``fn`` in ``module``: the one of its
    home module (``fn.modules[0]``) where the two share a target, so that a
    function published twice is one object and pickles to its home."""
    home = fn.modules[0]
    if home != module and _TARGETS.get(home) == _TARGETS[module]:
        return getattr(importlib.import_module(home), fn.name)
    return registry(module).public(fn, module, fn.name + _signature(fn) + fn.doc)


def _signature(fn):
    args = ", ".join(fn.params)
    return (f"({args}, /, out=None, *, where=True, casting='same_kind', "
            f"order='K', dtype=None, subok=True)\n")


#: public module -> (the catalog module whose records it publishes, its
#: other names, its extra names)
_PUBLISHED = {}


def current_names(name):
    """The public names of public module ``name`` now: its ``__all__``, and
    the records registered since it was imported
    (:func:`gelu_numba.catalog.registered`)."""
    records, names, extra = _PUBLISHED[name]
    return sorted({f.name for f in catalog.published(records)} | set(names) | set(extra))


def module(name, extra=None, records=None, factory=None, names=(), build=None):
    """``(__getattr__, __dir__, __all__)`` for public module ``name``, the one
    way every public module publishes its functions.

    * the catalog records of ``records`` (default: ``name``), each built on
      first access by ``factory(fn)`` (default: this module's CPU
      :func:`build`, which documents the ufunc);
    * ``names``, built by ``build(name)`` (functions that are not catalog
      records: the half-precision and production ufuncs);
    * ``extra``: further attribute names -> the modules defining them.

    Each object is stored in the module's namespace once built."""
    extra = dict(extra or {})
    names = tuple(names)
    _PUBLISHED[name] = (records or name, names, extra)
    everything = current_names(name)

    def __getattr__(attr):
        # the catalog asked anew: a record registered after import publishes
        # too (catalog.registered)
        fn = next((f for f in catalog.published(records or name) if f.name == attr), None)
        if fn is not None:
            value = factory(fn) if factory is not None else build_ufunc(fn, name)
        elif attr in names:
            value = build(attr)
        elif attr in extra:
            value = getattr(importlib.import_module(extra[attr]), attr)
        else:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        setattr(sys.modules[name], attr, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[name])) | set(current_names(name)))

    return __getattr__, __dir__, everything
