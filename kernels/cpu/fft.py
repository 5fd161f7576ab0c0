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
"""
import numpy as np

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
    if onesided:
        np.fft.rfftn(a, axes=dims, norm=norm, out=out)
    else:
        np.fft.fftn(a, axes=dims, norm=norm, out=out)


def fft_c2r(a, out, dims, mode):
    if out.size == 0:
        return
    s = tuple(out.shape[d] for d in dims)
    np.fft.irfftn(a, s=s, axes=dims, norm=_INVERSE_NORM[mode], out=out)
