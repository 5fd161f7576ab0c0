"""Losses beyond `loss.py`, as `nn.functional` exports them: ctc_loss (an op definition with
Numba kernels, `nbtorch/ops/ctc_loss.py`), multilabel_margin_loss and
triplet_margin_with_distance_loss (written with other ops; autograd gives the gradients)."""
import numpy as np

from ... import _dtype
from ...ops.ctc_loss import ctc_loss  # noqa: F401
from .distance import pairwise_distance
from .loss import _legacy_reduction

__all__ = ["ctc_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss",
           "linear_cross_entropy"]


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _target_masks(target, C):
    """(target classes clamped to [0, C), which of them count, which classes are targets):
    each row's targets run up to its first -1, as PyTorch reads them."""
    t = target.detach().cpu().numpy().reshape(-1, C)
    if t.size and (t.min() < -1 or t.max() >= C):
        raise RuntimeError("argument #2 'target' is out of range")
    valid = np.cumprod(t >= 0, axis=1).astype(bool)
    is_target = np.zeros(t.shape, bool)
    rows, cols = np.nonzero(valid)
    is_target[rows, t[rows, cols]] = True
    return np.where(valid, t, 0), valid, is_target


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-class multi-label hinge loss: for each sample, over its target classes j (the
    entries of `target` before the first -1) and the other classes i,
    sum max(0, 1 - (x[j] - x[i])) / C.

    Example:
        >>> x = nbtorch.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> multilabel_margin_loss(x, nbtorch.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """
    from ... import tensor
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not input.dtype.is_floating_point:
        raise NotImplementedError("\"multilabel_margin_loss_forward_out_frame\" not "
                                  f"implemented for '{_dtype.type_name(input.dtype)}'")
    dim = input.dim()
    C = input.shape[-1] if dim else 1
    if dim > 2 or (dim >= 1 and C == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    if target.dtype is not _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found "
                           f"{_dtype.type_name(target.dtype)}")
    x = input.reshape(-1, C)
    cls, valid, is_target = _target_masks(target, C)
    dev = input.device
    picked = x.gather(1, tensor(cls, device=dev))                           # (N, C): x[y_j]
    pairs = (1 - picked.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)         # (N, j, i)
    weight = valid[:, :, None] & ~is_target[:, None, :]
    loss = (pairs * tensor(weight, dtype=input.dtype, device=dev)).sum((1, 2)) / C
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss.reshape(input.shape[:-1]) if dim else loss.reshape(())


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with any distance function (default: pairwise
    L2); `swap` uses min(d(a, n), d(p, n)) as the negative distance (Balntas et al.).

    Example:
        >>> a = nbtorch.zeros(2, 3)
        >>> triplet_margin_with_distance_loss(a, a + 1, a + 2).shape
        torch.Size([])
    """
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.dim()}D, "
                           f"positive {positive.dim()}D, and negative {negative.dim()}D inputs")
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    loss = (margin + d_pos - d_neg).clamp_min(0)
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    return loss


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target): PyTorch 2.13's fused
    classifier-head loss. ``linear_weight`` is (C, *out_features, in_features) (K-dim
    losses when out_features is not empty); ``ignore_index=None`` ignores nothing.
    nbtorch computes the reference path (the logits in full); ``options`` (PyTorch's
    chunking settings) change nothing here but are checked as PyTorch checks them.

    Example:
        >>> x, w = nbtorch.randn(4, 8), nbtorch.randn(10, 8)
        >>> linear_cross_entropy(x, w, nbtorch.tensor([1, 2, 3, 4])).shape
        torch.Size([])
    """
    import warnings

    from .linear import linear
    from .loss import cross_entropy
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    C, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (C,) + out_features:
        raise RuntimeError(f"expected linear_bias shape {(C,) + out_features}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = batch + (C,) + out_features
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    if options is not None and (out_features or reduction not in ("mean", "sum", "none")
                                or label_smoothing != 0.0 or target.dtype is not _dtype.int64):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction "
                      "in {'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, "
                      f"out_features == (). Got reduction={reduction!r}, label_smoothing="
                      f"{label_smoothing}, target.dtype={target.dtype}, out_features="
                      f"{out_features}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
                      stacklevel=2)
    w2 = linear_weight.reshape(-1, in_features)
    b1 = None if linear_bias is None else linear_bias.reshape(-1)
    logits = linear(input, w2, b1).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)
