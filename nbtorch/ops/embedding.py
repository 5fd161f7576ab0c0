"""Embedding lookups: ``embedding`` (row gather) and its index-add backward.

The backward is a Numba kernel (``nbtorch.kernels.cpu.embedding``); the
backward of the backward is the gather again, so double backward works.
"""
import numpy as np

from .. import _dtype
from .._registry import get_kernel
from .._tensor import empty
from .._lazy import kernel_module
from ..autograd import Function
from ..autograd import function as _function
from ..autograd.function import unrecorded
from ._common import check_same_device
from .joining import one_hot  # the core's op, re-exported as F.one_hot

__all__ = ["embedding", "one_hot"]


_INDEX_DTYPES = (_dtype.int64, _dtype.int32)


def _flat_indices(indices):
    """Raw contiguous int64 (M,) array of ``indices``."""
    if indices.dtype is not _dtype.int64:
        indices = indices.to(_dtype.int64)
    return indices.contiguous()._array.reshape(-1)


def _gather(weight, idx, shape):
    """weight[idx] as a new (*shape, D) tensor (idx: raw int64 array)."""
    D = weight._shape[1]
    out = empty(tuple(shape) + (D,), weight.dtype, weight.device)
    get_kernel("embedding_forward", weight.device.type)(
        weight.contiguous()._array, idx, out._array.reshape(idx.size, D))   # D may be 0
    return out


class Embedding(Function):
    """out[..., :] = weight[indices[...], :]."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        # the range is checked here, in the node a compiled graph replays (checked in
        # `embedding` only, a compiled call read memory past the weight)
        _check_range(indices, weight.shape[0])
        ctx.save_for_backward(indices)   # version-checked: indices edited in place -> error
        ctx.V, ctx.padding_idx, ctx.freq = weight.shape[0], padding_idx, scale_grad_by_freq
        return _gather(weight, _flat_indices(indices), indices.shape)

    @staticmethod
    def backward(ctx, grad_out):
        indices, = ctx.saved_tensors
        return (EmbeddingBackward.apply(grad_out, indices, ctx.V, ctx.padding_idx,
                                        ctx.freq), None, None, None)


class EmbeddingBackward(Function):
    """grad_weight[j] = sum of grad rows i with indices[i] == j (j != padding_idx).

    The indices come in as the tensor itself, not as its raw array: a graph capture
    (`nbtorch.compile`'s backward) records a tensor argument as a graph value and a raw
    array as a constant, and a constant would replay the first call's indices."""

    @staticmethod
    def forward(ctx, grad_out, indices, V, padding_idx, scale_grad_by_freq):
        idx = _flat_indices(indices)
        D = grad_out.shape[-1]
        dt = grad_out.dtype.compute
        g2 = grad_out.to(dt).contiguous()._array.reshape(idx.size, D)
        gw = empty((V, D), dt, grad_out.device)
        gw.zero_()
        get_kernel("embedding_backward", grad_out.device.type)(
            g2, idx, padding_idx, gw._array, scale_grad_by_freq)
        ctx.idx, ctx.shape, ctx.padding_idx = idx, grad_out.shape[:-1], padding_idx
        ctx.freq = scale_grad_by_freq
        return gw if dt is grad_out.dtype else gw.to(grad_out.dtype)

    @staticmethod
    def backward(ctx, ggw):
        if ctx.freq:
            raise RuntimeError("double backward of embedding with scale_grad_by_freq=True "
                               "is not supported")
        if ctx.padding_idx >= 0:
            ggw = ggw * _row_mask(ggw.shape[0], ctx.padding_idx, ggw)
        return _gather(ggw, ctx.idx, ctx.shape), None, None, None, None


def _row_mask(V, padding_idx, like):
    """A (V, 1) tensor of ones with a zero at ``padding_idx``."""
    from .creation import tensor
    keep = np.ones((V, 1))
    keep[padding_idx] = 0.0
    return tensor(keep, dtype=like.dtype, device=like.device)


def _check_indices(indices):
    if indices.dtype not in _INDEX_DTYPES:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{indices.dtype} instead (while checking arguments for embedding)")


def _check_range(indices, V):
    if indices.numel() == 0:
        return
    if indices.device.type in ("cpu", "meta"):     # meta: no values, nothing to check
        arr = indices._array
        if arr.ndim == 1 and arr.flags.c_contiguous and indices.device.type == "cpu":
            lo, hi = kernel_module("cpu.embedding").index_bounds(arr)    # one pass
        else:
            lo, hi = arr.min(), arr.max()
    else:
        lo, hi = indices.min().item(), indices.max().item()
    if lo < 0 or hi >= V:
        bad = lo if lo < 0 else hi
        raise IndexError(f"index out of range in self (index {int(bad)} with "
                         f"num_embeddings={V})")


def _resolve_padding_idx(padding_idx, V):
    if padding_idx is None:
        return -1
    if padding_idx >= V or padding_idx < -V:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + V if padding_idx < 0 else int(padding_idx)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Look up rows of ``weight`` (V, D) at integer ``input`` indices: shape (*input, D).

    ``padding_idx`` rows get no gradient; with ``max_norm`` the referenced
    rows of ``weight`` are first renormalised in place to norm <= max_norm.

    Example:
        >>> w = nbtorch.randn(10, 3)
        >>> embedding(nbtorch.tensor([[1, 2], [4, 9]]), w).shape
        torch.Size([2, 2, 3])
    """
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D, got {weight.dim()}-D weight of shape "
                           f"{list(weight.shape)}")
    if weight.dtype.limited:            # uint16-64, float8: looked up exactly in a wider dtype
        from .._limited import wide
        return embedding(input, weight.to(wide(weight.dtype)), padding_idx, max_norm,
                         norm_type, scale_grad_by_freq, sparse).to(weight.dtype)
    V = weight.shape[0]
    check_same_device("embedding", weight, input)
    _check_indices(input)
    pad = _resolve_padding_idx(padding_idx, V)
    if max_norm is not None:
        _check_range(input, V)                  # before the rows are touched
        _renorm_(weight, input, float(max_norm), float(norm_type))
    if sparse:                                  # the weight's gradient: sparse COO rows
        from ..sparse._embedding import SparseGradEmbedding
        return SparseGradEmbedding.apply(weight, input, pad, bool(scale_grad_by_freq))
    if weight.device.type == "cpu" and _function.TRACE_HOOK[0] is None and unrecorded(weight):
        _check_range(input, V)              # Embedding's forward without apply and its ctx
        return _gather(weight, _flat_indices(input), input._shape)
    return Embedding.apply(weight, input, pad, bool(scale_grad_by_freq))


def _renorm_(weight, indices, max_norm, norm_type):
    """Scale the rows of ``weight`` that ``indices`` reference down to ``max_norm`` (in place)."""
    if not weight.is_contiguous():
        raise RuntimeError("embedding: max_norm needs a contiguous weight")
    dt = weight.dtype
    w = weight.detach()
    if dt.is_half:
        w32 = w.to(dt.compute)
        get_kernel("embedding_renorm_", w.device.type)(
            w32._array, _flat_indices(indices), max_norm, norm_type)
        w32._bump()                 # written by the kernel: graphs must not replay `to`
        w.copy_(w32)
    else:
        get_kernel("embedding_renorm_", w.device.type)(
            w._array, _flat_indices(indices), max_norm, norm_type)
        weight._bump()
