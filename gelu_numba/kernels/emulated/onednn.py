"""oneDNN's GELU (eltwise ``gelu_erf``) on x86, emulated in float32: what
PyTorch runs for ``torch.nn.functional.gelu(x)`` on contiguous float32 CPU
tensors there, one path on AVX-512 and another below it (AVX2).

Code path (uxlfoundation/oneDNN v3.12, git 80afa71049cd, the version
PyTorch 2.13.0 reports in ``torch.__config__.show()``)
-------------------------------------------------------------------------
PyTorch's ``gelu_out_cpu`` (aten/src/ATen/native/Activation.cpp) sends
``approximate='none'`` on contiguous float32 tensors (and bfloat16 and, on
this AVX-512-FP16 CPU, float16) to oneDNN's eltwise ``gelu_erf``.  On
AVX-512 its JIT injector (src/cpu/x64/injectors/jit_uni_eltwise_injector.cpp,
``gelu_erf_minimax_approx_compute_vector_fwd``) evaluates erf(|x|/sqrt 2)
directly with 25 degree-5 minimax polynomials in ``|x|``:

* index = ``(bits(|x|) + 0xc21fffff) >> 21`` (arithmetic shift: four
  polynomials per binade, from |x| = 0.109375 = bits 0x3de00000 on;
  polynomial 1 below), clamped to [1, 24],
  and 23 (a polynomial equal to 1) where ``|x| > 0x40b15cee`` (5.5425940);
* ``p = c5[i]`` then five FMAs ``p = p |x| + c_d[i]``; ``p`` gets x's sign;
* ``y = (x * (p + 1)) * 0.5``.

So ``1 + erf`` cancels for x < 0 and is exactly 0 below x = -5.5426: the
"exactly 0" that tt-metal#52407 reports as torch's behaviour.  The table is
oneDNN's ``gelu_erf_minimax_polynomial`` (192 float32 bit patterns, 6
degrees x 32 padded polynomials), copied as data.

Without AVX-512 (AVX2 CPUs, or ``ONEDNN_MAX_CPU_ISA=AVX2``) the same
``gelu_erf_compute_vector_fwd`` computes Abramowitz & Stegun 7.1.26 with
oneDNN's own exp instead (:func:`gelu_erf_avx2`; every FMA below is one
``vfmadd``/``vfnmadd`` of the JIT):

* ``v = x * 0x3f3504f3`` (1/sqrt 2), ``t = 1 / fma(0x3ea7ba05, |v|, 1)``
  (p = 0.3275911; a true division);
* ``e = exp(q)``, ``q = -(v*v)``, by ``exp_compute_vector_fwd``
  (:func:`exp_injector`): ``q`` clamped to [ln FLT_MIN, ln FLT_MAX] (NaN
  becomes ln FLT_MAX: vminps), ``n = floor(q log2 e + 0.5)``,
  ``r = fma(-n, ln 2, q)``, ``2**(n-1)`` built from bits (``0.0`` for
  n = -126, and where q was below ln FLT_MIN), ``p`` = degree-5 polynomial
  by five FMAs, ``(p 2**(n-1)) 2``;
* ``erf = sign(x) fma(-e t, P(t), 1)``, P = A&S's a1..a5 by four FMAs in t;
* ``y = fma(erf, x 0.5, x 0.5)``.

Its ``1 + erf`` cancels too: +0.0 from x = -5.5430 down (AVX-512: -0.0 from
-5.5426), and NaN at -inf (AVX-512: at both infinities).  The backward
(``gelu_erf_compute_vector_bwd``, :func:`gelu_erf_grad_injector`) has no
AVX-512 branch: the same A&S 7.1.26 and exp on every ISA, ``fma(erf, 0.5,
x/sqrt2 * 0x3f106eba * e + 0.5)`` (1/sqrt pi, 1 ulp below the nearest
float32).

Half precision: float32 rounded once, except that the bfloat16 path flushes
subnormal float32 results to zero first on CPUs with AVX512-BF16, whose
conversion instruction flushes (:func:`half`).  PyTorch sends bfloat16 to
oneDNN only where oneDNN's effective ISA is AVX-512 or AVX2-VNNI-2, and
float16 only with AVX512-FP16 or AVX2-VNNI-2 (``mkldnn_bf16_device_check``,
``mkldnn_fp16_device_check``); elsewhere they run at::vec
(``pytorch_cpu_vec_erf``).  AVX2-VNNI-2 CPUs (no AVX-512) send both to the
A&S path, converting with AVX-NE-CONVERT's VCVTNEPS2BF16 (:func:`half_avx2`,
from the source: no such CPU here).

The backward is the same code on every ISA: both entries' ``grad`` is
:func:`gelu_erf_grad_injector`, which torch's ``gelu_backward`` runs on
AVX-512 too (bit-identical on all 2**32 float32 inputs there).

``gelu_tanh`` (same file, ``gelu_tanh_compute_vector_fwd`` / ``_bwd`` and
``tanh_compute_vector_fwd``; AVX2 and AVX-512, both with FMA, compute the
same bits; SSE4.1/AVX replace the FMAs by mul + add):

* ``G = ((x*x*0.044715 + 1) * x) * sqrt(2/pi)`` (one FMA, float32 constants
  0x3d372713 and 0x3f4c422a);
* ``tanh(G)``: for ``a = |G|``, index ``((bits(a) - 0x39800000) & 0xffc00000)
  >> 22`` (one polynomial per half binade from 2^-12 on), reduced argument
  ``a - (a & 0xffc00000)`` (exact: the start of the half binade), a
  degree-6 polynomial from ``tanh_pol_table`` (7 x 32 float32, copied as
  data) by six FMAs; ``a`` itself below 0x39ddb3d7 (4.2e-4), 1 from
  0x41102cb3 (9.011) on (and for NaN: the comparisons fail), G's sign put
  back;
* ``y = ((t + 1) * 0.5) * x``;
* backward: ``((1 + T) + (1 + T) * (G2 - G2*T)) * 0.5`` with
  ``G2 = ((x*x*3*0.044715 + 1) * (x*sqrt(2/pi)))`` and ``T = tanh(G1)``, where
  ``G1 = (x*x*0.044715 + 1) * (x*sqrt(2/pi))`` (the product in another order
  than the forward's).

PyTorch on x86 does not send ``approximate='tanh'`` to oneDNN (only on
aarch64, whose injector is a different file), so the tanh entry is checked
against the source only.
"""

