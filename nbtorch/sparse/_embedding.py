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
