"""Bags of embeddings: ``embedding_bag`` sums, averages or takes the max of the rows of
``weight`` that each bag of indices names, without materialising (B, N, D) first.

One autograd node, `EmbeddingBag`, whose forward reads the indices and offsets on the host
(checked there, as PyTorch does before its kernels run) and reduces with other ops:

    rows = embedding(input[kept], weight)            kept: indices != padding_idx
    sum:  out = zeros(B, D).index_add(0, bag, rows * per_sample_weights)
    mean: the sum / the bag's number of kept indices (an empty bag gives 0)
    max:  out = zeros(B, D).scatter_reduce(0, bag, rows, "amax", include_self=False)

Its backward is another node, `EmbeddingBagBackward`, given the same index tensors: it
reads them again when it runs, so a graph capture (`nbtorch.compile`) replays both with
each call's indices instead of baking the first call's into constants. The weight's
gradient goes through embedding's backward kernel (padding_idx, scale_grad_by_freq); in
mode 'max' each (bag, column) sends it to the first row holding the maximum, as PyTorch's
max_indices do. Double backward works for sum and mean (the gradient is linear in the
output's); it is refused with the reason in mode 'max', with per_sample_weights or
scale_grad_by_freq.
"""
import warnings

import numpy as np

from .. import _dtype
from ..autograd import Function
from ._common import check_same_device
from .embedding import EmbeddingBackward, _renorm_, embedding

__all__ = ["embedding_bag"]

_MODES = {"sum": 0, "mean": 1, "max": 2}


def _host(t):
    """`t`'s values as a NumPy array (bfloat16/float16 exactly, in float32)."""
    t = t.detach().cpu()
    return (t.float() if t.dtype.is_half else t).numpy()


def _check_index_dtype(t):
    if t.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"torch.{_dtype.type_name(t.dtype)}Tensor instead (while checking "
                           "arguments for embedding_bag)")


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
    _check_batch(input, offsets)
    if input.dim() == 2:
        include_last_offset = False
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    _check_index_dtype(input)
    check_same_device("embedding_bag", weight, input, per_sample_weights)
    V = weight.shape[0]
    if max_norm is not None:
        _check_range(_host(input).reshape(-1), V)
        _renorm_(weight, input, float(max_norm), float(norm_type))
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    pad = _padding(padding_idx, V)
    if sparse:                          # the weight's gradient: sparse COO rows
        from ..sparse._embedding import sparse_embedding_bag
        return sparse_embedding_bag(weight, input, offsets, per_sample_weights, mode,
                                    include_last_offset, pad, scale_grad_by_freq)
    return EmbeddingBag.apply(weight, input, offsets if input.dim() == 1 else None,
                              per_sample_weights, mode, bool(include_last_offset), pad,
                              bool(scale_grad_by_freq))


