"""``embedding(..., sparse=True)``: the same lookup, and a sparse COO gradient for the
weight, as PyTorch gives it: one entry per looked-up index (padding_idx left out,
duplicates not summed), its row of the output gradient as the values."""
import numpy as np

from .._tensor import wrap
from ..autograd import Function
from ._tensor import make_coo

__all__ = ["SparseGradEmbedding"]


class SparseGradEmbedding(Function):
    """out[..., :] = weight[indices[...], :]; d(weight) = sparse rows of d(out)."""

    _backward_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        from ..ops.embedding import _check_range, _flat_indices, _gather
        _check_range(indices, weight.shape[0])
        idx = _flat_indices(indices)
        ctx.idx, ctx.shape = idx, tuple(weight.shape)
        ctx.padding_idx, ctx.freq = padding_idx, scale_grad_by_freq
        return _gather(weight, idx, indices.shape)

    @staticmethod
    def backward(ctx, g):
        idx = ctx.idx
        keep = np.flatnonzero(idx != ctx.padding_idx) if ctx.padding_idx >= 0 else \
            np.arange(idx.size)
        rows = g.reshape(idx.size, ctx.shape[1]).index_select(0, wrap(keep))
        used = idx[keep]
        if ctx.freq:                    # each row divided by how often its index occurs
            counts = np.bincount(used, minlength=ctx.shape[0])[used]
            rows = rows / wrap(counts.astype(rows.dtype.np).reshape(-1, 1))
        grad = make_coo(wrap(np.ascontiguousarray(used[None])), rows, ctx.shape, False)
        return grad, None, None, None


def sparse_embedding_bag(weight, input, offsets, per_sample_weights, mode, include_last_offset,
                         padding_idx, scale_grad_by_freq):
    """``embedding_bag(mode='sum'|'mean', sparse=True)``: the looked-up rows come through
    `SparseGradEmbedding` (the weight's gradient: one sparse COO entry per non-padding
    index, as PyTorch's), weighted, then summed (or averaged) per bag; padding indices
    count in neither the sum nor the mean, and an empty bag is zeros."""
    from ..ops.embedding_bag import _bags, _host
    from ..ops.creation import zeros
    idx = input.reshape(-1)
    n = idx.numel()
    if input.dim() == 2:
        B, bag = input.shape[0], np.repeat(np.arange(input.shape[0]), input.shape[1])
    else:
        B, bag = _bags(_host(offsets).astype(np.int64), n, include_last_offset)
    pad = -1 if padding_idx is None else padding_idx
    rows = SparseGradEmbedding.apply(weight, idx, pad, bool(scale_grad_by_freq))
    keep = (_host(idx) != pad) & (bag >= 0)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    if not keep.all():
        rows = rows * wrap(keep.astype(rows.dtype.np).reshape(-1, 1))
    out = zeros(B, weight.shape[1], dtype=rows.dtype).index_add(
        0, wrap(np.where(bag >= 0, bag, 0).astype(np.int64)), rows)
    if mode == "mean":
        counts = np.maximum(np.bincount(bag[keep], minlength=B), 1)
        out = out / wrap(counts.astype(rows.dtype.np).reshape(-1, 1))
    return out
