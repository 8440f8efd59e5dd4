"""The float32 inputs whose exact value lies below the float32 midpoint
that the float64 kernel returns (GENERATED: do not edit).

Regenerate in the gelu-numba repository with::

    python -m fitting.make_rounding32

For each function, the ascending bit patterns of the float32 inputs ``x``
at which the float64 kernel's value is a float32 midpoint and the exact
value is below it, decided with mpmath 1.3.0 (see the generator).
At every other such input the exact value is above.  Midpoints among
all 2**32 inputs, by function: ndtr 2, norm_pdf 0, gelu 16777216, gelu_grad 3, gelu_grad2 4.
"""

import numpy as np

NDTR = np.array([0xB3206C99], dtype=np.uint32)
NORM_PDF = np.array([], dtype=np.uint32)
GELU = np.array([], dtype=np.uint32)
GELU_GRAD = np.array([0xB2A06C99, 0xB8D0DF65], dtype=np.uint32)
GELU_GRAD2 = np.array([0x38C6460E, 0xB8C6460E], dtype=np.uint32)
