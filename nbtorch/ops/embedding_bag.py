"""Bags of embeddings: ``embedding_bag`` sums, averages or takes the max of the rows of
``weight`` that each bag of indices names, without materialising (B, N, D) first.

Written with other ops (autograd gives the gradients, every device has them):

    rows = embedding(input[kept], weight)            kept: indices != padding_idx
    sum:  out = zeros(B, D).index_add(0, bag, rows * per_sample_weights)
    mean: the sum / the bag's number of kept indices (an empty bag gives 0)
    max:  out = zeros(B, D).scatter_reduce(0, bag, rows, "amax", include_self=False)

The bag of each index comes from ``offsets`` on the host (the indices are checked
there anyway, as PyTorch does before its kernels run).
"""
import warnings

import numpy as np

from .. import _dtype
from ._common import check_same_device
from .embedding import _renorm_, embedding

__all__ = ["embedding_bag"]

_MODES = {"sum": 0, "mean": 1, "max": 2}


def _host(t):
    return t.detach().cpu().numpy()


def _check_index_dtype(t):
    if t.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"torch.{_dtype.type_name(t.dtype)}Tensor instead (while checking "
                           "arguments for embedding_bag)")


def _flatten_batch(input, offsets, per_sample_weights):
    """(1-D input, offsets, weights, include_last_offset override) as PyTorch's checks order."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        offsets = np.arange(0, input.numel(), max(input.shape[1], 1), dtype=np.int64)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        return input.reshape(-1), offsets, per_sample_weights, False
    if input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        _check_index_dtype(offsets)
        return input, _host(offsets).astype(np.int64), per_sample_weights, None
    raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                     f"{input.dim()}")


def _bags(offsets, n, include_last_offset):
    """(number of bags, bag id of each of the n indices or -1 past the last bag's end)."""
    if offsets.size and offsets[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {offsets[0]}")
    if offsets.size and offsets[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {offsets[-1]}")
    if np.any(np.diff(offsets) < 0):
        raise RuntimeError("embedding_bag: offsets must be non-decreasing")
    if include_last_offset:
        if offsets.size < 1:
            raise RuntimeError("include_last_offset: number of offsets should be at least 1")
        B, end = offsets.size - 1, int(offsets[-1])
    else:
        B, end = offsets.size, n
    bag = np.searchsorted(offsets[:B], np.arange(n), side="right") - 1
    bag[end:] = -1
    return B, bag


def _padding(padding_idx, V):
    if padding_idx is None:
        return None
    if not -V <= padding_idx < V:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, {-V} through "
                           f"{V - 1}, but got {padding_idx}")
    return padding_idx + V if padding_idx < 0 else int(padding_idx)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sum, mean or max of the embeddings in each bag: shape (B, D).

    ``input`` is (B, N) (B bags of N indices) or 1-D with ``offsets`` (B,) giving each
    bag's start (``include_last_offset``: B + 1 offsets, the last one the end).
    ``per_sample_weights`` (as ``input``, mode='sum' only) scale each row;
    ``padding_idx`` entries are left out of their bag (and of its mean's count).

    Example:
        >>> w = nbtorch.randn(10, 3)
        >>> embedding_bag(nbtorch.tensor([1, 2, 4, 5, 4]), w, nbtorch.tensor([0, 2])).shape
        torch.Size([2, 3])
    """
    if weight.dtype is _dtype.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    input, offs, per_sample_weights, last = _flatten_batch(input, offsets, per_sample_weights)
    include_last_offset = include_last_offset if last is None else last
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if sparse:
        raise NotImplementedError("embedding_bag: sparse gradients are not supported "
                                  "(use sparse=False)")
    _check_index_dtype(input)
    check_same_device("embedding_bag", weight, input, per_sample_weights)
    V, D = weight.shape
    idx = _host(input).astype(np.int64)
    bad = np.flatnonzero((idx < 0) | (idx >= V))
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {idx[bad[0]]} which is not in "
                           f"the valid range [0, {V})")
    if max_norm is not None:
        _renorm_(weight, input, float(max_norm), float(norm_type))
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    B, bag = _bags(offs, idx.size, include_last_offset)
    pad = _padding(padding_idx, V)
    keep = np.flatnonzero((bag >= 0) & (idx != (-1 if pad is None else pad)))
    return _reduce_bags(weight, input, per_sample_weights, keep, bag[keep], B, mode,
                        bool(scale_grad_by_freq))


def _reduce_bags(weight, input, psw, keep, bag, B, mode, freq):
    """The (B, D) result from the kept positions `keep` and their bags `bag` (host arrays)."""
    from .creation import tensor, zeros
    dev = weight.device
    out = zeros(B, weight.shape[1], dtype=weight.dtype, device=dev)
    if keep.size == 0:
        return out + weight.sum() * 0 if weight.requires_grad else out
    pos = tensor(keep, device=dev)
    rows = embedding(input.index_select(0, pos), weight, scale_grad_by_freq=freq)
    bag_t = tensor(bag, device=dev)
    if mode == "max":
        index = bag_t.unsqueeze(1).expand(rows.shape)
        return out.scatter_reduce(0, index, rows, "amax", include_self=False)
    if psw is not None:
        rows = rows * psw.index_select(0, pos).unsqueeze(1).to(rows.dtype)
    out = out.index_add(0, bag_t, rows)
    if mode == "mean":
        count = np.maximum(np.bincount(bag, minlength=B), 1).astype(np.float64)
        out = out / tensor(count, dtype=weight.dtype, device=dev).unsqueeze(1)
    return out
