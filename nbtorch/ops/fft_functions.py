"""torch.fft's functions, composed from the three primitives of `ops/fft.py` as aten
composes them (SpectralOps.cpp), so values, dtypes, errors and gradients follow
PyTorch: real input to fft/fftn goes through r2c (conjugated for the inverse), hfft is
c2r of the conjugate, ihfft the conjugate of a onesided r2c, and the n-dimensional
Hermitian transforms run c2c over all but the last dim.

Signal sizes (n=, s=) crop or zero-pad the input at the end of each transformed dim
before the transform; norm= is "backward" (default: inverse scaled by 1/n), "ortho"
(both by 1/sqrt(n)) or "forward" (forward by 1/n).
"""
import numpy as np

from .. import _dtype
from .._dtype import type_name
from .fft import c2c, c2r, conj, r2c, resize
from .fft_args import (c2r_dims, check_out, check_sizes, check_tensor, check_types, norm_mode,
                       promote, signal_dims, wrap_dim)

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
           "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _resized(x, dims, sizes):
    shape = list(x.shape)
    for d, n in zip(dims, sizes):
        shape[d] = n
    return resize(x, shape)


def _finish(name, result, out):
    if out is None:
        return result
    from .._conventions import write_out
    return write_out(f"fft_{name}", result, out)


def _one(x, n, dim):
    """(dims, sizes) of a one-dimensional transform of x."""
    d = wrap_dim(dim, x.dim())
    size = x.shape[d] if n is None else n
    check_sizes((size,))
    return (d,), (size,)


# ---- complex-to-complex (real input: r2c of the full spectrum) ----------------------
# The order of the checks is aten's: a one-dimensional transform promotes the dtype
# (float16: "Unsupported dtype") before it reads `dim`; the n-dimensional ones read s=
# and dim= first. out= is checked last.

def _c2c(name, input, dims, sizes, norm, forward, out):
    mode = norm_mode(norm, forward)
    check_out(name, out, True)
    if input.dtype.is_complex:
        return _finish(name, c2c(_resized(input, dims, sizes), dims, mode, forward), out)
    x = promote(input)
    if not dims:
        return _finish(name, promote(x, require_complex=True).clone(), out)
    y = r2c(_resized(x, dims, sizes), dims, mode, False)
    return _finish(name, y if forward else conj(y), out)


def _c2c_one(name, input, n, dim, norm, forward, out):
    check_tensor(name, input)
    check_types(name, norm, n=n, dim=dim, one=True)
    x = input if input.dtype.is_complex else promote(input)
    dims, sizes = _one(x, n, dim)
    return _c2c(name, x, dims, sizes, norm, forward, out)


