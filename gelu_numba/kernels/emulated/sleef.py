"""SLEEF's ``tanhf_u10`` (``Sleef_tanhf8_u10`` on AVX2, ``Sleef_tanhf16_u10``
on AVX-512): the tanh of PyTorch's ``Vectorized<float>::tanh`` on x86, hence
of ``F.gelu(x, approximate='tanh')`` on the CPU (:mod:`.pytorch`).

Source: shibatch/sleef @ 7d4d0cbb61244f6e964bf16dfd4d73f38af2bec6,
``src/libm/sleefsimdsp.c`` (``xtanhf``, ``expk2f``) and ``src/common/df.h``
(the double-float arithmetic, its ``ENABLE_FMA_SP`` branch: AVX2 and
AVX-512 builds have FMA, so both compute the same bits).  Transcribed as
scalar float32 operations in the same order; ``vmla(x, y, z)`` is
``fma(x, y, z)``, ``vfmapn(x, y, z)`` is ``fma(x, y, -z)``, ``vfmanp(x, y,
z)`` is ``fma(-x, y, z)``, ``vrec(x)`` is ``1/x`` (a division), ``vrint`` is
round to nearest even.

    tanh(x) = sign(x) (d - 1/d) / (d + 1/d),  d = exp(|x|) as a float pair,

and 1 for ``|x| > 8.664339742``.  Checked bit for bit against the installed
torch's ``torch.tanh`` (both ISAs, forced by ``ATEN_CPU_CAPABILITY``) by the
gelu-numba repository's ``tests/test_production.py``.
"""

import numpy as np

from gelu_numba.kernels.primitives import float32_bits, float32_from_bits, fma32, inline

_f = np.float32
ONE = _f(1.0)
ZERO = _f(0.0)
R_LN2F = _f(1.442695040888963407359924681001892137426645954152985934135449406931)
L2UF = _f(0.693145751953125)
L2LF = _f(1.428606765330187045e-06)
EXPK2F_POLY = (_f(+0.1980960224e-3), _f(+0.1394256484e-2), _f(+0.8333456703e-2),
               _f(+0.4166637361e-1))
EXPK2F_C3 = _f(0.166666659414234244790680580464)
HALF = _f(0.5)
SATURATION = _f(8.664339742)


@inline
def _add2_ff(xh, xl, y):
    """dfadd2_vf2_vf2_vf"""
    s = xh + y
    v = s - xh
    t = (xh - (s - v)) + (y - v)
    return s, t + xl


@inline
def _add2_ffff(xh, xl, yh, yl):
    """dfadd2_vf2_vf2_vf2"""
    s = xh + yh
    v = s - xh
    t = (xh - (s - v)) + (yh - v)
    return s, t + (xl + yl)


@inline
def _add_f_ff(x, yh, yl):
    """dfadd_vf2_vf_vf2 (|x| >= |y|)"""
    s = x + yh
    return s, ((x - s) + yh) + yl


@inline
def _add_ffff(xh, xl, yh, yl):
    """dfadd_vf2_vf2_vf2 (|x| >= |y|)"""
    s = xh + yh
    return s, (((xh - s) + yh) + xl) + yl


@inline
def _mul_ff_f(xh, xl, y):
    """dfmul_vf2_vf2_vf (FMA)"""
    s = xh * y
    return s, fma32(xl, y, fma32(xh, y, -s))


@inline
def _mul_ffff(xh, xl, yh, yl):
    """dfmul_vf2_vf2_vf2 (FMA)"""
    s = xh * yh
    return s, fma32(xh, yl, fma32(xl, yh, fma32(xh, yh, -s)))


@inline
def _squ(xh, xl):
    """dfsqu_vf2_vf2 (FMA)"""
    s = xh * xh
    return s, fma32(xh + xh, xl, fma32(xh, xh, -s))


@inline
def _rec(dh, dl):
    """dfrec_vf2_vf2 (FMA)"""
    s = ONE / dh
    return s, s * fma32(-dl, s, fma32(-dh, s, ONE))


@inline
def _div(nh, nl, dh, dl):
    """dfdiv_vf2_vf2_vf2 (FMA)"""
    t = ONE / dh
    s = nh * t
    u = fma32(t, nh, -s)
    v = fma32(-dl, t, fma32(-dh, t, ONE))
    return s, fma32(s, v, fma32(nl, t, u))


@inline
def _pow2i(q):
    """2**q as a float32 (vpow2i_vf_vi2: the biased exponent shifted in)."""
    return float32_from_bits(np.uint32((q + 0x7F) << 23))


@inline
def _ldexp2(d, e):
    """vldexp2_vf_vf_vi2: d 2**(e >> 1) 2**(e - (e >> 1))."""
    h = e >> 1
    return d * _pow2i(h) * _pow2i(e - h)


@inline
def _rint(v):
    """vrint_vi2_vf: round to nearest even (|v| < 2**22 here)."""
    return np.int32(np.rint(v))


@inline
def expk2f(dh, dl):
    """exp(dh + dl) as a float pair (sleefsimdsp.c ``expk2f``)."""
    u = (dh + dl) * R_LN2F
    q = _rint(u)
    qf = _f(q)
    sh, sl = _add2_ff(dh, dl, qf * -L2UF)
    sh, sl = _add2_ff(sh, sl, qf * -L2LF)
    u = EXPK2F_POLY[0]
    u = fma32(u, sh, EXPK2F_POLY[1])
    u = fma32(u, sh, EXPK2F_POLY[2])
    u = fma32(u, sh, EXPK2F_POLY[3])
    th, tl = _mul_ff_f(sh, sl, u)
    th, tl = _add2_ff(th, tl, EXPK2F_C3)
    th, tl = _mul_ffff(sh, sl, th, tl)
    th, tl = _add2_ff(th, tl, HALF)
    qh, ql = _squ(sh, sl)
    th, tl = _mul_ffff(qh, ql, th, tl)
    th, tl = _add2_ffff(sh, sl, th, tl)
    th, tl = _add_f_ff(ONE, th, tl)
    th = _ldexp2(th, q)
    tl = _ldexp2(tl, q)
    if dh < _f(-104.0):
        th, tl = ZERO, ZERO
    return th, tl


@inline
def tanhf_u10(x):
    """SLEEF ``xtanhf`` (u10)."""
    y = abs(x)
    dh, dl = expk2f(y, ZERO)
    eh, el = _rec(dh, dl)
    nh, nl = _add_ffff(dh, dl, -eh, -el)
    ph, pl = _add_ffff(dh, dl, eh, el)
    dh, dl = _div(nh, nl, ph, pl)
    y = dh + dl
    if abs(x) > SATURATION or y != y:
        y = ONE
    # vmulsign: y with x's sign bit xor-ed in
    y = float32_from_bits(float32_bits(y) ^ (float32_bits(x) & np.uint32(0x80000000)))
    if x != x:
        # vor_vm_vo32_vm(visnan(x), y): every bit set
        return float32_from_bits(np.uint32(0xFFFFFFFF))
    return y
