"""Discrete Fourier transforms on CUDA: radix-2 Cooley-Tukey, Bluestein for other lengths.

Contracts of `kernels/cpu/fft.py` (C-contiguous device arrays; `mode` 0/1/2 scales by
1, 1/sqrt(n), 1/n) plus ``stream=``::

    fft_c2c(a, out, dims, mode, forward)   fft_r2c(a, out, dims, mode, onesided)
    fft_c2r(a, out, dims, mode)

Every transform is a sequence of one-dimensional passes, one per dim, over the array
seen as (outer, n, inner): a line is (o, i), its elements n apart by `inner`, so no
transposes are needed and every line of every batch runs in the same launches.

- n a power of two (n = 2^L): a bit-reversed gather into a work buffer, then L
  butterfly launches (thread t: one butterfly of one line; twiddles computed in
  float64 from the integer angle, so float32 data keeps ~1e-7 relative accuracy).
- other n: Bluestein's chirp-z: X_k = c_k sum_j (x_j c_j) conj(c_{k-j}) with
  c_j = exp(s pi i j^2 / n) (j^2 taken mod 2n, exactly, in integers): the sum is a
  circular convolution of length m = 2^ceil(log2(2n - 1)), done with the radix-2
  transform (the chirp's own transform computed once per call).
- real input: cast to complex first; r2c keeps the first n//2 + 1 bins of the last
  dim; c2r runs the other dims, extends the last one by Hermitian symmetry
  (x_{n-k} = conj x_k) and keeps the real part. This costs a full complex transform
  where a packed real one would cost half: fine for a first kernel.
"""
import math

import numpy as np
from numba import cuda

from ._launch import grid

__all__ = ["fft_c2c", "fft_r2c", "fft_c2r", "typecheck_signatures"]


@cuda.jit(device=True)
def _bit_reverse(k, bits):
    r = 0
    for _ in range(bits):
        r = (r << 1) | (k & 1)
        k >>= 1
    return r


