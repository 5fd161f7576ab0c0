"""Searching sorted data and binning: searchsorted, bucketize, histogram(dd),
unique_consecutive.

searchsorted runs PyTorch's own binary search (`shared.search_sorted`, one loop per
value on the CPU, one thread per value on CUDA), so values that fall between, on, or
beyond NaN boundaries land where PyTorch puts them. histogram bins by searching its
edges (what PyTorch's linear binning with its local correction amounts to) and counts
with bincount; unique_consecutive reuses unique's run kernel on unsorted data.
"""
import numpy as np

from .. import _dtype
from .._capture import host_computed
from .._tensor import Tensor, empty
from .._registry import get_kernel
from .._limited import no_kernel
from ._common import normalize_dim, tensor_method
from . import _return_types as rt

__all__ = ["searchsorted", "bucketize", "histogram", "histogramdd", "unique_consecutive"]


def _as_tensor(x, like):
    if isinstance(x, Tensor):
        return x
    from .creation import tensor
    return tensor(x, device=like.device)


def _search(op, seq, values, right, out_int32, sorter):
    """The insertion points of `values` in the sorted last dim of `seq`."""
    scalar = not isinstance(values, Tensor)
    values = _as_tensor(values, seq)
    if seq.device != values.device:
        raise RuntimeError(f"torch.{op}(): boundaries and input value tensors should have "
                           f"same device type, but got boundaries tensor device type "
                           f"{seq.device.type} and input value tensor device type "
                           f"{values.device.type}")
    if seq.dim() == 0:
        raise RuntimeError(f"torch.{op}(): boundaries tensor should have positive dimension, "
                           f"but got 0 dimension")
    if seq.dim() > 1 and (seq.dim() != values.dim() or
                          tuple(seq._shape[:-1]) != tuple(values._shape[:-1])):
        raise RuntimeError(f"torch.{op}(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq.shape)} and "
                           f"input value tensor {list(values.shape)}")
    if sorter is not None:
        if sorter._shape != seq._shape:
            raise RuntimeError(f"torch.{op}(): boundary and sorter must have the same size, "
                               f"but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(sorter.shape)}")
        if sorter.dtype is not _dtype.int64:
            raise RuntimeError(f"torch.{op}(): sorter must be a tensor of long dtype but got "
                               f"dtype {sorter.dtype}")
        s = sorter._host()
        if s.size and (s.min() < 0 or s.max() >= seq._shape[-1]):
            raise RuntimeError(f"torch.{op}(): sorter index out of range")
        seq = seq.gather(-1, sorter)
    common = _dtype.promote_types(seq.dtype, values.dtype)
    if common.is_complex:
        raise RuntimeError(f"torch.{op}(): complex values are not supported")
    n = seq._shape[-1]
    shape = values._shape
    if values.numel() == 0:
        out = empty(shape, _dtype.int32 if out_int32 else _dtype.int64, values.device)
        return out.reshape(()) if scalar else out
    seq2 = seq.detach().to(common).contiguous().reshape(-1, n) if n else None
    m = shape[-1] if shape else 1
    vals2 = values.detach().to(common).contiguous().reshape(-1, m)
    out = empty(vals2._shape, _dtype.int32 if out_int32 else _dtype.int64, values.device)
    if out.numel():
        if n == 0:
            out.fill_(0)
        else:
            get_kernel("searchsorted", values.device.type)(seq2._array, vals2._array,
                                                           out._array, bool(right))
    out = out.reshape(shape)
    return out.reshape(()) if scalar else out


