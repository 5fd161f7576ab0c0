"""Diagonals and view-scatters: diag, diag_embed, diagflat, the *_scatter ops (a copy
of the input with one view of it replaced), and tril/triu_indices.

A view-scatter is one Function for every view kind: forward writes `src` into that
view of a clone (one strided copy kernel); backward gives the input the gradient
with the view zeroed and `src` the view of the gradient. diag_embed is the
view-scatter of a diagonal into zeros.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty
from ..autograd import grad_mode
from ..autograd.function import Function
from ._common import normalize_dim, tensor_method

__all__ = ["diag", "diag_embed", "diagflat", "diagonal_scatter", "select_scatter",
           "slice_scatter", "tril_indices", "triu_indices"]


def _view(x, kind, args):
    if kind == "diagonal":
        return x.diagonal(*args)
    if kind == "select":
        return x.select(*args)
    if kind == "as_strided":             # storage offsets of a fresh contiguous copy
        base = x if x.is_contiguous() and x._offset == 0 else x.clone()
        return base.as_strided(*args)
    dim, start, end, step = args
    return x[(slice(None),) * dim + (slice(start, end, step),)]


class ViewScatter(Function):
    """out = x.clone(); view(out).copy_(src)."""

    @staticmethod
    def forward(ctx, x, src, kind, args):
        ctx.kind, ctx.args = kind, args
        out = x.clone()
        _view(out, kind, args).copy_(src)
        return out

    @staticmethod
    def backward(ctx, g):
        gx = gs = None
        if ctx.needs_input_grad[0]:
            from .creation import zeros
            v = _view(g, ctx.kind, ctx.args)
            gx = ViewScatter.apply(g, zeros(v.shape, dtype=g.dtype, device=g.device),
                                   ctx.kind, ctx.args)
        if ctx.needs_input_grad[1]:
            gs = _view(g, ctx.kind, ctx.args)
        return gx, gs, None, None


def _scatter(op, x, src, kind, args):
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type(src).__name__}")
    shape = _view(x, kind, args).shape
    if src.shape != shape:
        raise RuntimeError(f"{op}: expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(shape)}")
    if src.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    return ViewScatter.apply(x, src, kind, args)


@tensor_method()
def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    """A copy of self whose diagonal (offset, dim1, dim2) is replaced by src."""
    return _scatter("diagonal_scatter", self, src, "diagonal", (offset, dim1, dim2))


@tensor_method()
def select_scatter(self, src, dim, index):
    """A copy of self whose slice self.select(dim, index) is replaced by src."""
    d = normalize_dim(dim, self.dim())
    n = self._shape[d]
    if not -n <= index < n:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size "
                         f"{list(self.shape)} at dimension {d}")
    return _scatter("select_scatter", self, src, "select", (d, index))


@tensor_method()
def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    """A copy of self whose slice [start:end:step] along dim is replaced by src."""
    d = normalize_dim(dim, self.dim())
    if step is None:
        step = 1
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return _scatter("slice_scatter", self, src, "slice", (d, start, end, step))


def _embed(x, offset, dim1, dim2):
    """diag_embed: zeros of the output shape with x on the (offset, dim1, dim2) diagonal."""
    nd = x.dim() + 1
    d1, d2 = normalize_dim(dim1, nd), normalize_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (x._shape[-1] if x.dim() else 1) + abs(offset)
    rest = list(x._shape[:-1])
    shape = []
    for i in range(nd):
        shape.append(n if i in (d1, d2) else rest.pop(0))
    from .creation import zeros
    base = zeros(tuple(shape), dtype=x.dtype, device=x.device)
    return ViewScatter.apply(base, x, "diagonal", (offset, d1, d2))


@tensor_method()
def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """Matrices whose (offset, dim1, dim2) diagonals are the last dim of self (zeros elsewhere).

    Example:
        >>> nbtorch.diag_embed(nbtorch.tensor([[1., 2.]])).shape
        nbtorch.Size([1, 2, 2])
    """
    return _embed(self, offset, dim1, dim2)


@tensor_method()
def diag(self, diagonal=0):
    """1-D input: the square matrix with it on the `diagonal`-th diagonal; 2-D input: a copy
    of that diagonal."""
    if self.dim() == 1:
        return _embed(self, diagonal, 0, 1)
    if self.dim() == 2:
        if self.device.type == "cpu" and not self.dtype.limited and not self.is_quantized \
                and not (self._requires_grad and grad_mode.STATE.enabled):
            # nothing to record: NumPy's diagonal view copied once into the output, not a
            # diagonal view op and a clone (X[:512, :512].diag(): 20 -> 9-10 us, 5 of it the slice)
            a = np.diagonal(self._array, diagonal)
            out = empty(a.shape, self.dtype, self.device)
            np.copyto(out._array, a)
            return out
        return self.diagonal(diagonal).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.dim()}D")


@tensor_method()
def diagflat(self, offset=0):
    """The square matrix with the flattened input on the `offset`-th diagonal."""
    return _embed(self.reshape(-1), offset, 0, 1)


def _tri_indices(op, row, col, offset, lower, dtype, device):
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row and col must be non-negative, got {row} and {col}")
    dtype = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    if dtype not in (_dtype.int64, _dtype.int32):
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtype_name(dtype)}'")
    i, j = np.indices((row, col)).reshape(2, -1)
    keep = (j - i <= offset) if lower else (j - i >= offset)
    from .creation import tensor
    return tensor(np.stack([i[keep], j[keep]]).astype(dtype.np), dtype=dtype, device=device)


def dtype_name(d):
    from .reduction import dtype_label
    return dtype_label(d)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the lower triangle (j - i <= offset) of a row x col
    matrix, row by row."""
    return _tri_indices("tril_indices", row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the upper triangle (j - i >= offset), row by row."""
    return _tri_indices("triu_indices", row, col, offset, False, dtype, device)