import functools

import numpy as np

from gelu_numba.kernels.primitives import inline, fma32, float32_bits, float32_from_bits

_f = np.float32
HALF = _f(0.5)
ONE = _f(1.0)
#: gelu_erf_minimax_consts (jit_uni_eltwise_injector.cpp)
IDX_BIAS = np.uint32(0xC21FFFFF)
RBOUND = float32_from_bits(np.uint32(0x40B15CEE))     # 5.5425940
#: gelu_erf_minimax_polynomial: 6 degrees x 32 polynomials (25 used)
_TABLE_BITS = (
    # degree 0
    0xa6f2cb94, 0x32827792, 0x3381cc0c, 0x34523d4a, 0x351ac44d, 0x35f36d88,
    0x36ee8229, 0x37b8a3bb, 0x3867a213, 0x3940033b, 0x3a2a5a1d, 0x3ae35863,
    0x3b7828f2, 0x3c08b14b, 0x3c515ed3, 0xbb503236, 0xbd8d8e5e, 0xbe8abcd9,
    0xbf0c19a2, 0xbeccb328, 0x3e176ced, 0x3f470d99, 0x3f7abb28, 0x3f800000,
    0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
    0x00000000, 0x00000000,
    # degree 1
    0x3f4c422a, 0x3f4c421f, 0x3f4c4207, 0x3f4c41cb, 0x3f4c413b, 0x3f4c3fad,
    0x3f4c3a2f, 0x3f4c2d40, 0x3f4c146a, 0x3f4bc341, 0x3f4ad08c, 0x3f48f8cf,
    0x3f45fac7, 0x3f404e07, 0x3f3b980f, 0x3f48dff3, 0x3f78b21b, 0x3fbb0704,
    0x40019c32, 0x3fe536d6, 0x3f81331e, 0x3e6c8684, 0x3c98f936, 0x00000000,
    0x3f800000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
    0x00000000, 0x00000000,
    # degree 2
    0xb62173f4, 0x3735e4cf, 0x37f2ff89, 0x388c23be, 0x3917535c, 0x39ab2ab0,
    0x3a60fadb, 0x3af9b960, 0x3b6e5491, 0x3c0a4ec5, 0x3ca5aa8c, 0x3d2138d9,
    0x3d8737d4, 0x3ddfb660, 0x3e0f27ab, 0x3d94004b, 0xbe0efdeb, 0xbf1d96c3,
    0xbf89db58, 0xbf6d9897, 0xbef69fb8, 0xbdc4f8a8, 0xbbde6422, 0x00000000,
    0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
    0x00000000, 0x00000000,
    # degree 3
    0xbe081a19, 0xbe084570, 0xbe08639b, 0xbe089837, 0xbe08f409, 0xbe09ab95,
    0xbe0b66d0, 0xbe0e400a, 0xbe124df8, 0xbe1bde02, 0xbe2f19c9, 0xbe4931bf,
    0xbe685fbc, 0xbe89c95f, 0xbe96cbca, 0xbe8044aa, 0xbe0550f2, 0x3dcfd6a1,
    0x3e94c826, 0x3e79345f, 0x3decec91, 0x3ca46568, 0x3aa1e00a, 0x00000000,
    0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
    0x00000000, 0x00000000,
    # degree 4
    0xba3d61db, 0x39f097a3, 0x3a5845dc, 0x3ab1fa35, 0x3b0cefb8, 0x3b653ab6,
    0x3bcae527, 0x3c221712, 0x3c6c5840, 0x3cc0a703, 0x3d1dcc19, 0x3d63656d,
    0x3d955907, 0x3dbf9910, 0x3dd53f69, 0x3db7dcef, 0x3d639ebe, 0xba6ede48,
    0xbd22be69, 0xbd041cf1, 0xbc64f5ab, 0xbb097a32, 0xb8ebf380, 0x00000000,
    0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
    0x00000000, 0x00000000,
    # degree 5
    0x3cb7d80c, 0x3c9b6050, 0x3c978d11, 0x3c92e850, 0x3c8d058b, 0x3c848454,
    0x3c6cd623, 0x3c4c824b, 0x3c2a7935, 0x3be0b390, 0x3b0651ac, 0xbb232f53,
    0xbbd42fa0, 0xbc2c5366, 0xbc492c9e, 0xbc2a7aa6, 0xbbd55d04, 0xba823a76,
    0x3b102aa8, 0x3ae25a7e, 0x3a31f792, 0x38b84375, 0x3689bb5a, 0x00000000,
    0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
    0x00000000, 0x00000000,
)
TABLE = np.array(_TABLE_BITS, dtype=np.uint32).view(np.float32).reshape(6, 32)


