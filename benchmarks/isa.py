"""Measuring both x86 ISAs on any machine: ``--isa avx2`` for the benchmarks.

Most laptops and many servers have AVX2 and no AVX-512.  On an AVX-512
machine each library can be made to run its AVX2 code instead, but only by
environment variables read when it starts, so a benchmark asked for another
ISA re-executes itself with them (:func:`run_as`):

* Numba: ``NUMBA_CPU_NAME=haswell`` and ``NUMBA_CPU_FEATURES`` without
  AVX-512 (the name alone keeps the host's features);
* PyTorch: ``ATEN_CPU_CAPABILITY=avx2`` (its at::vec kernels);
* oneDNN (PyTorch's default exact GELU): ``ONEDNN_MAX_CPU_ISA=AVX2``.

ONNX Runtime's MLAS and JAX's XLA take no such variable: their rows keep the
host's ISA (:func:`describe` says which each ran).
"""

import os
import sys

#: ISA name -> the environment that makes each library run it
ENVIRONMENTS = {
    "avx2": {"NUMBA_CPU_NAME": "haswell",
             "NUMBA_CPU_FEATURES": "-avx512f",
             "ATEN_CPU_CAPABILITY": "avx2",
             "ONEDNN_MAX_CPU_ISA": "AVX2"},
}
CHOICES = ("native", *ENVIRONMENTS)


def run_as(isa, module):
    """Re-execute ``python -m module`` with the same arguments under ``isa``'s
    environment, unless already there (or ``isa`` is "native")."""
    env = ENVIRONMENTS.get(isa)
    if env is None or all(os.environ.get(k) == v for k, v in env.items()):
        return
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]],
              {**os.environ, **env})


def describe():
    """What each library runs in this process: Numba's target CPU and
    whether it uses 512-bit vectors, PyTorch's at::vec capability."""
    import llvmlite.binding as ll
    from numba.core import config
    name = config.CPU_NAME or ll.get_host_cpu_name()
    features = (config.CPU_FEATURES if config.CPU_FEATURES is not None
                else ll.get_host_cpu_features().flatten())
    avx512 = "+avx512f" in features
    parts = [f"Numba: {name}, {'AVX-512' if avx512 else 'AVX2'}"]
    try:
        import torch
        parts.append(f"PyTorch at::vec: {torch.backends.cpu.get_cpu_capability()}")
    except ImportError:  # pragma: no cover - optional peer
        pass
    if os.environ.get("ONEDNN_MAX_CPU_ISA"):
        parts.append(f"oneDNN capped to {os.environ['ONEDNN_MAX_CPU_ISA']}")
    return "; ".join(parts)
