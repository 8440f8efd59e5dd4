"""oneDNN's GELU (eltwise ``gelu_erf``) on AVX-512, emulated in float32:
what PyTorch runs for ``torch.nn.functional.gelu(x)`` on contiguous float32
CPU tensors on x86.

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

Half precision: float32 rounded once, except that the bfloat16 path flushes
subnormal float32 results to zero first (:func:`half`).

The backward (oneDNN's A&S 7.1.26 with its injector exp) is not emulated
here.  Pre-AVX-512 CPUs run A&S 7.1.26 with oneDNN's own exp instead
(``gelu_erf_compute_vector_fwd``): not emulated either.
"""

import numpy as np
from numba import njit

from gelu_numba.kernels.primitives import fma32, float32_bits, float32_from_bits

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


@njit(inline="always")
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


def half(x, fmt):
    """oneDNN's bfloat16 path flushes float32 subnormal results to zero
    before the conversion (the JIT runs with FTZ); float16 does not."""
    from gelu_numba.kernels.emulated.formats import to_format
    from gelu_numba.production import ufunc
    with np.errstate(all="ignore"):
        y = ufunc("onednn_gelu_erf_avx512")(x)
    if fmt == "bfloat16":
        y = np.where(np.abs(y) < np.float32(2.0**-126), np.copysign(_f(0), y), y)
    return to_format(y, fmt)


ENTRIES = (
    dict(name="onednn_gelu_erf_avx512", library="oneDNN (PyTorch CPU default)",
         runs="torch.nn.functional.gelu(x) on contiguous float32 CPU tensors on x86 with "
              "AVX-512 (PyTorch's default exact GELU there; also bfloat16, and float16 on "
              "AVX-512-FP16 CPUs); oneDNN's eltwise gelu_erf for its own users",
         formula="(x*(sign(x) P_i(|x|) + 1))*0.5, 25 degree-5 minimax polynomials for "
                 "erf(|x|/sqrt2) picked by the bits of |x|; 0 below x = -5.5426",
         source="uxlfoundation/oneDNN @ 80afa71049cd69a3df32adcccb623b12cd7baa22 (v3.12): "
                "src/cpu/x64/injectors/jit_uni_eltwise_injector.cpp",
         forward=gelu_erf_avx512, grad=None, half=half,
         checked="torch 2.13.0 (CPU, oneDNN on, contiguous float32): bit-identical on "
                 "2,996,096 inputs (2,000,000 on [-12, 12], 10**6 random bit patterns); "
                 "bfloat16 (float32, subnormal results flushed, rounded once) and float16 "
                 "(float32 rounded once) identical on all finite inputs"),
)
