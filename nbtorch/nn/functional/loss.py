"""Loss functions, composed from nbtorch ops (so autograd and devices come free); the
elementwise ones live in `loss_pointwise.py`, and cross_entropy and nll_loss take fused CPU
paths where they apply (`nbtorch/ops/cross_entropy.py`, `nbtorch/ops/loss_fused.py`).

Targets of class-index losses are validated on the host before use (an index
out of range is an IndexError, never a wrong read), and the log-probability
losses are computed from `log_softmax`/`softplus`, which are stable for large
logits.
"""
from collections import namedtuple

import numpy as np

import nbtorch as torch
from ..._capture import capturing
from ..._tensor import Tensor
from ..._meta import index_values
from ...autograd import Function
from ...autograd.function import renamed
from ...ops.cross_entropy import fused_cross_entropy
from ...ops.loss_fused import fused_nll_loss
from ...ops.softmax import half_in_float32, log_softmax_grad
from .activation import logsigmoid as _logsigmoid
from .loss_common import (_check_reduction, _legacy_reduction, _named_reduction, _reduce,
                          _type_name)
from .loss_pointwise import (binary_cross_entropy, binary_cross_entropy_with_logits,
                             huber_loss, kl_div, l1_loss, mse_loss, smooth_l1_loss)

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
           "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "kl_div", "soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
           "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "triplet_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss"]


# ---- class-index losses ------------------------------------------------------

def _check_weight(weight, n_classes):
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")


_Targets = namedtuple("_Targets", ["safe", "weights", "valid", "denominator"])


def _check_class_targets(input, target, weight):
    """PyTorch's errors for class-index targets of the wrong type or shape, or a weight
    that is not one value per class; returns the number of classes."""
    if not isinstance(target, Tensor):
        raise TypeError(f"nll_loss(): argument 'target' must be Tensor, not "
                        f"{type(target).__name__}")
    if target.dtype.name not in ("int64", "uint8"):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_type_name(target)}")
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() <= 2 and target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.dim() >= 2 and (target.dim() == 0 or input.shape[0] != target.shape[0]):
        got = target.shape[0] if target.dim() else 0
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({got}).")
    if input.dim() > 2 and list(input.shape[2:]) != list(target.shape[1:]):
        expected = [input.shape[0]] + list(input.shape[2:])
        raise RuntimeError(f"Expected target size {expected}, got {list(target.shape)}")
    n_classes = input.shape[0 if input.dim() == 1 else 1]
    _check_weight(weight, n_classes)
    return n_classes


def _class_targets(input, target, weight, ignore_index):
    """Validate class-index targets; return `_Targets(safe, weights, valid, denominator)`.

    `safe` (shape (M, 1), for `gather`) has ignored targets replaced by 0;
    `weights` (M,) is the class weight of each target times `valid` (1.0
    where the target is not ignore_index). Both weights and valid are None
    when no weight is given and no target is ignored (the common case, which
    then costs no extra ops). `denominator` is what 'mean' divides by: the
    sum of the weights (a float). All of it is computed on the host: the
    targets are range-checked there anyway, and they carry no gradient.
    """
    n_classes = _check_class_targets(input, target, weight)
    if capturing():
        return _graph_targets(input, target, weight, ignore_index, n_classes)
    tgt, valid = _host_targets(target, n_classes, ignore_index)
    dev = input.device
    all_valid = bool(valid.all())
    safe = tgt if all_valid else np.where(valid, tgt, 0)
    safe_t = torch.from_numpy(np.ascontiguousarray(safe.reshape(-1, 1))).to(dev)
    if weight is None and all_valid:
        return _Targets(safe_t, None, None, float(tgt.size))
    fdt = input.dtype.np
    valid = valid.astype(fdt)
    w = valid if weight is None else \
        np.asarray(index_values(weight), dtype=fdt)[safe] * valid
    w_t, valid_t = (torch.from_numpy(np.ascontiguousarray(a)).to(dev) for a in (w, valid))
    return _Targets(safe_t, w_t, valid_t, float(w.sum(dtype=np.float64)))