def _c2c_n(name, input, s, dim, norm, forward, out):
    check_tensor(name, input)
    check_types(name, norm, s=s, dim=dim)
    dims, sizes = signal_dims(input, s, dim)
    return _c2c(name, input, dims, sizes, norm, forward, out)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional discrete Fourier transform of `input` along `dim`.

    Real input gives the full (Hermitian) complex spectrum; `n` crops or zero-pads.

    Example:
        >>> nbtorch.fft.fft(nbtorch.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    return _c2c_one("fft", input, n, dim, norm, True, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of `fft` (scaled by 1/n with the default norm)."""
    return _c2c_one("ifft", input, n, dim, norm, False, out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform over `dim` (all dims by default, or the last len(s))."""
    return _c2c_n("fftn", input, s, dim, norm, True, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of `fftn`."""
    return _c2c_n("ifftn", input, s, dim, norm, False, out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional transform (`fftn` over the last two dims by default)."""
    return _c2c_n("fft2", input, s, dim, norm, True, out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of `fft2`."""
    return _c2c_n("ifft2", input, s, dim, norm, False, out)


# ---- real-to-complex --------------------------------------------------------------

def _check_real(input, message):
    if input.dtype.is_complex:
        raise RuntimeError(f"{message}{type_name(input.dtype)}")


def _r2c_one(name, input, n, dim, norm, out, forward):
    check_tensor(name, input)
    check_types(name, norm, n=n, dim=dim, one=True)
    _check_real(input, f"{name} expects a real input tensor, but got ")
    check_out(name, out, True)
    x = promote(input)
    dims, sizes = _one(x, n, dim)
    y = r2c(_resized(x, dims, sizes), dims, norm_mode(norm, forward), True)
    return _finish(name, y if forward else conj(y), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of real `input` along `dim`: the n//2 + 1 non-negative frequencies.

    Example:
        >>> nbtorch.fft.rfft(nbtorch.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    return _r2c_one("rfft", input, n, dim, norm, out, True)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of `hfft`: the onesided inverse transform of real `input`."""
    return _r2c_one("ihfft", input, n, dim, norm, out, False)


def _r2c_n(name, input, s, dim, norm, out, forward):
    check_tensor(name, input)
    check_types(name, norm, s=s, dim=dim)
    base = "rfftn" if forward else "ihfftn"
    if forward:
        _check_real(input, "rfftn expects a real-valued input tensor, but got ")
    dims, sizes = signal_dims(input, s, dim)
    if not dims:
        raise RuntimeError(f"{base} must transform at least one axis")
    _check_real(input, "Only supports floating-point dtypes, but found: ")
    x = _resized(promote(input), dims, sizes)
    check_out(name, out, True)
    mode = norm_mode(norm, forward)
    if forward:
        return _finish(name, r2c(x, dims, mode, True), out)
    y = conj(r2c(x, dims[-1:], mode, True))
    if len(dims) > 1:
        y = c2c(y, dims[:-1], mode, False)
    return _finish(name, y, out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform of real `input`, onesided in the last dim."""
    return _r2c_n("rfftn", input, s, dim, norm, out, True)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional `rfftn`."""
    return _r2c_n("rfft2", input, s, dim, norm, out, True)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of `hfftn`."""
    return _r2c_n("ihfftn", input, s, dim, norm, out, False)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of `hfft2`."""
    return _r2c_n("ihfft2", input, s, dim, norm, out, False)


# ---- complex (Hermitian) to real --------------------------------------------------

def _c2r_one(name, input, n, dim, norm, out, forward):
    check_tensor(name, input)
    check_types(name, norm, n=n, dim=dim, one=True)
    check_out(name, out, False)
    x = promote(input, require_complex=True)
    d = wrap_dim(dim, x.dim())
    last = 2 * (x.shape[d] - 1) if n is None else n
    check_sizes((last,))
    x = _resized(x, (d,), (last // 2 + 1,))
    if forward:
        x = conj(x)
    return _finish(name, c2r(x, (d,), norm_mode(norm, forward), last), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of `rfft`: a real signal of length n (default 2 * (size - 1)).

    Example:
        >>> nbtorch.fft.irfft(nbtorch.fft.rfft(nbtorch.tensor([1., 2., 3., 4.])))
        tensor([1., 2., 3., 4.])
    """
    return _c2r_one("irfft", input, n, dim, norm, out, False)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a Hermitian-symmetric signal given by its first half: real."""
    return _c2r_one("hfft", input, n, dim, norm, out, True)


def _c2rn(name, input, s, dim, norm, out, forward):
    check_tensor(name, input)
    check_types(name, norm, s=s, dim=dim)
    check_out(name, out, False)
    base = "hfftn" if forward else "irfftn"
    dims, sizes, last = c2r_dims(base, input, s, dim)
    x = _resized(promote(input, require_complex=True), dims, sizes)
    mode = norm_mode(norm, forward)
    if not forward:
        return _finish(name, c2r(x, dims, mode, last), out)
    if len(dims) > 1:
        x = c2c(x, dims[:-1], mode, True)
    return _finish(name, c2r(conj(x), dims[-1:], mode, last), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of `rfftn`: real output, the last dim 2 * (size - 1) by default."""
    return _c2rn("irfftn", input, s, dim, norm, out, False)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of `rfft2`."""
    return _c2rn("irfft2", input, s, dim, norm, out, False)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform of a Hermitian signal given by its last-dim half."""
    return _c2rn("hfftn", input, s, dim, norm, out, True)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional `hfftn`."""
    return _c2rn("hfft2", input, s, dim, norm, out, True)


# ---- frequencies and shifts -------------------------------------------------------

def _frequencies(name, k, n, d, out, dtype, device, requires_grad):
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if out is not None and dtype is not None and out.dtype is not dtype:
        raise RuntimeError(f"dtype {type_name(dtype)} does not match dtype of out parameter "
                           f"({type_name(out.dtype)})")
    dtype = dtype or (out.dtype if out is not None else _dtype.get_default_dtype())
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{type_name(dtype)}'")
    from .creation import tensor
    np_type = dtype.compute.np.type
    with np.errstate(divide="ignore", invalid="ignore"):     # n = 0: PyTorch's 0 * inf
        values = k.astype(np_type) * np_type(np.float64(1.0) / np.float64(n * d))
    result = tensor(values, dtype=dtype, device=device)
    if out is not None:
        return _finish(name, result, out)
    return result.requires_grad_(requires_grad) if requires_grad else result


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad=False):
    """The sample frequencies of an n-point `fft` with sample spacing d:
    [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n).

    Example:
        >>> nbtorch.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    k = np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)]) if n > 0 \
        else np.arange(0)
    return _frequencies("fftfreq", k, n, d, out, dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """The sample frequencies of an n-point `rfft`: [0, 1, ..., n // 2] / (d n)."""
    k = np.arange(n // 2 + 1) if n >= 0 else np.arange(0)
    return _frequencies("rfftfreq", k, n, d, out, dtype, device, requires_grad)


def _shift(input, dim, inverse):
    from .joining import roll
    ndim = input.dim()
    if dim is None:
        dims = tuple(range(ndim))
    else:
        dims = tuple(wrap_dim(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim))
    if not dims:
        raise RuntimeError("`shifts` required")
    shifts = [(input.shape[d] + inverse) // 2 for d in dims]
    return roll(input, shifts, dims)


def fftshift(input, dim=None):
    """`input` rolled so that the zero frequency sits at the centre of each dim in `dim`
    (all by default): the order `fftfreq` becomes ascending."""
    return _shift(input, dim, 0)


def ifftshift(input, dim=None):
    """The inverse of `fftshift`."""
    return _shift(input, dim, 1)
