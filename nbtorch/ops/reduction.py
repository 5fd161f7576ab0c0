"""Reductions (initial core version: `sum` over any dims, with keepdim)."""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty
from .._registry import register_kernel, get_kernel
from ..autograd.function import Function
from ._common import normalize_dims, tensor_method

__all__ = ["sum"]


def _cpu_sum(x2d, out1d):
    from nbtorch.kernels.cpu import reduce as k
    if x2d.dtype == np.float16:
        x2d = x2d.astype(np.float32)
        tmp = np.empty(out1d.shape, np.float32)
        k.sum_rows(x2d, tmp)
        out1d[...] = tmp
    elif x2d.dtype == np.bool_:
        k.sum_rows(x2d.view(np.uint8), out1d)
    else:
        k.sum_rows(x2d, out1d)


register_kernel("sum", "cpu", _cpu_sum)


def move_reduced_last(x, dims):
    """(x permuted so `dims` are last and made contiguous, kept shape, reduced size)."""
    keep = [d for d in range(x.dim()) if d not in dims]
    xp = x.permute(keep + list(dims)).contiguous() if x.dim() else x.reshape(1)
    kept_shape = tuple(x._shape[d] for d in keep)
    n = 1
    for d in dims:
        n *= x._shape[d]
    return xp, kept_shape, n


def keepdim_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.in_shape, ctx.dims, ctx.keepdim = x._shape, dims, keepdim
        xp, kept, n = move_reduced_last(x, dims)
        rows = int(np.prod(kept)) if kept else 1
        out = empty(kept, dtype, x.device)
        src = xp if xp.dtype is dtype or x.dtype is _dtype.bool else xp.to(dtype)
        if rows:
            get_kernel("sum", x.device.type)(src._array.reshape(rows, n),
                                             out._array.reshape(rows))
        if keepdim:
            out = out.view(keepdim_shape(x._shape, dims))
        return out

    @staticmethod
    def backward(ctx, g):
        if not ctx.keepdim:
            g = g.view(keepdim_shape(ctx.in_shape, ctx.dims))
        return g.expand(ctx.in_shape), None, None, None


@tensor_method()
def sum(self, dim=None, keepdim=False, *, dtype=None):
    """Sum over all elements or over `dim` (int or tuple), optionally keeping dims."""
    dims = normalize_dims(dim, self.dim())
    if dtype is None:
        dtype = _dtype.int64 if not self.dtype.is_floating_point else self.dtype
    return Sum.apply(self, dims, keepdim, _dtype.to_dtype(dtype))
