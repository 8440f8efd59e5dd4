"""Sphinx extension: the API reference, generated from the package at build time.

Every public function of the catalog modules (``gelu_numba``,
``gelu_numba.approximations``, ``gelu_numba.parallel``, ``gelu_numba.gpu``,
``gelu_numba.gpu.device``) is documented from its own docstring (the
catalog's text plus the target's interface, so the page says exactly what
``help()`` says, accuracy bound and measured maxima included), with an
example that the doctest builder runs for the CPU modules.  The modules that
are plain Python (``gelu_numba.torch``, ``gelu_numba.jax``, ``gelu_numba.production``,
``gelu_numba.half``, ``gelu_numba.measured``) go through autodoc and
numpydoc.  The pages are written to ``docs/api/`` (not committed) when the
build starts.
"""

import importlib
import re
import textwrap
from pathlib import Path

#: module -> (title, kind): "catalog" pages list every published function
#: from its docstring; "auto" pages are autodoc's
PAGES = {
    "gelu_numba": ("The exact functions (NumPy ufuncs)", "catalog"),
    "gelu_numba.approximations": ("The approximations", "catalog"),
    "gelu_numba.parallel": ("Multithreaded ufuncs", "catalog"),
    "gelu_numba.gpu": ("GPU kernels", "catalog"),
    "gelu_numba.gpu.device": ("CUDA device functions", "catalog"),
    "gelu_numba.half": ("Half precision", "auto"),
    "gelu_numba.torch": ("PyTorch", "auto"),
    "gelu_numba.jax": ("JAX", "auto"),
    "gelu_numba.production": ("Production GELUs, emulated", "auto"),
    "gelu_numba.measured": ("Measured errors", "auto"),
}

_SIGNATURE = re.compile(r"^(\w+)(\(.*\))")


def _split(doc, name):
    """(signature, body) of a catalog function's docstring: its first line is
    the call signature (with a note in parentheses after it on the GPU)."""
    first, _, rest = doc.partition("\n")
    match = _SIGNATURE.match(first.strip())
    if match and match.group(1) == name:
        return match.group(2), textwrap.dedent(rest).strip("\n")
    return "(*args)", textwrap.dedent(doc).strip("\n")


def _numpydoc(body):
    """A NumPy-style docstring body as reST (numpydoc: its Parameters and
    Returns sections become field lists)."""
    from numpydoc.docscrape_sphinx import SphinxDocString
    return str(SphinxDocString(body))


def _indent(text, n=3):
    return textwrap.indent(text, " " * n, lambda line: line.strip() != "")


def _example(module, name, params):
    """A doctest: the function on float32 inputs keeps dtype and shape
    (each parameter as :data:`gelu_numba.catalog.EXAMPLE_ARGUMENTS` has
    it, the arrays made as :data:`~gelu_numba.catalog.EXAMPLE_ARRAYS`)."""
    from gelu_numba import catalog
    arrays = [f"   >>> {p} = {catalog.EXAMPLE_ARRAYS[p]}" for p in params
              if p in catalog.EXAMPLE_ARRAYS]
    return "\n".join([
        ".. rubric:: Example", "",
        ".. doctest::", "",
        f"   >>> from {module} import {name}",
        *arrays,
        f"   >>> y = {name}({', '.join(catalog.EXAMPLE_ARGUMENTS[p] for p in params)})",
        "   >>> y.dtype, y.shape",
        "   (dtype('float32'), (7,))", ""])


def catalog_page(module_name, title):
    """The reST page of a catalog module: every name it publishes now."""
    from gelu_numba import catalog
    from gelu_numba.targets import publish
    module = importlib.import_module(module_name)
    names = [n for n in publish.current_names(module_name) if not n.startswith("_")]
    lines = [title, "=" * len(title), "", f".. module:: {module_name}", ""]
    lines += [textwrap.dedent(module.__doc__ or "").strip(), ""]
    funcs = [n for n in names if callable(getattr(module, n, None))
             and (getattr(getattr(module, n), "__doc__", None) or "").startswith(f"{n}(")]
    rest = [n for n in names if n not in funcs]
    lines += ["Functions", "---------", ""]
    cpu = module_name in ("gelu_numba", "gelu_numba.approximations", "gelu_numba.parallel")
    for name in funcs:
        signature, body = _split(getattr(module, name).__doc__, name)
        lines += [f".. py:function:: {name}{signature}", f"   :module: {module_name}", "",
                  _indent(_numpydoc(body)), ""]
        try:
            params = catalog.lookup(name).params
        except KeyError:
            params = None
        if cpu and params:
            lines += [_indent(_example(module_name, name, params)), ""]
    if rest:
        lines += ["Other names", "-----------", ""]
        for name in rest:
            lines += [f"* ``{module_name}.{name}``"]
        lines += [""]
    return "\n".join(lines)


def _auto_page(module_name, title):
    module = importlib.import_module(module_name)
    names = [n for n in getattr(module, "__all__", []) if not n.startswith("_")]
    lines = [title, "=" * len(title), "", f".. automodule:: {module_name}", ""]
    for name in names:
        obj = getattr(module, name)
        if isinstance(obj, type):
            lines += [f".. autoclass:: {module_name}.{name}", ""]
        elif callable(obj) and hasattr(obj, "__code__"):
            lines += [f".. autofunction:: {module_name}.{name}", ""]
        else:
            lines += [f".. py:data:: {name}", f"   :module: {module_name}", "",
                      f"   ``{type(obj).__name__}``: see the module's text above.", ""]
    return "\n".join(lines)


def write_pages(app):
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    index = ["API", "===", "",
             "Generated from the package when the site is built (each function's",
             "own docstring: what ``help()`` shows).", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    for module_name, (title, kind) in PAGES.items():
        text = (catalog_page if kind == "catalog" else _auto_page)(module_name, title)
        page = out / f"{module_name}.rst"
        if not page.exists() or page.read_text() != text:
            page.write_text(text)
        index.append(f"   {module_name}")
    text = "\n".join(index) + "\n"
    if not (out / "index.rst").exists() or (out / "index.rst").read_text() != text:
        (out / "index.rst").write_text(text)


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
