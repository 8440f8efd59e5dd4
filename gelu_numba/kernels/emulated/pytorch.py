"""PyTorch's GELU, emulated in float32.

Code paths (PyTorch 2.13, x86-64; ``torch.nn.functional.gelu``)
----------------------------------------------------------------
* CPU, exact (``approximate='none'``), contiguous float32 (and bfloat16 where
  oneDNN's ISA is AVX-512) with oneDNN enabled (the default of the x86
  wheels): oneDNN's eltwise ``gelu_erf`` (:mod:`.onednn`; one path on
  AVX-512, another on AVX2), not this module.
* CPU, exact, when oneDNN is off (``torch.backends.mkldnn`` disabled,
  builds without oneDNN) and for float16 CPU tensors: the ``at::vec``
  kernel, :func:`cpu_vec_erf`: ``x * 0.5 * (1 + erf(x * M_SQRT1_2))`` with
  ``Vectorized<float>::erf`` = Abramowitz & Stegun 7.1.26 around SLEEF's
  ``expf_u10``.  Half inputs are computed in float32, rounded once.
* CPU, exact, non-contiguous (strided) inputs: the same expression on
  scalars, ``std::erf`` = glibc ``erff`` (:func:`cpu_scalar_erf`).  The
  at::vec loop also ends in it: it takes 32 elements at a time (two
  16-lane vectors) and sends the last ``n % 32`` elements of each thread's
  chunk through the scalar formula, so the same value gets different
  results at different positions (at x = -5.5426: -1.65e-7 from the vector
  path, 0 from the scalar one; the gelu-numba repository's
  ``tests/test_production.py``).
* CPU, ``approximate='tanh'``: ``at::vec`` with SLEEF ``tanhf_u10``
  (:func:`cpu_vec_tanh`; :mod:`.sleef`), the same bits on AVX2 and
  AVX-512.  GCC contracts the vector expression's products and sums into
  FMAs: ``x + kKappa x**3`` in the forward, and ``1 - t*t``,
  ``1 + 3 kKappa x**2`` and ``0.5 (1 + t) + right`` in the backward.
* CUDA (``ActivationGeluKernel.cu``): ``x * 0.5 * (1 + erf(x * kAlpha))``
  and the tanh form in float32 (``opmath_t``) with CUDA's ``erff`` /
  ``tanhf`` (:func:`cuda_erf`, :func:`cuda_tanh`), as an algorithm on the
  CPU.

Sources read: pytorch/pytorch ``aten/src/ATen/native/cpu/Gelu.h``
(commit 032ca0930d17: kGeluBeta = M_SQRT2 M_2_SQRTPI / 2, kGeluKappa =
0.044715, the vectorised and scalar lambdas),
``aten/src/ATen/cpu/vec/vec512/vec512_float.h`` (0243643e: ``erf``),
``aten/src/ATen/native/Activation.cpp`` (the oneDNN dispatch),
``aten/src/ATen/native/cuda/ActivationGeluKernel.cu`` (043e4c88);
shibatch/sleef ``src/libm/sleefsimdsp.c`` (``xexpf``), the vector variant
PyTorch links (``Sleef_expf16_u10``, FMA).

Method
------
``erf`` (A&S 7.1.26, PyTorch's operation order): ``t = 1 / fma(p, |x|, 1)``
(a true division), ``r = ((((p5 t + p4) t + p3) t + p2) t + p1`` in FMAs,
``erf = sign(x) * fma(-exp(-x*x) * t, r, 1)`` (``x*x`` rounded, then
negated).  The result's ``1 + erf`` cancels for x < 0: it is 0 from x = -5.5430
down (relative error 1), the collapse pytorch#187806 reports.

``exp`` is SLEEF's ``xexpf`` exactly: ``q = rint(d / ln 2)``, Cody-Waite
reduction with ``L2U``/``L2L`` in FMAs, a degree-6 polynomial in FMAs,
``2**q`` applied in two steps, 0 below -104 and inf above 100.  The
emulation of the at::vec path is therefore bit-identical to PyTorch
(the repository's ``tests/test_production_pytorch.py``).

Stand-ins: glibc's ``erff`` (scalar path) and CUDA's ``erff``,
``tanhf`` and ``expf`` (documented 2, 2 and 2 ulp) are replaced by the
correctly rounded float32 value; the emulations of those paths can differ
from the library by those functions' last-bit differences, which matter
only where ``1 + erf`` or ``1 + tanh`` cancels (the negative tail).
"""

