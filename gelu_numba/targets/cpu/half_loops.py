"""CPU loops of the 2-byte formats (method and proof: :mod:`gelu_numba.kernels.half_rounding`).

* float16 loops of the ufuncs ``gelu``, ``gelu_grad`` and ``gelu_backward``
  (``e->e``, ``ee->e``): float16 in, float16 out, one rounding (registered
  with the others by :mod:`gelu_numba.targets.cpu`);
* bfloat16, which NumPy has no dtype for, as ufuncs on bit patterns
  (``uint16`` in and out: :data:`BFLOAT16`, published by
  :mod:`gelu_numba.half`, used by :mod:`gelu_numba.torch` on bfloat16
  tensors viewed as int16).

The tables (:func:`table`) are made on the first call for a format, from
the float64 ufuncs (65,536 values each), and frozen into the loop as
constants; the loops are not cached on disk (the tables are made afresh in
each process).
"""

import functools

import numpy as np

from gelu_numba import catalog
from gelu_numba.targets import cpu, half_tables

#: the functions with 2-byte loops: the catalog records with ``half``
from gelu_numba.targets.cpu import numpy_api
FUNCTIONS = tuple(f.name for f in catalog.FUNCTIONS if f.half)
#: the bfloat16 bit-pattern ufuncs: public name -> function
BFLOAT16 = {f"{name}_bfloat16": name for name in FUNCTIONS}


def table(name, fmt):
    """The table of ``name`` ("gelu", "gelu_grad" or "gelu_backward") in
    ``fmt`` (:func:`gelu_numba.targets.half_tables.table`), from the float64
    loops of the CPU ufuncs: the tables the float16 and bfloat16 loops look
    up."""
    return half_tables.table(name, fmt, cpu.REGISTRY.get)


@functools.cache
def bfloat16_loops(public):
    """The :class:`~gelu_numba.targets.cpu.numpy_api.LazyLoops` of the bfloat16
    function ``public`` (a name of :data:`BFLOAT16`): its one ``uint16``
    loop, compiled on first use."""
    name = BFLOAT16[public]
    nin = catalog.lookup(name).nin
    lazy = numpy_api.LazyLoops(public, nin, [
        (np.dtype(np.uint16), functools.partial(cpu.half_loop, name, "bfloat16", nin))])
    lazy.ufunc.__module__ = "gelu_numba._emulated_raw"  # (pickled by reference)
    return lazy


def bfloat16_ufunc(public):
    """The ``uint16 -> uint16`` ufunc of the bfloat16 function ``public``
    (a name of :data:`BFLOAT16`), its loop compiled on the first call."""
    return bfloat16_loops(public).ufunc
