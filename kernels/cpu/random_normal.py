"""PyTorch's CPU normal samplers over an MT19937 stream (Box-Muller, two paths).

Arguments as in `kernels/cpu/random_mt.py` (``key, pos, buf``, flat C-contiguous
``out``). PyTorch picks the path by the tensor: contiguous with >= 16 elements
takes the *fill* path, anything else the *serial* one::

    fill (float32, float64): out[i] = u(w_i) for all i (u24 or u53), then per block
        of 16: u1 = 1 - out[j], u2 = out[j + 8] (j < 8),
               r = sqrt(-2 log u1), t = 2 pi u2,
               out[j] = fma(r cos t, std, mean), out[j + 8] = fma(r sin t, std, mean);
        when n % 16 != 0 the last 16 elements are redrawn (16 fresh uniforms) and
        transformed again.
    serial (any dtype, computed in float64): u1, u2 = u53, u53;
        r = sqrt(-2 log1p(-u2)), t = 2 pi u1; returns r cos t and keeps r sin t for
        the next call (`cache` = [valid, value], part of the generator's state);
        out[i] = fma(z, std, mean)

float32's fill is PyTorch's AVX2 kernel: log and sincos are Cephes polynomials in
float32 (Pommier's avx_mathfun, as GCC contracts them into FMAs), rewritten here
lane by lane (`_log_ps`, `_sincos_ps`), so the values match bit for bit. float64's
uses libm's log/cos/sin, as PyTorch's scalar loop does.
"""
import math

import numba
import numpy as np

from ..f32math import _f32_bits, _f32_from_bits, select
from ..fma import fma
from .mt19937 import fill_words, word64

__all__ = ["normal_fill_f32", "normal_fill_f64", "normal_serial"]

_F = np.float32
_M53 = np.uint64((1 << 53) - 1)
_S53 = 1.0 / 9007199254740992.0
_TWO_PI_F = _F(2.0 * math.pi)


@numba.njit(cache=True)
def _log_ps(x):
    """Natural log of x in (0, 1] (Cephes logf as avx_mathfun's log256_ps)."""
    x = max(x, _f32_from_bits(np.int32(0x00800000)))
    bits = _f32_bits(x)
    e = _F(np.int32(np.int32(bits >> np.int32(23)) - np.int32(0x7F))) + _F(1.0)
    x = _f32_from_bits(np.int32(np.int32(bits & np.int32(~0x7F800000)) | np.int32(0x3F000000)))
    low = x < _F(0.707106781186547524)
    tmp = select(low, x, _F(0.0))
    x = x - _F(1.0)
    e = e - select(low, _F(1.0), _F(0.0))
    x = x + tmp
    z = x * x
    y = _F(7.0376836292E-2)
    y = fma(y, x, _F(-1.1514610310E-1))
    y = fma(y, x, _F(1.1676998740E-1))
    y = fma(y, x, _F(-1.2420140846E-1))
    y = fma(y, x, _F(1.4249322787E-1))
    y = fma(y, x, _F(-1.6668057665E-1))
    y = fma(y, x, _F(2.0000714765E-1))
    y = fma(y, x, _F(-2.4999993993E-1))
    y = fma(y, x, _F(3.3333331174E-1))
    y = y * x
    y = fma(y, z, e * _F(-2.12194440e-4))
    y = y - z * _F(0.5)
    return fma(e, _F(0.693359375), x + y)


@numba.njit(cache=True)
def _sincos_ps(x):
    """(sin x, cos x) for x >= 0 (Cephes sinf/cosf as avx_mathfun's sincos256_ps)."""
    j = np.int32(x * _F(1.27323954473516))           # 4 / pi, truncated
    j = np.int32(np.int32(j + np.int32(1)) & np.int32(~1))
    y = _F(j)
    sin_neg = (j & np.int32(4)) != 0
    cos_neg = (np.int32(~np.int32(j - np.int32(2))) & np.int32(4)) != 0
    use_cos_poly = (j & np.int32(2)) == 0
    x = fma(y, _F(-0.78515625), x)
    x = fma(y, _F(-2.4187564849853515625e-4), x)
    x = fma(y, _F(-3.77489497744594108e-8), x)
    z = x * x
    c = _F(2.443315711809948E-005)
    c = fma(c, z, _F(-1.388731625493765E-003))
    c = fma(c, z, _F(4.166664568298827E-002))
    c = c * z
    c = fma(c, z, -(z * _F(0.5))) + _F(1.0)
    s = _F(-1.9515295891E-4)
    s = fma(s, z, _F(8.3321608736E-3))
    s = fma(s, z, _F(-1.6666654611E-1))
    s = s * z
    s = fma(s, x, x)
    sin = select(use_cos_poly, s, c)
    cos = select(use_cos_poly, c, s)
    return select(sin_neg, -sin, sin), select(cos_neg, -cos, cos)


