"""Order statistics, moments and segment reductions: quantile, nanquantile, cov,
corrcoef, segment_reduce.

quantile is PyTorch's algorithm with nbtorch ops: sort along the dim (NaN last),
ranks q * (count - 1), gather the neighbours and interpolate (lerp), so the gradient
flows through sort's values to the elements picked. cov and corrcoef are PyTorch's
weighted formulas around one matmul.
"""
import math
import warnings

from .. import _dtype
from .._tensor import Tensor
from ._common import normalize_dim, tensor_method

__all__ = ["quantile", "nanquantile", "cov", "corrcoef", "segment_reduce"]

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _check_q(op, x, q):
    if not x.dtype.is_floating_point or x.dtype.is_half:
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype is not x.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        vals = q.detach()._host().reshape(-1)
        if vals.size and not ((vals >= 0) & (vals <= 1)).all():
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        return q.detach().reshape(-1).to(x.device), q.dim() == 0
    q = float(q)
    if not 0 <= q <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q:g}")
    from .creation import tensor
    return tensor([q], dtype=x.dtype, device=x.device), True


def _quantile(op, x, q, dim, keepdim, interpolation, ignore_nan):
    qv, scalar_q = _check_q(op, x, q)
    if interpolation not in _MODES:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if x.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if dim is None:
        src, d = x.reshape(-1), 0
    else:
        d = normalize_dim(dim, x.dim())
        src = x if x.dim() else x.reshape(1)
    s = src.sort(dim=d).values.movedim(d, -1)            # (..., n), NaN last
    n = s._shape[-1]
    qv = qv.to(x.dtype)
    isnan = s.isnan()
    if ignore_nan:
        k = (~isnan).sum(-1, keepdim=True).to(x.dtype)
        ranks = qv * (k - 1)
        ranks = ranks.masked_fill(k == 0, float(n - 1))
    else:
        ranks = (qv * float(n - 1)).expand(tuple(s._shape[:-1]) + tuple(qv._shape))
        ranks = ranks.masked_fill(isnan.any(-1, keepdim=True), float(n - 1))
    if interpolation in ("lower", "higher", "nearest"):
        pick = {"lower": ranks.floor, "higher": ranks.ceil, "nearest": ranks.round}
        out = s.gather(-1, pick[interpolation]().long())
    else:
        below = ranks.floor().long()
        above = ranks.ceil().long().clamp(max=n - 1)
        lo, hi = s.gather(-1, below), s.gather(-1, above)
        w = ranks - below.to(x.dtype) if interpolation == "linear" else \
            ranks * 0 + 0.5
        out = lo.lerp(hi, w)
    out = out.movedim(-1, 0)                               # (Q, ...)
    if keepdim:
        out = out.reshape((out._shape[0],) + (1,) * x.dim()) if dim is None else \
            out.unsqueeze(d + 1) if x.dim() else out
    return out[0] if scalar_q else out


@tensor_method()
def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles along dim (all elements if None); NaN if a reduced row has NaN.

    Example:
        >>> nbtorch.quantile(nbtorch.tensor([1., 2., 3., 4.]), 0.5)
        tensor(2.5000)
    """
    res = _quantile("quantile", self, q, dim, keepdim, interpolation, False)
    if out is not None:
        out.copy_(res)
        return out
    return res


@tensor_method()
def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaN (NaN only where a reduced row is all NaN)."""
    res = _quantile("nanquantile", self, q, dim, keepdim, interpolation, True)
    if out is not None:
        out.copy_(res)
        return out
    return res