@inline
def gelu_erf_avx512(x):
    """oneDNN eltwise gelu_erf forward, avx512_core injector."""
    b = float32_bits(x)
    pos_bits = b & np.uint32(0x7FFFFFFF)
    pos = float32_from_bits(pos_bits)
    idx = np.int32(pos_bits + IDX_BIAS) >> np.int32(21)
    idx = min(max(idx, np.int32(1)), np.int32(24))
    if RBOUND < pos:
        idx = np.int32(23)
    p = TABLE[5, idx]
    for d in range(4, -1, -1):
        p = fma32(p, pos, TABLE[d, idx])
    p = float32_from_bits(float32_bits(p) ^ (b & np.uint32(0x80000000)))
    return (x * (p + ONE)) * HALF


# ---------------------------------------------- pre-AVX-512: A&S 7.1.26
#: gelu_erf_Abramowitz_Stegun_consts (jit_uni_eltwise_injector.cpp)
AS_INV_SQRT2 = float32_from_bits(np.uint32(0x3F3504F3))    # 1/sqrt 2, rounded to nearest
AS_P = float32_from_bits(np.uint32(0x3EA7BA05))            # A&S p = 0.3275911
AS_INV_SQRT_PI = float32_from_bits(np.uint32(0x3F106EBA))  # 1/sqrt pi, 1 ulp below nearest
#: gelu_erf_Abramowitz_Stegun_polynomial: A&S a1 .. a5
AS_POL = (
    float32_from_bits(np.uint32(0x3E827906)),   # 0.254829592
    float32_from_bits(np.uint32(0xBE91A98E)),   # -0.284496736
    float32_from_bits(np.uint32(0x3FB5F0E3)),   # 1.421413741
    float32_from_bits(np.uint32(0xBFBA00E3)),   # -1.453152027
    float32_from_bits(np.uint32(0x3F87DC22)),   # 1.061405429
)
#: exp_consts and common_values (ln2f, two, exponent_bias)
EXP_LOG2E = float32_from_bits(np.uint32(0x3FB8AA3B))       # 1/ln 2
EXP_LN_FLT_MAX = float32_from_bits(np.uint32(0x42B17218))  # ln(FLT_MAX) = 88.72284
EXP_LN_FLT_MIN = float32_from_bits(np.uint32(0xC2AEAC50))  # ln(FLT_MIN) = -87.33655
LN2F = float32_from_bits(np.uint32(0x3F317218))            # ln 2
TWO = _f(2.0)
#: exp_polynomial: p1 .. p5 (p0 = 1)
EXP_POL = (
    float32_from_bits(np.uint32(0x3F7FFFFB)),   # 0.999999701
    float32_from_bits(np.uint32(0x3EFFFEE3)),   # 0.499991506
    float32_from_bits(np.uint32(0x3E2AAD40)),   # 0.166676521
    float32_from_bits(np.uint32(0x3D2B9D0D)),   # 0.0418978221
    float32_from_bits(np.uint32(0x3C07CFCE)),   # 0.00828929059
)
_SIGN = np.uint32(0x80000000)


