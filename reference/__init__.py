"""Reference implementations used to measure the kernels' accuracy.

Repository tools (mpmath, SciPy: the ``reference`` extra), not part of the
installed package; the tests, ``analysis/`` and ``fitting/`` import them.

``mp``
    mpmath at >= 320 bits (adaptive where GELU' cancels); the ground truth.
``f64``
    A vectorised NumPy/SciPy float64 reference for float32 inputs, validated
    against ``mp`` to a relative error below 1e-12; fast enough for
    exhaustive float32 sweeps.
``make_table``, ``make_half_table``
    Write the committed mpmath tables ``tests/data/reference_table.npz`` and
    ``tests/data/half_reference.npz`` (``python -m reference.make_table``).
"""


def lookup(record):
    """The mpmath reference of catalog record ``record``: its
    ``reference``, a callable or ``"module.function"`` of this package
    (``"mp.gelu"``, ``"approx.gelu_poly6_grad"``)."""
    import importlib
    ref = record.reference
    if callable(ref):
        return ref
    module, _, name = ref.rpartition(".")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