import math

import numpy as np

from gelu_numba.kernels.emulated.sleef import tanhf_u10
from gelu_numba.kernels.primitives import inline, fma32, float32_bits, float32_from_bits

_f = np.float32

# -------------------------------------------------------------- constants
# Abramowitz & Stegun 7.1.26 as PyTorch writes them (float literals)
AS_P = _f(0.3275911)
AS_A1 = _f(0.254829592)
AS_A2 = _f(-0.284496736)
AS_A3 = _f(1.421413741)
AS_A4 = _f(-1.453152027)
AS_A5 = _f(1.061405429)
#: M_SQRT1_2 rounded to float (kAlpha)
K_ALPHA = _f(0.70710678118654752440)
#: M_2_SQRTPI * M_SQRT1_2 * 0.5 = 1/sqrt(2 pi), rounded to float (backward's kBeta)
K_BETA_PDF = _f(1.12837916709551257390 * 0.70710678118654752440 * 0.5)
#: M_SQRT2 * M_2_SQRTPI * 0.5 = sqrt(2/pi), rounded to float (tanh form's kBeta)
K_BETA_TANH = _f(1.41421356237309504880 * 1.12837916709551257390 * 0.5)
#: 0.044715 (kKappa)
K_KAPPA = _f(0.044715)
HALF = _f(0.5)
ONE = _f(1.0)
MINUS_HALF = _f(-0.5)
THREE = _f(3.0)
THREE = _f(3.0)

# SLEEF xexpf: 1/ln 2, ln 2 split in an upper part with trailing zeros and a
# lower part, the degree-6 polynomial (sleefsimdsp.c)
R_LN2F = _f(1.442695040888963407359924681001892137426645954152985934135449406931)
L2UF = _f(0.693145751953125)
L2LF = _f(1.428606765330187045e-06)
E6 = _f(0.000198527617612853646278381)
E5 = _f(0.00139304355252534151077271)
E4 = _f(0.00833336077630519866943359)
E3 = _f(0.0416664853692054748535156)
E2 = _f(0.166666671633720397949219)
E1 = _f(0.5)
_EXP_UNDER = _f(-104.0)
_EXP_OVER = _f(100.0)
_INF = _f(np.inf)
_ZERO = _f(0.0)


# ---------------------------------------------------------- the functions

@inline
def _pow2i(q):
    # 2**q for -126 <= q <= 127, built from bits as SLEEF's vpow2i does
    return float32_from_bits(np.uint32(q + 127) << np.uint32(23))


@inline
def sleef_expf_u10(d):
    """SLEEF ``xexpf`` (``Sleef_expf*_u10``, FMA build)."""
    if d != d:
        return d
    # SLEEF computes on any d and masks the result below -104 and above
    # 100; computing on a d inside that range instead gives the same
    # results without raising overflow and invalid on the way
    dc = d if (d >= _EXP_UNDER and d <= _EXP_OVER) else _ZERO
    qf = np.float32(np.rint(dc * R_LN2F))
    q = np.int32(qf)
    s = fma32(qf, -L2UF, dc)
    s = fma32(qf, -L2LF, s)
    u = fma32(E6, s, E5)
    u = fma32(u, s, E4)
    u = fma32(u, s, E3)
    u = fma32(u, s, E2)
    u = fma32(u, s, E1)
    u = ONE + fma32(s * s, u, s)
    # vldexp2: u * 2**(q >> 1) * 2**(q - (q >> 1))
    h = q >> np.int32(1)
    u = u * _pow2i(h) * _pow2i(q - h)
    if d < _EXP_UNDER:
        u = _ZERO
    if _EXP_OVER < d:
        u = _INF
    return u


@inline
def vec_erf(x):
    """``Vectorized<float>::erf`` (A&S 7.1.26 with SLEEF expf)."""
    a = abs(x)
    t = ONE / fma32(AS_P, a, ONE)
    r = fma32(AS_A5, t, AS_A4)
    r = fma32(r, t, AS_A3)
    r = fma32(r, t, AS_A2)
    r = fma32(r, t, AS_A1)
    e = -sleef_expf_u10(-(x * x))
    v = fma32(e * t, r, ONE)
    return -v if float32_bits(x) >> np.uint32(31) else v


@inline
def _glibc_erf(v):
    # Numba's math.erf of a float32 calls the C library's erff: on Linux
    # glibc's, the std::erf of PyTorch's scalar path (bit-identical, tested)
    return math.erf(v)