@inline
def _neg(v):
    # the JIT's vxorps with sign_mask, bit for bit (NaN's sign included)
    return float32_from_bits(float32_bits(v) ^ _SIGN)


@inline
def exp_injector(v):
    """oneDNN's JIT exp (exp_compute_vector_fwd; AVX2 and AVX-512 with FMA)."""
    # vminps/vmaxps return their second operand on NaN: NaN becomes ln FLT_MAX
    c = v if v < EXP_LN_FLT_MAX else EXP_LN_FLT_MAX
    c = c if c > EXP_LN_FLT_MIN else EXP_LN_FLT_MIN
    n = np.floor((c * EXP_LOG2E) + HALF)
    r = fma32(-n, LN2F, c)
    # 2**(n-1) by bits (n = 128 would not fit); n = -126 gives biased
    # exponent 0, i.e. 0.0: exp is 0 from about -86.99 down, not subnormal
    k = np.int32(n - ONE) + np.int32(127)
    scale = float32_from_bits(np.uint32(k) << np.uint32(23))
    if v < EXP_LN_FLT_MIN:
        scale = _f(0.0)
    p = EXP_POL[4]
    p = fma32(p, r, EXP_POL[3])
    p = fma32(p, r, EXP_POL[2])
    p = fma32(p, r, EXP_POL[1])
    p = fma32(p, r, EXP_POL[0])
    p = fma32(p, r, ONE)
    return (p * scale) * TWO


@inline
def _as_erf_tail(a, e):
    # t = 1/(p|v| + 1) (a true division); -exp(-v*v) * t times the
    # polynomial in t, plus 1: erf(|v|)
    t = ONE / fma32(AS_P, a, ONE)
    m = _neg(e) * t
    r = AS_POL[4]
    r = fma32(r, t, AS_POL[3])
    r = fma32(r, t, AS_POL[2])
    r = fma32(r, t, AS_POL[1])
    r = fma32(r, t, AS_POL[0])
    return fma32(m, r, ONE)


