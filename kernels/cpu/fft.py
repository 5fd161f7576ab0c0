"""Discrete Fourier transforms on the CPU: NumPy's pocketfft.

pocketfft is the engine here, as LAPACK is linalg's and BLAS matmul's: NumPy ships it
(mixed-radix, with Bluestein for large prime factors, float32 kept in float32 since
NumPy 2.0), it takes strided operands and several axes per call, and writes into
`out`; a Numba FFT would have to match all of that to be worth its compile time. The
CUDA twin (`kernels/cuda/fft.py`) is a Numba kernel.

Contracts (raw arrays, any strides in, `out` allocated by the op layer; `dims` a
tuple of axes, `mode` the scaling: 0 none, 1 by 1/sqrt(n), 2 by 1/n with n the
product of the transformed (output signal) sizes)::

    fft_c2c(a complex, out complex (a's shape), dims, mode, forward)
        out = scale * sum_j a_j exp(-+2 pi i jk/n)    (sign - forward, + inverse)
    fft_r2c(a real, out complex, dims, mode, onesided)
        the forward transform of real `a`; onesided: the last dim keeps n//2 + 1
    fft_c2r(a complex, out real, dims, mode)
        the inverse transform of Hermitian `a` (last dim n//2 + 1, n = out's size
        there): inverse c2c over the other dims, then a real inverse over the last;
        the imaginary parts of the zero (and, n even, the Nyquist) bin are ignored

One path of our own: a onesided r2c along the last, contiguous dim of even length
n >= 4096 transforms the signal as n/2 complex values (even samples real, odd ones
imaginary: a free view) with pocketfft's complex FFT, and untangles the two halves in a
Numba loop (`split_real_spectrum`): 15% faster than pocketfft's own real transform at
n = 2^20 float32 (15.3 against 18.0 ms here), the case the benchmarks track.
"""
import functools
import math

import numpy as np
from numba import njit

__all__ = ["fft_c2c", "fft_r2c", "fft_c2r"]

# mode -> NumPy's norm= for a forward transform and for an inverse one
_FORWARD_NORM = ("backward", "ortho", "forward")
_INVERSE_NORM = ("forward", "ortho", "backward")


def fft_c2c(a, out, dims, mode, forward):
    if out.size == 0:
        return
    if not dims:
        out[...] = a
    elif forward:
        np.fft.fftn(a, axes=dims, norm=_FORWARD_NORM[mode], out=out)
    else:
        np.fft.ifftn(a, axes=dims, norm=_INVERSE_NORM[mode], out=out)


def fft_r2c(a, out, dims, mode, onesided):
    if out.size == 0:
        return
    norm = _FORWARD_NORM[mode]
    n = a.shape[-1] if a.ndim else 0
    if onesided and dims == (a.ndim - 1,) and n % 2 == 0 and n >= _PACKED_MIN \
            and a.flags.c_contiguous and out.flags.c_contiguous:
        _packed_rfft(a, out, n, mode)
    elif onesided:
        np.fft.rfftn(a, axes=dims, norm=norm, out=out)
    else:
        np.fft.fftn(a, axes=dims, norm=norm, out=out)


def fft_c2r(a, out, dims, mode):
    if out.size == 0:
        return
    s = tuple(out.shape[d] for d in dims)
    np.fft.irfftn(a, s=s, axes=dims, norm=_INVERSE_NORM[mode], out=out)


_PACKED_MIN = 4096


@functools.lru_cache(maxsize=8)
def _twiddles(n, dtype):
    """exp(-2 pi i k / n) for k < n/2 (computed in float64, stored in `dtype`)."""
    return np.exp(-2j * np.pi * np.arange(n // 2) / n).astype(dtype)


def _packed_rfft(a, out, n, mode):
    """rfft of the rows of contiguous real `a` through an n/2-point complex FFT."""
    lines = a.reshape(-1, n)
    z = np.fft.fft(lines.view(out.dtype), axis=-1)        # even + i odd samples
    scale = (1.0, 1.0 / math.sqrt(n), 1.0 / n)[mode]
    split_real_spectrum(z, _twiddles(n, out.dtype), out.reshape(-1, n // 2 + 1),
                        out.real.dtype.type(scale))


@njit(cache=True, fastmath={"contract"})
def split_real_spectrum(z, tw, out, scale):
    """for each row, from Z = FFT(x_even + i x_odd) (m = n/2 points):
    out[k] = scale (E_k + w^k O_k), E_k = (Z_k + conj Z_{m-k}) / 2,
    O_k = (Z_k - conj Z_{m-k}) / 2i, w = exp(-2 pi i / n), for k = 0 .. m."""
    m = z.shape[1]
    half = scale * 0.5
    for r in range(z.shape[0]):
        zr, o = z[r], out[r]
        z0 = zr[0]
        o[0] = (z0.real + z0.imag) * scale
        o[m] = (z0.real - z0.imag) * scale
        for k in range(1, m):
            p = zr[k]
            q = zr[m - k].conjugate()
            t = (p - q) * tw[k]
            o[k] = (p + q + complex(t.imag, -t.real)) * half
