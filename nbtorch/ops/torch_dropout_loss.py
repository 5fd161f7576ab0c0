"""The dropout variants and losses PyTorch exposes at torch level, with ATen's
signatures: ``torch.dropout(input, p, train)`` (positional `train`),
``torch.feature_alpha_dropout``, ``torch.native_dropout`` (output and mask), and the
losses with an integer `reduction` (0 none, 1 mean, 2 sum). Wrappers over
`nbtorch.nn.functional` and `ops/dropout.py` (see `torch_aliases.py`).
"""
from .torch_aliases import _F

__all__ = ["dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout",
           "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
           "native_dropout", "kl_div", "binary_cross_entropy_with_logits",
           "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss",
           "poisson_nll_loss", "triplet_margin_loss", "ctc_loss"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r):
    """ATen's reduction enum (0 none, 1 mean, 2 sum) as nn.functional's string."""
    if r not in _REDUCTIONS:
        raise ValueError(f"{r} is not a valid value for reduction")
    return _REDUCTIONS[r]


# ---- dropout (ATen's positional `train`) ------------------------------------------------

def dropout(input, p, train):
    """``torch.dropout(input, p, train)``."""
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    """``torch.dropout_``: in place."""
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """``torch.alpha_dropout(input, p, train)``."""
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return _F().alpha_dropout(input, p, train, inplace=True)


def _feature_mask_shape(input):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:2]) + (1,) * (input.dim() - 2)


def feature_dropout(input, p, train, _inplace=False):
    """Zero whole features (dim 1 slices) with probability p, scale the rest by 1/(1-p)."""
    from .dropout import _apply_mask, _check_p, _keep_mask
    _check_p(p)
    if not train or p == 0.0 or input.numel() == 0:
        return input
    return _apply_mask(input, _keep_mask(input, p, _feature_mask_shape(input)), _inplace)


def feature_dropout_(input, p, train):
    return feature_dropout(input, p, train, _inplace=True)


def feature_alpha_dropout(input, p, train, _inplace=False):
    """Alpha dropout of whole features (dim 1 slices), for SELU networks."""
    from .dropout import _check_p, _noise
    _check_p(p)
    if not train or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if _inplace else input * 0.0
    alpha = 1.7580993408473766
    noise = _noise(input, p, _feature_mask_shape(input))
    a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    b = noise.add(-1).mul_(alpha * a).add_(alpha * a * p)
    noise.mul_(a)
    return input.mul_(noise).add_(b) if _inplace else (input * noise).add_(b)


def feature_alpha_dropout_(input, p, train):
    return feature_alpha_dropout(input, p, train, _inplace=True)


def native_dropout(input, p, train):
    """(output, keep mask as bool): ATen's dropout with its mask."""
    from .dropout import _check_p, _noise
    from .creation import ones_like
    _check_p(p)
    if train is False or p == 0.0 or train is None and p == 0.0:
        return input.clone(), ones_like(input, dtype=bool)
    if p == 1.0:
        from .creation import zeros_like
        return input * 0.0, zeros_like(input, dtype=bool)
    keep = _noise(input, p, tuple(input.shape))
    return input * keep * (1.0 / (1.0 - p)), keep.to(bool)


# ---- losses (ATen's integer reduction) --------------------------------------------------
# The schemas say `int reduction=Mean`, but PyTorch's Python bindings read that default as
# 0 (torch.kl_div(a, b) is unreduced): the defaults here are 0, as PyTorch behaves.

def kl_div(input, target, reduction=0, *, log_target=False):
    """``torch.kl_div``: target * (log target - input) elementwise, then reduced
    (reduction 1 is the elementwise mean, not batchmean; the default 0 keeps all)."""
    from .pointwise_math import xlogy
    r = _reduction(reduction)
    loss = target.exp() * (target - input) if log_target else \
        xlogy(target, target) - target * input
    return loss if r == "none" else (loss.mean() if r == "mean" else loss.sum())


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=0):
    return _F().binary_cross_entropy_with_logits(input, target, weight,
                                                 reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return _F().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction=0):
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """`nn.functional.ctc_loss` with ATen's integer reduction (default 0, as PyTorch's
    binding reads it; 1 divides each loss by its target length, then averages)."""
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _reduction(reduction), zero_infinity)
