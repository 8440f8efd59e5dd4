"""The floating-point environment that state built on a first call is built
in: round to nearest, subnormals kept, whatever the caller's thread has set.

Why: the 2-byte tables (:mod:`gelu_numba.targets.half_tables`) and the
compiled loops are built once, on a process's first call that needs them,
and kept for the whole process.  That call may run with flush-to-zero (FTZ)
and denormals-are-zero (DAZ) set: ``torch.set_flush_denormal(True)`` sets
both on its thread, and XLA's CPU threads run with them (the first call of
a deserialized ``jax.export`` program builds there).  A table built so
holds 0 wherever the exact value is subnormal, for the rest of the process.
A directed rounding mode (``fesetround``) would bias every entry.  So each
build runs in :func:`default_environment`: the caller's environment is
saved, the rounding mode set to nearest and FTZ/DAZ cleared, and the saved
environment restored afterwards, its exception flags included (the
build's own underflows are not the caller's, and NumPy's ``errstate``
reads the flags after a call).

How: C's ``fegetenv``/``fesetenv`` through :mod:`ctypes`.  On x86-64 Linux
(glibc's ``fenv_t``: the x87 environment, 28 bytes with the control word
first, then MXCSR) the saved environment is written back with the x87 and
SSE rounding fields cleared (nearest) and MXCSR's FTZ (bit 15) and DAZ (bit
6) cleared, the exception masks left as the caller had them.  Elsewhere
glibc's ``FE_DFL_ENV`` (round to nearest, no flush).  Without a C library
that has ``fesetenv`` the environment is left as it is.
"""

import contextlib
import ctypes
import platform
import sys

# glibc's fenv_t on x86-64: 32 bytes (a larger buffer costs nothing and
# survives a larger struct)
ENV_BYTES = 64
# x86-64 fenv_t: the x87 control word at byte 0 (rounding control: bits
# 10-11), MXCSR at byte 28 (rounding control: bits 13-14; FTZ: bit 15;
# DAZ: bit 6)
_X87_CW, MXCSR = 0, 28
_X87_ROUNDING = 0x0C00
MXCSR_ROUNDING, FTZ, DAZ = 0x6000, 1 << 15, 1 << 6
# glibc's FE_DFL_ENV: ((const fenv_t *) -1)
_FE_DFL_ENV = ctypes.c_void_p(-1 & (2**64 - 1))


def _libc():
    try:
        libc = ctypes.CDLL(None)
        get, set_ = libc.fegetenv, libc.fesetenv
    except (OSError, AttributeError):
        return None, None
    get.argtypes = set_.argtypes = [ctypes.c_void_p]
    get.restype = set_.restype = ctypes.c_int
    return get, set_


fegetenv, fesetenv = _libc()
X86_64_LINUX = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def _clean(saved):
    """The environment to build in, from the caller's ``saved`` one."""
    if not X86_64_LINUX:
        return _FE_DFL_ENV
    clean = ctypes.create_string_buffer(saved.raw, ENV_BYTES)
    cw = ctypes.c_uint16.from_buffer(clean, _X87_CW)
    cw.value &= ~_X87_ROUNDING
    mxcsr = ctypes.c_uint32.from_buffer(clean, MXCSR)
    mxcsr.value &= ~(MXCSR_ROUNDING | FTZ | DAZ)
    return clean


@contextlib.contextmanager
def default_environment():
    """Run the block with round to nearest and no flush to zero, then
    restore the caller's environment (its flags included)."""
    if fegetenv is None:
        yield
        return
    saved = ctypes.create_string_buffer(ENV_BYTES)
    if fegetenv(saved) != 0:
        yield
        return
    fesetenv(_clean(saved))
    try:
        yield
    finally:
        fesetenv(saved)