@inline
def _cr_erf(v):
    # stand-in for CUDA's erff: the correctly rounded float32 erf
    return np.float32(math.erf(np.float64(v)))


@inline
def _cr_exp(v):
    # stand-in for CUDA's expf: the correctly rounded float32 exp
    return np.float32(math.exp(np.float64(v)))


@inline
def _cr_tanh(v):
    # stand-in for CUDA's tanhf: the correctly rounded float32 tanh
    return np.float32(math.tanh(np.float64(v)))




@inline
def _erf_form(x, erf):
    return x * HALF * (ONE + erf(x * K_ALPHA))


@inline
def _erf_backward(x, erf, exp):
    # dy * (cdf + x * pdf): PyTorch writes the sum plainly; both the at::vec
    # build and nvcc contract it into an FMA (on the CPU only the FMA is
    # bit-identical to torch 2.13: the plain sum matches 96 % of inputs)
    cdf = HALF * (ONE + erf(x * K_ALPHA))
    pdf = K_BETA_PDF * exp(x * x * MINUS_HALF)
    return fma32(x, pdf, cdf)


@inline
def _tanh_form(x, tanh):
    x_cube = x * x * x
    inner = K_BETA_TANH * (x + K_KAPPA * x_cube)
    return HALF * x * (ONE + tanh(inner))


@inline
def _vec_tanh_form(x):
    # at::vec as GCC compiles it: x + kKappa * x_cube is one FMA
    x_cube = x * x * x
    inner = K_BETA_TANH * fma32(K_KAPPA, x_cube, x)
    return HALF * x * (ONE + tanhf_u10(inner))


@inline
def _vec_tanh_backward(x):
    # at::vec's backward with GCC's FMA contractions (each bit-identical to
    # torch 2.13 only so: the plain form matched 91 % of inputs)
    x_sq = x * x
    x_cube = x_sq * x
    inner = K_BETA_TANH * fma32(K_KAPPA, x_cube, x)
    t = tanhf_u10(inner)
    left = HALF * x
    right = ONE + t
    tanh_derivative = fma32(-t, t, ONE)
    inner_derivative = K_BETA_TANH * fma32(THREE * K_KAPPA, x_sq, ONE)
    right_derivative = left * tanh_derivative * inner_derivative
    return fma32(HALF, right, right_derivative)


@inline
def _tanh_backward(x, tanh):
    x_sq = x * x
    x_cube = x * x * x
    inner = K_BETA_TANH * (x + K_KAPPA * x_cube)
    t = tanh(inner)
    left = HALF * x
    right = ONE + t
    left_derivative = HALF * right
    tanh_derivative = ONE - t * t
    inner_derivative = K_BETA_TANH * (ONE + THREE * K_KAPPA * x_sq)
    right_derivative = left * tanh_derivative * inner_derivative
    return left_derivative + right_derivative


# ------------------------------------------------------- the code paths

@inline
def cpu_vec_erf(x):
    """at::vec exact GELU: ``x * 0.5 * (1 + erf(x * kAlpha))``."""
    return _erf_form(x, vec_erf)


@inline
def cpu_vec_erf_grad(x):
    """at::vec exact backward at dy = 1: ``fma(x, pdf, cdf)``."""
    return _erf_backward(x, vec_erf, sleef_expf_u10)


@inline
def cpu_scalar_erf(x):
    """Scalar exact GELU (strided tensors), std::erf = glibc ``erff``."""
    return _erf_form(x, _glibc_erf)


@inline
def cpu_vec_tanh(x):
    """at::vec tanh GELU, ``x**3 = x * x * x``."""
    return _vec_tanh_form(x)


@inline
def cpu_vec_tanh_grad(x):
    """at::vec tanh GELU backward at dy = 1."""
    return _vec_tanh_backward(x)


@inline
def cuda_erf(x):
    """CUDA exact GELU (float opmath), CUDA erff stand-in."""
    return _erf_form(x, _cr_erf)


@inline
def cuda_erf_grad(x):
    """CUDA exact backward at dy = 1 (CUDA erff and expf stand-ins)."""
    return _erf_backward(x, _cr_erf, _cr_exp)


@inline
def cuda_tanh(x):
    """CUDA tanh GELU (float opmath), CUDA tanhf stand-in."""
    return _tanh_form(x, _cr_tanh)


@inline
def cuda_tanh_grad(x):
    """CUDA tanh GELU backward at dy = 1, CUDA tanhf stand-in."""
    return _tanh_backward(x, _cr_tanh)