@numba.njit(cache=True)
def _fill16_f32(out, i, mean, std):
    for j in range(8):
        u1 = _F(1.0) - out[i + j]
        u2 = out[i + j + 8]
        radius = math.sqrt(_F(-2.0) * _log_ps(u1))
        s, c = _sincos_ps(_TWO_PI_F * u2)
        out[i + j] = fma(radius * c, std, mean)
        out[i + j + 8] = fma(radius * s, std, mean)


@numba.njit(cache=True)
def _fill16_f64(out, i, mean, std):
    for j in range(8):
        u1 = 1.0 - out[i + j]
        u2 = out[i + j + 8]
        radius = math.sqrt(-2.0 * math.log(u1))
        theta = 2.0 * math.pi * u2
        out[i + j] = fma(radius * math.cos(theta), std, mean)
        out[i + j + 8] = fma(radius * math.sin(theta), std, mean)


@numba.njit(cache=True)
def _uniforms_f32(key, pos, buf, out, start, m):
    fill_words(key, pos, buf, m)
    for j in range(m):
        out[start + j] = _F(buf[j] & np.uint32(0xFFFFFF)) * _F(1.0 / (1 << 24))


@numba.njit(cache=True)
def _uniforms_f64(key, pos, buf, out, start, m):
    fill_words(key, pos, buf, 2 * m)
    for j in range(m):
        out[start + j] = np.float64(word64(buf, 2 * j) & _M53) * _S53


@numba.njit(cache=True)
def normal_fill_f32(key, pos, buf, out, mean, std):
    """The float32 fill path (out.size >= 16); buf.size a multiple of 16."""
    n, b = out.size, buf.size
    for s in range(0, n, b):
        m = min(b, n - s)
        _uniforms_f32(key, pos, buf, out, s, m)
        for i in range(s, s + m - 15, 16):
            _fill16_f32(out, i, mean, std)
    if n % 16:
        _uniforms_f32(key, pos, buf, out, n - 16, int(16))   # int(): no Literal[int] signature
        _fill16_f32(out, n - 16, mean, std)


@numba.njit(cache=True)
def normal_fill_f64(key, pos, buf, out, mean, std):
    """The float64 fill path (out.size >= 16); buf.size a multiple of 32."""
    n, b = out.size, buf.size // 2
    for s in range(0, n, b):
        m = min(b, n - s)
        _uniforms_f64(key, pos, buf, out, s, m)
        for i in range(s, s + m - 15, 16):
            _fill16_f64(out, i, mean, std)
    if n % 16:
        _uniforms_f64(key, pos, buf, out, n - 16, int(16))
        _fill16_f64(out, n - 16, mean, std)


@numba.njit(cache=True)
def normal_serial(key, pos, buf, out, cache, mean, std, exp):
    """The serial path into float64 `out` (exp: store exp(value), log_normal_'s)."""
    n, b = out.size, buf.size // 4 * 4
    i = 0
    if n and cache[0] != 0.0:
        z = fma(cache[1], std, mean)
        out[0] = math.exp(z) if exp else z
        cache[0] = 0.0
        i = 1
    while i < n:
        words = min(b, (n - i + 1) // 2 * 4)
        fill_words(key, pos, buf, words)
        for t in range(0, words, 4):
            u1 = np.float64(word64(buf, t) & _M53) * _S53
            u2 = np.float64(word64(buf, t + 2) & _M53) * _S53
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            z = fma(r * math.cos(theta), std, mean)
            out[i] = math.exp(z) if exp else z
            i += 1
            if i < n:
                z = fma(r * math.sin(theta), std, mean)
                out[i] = math.exp(z) if exp else z
                i += 1
            else:
                cache[0] = 1.0
                cache[1] = r * math.sin(theta)