def _host_targets(target, n_classes, ignore_index):
    """(flat int64 targets, the mask of those not ignored) on the host, range-checked."""
    tgt = np.asarray(index_values(target), dtype=np.int64).reshape(-1)   # meta: zeros
    valid = tgt != ignore_index
    bad = valid & ((tgt < 0) | (tgt >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(tgt[np.argmax(bad)])} is out of bounds.")
    return tgt, valid


class _ClassTargets(Function):
    """(safe (M, 1) int64, valid (M,) of `dtype`) of class-index targets, range-checked on
    the host: what `_class_targets` computes, as one node, for a graph capture (a replay
    then checks and masks each call's targets; host-made tensors would be constants)."""

    @staticmethod
    def forward(ctx, target, n_classes, ignore_index, dtype):
        tgt, valid = _host_targets(target, n_classes, ignore_index)
        dev = target.device
        safe = np.ascontiguousarray(np.where(valid, tgt, 0).reshape(-1, 1))
        return (torch.from_numpy(safe).to(dev),
                torch.from_numpy(valid.astype(dtype.np)).to(dev))

    @staticmethod
    def backward(ctx, *grads):
        return None, None, None, None


def _graph_targets(input, target, weight, ignore_index, n_classes):
    """`_Targets` made of graph values (a capture is recording): the weights and their sum
    (the 'mean' denominator, a 0-d tensor) follow each call's targets on a replay."""
    safe, valid = _ClassTargets.apply(target, n_classes, ignore_index, input.dtype)
    w = valid if weight is None else weight.to(input.dtype)[safe.reshape(-1)] * valid
    return _Targets(safe, w, valid, w.sum())


def _classes_last(input):
    """(N*d1*..., C) view/copy of an (N, C, d1, ...) or (N, C) or (C,) input."""
    if input.dim() == 1:
        return input.reshape(1, -1)
    if input.dim() == 2:
        return input
    return input.movedim(1, -1).reshape(-1, input.shape[1])


def _target_shape(input):
    if input.dim() == 1:
        return ()
    return (input.shape[0],) + tuple(input.shape[2:])


def _half_cross_entropy_grad(x, safe, w, grad, reduction, denominator):
    """cross_entropy's input gradient for half logits as PyTorch's CPU computes it: the
    nll_loss gradient (-grad / total_weight * w_i, ops of x's dtype) scattered into
    zeros, then log_softmax's backward in float32, rounded once."""
    coef = grad.reshape(-1, 1) if reduction == "none" else \
        (grad if reduction == "sum" else _mean_grad(grad, denominator)).reshape(1, 1)
    coef = -coef.expand(safe.shape[0], 1)
    if w is not None:
        coef = coef * w.reshape(-1, 1)
    logp = torch.log_softmax(x, 1)
    g_logp = torch.zeros_like(logp).scatter_(1, safe, coef)
    return half_in_float32(lambda g, p: log_softmax_grad(g, p, 1), x.dtype, g_logp, logp)


def _picked_loss(flat_logp, safe, w):
    """-logp[i, target_i] * w_i for every (flattened) sample i."""
    picked = flat_logp.gather(1, safe).reshape(-1)
    return -picked if w is None else -(picked * w)


def _mean(total, denominator):
    """total / denominator for 'mean'. An empty or fully ignored batch (0 / 0) gives nan, as
    PyTorch's, with a zero gradient (no term to differentiate) where a plain division's
    backward spread nan over the weights (a padded batch corrupted a model)."""
    if isinstance(denominator, Tensor):             # a graph capture's: per call
        zero = denominator == 0
        return (total / torch.where(zero, torch.ones_like(denominator), denominator)
                + torch.where(zero, torch.full_like(denominator, float("nan")),
                              torch.zeros_like(denominator)))
    if denominator == 0:
        return total * 0.0 + float("nan")
    return total / denominator


def _mean_grad(grad, denominator):
    """The gradient `_mean` passes to the total: grad / denominator, 0 where it is 0."""
    if isinstance(denominator, Tensor):
        zero = denominator == 0
        return grad / torch.where(zero, torch.ones_like(denominator), denominator) * ~zero
    return grad * 0.0 if denominator == 0 else grad / denominator


def _reduce_weighted(loss, reduction, denominator, input, node=None):
    """'none' restores the target's shape; 'mean' divides the sum by `denominator`;
    `node` names the last node as PyTorch's fused loss prints it (NllLossBackward0)."""
    if reduction == "none":
        return loss.reshape(_target_shape(input))
    if reduction == "sum":
        return loss.sum() if node is None else _named_reduction(node, False)(loss)
    if node is None or not denominator:
        return _mean(loss.sum(), denominator)
    from ...ops.arithmetic import Div
    return renamed(Div, node).apply(loss.sum(), denominator)


class _CrossEntropyIndices(Function):
    """cross_entropy of (M, C) logits and class indices as one tape node.

    forward: loss_i = -log_softmax(x)[i, t_i] * w_i, reduced; backward:
    (softmax(x) - onehot(t)) * w_i * dL/dloss_i, written with nbtorch ops on
    the saved logits, so a create_graph backward can differentiate it again.
    """

    _backward_name = "NllLossBackward0"           # PyTorch's node

    @staticmethod
    def forward(ctx, x, safe, w, reduction, denominator):
        ctx.save_for_backward(x, safe, w)
        ctx.reduction, ctx.denominator = reduction, denominator
        if reduction == "none" or w is not None:
            loss = _picked_loss(torch.log_softmax(x, 1), safe, w)
            if reduction == "none":
                return loss
        else:
            loss = torch.log_softmax(x, 1).gather(1, safe)    # the common case: 4 ops
            if reduction == "sum" or denominator:
                return loss.sum() * (-1.0 if reduction == "sum" else -1.0 / denominator)
            return _mean(-loss.sum(), denominator)
        total = loss.sum()
        return total if reduction == "sum" else _mean(total, denominator)

    @staticmethod
    def backward(ctx, grad):
        x, safe, w = ctx.saved_tensors
        if x.dtype.is_half:
            return (_half_cross_entropy_grad(x, safe, w, grad, ctx.reduction,
                                             ctx.denominator), None, None, None, None)
        if ctx.reduction == "none":
            coef = grad.reshape(-1, 1)
        else:
            coef = grad if ctx.reduction == "sum" else _mean_grad(grad, ctx.denominator)
        if w is not None:
            coef = coef * w.reshape(-1, 1)
        probs = torch.softmax(x, 1)
        onehot = torch.zeros_like(probs).scatter_(1, safe, 1.0)
        return (probs - onehot) * coef, None, None, None, None


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100,
             reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices given log-probabilities.

    `input` is (C,), (N, C) or (N, C, d1, ...); `target` holds class indices
    of shape (), (N,) or (N, d1, ...). 'mean' divides by the sum of the
    weights of the non-ignored targets.

    Example:
        >>> F.nll_loss(torch.log_softmax(torch.randn(3, 5), 1), torch.tensor([1, 0, 4]))
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_class_targets(input, target, weight)
    if not capturing():
        fused = fused_nll_loss(input, target, weight, ignore_index, reduction)
        if fused is not None:
            return fused
    t = _class_targets(input, target, weight, ignore_index)
    return _reduce_weighted(_picked_loss(_classes_last(input), t.safe, t.weights),
                            reduction, t.denominator, input, "NllLossBackward0")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits and class indices or class probabilities.

    If `target` has the input's shape it holds probabilities (float);
    otherwise class indices (int64). Computed from `log_softmax` (stable for
    large logits).

    Example:
        >>> logits = torch.randn(3, 5, requires_grad=True)
        >>> F.cross_entropy(logits, torch.tensor([1, 0, 4])).backward()
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    soft = target.shape == input.shape
    if soft and not target.dtype.is_floating_point:
        raise RuntimeError("Expected floating point type for target with class "
                           f"probabilities, got {_type_name(target)}")
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    class_dim = 0 if input.dim() == 1 else 1
    n_classes = input.shape[class_dim]
    if soft:
        return _soft_cross_entropy(torch.log_softmax(input, class_dim), target, weight,
                                   ignore_index, reduction, label_smoothing, class_dim,
                                   n_classes)
    if label_smoothing == 0.0 and weight is None:
        fused = fused_cross_entropy(input, target, ignore_index, reduction)
        if fused is not None:
            return fused
    t = _class_targets(input, target, weight, ignore_index)
    if label_smoothing == 0.0:
        loss = _CrossEntropyIndices.apply(_classes_last(input), t.safe, t.weights,
                                          reduction, t.denominator)
        return loss.reshape(_target_shape(input)) if reduction == "none" else loss
    flat = _classes_last(torch.log_softmax(input, class_dim))
    nll = _reduce_weighted(_picked_loss(flat, t.safe, t.weights), reduction, t.denominator,
                           input)
    if weight is not None:
        flat = flat * weight.reshape(1, -1)
    smooth = -flat.sum(1) if t.valid is None else -(flat.sum(1) * t.valid)
    smooth = _reduce_weighted(smooth, reduction, t.denominator, input)
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_classes)


