"""Generators of the coefficient tables in ``gelu_numba/tables/`` (mpmath).

Repository tools, not part of the installed package: run from the
repository root as ``python -m fitting.make_tables`` (and ``make_tables32_cpu_f64``,
``make_tables32_gpu32``, ``make_half``, ``make_approximations``); each writes
into this checkout's ``gelu_numba/tables/`` unless given ``--out``.
"""