def _side(op, right, side):
    if side is None:
        return right
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.{op}(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError(f"torch.{op}(): side and right can't be set to opposites, got side "
                           f"of left while right was True")
    return side == "right"


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Indices at which `input` would be inserted into the sorted last dim of
    `sorted_sequence` to keep it sorted (the first such place, or the last with right=True).

    Example:
        >>> nbtorch.searchsorted(nbtorch.tensor([1, 3, 5]), nbtorch.tensor([3, 6]))
        tensor([1, 3])
    """
    if sorted_sequence.dtype.limited:
        no_kernel('searchsorted_out_cpu', sorted_sequence.dtype)
    res = _search("searchsorted", sorted_sequence, input, _side("searchsorted", right, side),
                  out_int32, sorter)
    if out is not None:
        out.copy_(res)
        return out
    return res


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each input value among 1-D sorted `boundaries` (searchsorted)."""
    if not isinstance(boundaries, Tensor) or boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{getattr(boundaries, 'ndim', 0)})")
    res = _search("bucketize", boundaries, input, right, out_int32, None)
    if out is not None:
        out.copy_(res)
        return out
    return res


Tensor.bucketize = lambda self, boundaries, *, out_int32=False, right=False: \
    bucketize(self, boundaries, out_int32=out_int32, right=right)


def _edges(x, bins, range_):
    from .creation import linspace
    if isinstance(bins, Tensor):
        if bins.dim() != 1 or bins.numel() < 1:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension and "
                               "at least 1 element")
        return bins.detach().to(x.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {bins} for "
                           f"dimension 0")
    if range_ is not None:
        lo, hi = float(range_[0]), float(range_[1])
    elif x.numel():
        lo, hi = float(x.amin()), float(x.amax())
    else:
        lo, hi = 0.0, 1.0
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                           f"{lo:g} max {hi:g} for dimension 0")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is not "
                           f"finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return linspace(lo, hi, bins + 1, dtype=x.dtype, device=x.device)


@tensor_method()
@host_computed("counts the input's values on the host")
def histogram(self, bins=100, *, range=None, weight=None, density=False, out=None):
    """Counts (or summed `weight`) of the values in each bin: `bins` equal bins over
    `range` (the data's min and max by default) or the given edges; the last bin is
    closed. density=True divides by the total and the bin widths.

    Example:
        >>> nbtorch.histogram(nbtorch.tensor([1., 2., 1.]), bins=2).hist
        tensor([2., 1.])
    """
    if not self.dtype.is_floating_point or self.dtype.is_half:
        from .reduction import dtype_label
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{dtype_label(self.dtype)}'")
    if weight is not None and (weight._shape != self._shape or weight.dtype is not self.dtype):
        raise RuntimeError("torch.histogramdd(): if weight tensor is provided, it should "
                           "have the same shape as the input tensor excluding its innermost "
                           "dimension and the same dtype as the input")
    x = self.detach().reshape(-1)
    edges = _edges(x, bins, range)
    nb = edges.numel() - 1
    idx = searchsorted(edges, x, right=True) - 1
    last = x == edges[-1]
    idx = idx.masked_fill(last, nb - 1)
    keep = (idx >= 0) & (idx < nb) & (x == x)
    w = weight.detach().reshape(-1)[keep] if weight is not None else \
        x.new_ones(x.shape)[keep]
    hist = idx[keep].bincount(w, minlength=nb)[:nb].to(self.dtype) if nb > 0 else \
        x.new_zeros(0)
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (hist.sum() * widths)
    res = rt.histogram(hist, edges)
    if out is not None:
        out[0].copy_(hist)
        out[1].copy_(edges)
        return rt.histogram(*out)
    return res


@tensor_method()
@host_computed("has a data-dependent output shape")
def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """Each run of equal consecutive values (or slices along dim) kept once, with the
    inverse indices and the run lengths on request.

    Example:
        >>> nbtorch.unique_consecutive(nbtorch.tensor([1, 1, 2, 1]))
        tensor([1, 2, 1])
    """
    if dim is None:
        return _runs_flat(self, return_inverse, return_counts)
    d = normalize_dim(dim, self.dim())
    n = self._shape[d]
    x = self.detach().movedim(d, 0).reshape(n, -1)
    if n:
        new = np.ones(n, bool)
        if n > 1:
            new[1:] = (x[1:] != x[:-1]).any(1)._host()
        run = np.cumsum(new) - 1
    else:
        run = np.zeros(0, np.int64)
    starts = np.flatnonzero(new) if n else run
    from .creation import tensor
    keep = tensor(starts, device=self.device)
    result = [self.index_select(d, keep)]
    if return_inverse:
        result.append(tensor(run.astype(np.int64), device=self.device))
    if return_counts:
        result.append(tensor(np.diff(np.append(starts, n)).astype(np.int64),
                             device=self.device))
    return result[0] if len(result) == 1 else tuple(result)


