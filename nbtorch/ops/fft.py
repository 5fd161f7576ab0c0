"""The FFT primitives every torch.fft function is built from, with their gradients.

As in PyTorch (aten's _fft_c2c, _fft_r2c, _fft_c2r), three transforms reach a kernel
(`kernels/cpu/fft.py`: NumPy's pocketfft; `kernels/cuda/fft.py`: a Numba kernel):

    c2c(x, dims, mode, forward)    complex -> complex
    r2c(x, dims, mode, onesided)   real -> complex (forward; onesided keeps n//2 + 1 bins)
    c2r(x, dims, mode)             Hermitian complex -> real (inverse), last size given

`mode` is the scaling: 0 none, 1 by 1/sqrt(n), 2 by 1/n. Each backward is written
with these same Functions, so gradients of any order exist. For a real loss L the
gradient of a complex tensor is dL/dRe + i dL/dIm (PyTorch's convention); with it:

    c2c:  grad_x = c2c(g, dims, mode, not forward)                  (the adjoint)
    r2c:  grad_x = Re c2c(zero-pad(g) to n, dims, mode, inverse)     (onesided: pad)
    c2r:  grad_x = r2c(g, dims, mode, onesided) with bins 1 .. n - n//2 - 1 doubled

A few small complex helpers live here as Functions too (real <-> complex casts, conj,
zero-pad/crop), written on the real views of `nbtorch/_complex_views.py`, so that the
FFT's gradients do not wait on the complex op family.
"""
from .._complex_views import as_complex, as_real, real_part
from .._registry import get_kernel
from .._tensor import empty
from ..autograd.function import Function

__all__ = ["c2c", "r2c", "c2r", "to_complex", "real", "conj", "resize"]


def _kernel(op, device):
    return get_kernel(op, device.type)


class C2C(Function):
    """Complex-to-complex transform over `dims` (a tuple of distinct, wrapped dims)."""

    @staticmethod
    def forward(ctx, x, dims, mode, forward):
        x = x.contiguous()
        out = empty(tuple(x.shape), x.dtype, x.device)
        _kernel("fft_c2c", x.device)(x._array, out._array, dims, mode, bool(forward))
        ctx.args = (dims, mode, forward)
        return out

    @staticmethod
    def backward(ctx, g):
        dims, mode, forward = ctx.args
        return C2C.apply(g, dims, mode, not forward), None, None, None


class R2C(Function):
    """Forward transform of real `x` over `dims`; onesided halves the last of them."""

    @staticmethod
    def forward(ctx, x, dims, mode, onesided):
        x = x.contiguous()
        shape = list(x.shape)
        if onesided:
            shape[dims[-1]] = shape[dims[-1]] // 2 + 1
        out = empty(tuple(shape), x.dtype.to_complex(), x.device)
        _kernel("fft_r2c", x.device)(x._array, out._array, dims, mode, bool(onesided))
        ctx.args = (dims, mode, onesided, tuple(x.shape))
        return out

    @staticmethod
    def backward(ctx, g):
        dims, mode, onesided, shape = ctx.args
        if onesided:
            g = resize(g, shape)                  # the dropped bins got no gradient
        return real(C2C.apply(g, dims, mode, False)), None, None, None


class C2R(Function):
    """Inverse transform of Hermitian `x` over `dims` to a real signal of `last_size`
    along the last dim (x has last_size // 2 + 1 bins there)."""

    @staticmethod
    def forward(ctx, x, dims, mode, last_size):
        x = x.contiguous()
        shape = list(x.shape)
        shape[dims[-1]] = last_size
        out = empty(tuple(shape), x.dtype.to_real(), x.device)
        _kernel("fft_c2r", x.device)(x._array, out._array, dims, mode)
        ctx.args = (dims, mode)
        return out

    @staticmethod
    def backward(ctx, g):
        dims, mode = ctx.args
        gx = R2C.apply(g, dims, mode, True)
        last = dims[-1]
        half = gx.shape[last]
        doubled = g.shape[last] - half            # bins whose mirror image c2r added
        if doubled > 0:
            from .creation import full
            from .joining import cat
            kw = dict(dtype=g.dtype, device=g.device)
            w = cat([full((1,), 1.0, **kw), full((doubled,), 2.0, **kw),
                     full((half - 1 - doubled,), 1.0, **kw)])
            gx = gx * w.reshape([half if d == last else 1 for d in range(g.dim())])
        return gx, None, None, None


class ToComplex(Function):
    """Real `x` as complex (zero imaginary parts); the gradient is the real part."""

    @staticmethod
    def forward(ctx, x):
        return x.to(x.dtype.to_complex())

    @staticmethod
    def backward(ctx, g):
        return real(g)


class Real(Function):
    """The real parts of complex `x`, a new real tensor."""

    @staticmethod
    def forward(ctx, x):
        return real_part(x).clone()

    @staticmethod
    def backward(ctx, g):
        return ToComplex.apply(g)


class Conj(Function):
    """The complex conjugate of `x`, a new tensor."""

    @staticmethod
    def forward(ctx, x):
        from ..ops.creation import tensor
        sign = tensor([1.0, -1.0], dtype=x.dtype.to_real(), device=x.device)
        return as_complex((as_real(x) * sign).contiguous())

    @staticmethod
    def backward(ctx, g):
        return Conj.apply(g)


class Resize(Function):
    """`x` cropped or zero-padded (at the end of each dim) to `shape`."""

    @staticmethod
    def forward(ctx, x, shape):
        from ..ops.creation import zeros
        out = zeros(shape, dtype=x.dtype, device=x.device)
        src, dst = x, out
        for d, (m, n) in enumerate(zip(x.shape, shape)):
            src, dst = src.narrow(d, 0, min(m, n)), dst.narrow(d, 0, min(m, n))
        dst.copy_(src)
        ctx.args = tuple(x.shape)
        return out

    @staticmethod
    def backward(ctx, g):
        return Resize.apply(g, ctx.args), None


def c2c(x, dims, mode, forward):
    return C2C.apply(x, tuple(dims), mode, forward)


def r2c(x, dims, mode, onesided):
    return R2C.apply(x, tuple(dims), mode, onesided)


def c2r(x, dims, mode, last_size):
    return C2R.apply(x, tuple(dims), mode, last_size)


def to_complex(x):
    """`x` as a complex tensor (itself if complex already)."""
    return x if x.dtype.is_complex else ToComplex.apply(x)


def real(x):
    return Real.apply(x)


def conj(x):
    return Conj.apply(x)


def resize(x, shape):
    """`x` cropped (a view) or zero-padded to `shape`; itself when already that shape."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    if all(n <= m for m, n in zip(x.shape, shape)):
        for d, n in enumerate(shape):
            if n != x.shape[d]:
                x = x.narrow(d, 0, n)
        return x
    return Resize.apply(x, shape)
