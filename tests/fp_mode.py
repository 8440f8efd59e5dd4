"""Put this thread in a floating-point mode, as ``torch.set_flush_denormal``
and XLA's CPU threads do: MXCSR's bits, read and written through glibc's
``fenv_t`` on x86-64 (the layout of :mod:`gelu_numba.targets.fp_env`)."""

import ctypes

from gelu_numba.targets import fp_env

#: flush-to-zero and denormals-are-zero
FTZ_DAZ = fp_env.FTZ | fp_env.DAZ
#: MXCSR's rounding field at 0b11: round toward zero
ROUND_TOWARD_ZERO = fp_env.MXCSR_ROUNDING


def _env():
    env = ctypes.create_string_buffer(fp_env.ENV_BYTES)
    assert fp_env.fegetenv(env) == 0
    return env


def mxcsr():
    """This thread's MXCSR."""
    return ctypes.c_uint32.from_buffer(_env(), fp_env.MXCSR).value


def set_bits(set_=0, clear=0):
    """Set the bits ``set_`` of this thread's MXCSR and clear ``clear``."""
    env = _env()
    word = ctypes.c_uint32.from_buffer(env, fp_env.MXCSR)
    word.value = (word.value & ~clear & 0xFFFFFFFF) | set_
    assert fp_env.fesetenv(env) == 0
