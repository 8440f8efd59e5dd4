"""gelu_numba.gpu: the package's functions on NVIDIA GPUs (numba-cuda).

Every function of :mod:`gelu_numba` has a GPU twin of the same name here:
``gelu``, ``gelu_grad``, ``gelu_grad2``, ``gelu_backward``, ``ndtr``,
``norm_pdf``, ``gelu_general``, ``silu``, ``x_cauchy``, ``lalu`` (and their
``_grad``), every approximation of :mod:`gelu_numba.approximations`
(``gelu_tanh``, ``gelu_poly14``, ...; each with ``_grad``) and
:func:`soi_map`.  Each is a ``@cuda.jit`` kernel with a grid-stride loop
around the device function of :mod:`gelu_numba.gpu.device`, which is
compiled from the same scalar source as the CPU ufunc, so both targets
compute the same formulas.  NVVM may contract a plain product and sum into
an FMA (results agree within 1 ulp); the error-free transformations, whose low
parts a contraction would lose, use ``add_rn``/``mul_rn``, which it does not
contract (:mod:`gelu_numba.kernels.primitives.intrinsics`).

One exception, for speed, chosen per device: most GPUs run FP64 at 1/32 to
1/64 of their FP32 rate, and there the float32 kernels of ``gelu``,
``gelu_grad``, ``gelu_grad2``, ``gelu_backward``, ``ndtr`` and ``norm_pdf``
compute in float32 arithmetic, where the CPU's compute in float64: for
``gelu``, ``ndtr``, ``gelu_grad`` and ``gelu_backward`` the lean kernels of
:mod:`gelu_numba.kernels.lean32` (one table row per element, no division;
the table a device array the launch passes), for the other two
:mod:`gelu_numba.kernels.gpu32` (float-float steps); neither has
an FP64 instruction in its PTX.  On devices with half-rate FP64 (compute
capability 6.0, 7.0, 8.0, 9.0, 10.0: P100, V100, A100, H100/H200,
B100/B200; :data:`gelu_numba.targets.cuda.variants.FULL_RATE_FP64`) they run the
float32 kernel in float64 arithmetic (``k32``, the design of the CPU's fast
path on smaller tables and without its rounding test: <<plain32_bound>> ulp,
not correctly rounded as the CPU's float32 is; the contiguous launch reads
its coefficient tables once into registers; the repository's
``benchmarks/results/gpu_sass_sm90.md``), except where that device's own
measurements found the lean kernel faster (both below 1 ulp on every
input: :mod:`gelu_numba.targets.cuda.choice`, generated from the GPU runs
by ``python -m analysis.gpu.choice --update``).  The choice is one method,
:meth:`GpuFunction.variant <gelu_numba.targets.cuda.function.GpuFunction.variant>`.
The device functions of :mod:`gelu_numba.gpu.device`, which take no table,
always compute in float32 arithmetic with
:mod:`~gelu_numba.kernels.gpu32`.  The stated bound of both
float32-arithmetic designs is <<gpu32_bound>> ulp; measured on all 2**32 float32 inputs of their CPU compilation (the
same operations), the lean kernels reach at most <<lean32_max_ulp>> ulp,
<<lean32_over_1ulp>> above 1 ulp, <<lean32_correctly_rounded>> correctly
rounded, and ``gpu32`` at most <<gpu32_max_ulp>> ulp,
<<gpu32_over_1ulp>> above 1 ulp, <<gpu32_correctly_rounded>> correctly
rounded (``analysis/results/sweep_float32_{lean32,gpu32}.json`` in the
gelu-numba repository; :mod:`gelu_numba.figures`).

The float64 kernels of the six exact functions have, as on the CPU, an
ordinary form (the same operations, less the steps that only other inputs
need: :mod:`gelu_numba.kernels.normal`): a warp whose elements are all in
its range (``2**-900 <= |x| < 4`` or 0) runs it, any other warp the general
kernel, chosen by a warp vote; both give the CPU's bits.

Calling convention::

    f(*inputs, out=None, stream=None) -> device array

* inputs: numba device arrays or any object with
  ``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors; no
  copy), host NumPy arrays or scalars (copied to the device); float32 or
  float64, other real dtypes cast by NumPy's safe-casting rules as on the
  CPU (int32/int64 to float64, int8/int16/bool/float16 to float32); any
  shape and strides; inputs broadcast together.  Inputs are never written
  (unless one is also ``out``).
* ``out``: a device array of the broadcast shape, float32 or float64; the
  result is written there and ``out`` itself is returned.  Otherwise a new
  array of the first device operand's library is returned: a PyTorch
  tensor from PyTorch's caching allocator, a CuPy array from CuPy's memory
  pool, else a numba device array from gelu-numba's stream-ordered memory
  pool (:mod:`~gelu_numba.targets.cuda.output_pool`; numba's own
  allocation on a non-blocking stream).  Nothing is copied back to the host
  (``.copy_to_host()``, ``.cpu()``, ``.get()``).  Like PyTorch's and CuPy's
  pools, the pool frees an output in stream order when it is dropped: on
  the legacy default stream, after the work of every blocking stream
  (numba's default and ``cuda.stream()`` streams); an output used on a
  non-blocking stream must be synchronised with before it is dropped.
* ``stream``: the CUDA stream of the launch, a numba stream or 0 (the
  default stream); by default the current stream of that library
  (PyTorch's, CuPy's), so that the call is ordered with its other work,
  else the default stream.

Kernels compile on first use for each dtype and layout (contiguous
operands of one shape take a flat loop; strided and broadcast ones an N-D
loop).  The launch uses 256 threads per block and at most 16 blocks per
multiprocessor of the current device (:mod:`gelu_numba.targets.cuda.launch`).

Fast launches: when every operand (``out`` included) is a C-contiguous
device array of the same shape and the same dtype, float32 or float64
(numba's, CuPy's, PyTorch's: anything with ``__cuda_array_interface__``),
the call skips numba-cuda's argument import and dispatcher and launches the
compiled kernel directly; pass ``out=`` to skip the allocation too.  Host
inputs, scalars, strides, broadcasting, mixed dtypes and arrays bound to
another stream take the general path, as before.  The first fast launch
of each function and dtype on a device is checked bit for bit against the
general path on a probe (and disabled, with a warning, if they differ).

Under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1`` set before numba
is imported) everything runs on the CPU, slowly; the test suite uses it
when no GPU is present.  Requires ``pip install 'gelu-numba[cuda]'``.
"""