@tensor_method()
def cov(self, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of self (observations in the
    columns), optionally weighted by frequency and observation weights.

    Example:
        >>> nbtorch.cov(nbtorch.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if self.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got "
                           f"an input with {self.dim()} dimensions")
    x = self.reshape(1, -1) if self.dim() < 2 else self
    if not x.dtype.is_floating_point:
        x = x.to(_dtype.get_default_dtype())
    n_obs = x._shape[1]
    w = None
    if fweights is not None:
        if fweights.dim() > 1 or fweights.dtype.is_floating_point:
            raise RuntimeError("cov(): expected fweights to have integral dtype and one or "
                               "fewer dimensions")
        if fweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there "
                               f"are observations in the input but got {fweights.numel()} "
                               f"!= {n_obs}")
        if fweights.numel() and bool((fweights < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights.reshape(-1)
    if aweights is not None:
        if aweights.dim() > 1 or not aweights.dtype.is_floating_point:
            raise RuntimeError("cov(): expected aweights to have floating point dtype and "
                               "one or fewer dimensions")
        if aweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there "
                               f"are observations in the input but got {aweights.numel()} "
                               f"!= {n_obs}")
        if aweights.numel() and bool((aweights < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights.reshape(-1) if w is None else w * aweights.reshape(-1)
    if w is None:
        avg = x.mean(1)
        w_sum = float(n_obs)
        norm = w_sum - correction
    else:
        w = w.to(x.dtype)
        w_sum_t = w.sum()
        avg = (x * w).sum(1) / w_sum_t
        w_sum = float(w_sum_t)
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * float((w * aweights.reshape(-1)).sum()) / w_sum
    if norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.")
        norm = 0.0
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xm.matmul(xw.t())
    c = c / norm if norm else c / x.new_zeros(())
    return c.reshape(()) if c.numel() == 1 else c


@tensor_method()
def corrcoef(self):
    """Pearson correlation coefficients of the rows of self (cov normalised, clipped to
    [-1, 1])."""
    c = cov(self)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = d.sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return c.clamp(-1, 1)


_SEGMENT = {"sum": ("sum", 0.0), "prod": ("prod", 1.0), "max": ("amax", -math.inf),
            "min": ("amin", math.inf), "mean": ("sum", 0.0)}


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """Reduce consecutive segments of `data` along `axis` ("sum", "prod", "max", "min",
    "mean"), their sizes given by 1-D `lengths` or `offsets`; an empty segment gives
    `initial` (or the reduction's identity; NaN for mean). A scatter_reduce into one
    row per segment.

    Example:
        >>> nbtorch.segment_reduce(nbtorch.tensor([1., 2., 3.]), "sum",
        ...                        lengths=nbtorch.tensor([2, 1]))
        tensor([3., 3.])
    """
    if reduce not in _SEGMENT:
        raise RuntimeError(f"segment_reduce(): reduce must be one of sum, prod, max, min, "
                           f"mean, but got {reduce}")
    if indices is not None:
        raise NotImplementedError("segment_reduce(indices=...) is not implemented in "
                                  "PyTorch either")
    if lengths is None:
        if offsets is None:
            raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
        lengths = offsets[1:] - offsets[:-1]
    if lengths.dim() != 1:
        raise NotImplementedError("segment_reduce: only 1-D lengths are supported")
    d = normalize_dim(axis, data.dim())
    lens = lengths.detach()._host().astype("int64")
    if not unsafe and (int(lens.sum()) != data._shape[d] or (lens < 0).any()):
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                           "to data.size(lengths.dim()-1) when !unsafe.")
    import numpy as np
    from .creation import full, tensor
    seg = np.repeat(np.arange(lens.size), lens)
    x = data.movedim(d, 0)
    shape = (lens.size,) + tuple(x._shape[1:])
    mode, identity = _SEGMENT[reduce]
    start = identity if initial is None else initial
    out = full(shape, start, dtype=data.dtype, device=data.device)
    idx = tensor(seg, device=data.device).reshape((-1,) + (1,) * (x.dim() - 1)).expand(x.shape)
    out = out.scatter_reduce(0, idx, x, mode, include_self=True)
    if reduce == "mean":
        count = tensor(lens.astype(np.float64), dtype=data.dtype, device=data.device)
        count = count.reshape((-1,) + (1,) * (x.dim() - 1))
        empty = count == 0
        out = out / count.masked_fill(empty, 1)
        out = out.masked_fill(empty, float("nan") if initial is None else initial)
    return out.movedim(0, d)
