"""The package's one dtype rule, shared by every target.

Each function has two loops, float32 and float64.  Inputs go to the first
loop that all of them cast to safely, as NumPy's own loop selection does
for a ufunc whose loops are ``f...->f`` and ``d...->d``: bool, int8, uint8,
int16, uint16, float16 and float32 go to float32; int32, uint32, int64,
uint64 and float64 to float64; Python scalars are weak (``f(x32, 2.0)``
runs in float32).  Complex, object, string, datetime and long double have
no loop.

The CPU ufuncs ``gelu``, ``gelu_grad`` and ``gelu_backward`` have a float16
loop first (:mod:`gelu_numba.targets.cpu.half_loops`): there, as for ``np.exp``,
float16, bool, int8 and uint8 go to float16.

The CPU ufuncs get this from NumPy itself (their loops are registered in
that order); this module states the rule for the targets that choose a loop
themselves: ``@njit`` callers, the CUDA launcher and :func:`gelu_numba.soi_map`.
"""

import numpy as np

#: what the error messages name as accepted
ACCEPTED = ("float32 or float64 (bool, integer and float16 inputs are cast "
            "to them by NumPy's safe-casting rules; the CPU ufuncs gelu, gelu_grad "
            "and gelu_backward also have float16 loops)")

#: The loops, one character each, by the name of the dtype they run on (as
#: NumPy, PyTorch and JAX name it): the float32 and float64 loops every
#: function has, then the 2-byte formats of the functions with correctly
#: rounded 2-byte loops, whose loops work on the bit patterns (bfloat16,
#: which NumPy has no dtype for, as ml_dtypes' for JAX and torch's).  The
#: one dtype table of the package: the targets' maps are made from it.
CHARS = {"float32": "f", "float64": "d", "float16": "e", "bfloat16": "b"}

#: loop character -> dtype, of the float loops every function has
LOOP_DTYPES = {c: np.dtype(name) for name, c in CHARS.items() if c in "fd"}


def loop_char(*dtypes):
    """``"f"`` if every dtype casts safely to float32, ``"d"`` if every one
    casts to float64, else None.  Python scalars are weak, as in NumPy."""
    try:
        common = np.result_type(*dtypes)
    except TypeError:
        return None
    for char, dtype in LOOP_DTYPES.items():
        if np.can_cast(common, dtype, "safe"):
            return char
    return None


def unsupported(name, dtypes, accepted=ACCEPTED):
    """The ``TypeError`` for inputs that no loop accepts."""
    shown = ", ".join(type(d).__name__ if isinstance(d, (bool, int, float, complex))
                      else str(np.dtype(d)) for d in dtypes)
    return TypeError(f"{name}() does not support inputs of dtype {shown}; "
                     f"accepted: {accepted}")


def loop_for(name, *dtypes):
    """The loop character for these input dtypes, or the ``TypeError``."""
    char = loop_char(*dtypes)
    if char is None:
        raise unsupported(name, dtypes)
    return char
