"""The machine a result was measured on: platform, CPU model, core count and
library versions, recorded by the benchmarks and by every analysis script
that writes a result file."""

from __future__ import annotations

import multiprocessing
import platform

import numpy as np


def machine_info() -> dict:
    """Platform, CPU model and library versions."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": multiprocessing.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    for mod in ("numba", "scipy"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = None
    return info


def machine_line(info: dict) -> str:
    """:func:`machine_info` as one line."""
    return (f"{info['cpu']}, {info['cpu_count']} cores, {info['platform']}, "
            f"Python {info['python']}, numpy {info['numpy']}, numba {info['numba']}, "
            f"scipy {info['scipy']}")