_TORCH = "pytorch/pytorch v2.13.0"
_VEC_SRC = (f"{_TORCH}: aten/src/ATen/native/cpu/Gelu.h (GeluKernelImpl, "
            "GeluBackwardKernelImpl), aten/src/ATen/cpu/vec/vec512/vec512_float.h (erf); "
            "shibatch/sleef src/libm/sleefsimdsp.c (xexpf)")
_CUDA_SRC = f"{_TORCH}: aten/src/ATen/native/cuda/ActivationGeluKernel.cu"

ENTRIES = (
    dict(name="pytorch_cpu_vec_erf", library="PyTorch",
         runs="torch.nn.functional.gelu(x) on CPU when oneDNN is not used: torch.backends."
              "mkldnn disabled, builds without oneDNN, float16 on CPUs without oneDNN's half "
              "support (and bfloat16 too without AVX-512); Inductor's CPU code; contiguous float32 on x86 goes to oneDNN "
              "(onednn_gelu_erf_avx512, onednn_gelu_erf_avx2 without AVX-512), and on "
              "this AVX-512-FP16 CPU float16 does too",
         formula="x*0.5*(1 + erf(x*M_SQRT1_2)), erf = A&S 7.1.26 around SLEEF expf_u10",
         source=_VEC_SRC, forward=cpu_vec_erf, grad=cpu_vec_erf_grad, half=None,
         checked="torch 2.13.0 (CPU, mkldnn disabled, one thread, blocks of 32): forward and "
                 "gelu_backward (dy = 1) bit-identical on 599,232 float32 inputs (400,001 on "
                 "[-12, 12], 200,000 random bit patterns, specials) and on 3,000,000 in a "
                 "longer check; float16 inputs computed in float32 and rounded once, "
                 "identical on all 63,488. The last n % 32 elements of a chunk take the "
                 "scalar path (pytorch_cpu_scalar_erf)"),
    dict(name="pytorch_cpu_scalar_erf", library="PyTorch",
         runs="torch.nn.functional.gelu(x) on a non-contiguous (strided) CPU float32 tensor",
         formula="x*0.5*(1 + erff(x*M_SQRT1_2)), glibc erff",
         source=f"{_TORCH}: aten/src/ATen/native/cpu/Gelu.h (the scalar lambda)",
         forward=cpu_scalar_erf, grad=None, half=None,
         checked="torch 2.13.0 on a strided tensor: bit-identical on 3,000,009 float32 inputs "
                 "(Numba calls the same glibc erff); the backward of a strided tensor is "
                 "not separately emulated"),
    dict(name="pytorch_cpu_vec_tanh", library="PyTorch",
         runs="torch.nn.functional.gelu(x, approximate='tanh') on CPU (all dtypes, contiguous; "
              "oneDNN is used for it only on aarch64)",
         formula="0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x*x*x)))",
         source=_VEC_SRC, forward=cpu_vec_tanh, grad=cpu_vec_tanh_grad, half=None,
         checked="torch 2.13.0 (CPU, AVX-512 and ATEN_CPU_CAPABILITY=avx2: the same bits): "
                 "forward and gelu_backward (dy = 1) bit-identical on 8,000,001 float32 inputs "
                 "(3,000,000 normal, 2,000,001 on [-12, 12], 3,000,000 random bit patterns); "
                 "SLEEF tanhf_u10 transcribed (kernels.emulated.sleef)"),
    dict(name="pytorch_cuda_erf", library="PyTorch",
         runs="torch.nn.functional.gelu(x) on CUDA, all float dtypes (half and bfloat16 "
              "through float opmath)",
         formula="x*0.5*(1 + erff(x*M_SQRT1_2)) in float, CUDA erff",
         source=_CUDA_SRC, forward=cuda_erf, grad=cuda_erf_grad, half=None,
         checked="source only (no GPU here); CUDA erff and expf replaced by correctly rounded "
                 "values (CUDA documents 2 ulp for both)"),
    dict(name="pytorch_cuda_tanh", library="PyTorch",
         runs="torch.nn.functional.gelu(x, approximate='tanh') on CUDA",
         formula="0.5*x*(1 + tanhf(sqrt(2/pi)*(x + 0.044715*x*x*x))) in float",
         source=_CUDA_SRC, forward=cuda_tanh, grad=cuda_tanh_grad, half=None,
         checked="source only (no GPU here); CUDA tanhf replaced by the correctly rounded "
                 "value (CUDA documents 2 ulp)"),
)