def _soft_cross_entropy(logp, target, weight, ignore_index, reduction, label_smoothing,
                        class_dim, n_classes):
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    _check_weight(weight, n_classes)
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        shape = [1] * logp.dim()
        shape[class_dim] = n_classes
        prod = prod * weight.reshape(shape)
    loss = -prod.sum(class_dim)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    batch = logp.numel() // n_classes if n_classes else 0
    return loss.sum() / batch


# ---- other losses --------------------------------------------------------------

def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)) for labels y in {-1, 1}."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(-_logsigmoid(target * input), reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where y == 1, max(0, margin - x) where y == -1 (both where y is neither, as
    PyTorch's: x where y != -1 plus the margin term where y != 1)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zeros = torch.zeros_like(input)
    pos = torch.where(target != -1, input, zeros)
    neg = torch.where(target != 1, (margin - input).clamp(min=0), zeros)
    return _reduce(pos + neg, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None,
                          reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    norm = ((input1 * input1).sum(-1) + eps).sqrt() * ((input2 * input2).sum(-1) + eps).sqrt()
    cos = dot / norm
    zeros = torch.zeros_like(cos)
    loss = torch.where(target == 1, 1 - cos, zeros) + \
        torch.where(target == -1, (cos - margin).clamp(min=0), zeros)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None,
                     eps=1e-8, reduce=None, reduction="mean"):
    """Poisson negative log likelihood (exp(x) - t x, or x - t log(x + eps))."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = torch.where(target > 1, target, torch.ones_like(target))
        stirling = safe * safe.log() - safe + 0.5 * (2 * np.pi * safe).log()
        loss = loss + torch.where(target > 1, stirling, torch.zeros_like(target))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(var) + (input - target)^2 / var) (+ 0.5 log(2 pi) if full)."""
    _check_reduction(reduction)
    if isinstance(var, (int, float)):
        var = torch.full_like(input, float(var))
    if var.dim() == input.dim() - 1 and var.shape == input.shape[:-1]:
        var = var.unsqueeze(-1)
    if (var.detach() < 0).any():
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with torch.no_grad():               # clamped for stability only, as PyTorch's: the
        var.clamp_(min=eps)             # gradient passes straight through to var
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * float(np.log(2 * np.pi))
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the p-norm pairwise distance."""
    from .distance import pairwise_distance
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.dim()}D, "
                           f"positive {positive.dim()}D, and negative {negative.dim()}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_swap = pairwise_distance(positive, negative, p, eps)
        d_neg = torch.minimum(d_neg, d_swap)
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class binary logistic loss averaged over classes: (N, C) logits, 0/1 targets."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(-1), reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum_{i != y} max(0, margin - x[y] + x[i])^p / C for class indices y."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    safe = _class_targets(x, target.reshape(-1), None, -100).safe
    x_y = x.gather(1, safe)
    margins = (x - x_y + margin).clamp(min=0)
    if p == 2:
        margins = margins * margins
    if weight is not None:
        margins = margins * weight.reshape(-1)[safe]
    n_classes = x.shape[1]
    own = (torch.arange(n_classes, device=x.device).reshape(1, -1) == safe).to(x.dtype)
    loss = (margins * (1 - own)).sum(1) / n_classes
    if input.dim() == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)