@inline
def gelu_erf_avx2(x):
    """oneDNN eltwise gelu_erf forward below AVX-512 (gelu_erf_compute_vector_fwd)."""
    v = x * AS_INV_SQRT2
    a = float32_from_bits(float32_bits(v) & np.uint32(0x7FFFFFFF))
    e = exp_injector(_neg(v * v))
    erf = _as_erf_tail(a, e)
    erf = float32_from_bits(float32_bits(erf) ^ (float32_bits(x) & _SIGN))
    s = x * HALF
    return fma32(erf, s, s)


@inline
def gelu_erf_grad_injector(x):
    """oneDNN eltwise gelu_erf backward at dy = 1 (gelu_erf_compute_vector_bwd;
    every ISA: it has no AVX-512 branch)."""
    v = x * AS_INV_SQRT2
    q = exp_injector(_neg(v * v))
    t = (v * AS_INV_SQRT_PI) * q
    a = float32_from_bits(float32_bits(v) & np.uint32(0x7FFFFFFF))
    erf = _as_erf_tail(a, q)
    erf = float32_from_bits(float32_bits(erf) ^ (float32_bits(v) & _SIGN))
    return fma32(erf, HALF, t + HALF)


#: gelu_tanh constants (jit_uni_eltwise_injector.cpp: gelu_tanh_consts, tanh_consts)
GELU_TANH_K = float32_from_bits(np.uint32(0x3D372713))          # 0.044715
GELU_TANH_3K = float32_from_bits(np.uint32(0x3E095D4F))         # 3 * 0.044715
GELU_TANH_C = float32_from_bits(np.uint32(0x3F4C422A))          # sqrt(2/pi)
TANH_IDX_BIAS = np.uint32(0x39800000)
TANH_IDX_MASK = np.uint32(0xFFC00000)
TANH_LINEAR_UBOUND = float32_from_bits(np.uint32(0x39DDB3D7))   # 4.2286e-4
TANH_SATURATION_LBOUND = float32_from_bits(np.uint32(0x41102CB3))  # 9.0109
#: tanh_pol_table: 7 degrees x 32 polynomials (one per half binade)
_TANH_TABLE_BITS = (
    # degree 0
    0x00000000, 0x39bfffff, 0x39ffffff, 0x3a3ffffe, 0x3a7ffffb, 0x3abffff7,
    0x3affffeb, 0x3b3fffdc, 0x3b7fffab, 0x3bbfff70, 0x3bfffeab, 0x3c3ffdc0,
    0x3c7ffaab, 0x3cbff701, 0x3cffeaad, 0x3d3fdc08, 0x3d7faacd, 0x3dbf7081,
    0x3dfeacc9, 0x3e3dc7fd, 0x3e7acbf5, 0x3eb77a9f, 0x3eec9a9f, 0x3f22991f,
    0x3f42f7d6, 0x3f67b7cc, 0x3f76ca83, 0x3f7ebbe9, 0x3f7fd40c, 0x3f7fff32,
    0x3f7ffffc, 0x3f800000,
    # degree 1
    0x3f800000, 0x3f800018, 0x3f7fffe8, 0x3f7fffda, 0x3f7fffdc, 0x3f7fffdc,
    0x3f7fffac, 0x3f7fff70, 0x3f7ffeec, 0x3f7ffdc0, 0x3f7ffbed, 0x3f7ff704,
    0x3f7feff5, 0x3f7fdbca, 0x3f7fbfff, 0x3f7f7041, 0x3f7f009b, 0x3f7dc36c,
    0x3f7c0aa8, 0x3f7734b8, 0x3f70a4de, 0x3f5f1fd8, 0x3f495493, 0x3f18b9ec,
    0x3ed706cb, 0x3e390b06, 0x3d90b11f, 0x3c21a053, 0x3aaf7fdb, 0x37ccc1a3,
    0x355c6733, 0x00000000,
    # degree 2
    0x00000000, 0xbe4e0ff1, 0x3d25b1b1, 0x3d6b6dab, 0x3c9fb1d5, 0xbabff06f,
    0x3c07b3f6, 0xbb3fc1bc, 0x3a9f5921, 0xbbbf06f2, 0xbbb0f402, 0xbc47db9e,
    0xbc73d5e7, 0xbca25bda, 0xbcfca780, 0xbd40e07c, 0xbd7dab03, 0xbdbe4a0f,
    0xbdfb14a5, 0xbe36cc8d, 0xbe6bd102, 0xbe9fe7c5, 0xbeba0f10, 0xbec206a8,
    0xbea3c388, 0xbe277d62, 0xbd8b7960, 0xbc209f49, 0xbaad44ca, 0xb7c6eeac,
    0xb663aa41, 0x00000000,
    # degree 3
    0x00000000, 0x45b3ae96, 0xc414eb20, 0xc450e02e, 0xc3152b4e, 0xbead2f56,
    0xc2162e02, 0xbeb4bd5a, 0xc11a59a4, 0xbed2f507, 0xc020d32c, 0x3dd0f506,
    0xbf2a75e2, 0xbff950e3, 0xbed47334, 0xbe809b8c, 0xbeb64532, 0xbe961a5b,
    0xbe9b63ac, 0xbea0d4b2, 0xbe828a77, 0xbe378612, 0xbdc20908, 0x3d2d3957,
    0x3dd46e89, 0x3db3f629, 0x3d2c5e7b, 0x3bd20403, 0x3a59dfae, 0x3770af45,
    0x372cc014, 0x00000000,
    # degree 4
    0x00000000, 0xcc981a1b, 0x4a7edd3d, 0x4ab1007c, 0x48fedd9c, 0x41a557b5,
    0x477ee32a, 0x422557f5, 0x45ff3ce4, 0x42a55641, 0x446e0867, 0xc33dc19a,
    0x42915214, 0x43af4fad, 0x4110fe88, 0xc1099b75, 0x3fc8a8dc, 0xbfbeaef5,
    0xbe365aad, 0x3f4d9652, 0x3ddfa08f, 0x3e34e9b8, 0x3e2d07a6, 0x3dc63567,
    0x3cdaeb78, 0xbcd17537, 0xbc92829c, 0xbb43ab99, 0xb9b471dd, 0xb6baad5a,
    0xb78bafc7, 0x00000000,
    # degree 5
    0x00000000, 0x52f688d5, 0xd0505c72, 0xd08f98e3, 0xce505cc9, 0xc7162b8a,
    0xcc5061d6, 0xc7162bdf, 0xca50b37f, 0xc7162a3a, 0xc8422086, 0x471a714e,
    0xc5ece1f1, 0xc70e3d90, 0xc3eba94a, 0x43e0c424, 0xc21f4552, 0x42217cc8,
    0x405e7dc4, 0xc10dd401, 0x3e96b602, 0xbd1a6d2f, 0xbd393883, 0xbd674682,
    0xbd310016, 0xb961e269, 0x3ba32495, 0x3a7680d5, 0x38b3173c, 0x35a9deea,
    0x375c3f2a, 0x00000000,
    # degree 6
    0x00000000, 0xd8995ed1, 0x558285ea, 0x55b2cd69, 0x53028625, 0x4bc9991f,
    0x5082898a, 0x4b4999b3, 0x4e02c07c, 0x4ac99764, 0x4b72c822, 0xca40c0e1,
    0x489413e4, 0x49b12224, 0x46134c4e, 0xc60c2d57, 0x43c83910, 0xc3c872d1,
    0xc186bc9e, 0x42325bc3, 0xbf2ffa4a, 0x3d9a203c, 0xbc545a43, 0xbae08fee,
    0x3c80225d, 0x3b1fd1df, 0xba36b9d1, 0xb91de544, 0xb71f100f, 0xb408e2ed,
    0xb685fec8, 0x00000000,
)
TANH_TABLE = np.array(_TANH_TABLE_BITS, dtype=np.uint32).view(np.float32).reshape(7, 32)


