"""What the exhaustive float32 sweeps share, on the CPU
(:mod:`analysis.sweep_float32`) and on the GPU (:mod:`analysis.gpu.sweep`):
the functions they judge, the upstream gradient of each input, and the
counters of a sweep and the row they become."""

import functools

import numpy as np
from numba import njit, vectorize

from reference import f64 as _ref

FUNCTIONS = _ref.FUNCTIONS
N_PATTERNS = 2**32


_U32 = np.uint64(0xFFFFFFFF)


@njit
def dy_bits(bits):
    """The bit pattern of the upstream gradient for the input bit pattern
    ``bits`` (uint32 in and out): a multiplicative hash, ``|dy|`` in [0.25,
    4) with a hashed sign and significand.  One scalar definition for the
    CPU sweep (:func:`dy_for_bits`) and the GPU sweep's kernels; in uint64
    with explicit masks, where Numba would widen uint32 products anyway."""
    h = (np.uint64(bits) * np.uint64(0x9E3779B1)) & _U32
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(0x85EBCA6B)) & _U32
    h ^= h >> np.uint64(13)
    sign = h & np.uint64(0x80000000)
    expo = (np.uint64(125) + ((h >> np.uint64(23)) & np.uint64(3))) << np.uint64(23)
    mant = h & np.uint64(0x007FFFFF)
    return np.uint32(sign | expo | mant)


@functools.lru_cache(maxsize=None)
def _dy_bits_ufunc():
    return vectorize(["uint32(uint32)"])(lambda b: dy_bits(b))


def dy_for_bits(bits: np.ndarray) -> np.ndarray:
    """The fixed pseudo-random upstream gradient for each input bit pattern.

    Parameters
    ----------
    bits : numpy.ndarray of uint32
        Input bit patterns.

    Returns
    -------
    numpy.ndarray of float32
        ``|dy|`` in [0.25, 4) with a hashed sign and significand
        (:func:`dy_bits`).
    """
    return _dy_bits_ufunc()(np.asarray(bits, dtype=np.uint32)).view(np.float32)


def n_inputs(stride: int) -> int:
    """Number of bit patterns a sweep with ``stride`` visits."""
    return -(-N_PATTERNS // stride)


def empty_stats() -> dict:
    return {
        "checked": 0,
        "nan_inputs": 0,
        "nan_inputs_bad_output": 0,
        "special_mismatches": 0,
        "correctly_rounded": 0,
        "over_1ulp": 0,
        "max_ulp": -1.0,
        "worst_bits": None,
        "worst_output": None,
        "worst_reference": None,
        "first_mismatch_bits": None,
        "output_dtype": None,
    }


def merge_stats(a: dict, b: dict) -> dict:
    for k in ("checked", "nan_inputs", "nan_inputs_bad_output", "special_mismatches",
              "correctly_rounded", "over_1ulp"):
        a[k] += b[k]
    if b["max_ulp"] > a["max_ulp"]:
        for k in ("max_ulp", "worst_bits", "worst_output", "worst_reference"):
            a[k] = b[k]
    if a["first_mismatch_bits"] is None:
        a["first_mismatch_bits"] = b["first_mismatch_bits"]
    a["output_dtype"] = a["output_dtype"] or b["output_dtype"]
    return a


def finish_row(name, stride, st, seconds) -> dict:
    checked = st["checked"]
    wb = st["worst_bits"]
    worst = None if wb is None else float(np.uint32(wb).view(np.float32))
    return {
        "function": name,
        "stride": stride,
        "checked": checked,
        "max_ulp": st["max_ulp"] if wb is not None else None,
        "worst_input": worst,
        "worst_input_hex": None if wb is None else f"0x{wb:08x}",
        "worst_output": st["worst_output"],
        "worst_reference": st["worst_reference"],
        "correctly_rounded": st["correctly_rounded"],
        "correctly_rounded_share": st["correctly_rounded"] / checked if checked else None,
        "over_1ulp": st["over_1ulp"],
        "special_mismatches": st["special_mismatches"],
        "first_mismatch_hex": None if st["first_mismatch_bits"] is None
        else f"0x{st['first_mismatch_bits']:08x}",
        "nan_inputs": st["nan_inputs"],
        "nan_inputs_bad_output": st["nan_inputs_bad_output"],
        "output_dtype": st["output_dtype"],
        "seconds": round(seconds, 3),
    }
