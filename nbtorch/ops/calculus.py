"""Finite differences and integrals along a dim: diff, gradient, trapezoid (trapz),
cumulative_trapezoid.

Compositions of narrow, arithmetic, sum and cumsum (NumPy's formulas: np.diff,
np.gradient, np.trapezoid), so autograd and every device come from those ops.
"""
from .._tensor import Tensor
from ._common import normalize_dim, tensor_method

__all__ = ["diff", "gradient", "trapezoid", "trapz", "cumulative_trapezoid"]


@tensor_method()
def diff(self, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (out[i] = x[i+1] - x[i], applied n times),
    after joining `prepend` and `append`; bool inputs give x[i+1] != x[i]."""
    if self.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim(dim, self.dim())
    x = self
    if prepend is not None or append is not None:
        from .joining import cat
        parts = [p if p.dim() else p.expand(_edge_shape(self, d))
                 for p in (prepend, self, append) if p is not None]
        x = cat(parts, d)
    for _ in range(n):
        m = x._shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi.logical_xor(lo) if x.dtype.name == "bool" else hi - lo
    return x


def _edge_shape(x, d):
    shape = list(x._shape)
    shape[d] = 1
    return tuple(shape)


def _grad_uniform(f, d, h, edge_order):
    n = f._shape[d]
    from .joining import cat
    nar = f.narrow
    inner = (nar(d, 2, n - 2) - nar(d, 0, n - 2)) / (2.0 * h)
    if edge_order == 1:
        first = (nar(d, 1, 1) - nar(d, 0, 1)) / h
        last = (nar(d, n - 1, 1) - nar(d, n - 2, 1)) / h
    else:
        first = (-1.5 * nar(d, 0, 1) + 2.0 * nar(d, 1, 1) - 0.5 * nar(d, 2, 1)) / h
        last = (0.5 * nar(d, n - 3, 1) - 2.0 * nar(d, n - 2, 1) + 1.5 * nar(d, n - 1, 1)) / h
    return cat([first, inner, last], d)


def _grad_coords(f, d, x, edge_order):
    """np.gradient's second-order formula on the coordinates `x` (1-D) along d."""
    n = f._shape[d]
    shape = [1] * f.dim()
    shape[d] = -1
    dx = (x[1:] - x[:-1]).to(f.dtype)
    dx1, dx2 = dx[:-1].reshape(shape), dx[1:].reshape(shape)
    nar = f.narrow
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    inner = a * nar(d, 0, n - 2) + b * nar(d, 1, n - 2) + c * nar(d, 2, n - 2)
    if edge_order == 1:
        first = (nar(d, 1, 1) - nar(d, 0, 1)) / dx[0]
        last = (nar(d, n - 1, 1) - nar(d, n - 2, 1)) / dx[-1]
    else:
        h1, h2 = dx[0], dx[1]
        first = (-(2.0 * h1 + h2) / (h1 * (h1 + h2)) * nar(d, 0, 1) +
                 (h1 + h2) / (h1 * h2) * nar(d, 1, 1) - h1 / (h2 * (h1 + h2)) * nar(d, 2, 1))
        h1, h2 = dx[-2], dx[-1]
        last = (h2 / (h1 * (h1 + h2)) * nar(d, n - 3, 1) - (h2 + h1) / (h1 * h2) *
                nar(d, n - 2, 1) + (2.0 * h2 + h1) / (h2 * (h1 + h2)) * nar(d, n - 1, 1))
    from .joining import cat
    return cat([first, inner, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates of df/dx_d by central differences inside and one-sided ones (first or
    second order) at the edges, one tensor per dim (np.gradient's formulas).

    `spacing` is one number (every dim), one number per dim, or one coordinate tensor per
    dim.

    Example:
        >>> nbtorch.gradient(nbtorch.tensor([1., 4., 9.]))
        (tensor([3., 4., 5.]),)
    """
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(input.dim()))
    elif isinstance(dim, int):
        dims = [normalize_dim(dim, input.dim())]
    else:
        dims = [normalize_dim(d, input.dim()) for d in dim]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar "
                               f"or it's spacing and dim arguments to have the same length, "
                               f"but got a spacing argument of length {len(spacing)} and a "
                               f"dim argument of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input._shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input.dtype.is_floating_point else input.to(_float_default())
    out = []
    for d, h in zip(dims, spacings):
        if isinstance(h, Tensor) and h.dim() == 1:
            if h._shape[0] != input._shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                   f"size as the input along its dim ({input._shape[d]}), "
                                   f"got {h._shape[0]}")
            out.append(_grad_coords(f, d, h, edge_order))
        else:
            out.append(_grad_uniform(f, d, float(h.item() if isinstance(h, Tensor) else h),
                                     edge_order))
    return tuple(out)


def _float_default():
    from .._dtype import get_default_dtype
    return get_default_dtype()


def _float(y):
    return y if y.dtype.is_floating_point else y.to(_float_default())


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim: sum of (y[i] + y[i+1]) / 2 * (x[i+1] - x[i]) (spacing
    `dx`, default 1, when no coordinates `x` are given).

    Example:
        >>> nbtorch.trapezoid(nbtorch.tensor([1., 2., 3.]))
        tensor(4.)
    """
    d = normalize_dim(dim, y.dim())
    n = y._shape[d]
    y = _float(y)
    if n == 0:
        return y.sum(d)
    mid = y.narrow(d, 0, n - 1) + y.narrow(d, 1, n - 1)
    if x is None:
        return mid.sum(d) * (0.5 * (1.0 if dx is None else dx))
    if not isinstance(x, Tensor):
        return mid.sum(d) * (0.5 * x)
    dxs = x.diff(dim=-1 if x.dim() == 1 else d)
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[d] = -1
        dxs = dxs.reshape(shape)
    return (mid * dxs).sum(d) * 0.5


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along dim (one element fewer than y)."""
    d = normalize_dim(dim, y.dim())
    n = y._shape[d]
    y = _float(y)
    if n == 0:
        return y
    mid = y.narrow(d, 0, n - 1) + y.narrow(d, 1, n - 1)
    if isinstance(x, Tensor):
        dxs = x.diff(dim=-1 if x.dim() == 1 else d)
        if x.dim() == 1:
            shape = [1] * y.dim()
            shape[d] = -1
            dxs = dxs.reshape(shape)
        return (mid * dxs * 0.5).cumsum(d)
    h = x if x is not None else (1.0 if dx is None else dx)
    return (mid * (0.5 * h)).cumsum(d)