@inline
def tanh_avx512(v):
    """oneDNN's JIT tanh (tanh_compute_vector_fwd, AVX2/AVX-512 with FMA)."""
    b = float32_bits(v)
    a_bits = b & np.uint32(0x7FFFFFFF)
    a = float32_from_bits(a_bits)
    # vpermt2ps reads the low 5 bits of the index; AVX2's gather reads the
    # whole index, but below 2^-12 (where they differ) the result is |v|
    idx = ((a_bits - TANH_IDX_BIAS) & TANH_IDX_MASK) >> np.uint32(22)
    idx = np.int32(idx & np.uint32(31))
    r = a - float32_from_bits(a_bits & TANH_IDX_MASK)
    p = TANH_TABLE[6, idx]
    for d in range(5, -1, -1):
        p = fma32(p, r, TANH_TABLE[d, idx])
    t = ONE
    if TANH_SATURATION_LBOUND > a:
        t = p
    if TANH_LINEAR_UBOUND > a:
        t = a
    return float32_from_bits(float32_bits(t) ^ (b & np.uint32(0x80000000)))


@inline
def gelu_tanh_avx512(x):
    """oneDNN eltwise gelu_tanh forward (gelu_tanh_compute_vector_fwd)."""
    g = fma32(x * x, GELU_TANH_K, ONE)
    g = (g * x) * GELU_TANH_C
    return ((tanh_avx512(g) + ONE) * HALF) * x