def _runs_flat(x, return_inverse, return_counts):
    flat = x.detach().reshape(-1).contiguous()
    n = flat.numel()
    uniq = empty((n,), x.dtype, x.device)
    inverse = empty((n,), _dtype.int64, x.device)
    counts = empty((n,), _dtype.int64, x.device)
    from .creation import arange
    order = arange(n, device=x.device)
    vals, u_raw = flat._array, uniq._array
    if x.dtype is _dtype.bool:
        vals, u_raw = vals.view(np.uint8), u_raw.view(np.uint8)
    elif x.dtype.is_half:
        vals, u_raw = vals.view(np.uint16), u_raw.view(np.uint16)
    m = get_kernel("unique_runs", x.device.type)(vals, order._array, u_raw, inverse._array,
                                                 counts._array) if n else 0
    result = [uniq[:m].clone()]
    if return_inverse:
        result.append(inverse.view(x._shape))
    if return_counts:
        result.append(counts[:m].clone())
    return result[0] if len(result) == 1 else tuple(result)


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """The D-dimensional histogram of the points in the rows of input (..., D): `bins` per
    dim (an int, one int per dim, or one edge tensor per dim), over `range`
    ([lo0, hi0, lo1, hi1, ...]) or each dim's data range; returns (hist, bin_edges).

    Example:
        >>> nbtorch.histogramdd(nbtorch.tensor([[0., 1.], [2., 3.]]), bins=2).hist
        tensor([[1., 0.],
                [0., 1.]])
    """
    if not input.dtype.is_floating_point or input.dtype.is_half:
        from .reduction import dtype_label
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{dtype_label(input.dtype)}'")
    if input.dim() < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension")
    D = input._shape[-1]
    pts = input.detach().reshape(-1, D)
    per_dim = bins if isinstance(bins, (list, tuple)) else [bins] * D
    if len(per_dim) != D:
        raise RuntimeError(f"torch.histogramdd: expected {D} sequences of bin edges for each "
                           f"dimension, but got {len(per_dim)}")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram, range should "
                           f"have {2 * D} elements, but got {len(range)}")
    edges = [_edges(pts[:, d], b, None if range is None else range[2 * d:2 * d + 2])
             for d, b in enumerate(per_dim)]
    sizes = [e.numel() - 1 for e in edges]
    flat = pts.new_zeros(pts._shape[0], dtype=_dtype.int64)
    keep = pts.new_ones(pts._shape[0], dtype=_dtype.bool)
    for d, e in enumerate(edges):
        x = pts[:, d].contiguous()
        idx = searchsorted(e, x, right=True) - 1
        idx = idx.masked_fill(x == e[-1], sizes[d] - 1)
        keep = keep & (idx >= 0) & (idx < sizes[d]) & (x == x)
        flat = flat * sizes[d] + idx.clamp(0, max(sizes[d] - 1, 0))
    total = int(np.prod(sizes, dtype=np.int64))
    w = weight.detach().reshape(-1)[keep] if weight is not None else \
        pts.new_ones(pts._shape[0])[keep]
    hist = flat[keep].bincount(w.to(input.dtype), minlength=total)[:total].to(input.dtype) \
        .reshape(sizes)
    if density:
        vol = hist.new_ones(())
        for d, e in enumerate(edges):
            shape = [1] * D
            shape[d] = -1
            vol = vol * (e[1:] - e[:-1]).reshape(shape)
        hist = hist / (hist.sum() * vol)
    return rt.histogramdd(hist, list(edges))
