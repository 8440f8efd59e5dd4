"""Emulations of the GELUs that production libraries compute.

One module per library.  Each reproduces its library's float32 arithmetic:
the constants as the library stores them (float32 literals), its evaluation
order, its fused multiply-adds (:func:`~gelu_numba.kernels.primitives.bits32.fma32`)
and separate roundings, its clamps and its lookup tables.  Where the library
calls a transcendental function whose exact algorithm is out of reach (a
libm, CUDA's libdevice), the emulation says what stands in for it and how
far apart the two can be.

Every module ends with ``ENTRIES``, a tuple of dicts that
:mod:`gelu_numba.production` turns into registry records:

``name``
    registry key, ``<library>_<variant>``;
``library``, ``runs``
    who runs it: the library, and the call and conditions that reach this
    code path (dtype, layout, CPU features);
``formula``
    one line;
``source``
    repository @ commit (or version): path, what was read;
``forward``
    scalar kernel ``f(x)``, float32 in, float32 out, compiled with
    ``numba.njit(inline="always")`` (the kernels of a module call one
    another; :mod:`gelu_numba.targets.cpu.emulated` inlines them into its loop);
``grad``
    the library's own backward at ``dy = 1`` (``f(x)``), or None where the
    library differentiates the forward (autodiff) rather than running a
    backward formula of its own, or where it is not emulated yet;
``half``
    None if the library computes float16 and bfloat16 in float32 and rounds
    once at the end, else ``half(x, fmt)``: the library's half-precision
    arithmetic on a float32 array of ``fmt`` values (``"float16"`` or
    ``"bfloat16"``), returning the float32 values of its ``fmt`` results;
``checked``
    what the emulation was checked against: the installed library (which
    version, which inputs, how many bits agree) or its source only.
"""