@cuda.jit(cache=True)
def bitrev_gather_kernel(src, dst, n, inner, bits):
    """for each (o, k, i): dst[o, rev(k), i] = src[o, k, i] (flat arrays)."""
    for t in range(cuda.grid(1), src.size, cuda.gridsize(1)):
        i = t % inner
        k = (t // inner) % n
        o = t // (inner * n)
        dst[(o * n + _bit_reverse(k, bits)) * inner + i] = src[t]


@cuda.jit(cache=True)
def butterfly_kernel(buf, n, inner, half, sign):
    """One radix-2 stage in place: for each line and butterfly j < n/2, with
    pos = j % half, k0 = 2 half (j // half) + pos, k1 = k0 + half,
    w = exp(sign pi i pos / half): (x[k0], x[k1]) <- (x[k0] + w x[k1], x[k0] - w x[k1])."""
    pairs = n // 2
    total = (buf.size // n) * pairs
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        line = t // pairs
        j = t - line * pairs
        i = line % inner
        o = line // inner
        pos = j % half
        k0 = 2 * half * (j // half) + pos
        p0 = (o * n + k0) * inner + i
        p1 = p0 + half * inner
        ang = sign * math.pi * pos / half
        b = buf[p1] * complex(math.cos(ang), math.sin(ang))
        a = buf[p0]
        buf[p0] = a + b
        buf[p1] = a - b


@cuda.jit(device=True)
def _chirp(j, n, sign):
    """exp(sign pi i j^2 / n), the angle reduced exactly (j^2 mod 2n) first."""
    r = (j * j) % (2 * n)
    ang = sign * math.pi * r / n
    return complex(math.cos(ang), math.sin(ang))


@cuda.jit(cache=True)
def chirp_filter_kernel(b, n, sign):
    """b[j] = conj(c_j) for |j| < n (wrapped: b[m - j] = b[j]), 0 elsewhere."""
    m = b.size
    for j in range(cuda.grid(1), m, cuda.gridsize(1)):
        if j < n:
            b[j] = _chirp(j, n, -sign)
        elif j > m - n:
            b[j] = _chirp(m - j, n, -sign)
        else:
            b[j] = 0


@cuda.jit(cache=True)
def chirp_pre_kernel(src, work, n, inner, m, sign):
    """work[line, j] = src[o, j, i] c_j for j < n, 0 for n <= j < m (line = o inner + i)."""
    for t in range(cuda.grid(1), work.size, cuda.gridsize(1)):
        line = t // m
        j = t - line * m
        if j < n:
            i = line % inner
            o = line // inner
            work[t] = src[(o * n + j) * inner + i] * _chirp(j, n, sign)
        else:
            work[t] = 0


@cuda.jit(cache=True)
def pointwise_kernel(work, filt, m):
    """work[line, j] *= filt[j] / m (the convolution's spectrum, inverse-scaled)."""
    for t in range(cuda.grid(1), work.size, cuda.gridsize(1)):
        work[t] = work[t] * filt[t % m] / m


@cuda.jit(cache=True)
def chirp_post_kernel(work, dst, n, inner, m, sign):
    """dst[o, k, i] = work[line, k] c_k."""
    for t in range(cuda.grid(1), dst.size, cuda.gridsize(1)):
        i = t % inner
        k = (t // inner) % n
        o = t // (inner * n)
        dst[t] = work[(o * inner + i) * m + k] * _chirp(k, n, sign)


@cuda.jit(cache=True)
def scale_copy_kernel(src, dst, factor):
    """dst[t] = src[t] * factor (a cast where dst is real: real to complex, or the real
    part of complex src)."""
    for t in range(cuda.grid(1), dst.size, cuda.gridsize(1)):
        dst[t] = src[t] * factor


@cuda.jit(cache=True)
def real_part_kernel(src, dst, factor):
    """dst[t] = Re(src[t]) * factor."""
    for t in range(cuda.grid(1), dst.size, cuda.gridsize(1)):
        dst[t] = src[t].real * factor


@cuda.jit(cache=True)
def crop_kernel(src, dst, n, h, inner, factor):
    """dst[o, k, i] = src[o, k, i] * factor for k < h (src has n along the axis)."""
    for t in range(cuda.grid(1), dst.size, cuda.gridsize(1)):
        i = t % inner
        k = (t // inner) % h
        o = t // (inner * h)
        dst[t] = src[(o * n + k) * inner + i] * factor


@cuda.jit(cache=True)
def hermitian_kernel(src, dst, h, n, inner):
    """dst[o, k, i] = src[o, k, i] for k < h, conj(src[o, n - k, i]) otherwise."""
    for t in range(cuda.grid(1), dst.size, cuda.gridsize(1)):
        i = t % inner
        k = (t // inner) % n
        o = t // (inner * n)
        if k < h:
            dst[t] = src[(o * h + k) * inner + i]
        else:
            dst[t] = src[(o * h + n - k) * inner + i].conjugate()


def _launch(kernel, n, stream, *args):
    kernel[grid(n) + (stream,)](*args)


def _pow2_pass(src, dst, n, inner, sign, stream):
    """dst = the unscaled transform of src along the axis (n a power of two)."""
    bits = n.bit_length() - 1
    _launch(bitrev_gather_kernel, src.size, stream, src, dst, n, inner, bits)
    half = 1
    while half < n:
        _launch(butterfly_kernel, src.size // 2, stream, dst, n, inner, half, float(sign))
        half *= 2


def _axis_pass(src, dst, n, inner, sign, stream):
    """dst = the unscaled transform of src (flat, contiguous) along an axis of length n."""
    if n & (n - 1) == 0:
        _pow2_pass(src, dst, n, inner, sign, stream)
        return
    m = 1 << (2 * n - 2).bit_length()             # >= 2n - 1, a power of two
    lines = src.size // n
    filt = cuda.device_array(m, src.dtype, stream=stream)
    filt_hat = cuda.device_array(m, src.dtype, stream=stream)
    _launch(chirp_filter_kernel, m, stream, filt, n, float(sign))
    _pow2_pass(filt, filt_hat, m, 1, -1, stream)
    work = cuda.device_array(lines * m, src.dtype, stream=stream)
    spectrum = cuda.device_array(lines * m, src.dtype, stream=stream)
    _launch(chirp_pre_kernel, work.size, stream, src, work, n, inner, m, float(sign))
    _pow2_pass(work, spectrum, m, 1, -1, stream)
    _launch(pointwise_kernel, work.size, stream, spectrum, filt_hat, m)
    _pow2_pass(spectrum, work, m, 1, 1, stream)
    _launch(chirp_post_kernel, dst.size, stream, work, dst, n, inner, m, float(sign))


def _transform(buf, shape, dims, sign, stream):
    """The unscaled transform of flat complex `buf` (C order, `shape`) over `dims`."""
    for d in dims:
        n = shape[d]
        inner = int(np.prod(shape[d + 1:], dtype=np.int64))
        nxt = cuda.device_array(buf.size, buf.dtype, stream=stream)
        _axis_pass(buf, nxt, n, inner, sign, stream)
        buf = nxt
    return buf


def _factor(mode, shape, dims):
    n = float(np.prod([shape[d] for d in dims])) if dims else 1.0
    return (1.0, 1.0 / math.sqrt(n), 1.0 / n)[mode]


def _flat(a):
    return a.reshape(a.size)


def _complex_copy(a, dtype, stream):
    buf = cuda.device_array(a.size, dtype, stream=stream)
    _launch(scale_copy_kernel, a.size, stream, _flat(a), buf, 1.0)
    return buf


def fft_c2c(a, out, dims, mode, forward, stream=0):
    if out.size == 0:
        return
    buf = _transform(_flat(a), a.shape, dims, -1 if forward else 1, stream)
    _launch(scale_copy_kernel, out.size, stream, buf, _flat(out), _factor(mode, a.shape, dims))


def fft_r2c(a, out, dims, mode, onesided, stream=0):
    if out.size == 0:
        return
    buf = _complex_copy(a, out.dtype, stream)
    buf = _transform(buf, a.shape, dims, -1, stream)
    factor = _factor(mode, a.shape, dims)
    if not onesided:
        _launch(scale_copy_kernel, out.size, stream, buf, _flat(out), factor)
        return
    d = dims[-1]
    inner = int(np.prod(a.shape[d + 1:], dtype=np.int64))
    _launch(crop_kernel, out.size, stream, buf, _flat(out), a.shape[d], out.shape[d], inner,
            factor)


def fft_c2r(a, out, dims, mode, stream=0):
    if out.size == 0:
        return
    d = dims[-1]
    buf = _transform(_flat(a), a.shape, dims[:-1], 1, stream)
    full = cuda.device_array(out.size, a.dtype, stream=stream)
    inner = int(np.prod(out.shape[d + 1:], dtype=np.int64))
    _launch(hermitian_kernel, out.size, stream, buf, full, a.shape[d], out.shape[d], inner)
    full = _transform(full, out.shape, (d,), 1, stream)
    _launch(real_part_kernel, out.size, stream, full, _flat(out), _factor(mode, out.shape, dims))


def typecheck_signatures():
    from numba import types as nt
    i8, f8 = nt.int64, nt.float64
    for c, r in ((nt.complex64, nt.float32), (nt.complex128, nt.float64)):
        ca, ra = nt.Array(c, 1, "C"), nt.Array(r, 1, "C")
        yield (f"bitrev_gather[{c}]", bitrev_gather_kernel.py_func, (ca, ca, i8, i8, i8))
        yield (f"butterfly[{c}]", butterfly_kernel.py_func, (ca, i8, i8, i8, f8))
        yield (f"chirp_filter[{c}]", chirp_filter_kernel.py_func, (ca, i8, f8))
        yield (f"chirp_pre[{c}]", chirp_pre_kernel.py_func, (ca, ca, i8, i8, i8, f8))
        yield (f"pointwise[{c}]", pointwise_kernel.py_func, (ca, ca, i8))
        yield (f"chirp_post[{c}]", chirp_post_kernel.py_func, (ca, ca, i8, i8, i8, f8))
        yield (f"scale_copy[{c}]", scale_copy_kernel.py_func, (ca, ca, f8))
        yield (f"scale_copy[{r}->{c}]", scale_copy_kernel.py_func, (ra, ca, f8))
        yield (f"real_part[{c}]", real_part_kernel.py_func, (ca, ra, f8))
        yield (f"crop[{c}]", crop_kernel.py_func, (ca, ca, i8, i8, i8, f8))
        yield (f"hermitian[{c}]", hermitian_kernel.py_func, (ca, ca, i8, i8, i8))
