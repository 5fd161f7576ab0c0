"""The elementwise losses: mse_loss, l1_loss, smooth_l1_loss, huber_loss,
binary_cross_entropy(_with_logits) and kl_div.

Each takes the fused CPU path of `nbtorch/ops/loss_fused.py` (one node, one kernel pass each
way) where it applies, and is otherwise composed from ops (every device and dtype, a
broadcast target, weights that require grad...), with the same values.
"""
import warnings

import nbtorch as torch
from ...autograd import Function
from ...ops._common import broadcast_shapes
from ...ops.loss_fused import fused_pointwise
from .activation import logsigmoid as _logsigmoid
from .loss_common import _check_reduction, _legacy_reduction, _reduce, _warn_size

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div"]


def _check_weight_size(weight, input):
    """mse_loss/l1_loss/huber_loss's `weight` holds one value per element, as PyTorch's."""
    if weight is not None and weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")


def _weighted_node(reduction, mean_node="DivBackward0"):
    """The node PyTorch's weighted mse/l1/huber ends in (they are composed of ops)."""
    return {"none": "MulBackward0", "sum": "SumBackward0", "mean": mean_node}[reduction]


def _weighted_mean_by_weights(loss, weight, reduction):
    """PyTorch's weighted mse_loss/l1_loss: 'mean' is sum(w * loss) / sum(w)."""
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error: mean((input - target)^2); with `weight` (one value per element)
    sum(w (input - target)^2) / sum(w), as PyTorch's.

    Example:
        >>> F.mse_loss(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 4.0]))
        tensor(2.)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_size(input, target)
    _check_weight_size(weight, input)
    if weight is None:
        fused = fused_pointwise("mse", input, target, reduction, "MseLossBackward0")
    else:
        fused = fused_pointwise("mse", input, target, reduction, _weighted_node(reduction),
                                weight=weight, divisor="weight")
    if fused is not None:
        return fused
    diff = input - target
    loss = diff * diff
    if weight is not None:
        return _weighted_mean_by_weights(loss * weight, weight, reduction)
    return _reduce(loss, reduction, "MseLossBackward0")


_L1_NODES = {"none": "AbsBackward0", "mean": "MeanBackward0", "sum": "SumBackward0"}


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error: mean(|input - target|); with `weight` (one value per element)
    sum(w |input - target|) / sum(w), as PyTorch's."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_size(input, target)
    return _l1(input, target, reduction, weight)


def _l1(input, target, reduction, weight=None):
    _check_weight_size(weight, input)
    if weight is None:
        fused = fused_pointwise("l1", input, target, reduction, _L1_NODES[reduction])
    else:
        fused = fused_pointwise("l1", input, target, reduction, _weighted_node(reduction),
                                weight=weight, divisor="weight")
    if fused is not None:
        return fused
    loss = (input - target).abs()
    if weight is not None:
        return _weighted_mean_by_weights(loss * weight, weight, reduction)
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_size(input, target)
    if beta == 0.0:
        return _l1(input, target, reduction)
    fused = fused_pointwise("smooth_l1", input, target, reduction, "SmoothL1LossBackward0",
                            param=beta)
    if fused is not None:
        return fused
    z = (input - target).abs()
    loss = torch.where(z < beta, (0.5 / beta) * z * z, z - 0.5 * beta)
    return _reduce(loss, reduction, "SmoothL1LossBackward0")


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target); times
    `weight` (one value per element) if given, whose 'mean' is over the elements."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_size(input, target)
    _check_weight_size(weight, input)
    node = "HuberLossBackward0" if weight is None else _weighted_node(reduction,
                                                                       "MeanBackward0")
    fused = fused_pointwise("huber", input, target, reduction, node, param=delta,
                            weight=weight)
    if fused is not None:
        return fused
    z = (input - target).abs()
    loss = torch.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))
    if weight is not None:
        return _reduce(loss * weight, reduction)     # PyTorch's weighted huber is composed
    return _reduce(loss, reduction, "HuberLossBackward0")


# ---- binary losses -------------------------------------------------------------