from gelu_numba import catalog  # noqa: E402
from gelu_numba.figures import fill as _fill

# the stated bounds from the catalog, the measured figures from the
# committed results
__doc__ = _fill(__doc__.replace("<<gpu32_bound>>", f"{catalog.GPU32_BOUND}")
                .replace("<<plain32_bound>>", catalog.describe_bound(catalog.PLAIN32_BOUND)))


import importlib
import importlib.util

if importlib.util.find_spec("numba_cuda") is None:
    raise ImportError("gelu_numba.gpu needs numba-cuda: "
                      "pip install 'gelu-numba[cuda]'")

try:
    importlib.import_module("numba.cuda")
except AttributeError as _exc:
    # numba-cuda 0.30.4 registers np.row_stack at import, and NumPy 2.5
    # removed it: an AttributeError from deep inside numba-cuda otherwise
    import importlib.metadata as _md

    import numpy as _np

    raise ImportError(
        f"gelu_numba.gpu: numba-cuda {_md.version('numba-cuda')} does not import under "
        f"NumPy {_np.__version__} ({_exc}); install a NumPy it supports "
        "(pip install 'numpy<2.5' for numba-cuda 0.30.x) or a numba-cuda release "
        "made for this NumPy") from _exc

from gelu_numba.gpu import device  # noqa: E402
from gelu_numba.gpu.soi import soi_map  # noqa: E402
from gelu_numba.targets import cuda as _cuda  # noqa: E402
from gelu_numba.targets import publish as _publish  # noqa: E402
from gelu_numba.targets.cuda.docs import kernel_sections as _sections  # noqa: E402

def _gpu32(fn):
    if fn.gpu_bound is None:
        return "\n    Same formulas and error bounds as the CPU ufunc.\n"
    return ("\n    Same formulas and error bounds as the CPU ufunc, except the float32\n"
            "    kernel on GPUs with slow FP64: float32 arithmetic,\n"
            f"    {fn.gpu_bound} ulp (:mod:`gelu_numba.gpu`).\n")


def _documented(fn):
    f = _cuda.gpu_function(fn.name)
    f.__doc__ = (f"{fn.name}({', '.join(fn.params)}, /, out=None, stream=None)  (GPU)\n"
                 f"{fn.doc}\n{_gpu32(fn)}{_sections(fn)}")
    return f


__getattr__, __dir__, _names = _publish.module(
    __name__, records=catalog.GPU, factory=_documented,
    # the 2-byte kernels (float16 and bfloat16 bits, correctly rounded)
    extra={"gelu_bits": "gelu_numba.targets.cuda.half_kernels",
           "gelu_backward_bits": "gelu_numba.targets.cuda.half_kernels"})
__all__ = _names + ["device", "soi_map"]
