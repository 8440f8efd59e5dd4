"""The registry of GELU approximations.

``APPROXIMATIONS`` maps a name to an :class:`Approximation` record: the
forward and derivative ufuncs (float32 and float64 loops, the same
interface as :func:`gelu_numba.gelu`), the maximum absolute error against
the exact GELU and GELU' over all real x with where it occurs (measured in
mpmath by ``python -m fitting.make_approximations`` in the gelu-numba
repository and stored in ``gelu_numba/tables/approximations.py``), a
one-line description and the source.  Every entry is evaluated faithfully
to its own formula (below about 1 ulp in both dtypes; the repository's
``tests/test_approximations.py``), so the errors below are the
approximations' and not rounding's.

Example::

    >>> from gelu_numba.approximations import APPROXIMATIONS
    >>> a = APPROXIMATIONS["tanh"]
    >>> a.max_abs_error            # doctest: +SKIP
    0.000472...
    >>> a.forward(x), a.grad(x)    # doctest: +SKIP

The ufuncs are also attributes of this module (``gelu_tanh``,
``gelu_poly14``, ...; each with ``_grad``), built on first access, each
loop compiled on the first call for its dtype.
"""

import sys
from dataclasses import dataclass
from types import MappingProxyType

from gelu_numba import catalog
from gelu_numba.targets import publish as _publish


@dataclass(frozen=True)
class Approximation:
    """One approximation of GELU.

    Attributes
    ----------
    name : str
        Registry key (``"tanh"``, ``"poly14"``, ...).
    forward, grad : gelu_numba.targets.cpu.Ufunc
        The approximation and its exact derivative, as ufuncs (built on
        first access).
    max_abs_error, max_abs_error_at : float
        max |forward(x) - GELU(x)| over all real x, and an x where it occurs.
    grad_max_abs_error, grad_max_abs_error_at : float
        The same for grad against GELU'.
    description : str
        One line: the formula.
    source : str
        Where the formula comes from.
    kind : str
        ``"closed form"`` or ``"fit"``.
    """

    name: str
    max_abs_error: float
    max_abs_error_at: float
    grad_max_abs_error: float
    grad_max_abs_error_at: float
    description: str
    source: str
    kind: str

    @property
    def forward(self):
        return getattr(sys.modules[__name__], f"gelu_{self.name}")

    @property
    def grad(self):
        return getattr(sys.modules[__name__], f"gelu_{self.name}_grad")


def _record(name, err):
    description, source, kind = catalog.approximation_text(name)
    return Approximation(name, err.forward, err.forward_at, err.grad, err.grad_at,
                         description, source, kind)


#: name -> Approximation, in the order of the generated table
APPROXIMATIONS = MappingProxyType({name: _record(name, err)
                                   for name, err in catalog.APPROX_ERRORS.items()})

__getattr__, __dir__, _names = _publish.module(__name__)
__all__ = ["APPROXIMATIONS", "Approximation", *_names]