def _check_batch(input, offsets):
    """PyTorch's checks of the input's rank and of the offsets that go with it."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        return
    if input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        _check_index_dtype(offsets)
        return
    raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                     f"{input.dim()}")


def _check_range(idx, V):
    bad = np.flatnonzero((idx < 0) | (idx >= V))
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {idx[bad[0]]} which is not in "
                           f"the valid range [0, {V})")


def _plan(V, input, offsets, include_last_offset, pad):
    """(B, flat input, kept positions, their bags), read from the index tensors on the host,
    checked as PyTorch checks them."""
    flat = input.reshape(-1)
    idx = _host(flat).astype(np.int64)
    if offsets is None:                     # (B, N): bags of N
        offs = np.arange(0, idx.size, max(input.shape[1], 1), dtype=np.int64)
    else:
        offs = _host(offsets).astype(np.int64)
    _check_range(idx, V)
    B, bag = _bags(offs, idx.size, include_last_offset)
    keep = np.flatnonzero((bag >= 0) & (idx != (-1 if pad is None else pad)))
    return B, flat, idx, keep, bag[keep]


class EmbeddingBag(Function):
    """out (B, D) from `weight` at the bags of `input` (see the module docstring)."""

    @staticmethod
    def forward(ctx, weight, input, offsets, psw, mode, include_last_offset, pad, freq):
        B, flat, idx, keep, bag = _plan(weight.shape[0], input, offsets, include_last_offset,
                                        pad)
        psw_flat = None if psw is None else psw.reshape(-1)
        out = _reduce_bags(weight, flat, psw_flat, keep, bag, B, mode, freq)
        need_w, need_p = ctx.needs_input_grad[0], ctx.needs_input_grad[3]
        ctx.save_for_backward(weight if need_p or mode == "max" else None, input, offsets,
                              psw if need_w else None, out if mode == "max" else None)
        ctx.flags, ctx.V = (mode, include_last_offset, pad, freq), weight.shape[0]
        return out

    @staticmethod
    def backward(ctx, g):
        weight, input, offsets, psw, out = ctx.saved_tensors
        need_w, need_p = ctx.needs_input_grad[0], ctx.needs_input_grad[3]
        grads = EmbeddingBagBackward.apply(g, weight, input, offsets, psw, out, ctx.V, need_w,
                                           need_p, *ctx.flags)
        gw, gp = grads if need_p else (grads, None)
        return gw if need_w else None, None, None, gp, None, None, None, None


class EmbeddingBagBackward(Function):
    """The gradients of `EmbeddingBag`: the weight's (V, D) and per_sample_weights' (as the
    input); the index tensors read again here (see the module docstring)."""

    @staticmethod
    def forward(ctx, g, weight, input, offsets, psw, out, V, need_w, need_p, mode,
                include_last_offset, pad, freq):
        from .creation import tensor, zeros
        B, flat, idx, keep, bag = _plan(V, input, offsets, include_last_offset, pad)
        dev = g.device
        pos, bag_t = tensor(keep, device=dev), tensor(bag, device=dev)
        gw = gp = None
        if need_w:
            if mode == "max":
                rows_g = _max_grads(g, weight, idx[keep], bag, out)
            else:
                if mode == "mean":
                    g = g / _bag_sizes(bag, B, g)
                rows_g = g.index_select(0, bag_t)
                if psw is not None:
                    rows_g = rows_g * psw.reshape(-1).index_select(0, pos).unsqueeze(1).to(
                        rows_g.dtype)
            gw = EmbeddingBackward.apply(rows_g, flat.index_select(0, pos), V,
                                         -1 if pad is None else pad, freq)
        if need_p:
            rows = embedding(flat.index_select(0, pos), weight)
            picked = (g.index_select(0, bag_t) * rows).sum(1).to(psw.dtype)
            gp = zeros(flat.shape[0], dtype=psw.dtype, device=dev).index_add(0, pos, picked)
            gp = gp.reshape(psw.shape)
        ctx.save_for_backward(input, offsets)
        ctx.flags = (mode, include_last_offset, pad, freq, psw is not None, need_p)
        return (gw, gp) if need_p else gw

    @staticmethod
    def backward(ctx, ggw, *_):
        """The weight's gradient is linear in g: for sum and mean (no per-sample weights, no
        frequency scaling) its own gradient is the bag reduction of ggw."""
        mode, include_last_offset, pad, freq, has_psw, need_p = ctx.flags
        if mode == "max" or freq or has_psw or need_p:
            raise RuntimeError("embedding_bag: double backward is not supported in mode "
                               "'max', with per_sample_weights or with scale_grad_by_freq")
        input, offsets = ctx.saved_tensors
        gg = EmbeddingBag.apply(ggw, input, offsets, None, mode, include_last_offset, pad,
                                False)
        return (gg,) + (None,) * 12


def _max_grads(g, weight, rows_idx, bag, out):
    """(K, D) gradient rows for mode 'max': g[b, d] at the first kept row of bag b whose
    column d holds the bag's maximum, zero elsewhere."""
    from .creation import tensor
    w = _host(weight)[rows_idx]
    o = _host(out)
    gh = _host(g)
    rows_g = np.zeros(w.shape, gh.dtype)
    taken = np.zeros(o.shape, bool)
    for k in range(w.shape[0]):             # in order: the first maximum takes it
        b = bag[k]
        hit = (w[k] == o[b]) & ~taken[b]
        rows_g[k, hit] = gh[b, hit]
        taken[b] |= hit
    return tensor(rows_g, dtype=g.dtype, device=g.device)


def _reduce_bags(weight, input, psw, keep, bag, B, mode, freq):
    """The (B, D) result from the kept positions `keep` and their bags `bag` (host arrays)."""
    from .creation import tensor, zeros
    dev = weight.device
    out = zeros(B, weight.shape[1], dtype=weight.dtype, device=dev)
    if keep.size == 0:
        return out
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
        out = out / _bag_sizes(bag, B, out)
    return out


def _bag_sizes(bag, B, like):
    """(B, 1): each bag's number of kept indices (1 for an empty bag), in `like`'s dtype."""
    from .creation import tensor
    count = np.maximum(np.bincount(bag, minlength=B), 1).astype(np.float64)
    return tensor(count, dtype=like.dtype, device=like.device).unsqueeze(1)