class _BinaryCrossEntropy(Function):
    """-w (t log x + (1 - t) log(1 - x)), logs clamped at -100 (PyTorch's BCE).

    The backward is PyTorch's (x - t) / max(x (1 - x), 1e-12), finite at 0 and 1.
    """

    _backward_name = "BinaryCrossEntropyBackward0"           # PyTorch's node

    @staticmethod
    def forward(ctx, input, target, weight):
        ctx.save_for_backward(input, target, weight)
        log_x = input.log().clamp(min=-100)
        log_1mx = (1 - input).log().clamp(min=-100)
        loss = -(target * log_x + (1 - target) * log_1mx)
        return loss if weight is None else loss * weight

    @staticmethod
    def backward(ctx, grad):
        input, target, weight = ctx.saved_tensors
        if weight is not None:
            grad = grad * weight
        g_input = g_target = None
        if ctx.needs_input_grad[0]:
            g_input = grad * (input - target) / (input * (1 - input)).clamp(min=1e-12)
        if ctx.needs_input_grad[1]:
            g_target = grad * ((1 - input).log().clamp(min=-100)
                               - input.log().clamp(min=-100))
        return g_input, g_target, None


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy between probabilities `input` and `target` (same shape)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the "
                         f"input size ({input.shape}) is deprecated. Please ensure they "
                         "have the same size.")
    fused = fused_pointwise("bce", input, target, reduction, "BinaryCrossEntropyBackward0",
                            weight=weight)            # checks the ranges as it goes
    if fused is not None:
        return fused
    if weight is not None:
        weight = weight.expand(broadcast_shapes(target.shape, weight.shape))
    if input.numel():
        lo, hi = float(input.detach().min()), float(input.detach().max())
        if not (lo >= 0 and hi <= 1):
            raise RuntimeError("all elements of input should be between 0 and 1")
        lo, hi = float(target.detach().min()), float(target.detach().max())
        if not (lo >= 0 and hi <= 1):
            raise RuntimeError("all elements of target should be between 0 and 1")
    return _reduce(_BinaryCrossEntropy.apply(input, target, weight), reduction,
                   "BinaryCrossEntropyBackward0")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in one stable expression.

    loss = (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x), exact for large |x|
    (softplus(-x) as -logsigmoid(x): F.softplus's threshold would drop log1p(exp(-|x|))).

    Example:
        >>> F.binary_cross_entropy_with_logits(torch.tensor([100.0]), torch.tensor([0.0]))
        tensor(100.)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    fused = fused_pointwise("bce_logits" if pos_weight is None else "bce_logits_pw", input,
                            target, reduction, "BinaryCrossEntropyWithLogitsBackward0",
                            weight=weight, pos_weight=pos_weight)
    if fused is not None:
        return fused
    softplus_neg = -_logsigmoid(input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "BinaryCrossEntropyWithLogitsBackward0")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False):
    """Kullback-Leibler divergence; `input` holds log-probabilities.

    Pointwise: target * (log target - input) (or with log_target, exp(t) (t - input)).
    'batchmean' divides the sum by the batch size (the true KL divergence).
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, extra=("batchmean",))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                      "the support size.'batchmean' divides only by the batch size, and "
                      "aligns with the KL div math definition.'mean' will be changed to "
                      "behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    fused = _fused_kl_div(input, target, reduction, log_target)
    if fused is not None:
        return fused
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(target, target) - target * input: 0 where target is 0, NaN where it is
        # negative (log of a negative), as PyTorch
        safe = torch.where(target != 0, target, torch.ones_like(target))
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def _fused_kl_div(input, target, reduction, log_target):
    """kl_div as one fused node (None where it does not apply), named as PyTorch's last op:
    kl_div is composed there (xlogy(t, t) - t x, then mean, sum or a sum / batch size)."""
    kind = "kl_log" if log_target else "kl"
    divisor = None
    if reduction == "batchmean":
        if input.dim():
            reduction, divisor, node = "mean", input.shape[0], "DivBackward0"
        else:
            reduction, node = "sum", "SumBackward0"
    else:
        node = {"none": "MulBackward0" if log_target else "SubBackward0",
                "mean": "MeanBackward0", "sum": "SumBackward0"}[reduction]
    return fused_pointwise(kind, input, target, reduction, node, divisor=divisor)
