"""Plain functions specialised by name: a copy of a function written once,
its free names bound to the values of one use.

The CPU loops are ordinary functions that call a kernel, an element loop or
a count by a free name (``kernel``, ``serial``, ...).  Numba compiles a
function against its globals, so :func:`bound` makes a copy of the function
whose globals are its module's with those names set, and gives the copy a
name of its own: Numba's cache files a cached function under its name, and
a callee that is not inlined is stored in its caller's cache entry under
its name (two cached loops whose callees share a name can be linked to one
another's code when both are loaded).
"""

import types


def bound(function, name, **names):
    """A copy of ``function`` named ``name`` (its ``__name__`` and
    ``__qualname__``), reading ``names`` as globals (its closure, which
    holds a cached loop's source stamp, is kept)."""
    code = function.__code__.replace(co_name=name, co_qualname=name)
    scope = dict(function.__globals__, **names)
    copy = types.FunctionType(code, scope, name, function.__defaults__, function.__closure__)
    copy.__qualname__ = name
    copy.__module__ = function.__module__
    return copy