@inline
def gelu_tanh_grad_avx512(x):
    """oneDNN eltwise gelu_tanh backward at dy = 1 (gelu_tanh_compute_vector_bwd)."""
    s2 = x * x
    cx = x * GELU_TANH_C
    g2 = fma32(GELU_TANH_3K, s2, ONE) * cx
    g1 = fma32(s2, GELU_TANH_K, ONE) * cx
    t = tanh_avx512(g1)
    r = fma32(-g2, t, g2)
    q = t + ONE
    return fma32(q, r, q) * HALF


@functools.cache
def _evaluate(name):
    """The forward kernel of entry ``name`` over a 1-D float32 array (the
    production ufunc's loop, compiled here: this layer builds no ufunc)."""
    from numba import njit
    kernel = {"onednn_gelu_erf_avx512": gelu_erf_avx512,
              "onednn_gelu_erf_avx2": gelu_erf_avx2}[name]

    @njit(error_model="numpy")
    def run(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = kernel(x[i])
        return out
    return run


def half(x, fmt, flush_bf16=True, name="onednn_gelu_erf_avx512"):
    """float32 (the entry ``name``) rounded once to ``fmt``; on CPUs with
    AVX512-BF16 (the default, ``flush_bf16``) oneDNN's bfloat16 path converts
    with VCVTNEPS2BF16, which flushes float32 subnormal results to zero;
    CPUs without it convert in software and keep them (measured against
    torch 2.13.0 on both kinds of Xeon)."""
    from gelu_numba.kernels.emulated.formats import to_format
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        y = _evaluate(name)(np.ascontiguousarray(x).ravel()).reshape(x.shape)
    if fmt == "bfloat16" and flush_bf16:
        y = np.where(np.abs(y) < np.float32(2.0**-126), np.copysign(_f(0), y), y)
    return to_format(y, fmt)


def half_avx2(x, fmt, flush_bf16=True):
    """:func:`half` on the A&S path: the only CPUs without AVX-512 whose
    oneDNN takes half formats are AVX2-VNNI-2 ones, which convert with the
    VEX VCVTNEPS2BF16 of AVX-NE-CONVERT (flushing, as AVX512-BF16's does)."""
    return half(x, fmt, flush_bf16, "onednn_gelu_erf_avx2")


ENTRIES = (
    dict(name="onednn_gelu_erf_avx512", library="oneDNN (PyTorch CPU default)",
         runs="torch.nn.functional.gelu(x) on contiguous float32 CPU tensors on x86 with "
              "AVX-512 (PyTorch's default exact GELU there; also bfloat16, and float16 on "
              "AVX-512-FP16 CPUs); oneDNN's eltwise gelu_erf for its own users",
         formula="(x*(sign(x) P_i(|x|) + 1))*0.5, 25 degree-5 minimax polynomials for "
                 "erf(|x|/sqrt2) picked by the bits of |x|; 0 below x = -5.5426",
         source="uxlfoundation/oneDNN @ 80afa71049cd69a3df32adcccb623b12cd7baa22 (v3.12): "
                "src/cpu/x64/injectors/jit_uni_eltwise_injector.cpp",
         forward=gelu_erf_avx512, grad=gelu_erf_grad_injector, half=half,
         checked="torch 2.13.0 (CPU, oneDNN on, contiguous float32): bit-identical on "
                 "2,996,096 inputs (2,000,000 on [-12, 12], 10**6 random bit patterns); "
                 "gelu_backward (dy = 1; A&S, the backward of every ISA, kernel "
                 "jit:avx512_core_bf16) bit-identical on all 2**32 float32 inputs; "
                 "bfloat16 (float32 rounded once; subnormal results flushed first on "
                 "AVX512-BF16 CPUs) and, on AVX512-FP16 CPUs, float16 (float32 rounded "
                 "once) identical on all finite inputs"),
    dict(name="onednn_gelu_erf_avx2", library="oneDNN (PyTorch CPU default)",
         runs="torch.nn.functional.gelu(x) on contiguous float32 CPU tensors on x86 "
              "without AVX-512 (AVX2 CPUs, or ONEDNN_MAX_CPU_ISA=AVX2): PyTorch's default "
              "exact GELU there; oneDNN's eltwise gelu_erf for its own users; the backward "
              "is oneDNN's on every ISA (AVX-512 included)",
         formula="S + S*sign(x)(1 - t P(t) exp(-x*x/2)), S = x*0.5, t = 1/(1 + p|x|/sqrt2) "
                 "(A&S 7.1.26) with oneDNN's exp (degree-5 polynomial, 0 below -86.99)",
         source="uxlfoundation/oneDNN @ 80afa71049cd69a3df32adcccb623b12cd7baa22 (v3.12): "
                "src/cpu/x64/injectors/jit_uni_eltwise_injector.cpp",
         forward=gelu_erf_avx2, grad=gelu_erf_grad_injector, half=half_avx2,
         checked="torch 2.13.0 (CPU, oneDNN on, one thread, contiguous float32, "
                 "ONEDNN_MAX_CPU_ISA=AVX2 on an AVX-512 CPU: kernel jit:avx2): forward and "
                 "gelu_backward (dy = 1) bit-identical on all 2**32 float32 inputs; the "
                 "backward also on AVX-512 (jit:avx512_core_bf16), all 2**32; half formats "
                 "from the source only (torch sends them to this path only on AVX2-VNNI-2 "
                 "CPUs; capped to AVX2 it runs at::vec for them, as tests check)"),
    dict(name="onednn_gelu_tanh_avx512", library="oneDNN",
         runs="oneDNN's eltwise gelu_tanh on x86 with AVX2 or AVX-512 (OpenVINO, ONNX "
              "Runtime's oneDNN EP, PyTorch's mkldnn/oneDNN graph fusions; not "
              "F.gelu(approximate='tanh') on x86, which runs at::vec)",
         formula="((tanh(((x*x*0.044715 + 1)*x)*sqrt(2/pi)) + 1)*0.5)*x, tanh from 31 "
                 "degree-6 polynomials, one per half binade; backward "
                 "0.5*((1+T) + (1+T)*G2*(1-T))",
         source="uxlfoundation/oneDNN @ 80afa71049cd69a3df32adcccb623b12cd7baa22 (v3.12): "
                "src/cpu/x64/injectors/jit_uni_eltwise_injector.cpp",
         forward=gelu_tanh_avx512, grad=gelu_tanh_grad_avx512, half=None,
         checked="source only (no installed library runs this path here: torch's "
                 "mkldnn_gelu refuses approximate='tanh'); tests check the tanh against "
                 "the correctly rounded tanh and the table against its polynomial pieces"),
)
