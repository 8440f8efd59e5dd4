"""Reference implementations used to measure the kernels' accuracy.

``mp``
    mpmath at >= 320 bits (adaptive where GELU' cancels); the ground truth.
``f64``
    A vectorised NumPy/SciPy float64 reference for float32 inputs, validated
    against ``mp`` to a relative error below 1e-12; fast enough for
    exhaustive float32 sweeps.
``make_table``
    Writes the committed mpmath table ``tests/data/reference_table.npz``.
"""
