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

def _c2c(name, input, dims, sizes, norm, forward, out):
    mode = norm_mode(norm, forward)
    if input.dtype.is_complex:
        return _finish(name, c2c(_resized(input, dims, sizes), dims, mode, forward), out)
    x = promote(input)
    if not dims:
        return _finish(name, promote(x, require_complex=True).clone(), out)
    y = r2c(_resized(x, dims, sizes), dims, mode, False)
    return _finish(name, y if forward else conj(y), out)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional discrete Fourier transform of `input` along `dim`.

    Real input gives the full (Hermitian) complex spectrum; `n` crops or zero-pads.

    Example:
        >>> nbtorch.fft.fft(nbtorch.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    check_tensor("fft", input)
    check_types("fft", norm, n=n, dim=dim, one=True)
    check_out("fft", out, True)
    dims, sizes = _one(input, n, dim)
    return _c2c("fft", input, dims, sizes, norm, True, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of `fft` (scaled by 1/n with the default norm)."""
    check_tensor("ifft", input)
    check_types("ifft", norm, n=n, dim=dim, one=True)
    check_out("ifft", out, True)
    dims, sizes = _one(input, n, dim)
    return _c2c("ifft", input, dims, sizes, norm, False, out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform over `dim` (all dims by default, or the last len(s))."""
    check_tensor("fftn", input)
    check_types("fftn", norm, s=s, dim=dim)
    check_out("fftn", out, True)
    dims, sizes = signal_dims(input, s, dim)
    return _c2c("fftn", input, dims, sizes, norm, True, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of `fftn`."""
    check_tensor("ifftn", input)
    check_types("ifftn", norm, s=s, dim=dim)
    check_out("ifftn", out, True)
    dims, sizes = signal_dims(input, s, dim)
    return _c2c("ifftn", input, dims, sizes, norm, False, out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional transform (`fftn` over the last two dims by default)."""
    check_tensor("fft2", input)
    check_types("fft2", norm, s=s, dim=dim)
    check_out("fft2", out, True)
    dims, sizes = signal_dims(input, s, dim)
    return _c2c("fft2", input, dims, sizes, norm, True, out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of `fft2`."""
    check_tensor("ifft2", input)
    check_types("ifft2", norm, s=s, dim=dim)
    check_out("ifft2", out, True)
    dims, sizes = signal_dims(input, s, dim)
    return _c2c("ifft2", input, dims, sizes, norm, False, out)


# ---- real-to-complex --------------------------------------------------------------

def _real_input(name, input, message, norm, n=None, s=None, dim=None, one=False):
    check_tensor(name, input)
    check_types(name, norm, n, s, dim, one)
    if input.dtype.is_complex:
        raise RuntimeError(f"{message}{type_name(input.dtype)}")
    return promote(input)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of real `input` along `dim`: the n//2 + 1 non-negative frequencies.

    Example:
        >>> nbtorch.fft.rfft(nbtorch.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    x = _real_input("rfft", input, "rfft expects a real input tensor, but got ", norm, n,
                    dim=dim, one=True)
    check_out("rfft", out, True)
    dims, sizes = _one(x, n, dim)
    return _finish("rfft", r2c(_resized(x, dims, sizes), dims, norm_mode(norm, True), True),
                   out)


def _rfftn(name, input, s, dim, norm, out):
    x = _real_input(name, input, "rfftn expects a real-valued input tensor, but got ", norm,
                    s=s, dim=dim)
    check_out(name, out, True)
    dims, sizes = signal_dims(x, s, dim)
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    return _finish(name, r2c(_resized(x, dims, sizes), dims, norm_mode(norm, True), True),
                   out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform of real `input`, onesided in the last dim."""
    return _rfftn("rfftn", input, s, dim, norm, out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional `rfftn`."""
    return _rfftn("rfft2", input, s, dim, norm, out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of `hfft`: the onesided inverse transform of real `input`."""
    x = _real_input("ihfft", input, "ihfft expects a real input tensor, but got ", norm, n,
                    dim=dim, one=True)
    check_out("ihfft", out, True)
    dims, sizes = _one(x, n, dim)
    y = r2c(_resized(x, dims, sizes), dims, norm_mode(norm, False), True)
    return _finish("ihfft", conj(y), out)


def _ihfftn(name, input, s, dim, norm, out):
    x = _real_input(name, input, "Only supports floating-point dtypes, but found: ", norm,
                    s=s, dim=dim)
    check_out(name, out, True)
    dims, sizes = signal_dims(x, s, dim)
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    mode = norm_mode(norm, False)
    y = conj(r2c(_resized(x, dims, sizes), dims[-1:], mode, True))
    if len(dims) > 1:
        y = c2c(y, dims[:-1], mode, False)
    return _finish(name, y, out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of `hfftn`."""
    return _ihfftn("ihfftn", input, s, dim, norm, out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of `hfft2`."""
    return _ihfftn("ihfft2", input, s, dim, norm, out)


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
