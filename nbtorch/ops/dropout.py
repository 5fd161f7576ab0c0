"""Dropout functions: a random keep-mask scaled by 1/(1-p) in training, identity else.

The masks are PyTorch's: ``noise = empty(shape).bernoulli_(1 - p); noise.div_(1 - p)``
(one Bernoulli draw per element, or per channel for the feature variants), so after
``manual_seed`` they equal PyTorch's CPU masks.
"""
import warnings

from .._tensor import CPU, empty

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout", "bernoulli_noise"]


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def bernoulli_noise(shape, p, dtype, device):
    """Bernoulli(1 - p) draws of `shape` in `dtype` (p < 1): a tensor factory, so the JIT
    recorder keeps it as one random node (fx/passes/recording.py FACTORY_FUNCTIONS)."""
    return empty(tuple(shape), dtype, device).bernoulli_(1.0 - p)


def noise_array(shape, p, dtype):
    """The Bernoulli(1 - p) keep draws (0/1) of a CPU kernel as F.dropout makes them (a
    raw array), or None for p = 0: for fused kernels that apply the mask themselves."""
    if p <= 0.0:
        return None
    return bernoulli_noise(shape, p, dtype, CPU)._array


def keep_scale(p, np_dtype):
    """1/(1-p) rounded in the tensor's dtype, as F.dropout's ``noise.div_(1 - p)``."""
    return np_dtype.type(1.0) / np_dtype.type(1.0 - p) if p > 0.0 else 1.0


def _noise(input, p, mask_shape):
    return bernoulli_noise(tuple(mask_shape), p, input.dtype, input.device)


def _keep_mask(input, p, mask_shape):
    """Float mask of `mask_shape`: 1/(1-p) with probability 1-p, else 0 (0 when p = 1,
    drawing nothing)."""
    if p == 1.0:
        return empty((), input.dtype, input.device).fill_(0.0)
    return _noise(input, p, mask_shape).div_(1.0 - p)


def _apply_mask(input, mask, inplace):
    if inplace:
        return input.mul_(mask)
    return input * mask


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p, scale the rest by 1/(1-p) (training only).

    Example:
        >>> F.dropout(torch.ones(4), p=0.5)     # e.g. tensor([2., 0., 2., 2.])
    """
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    return _apply_mask(input, _keep_mask(input, p, tuple(input.shape)), inplace)


def _channel_dropout(input, p, training, inplace, n_spatial, name):
    _check_p(p)
    batched = n_spatial + 2
    if input.dim() not in (batched - 1, batched):
        raise RuntimeError(f"{name}: Expected {batched - 1}D or {batched}D input, but "
                           f"received a {input.dim()}D input.")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    keep = input.dim() - n_spatial   # (N, C) or (C,) then ones over spatial dims
    mask_shape = tuple(input.shape[:keep]) + (1,) * n_spatial
    return _apply_mask(input, _keep_mask(input, p, mask_shape), inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) / (C, L) inputs with probability p."""
    return _channel_dropout(input, p, training, inplace, 1, "dropout1d")


def _feature_dropout(input, p, training, inplace, batched):
    """Zero whole (sample, channel) slices: dims 0 and 1 of `input`, or, not `batched`,
    dim 0 (a batch dim of one added), as PyTorch's feature_dropout."""
    _check_p(p)
    if input.dim() < (2 if batched else 1):
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    keep = 2 if batched else 1
    mask_shape = tuple(input.shape[:keep]) + (1,) * (input.dim() - keep)
    return _apply_mask(input, _keep_mask(input, p, mask_shape), inplace)


def _deprecated_rank(name, rank, wanted):
    warnings.warn(f"{name}: Received a {rank}-D input to {name}, which is deprecated and will "
                  f"result in an error in a future release. To retain the behavior and silence "
                  f"this warning, please use dropout instead. Note that {name} exists to "
                  f"provide channel-wise dropout on inputs with {wanted} spatial dimensions, a "
                  f"channel dimension, and an optional batch dimension (i.e. {wanted + 1}D or "
                  f"{wanted + 2}D inputs).", stacklevel=3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) inputs with probability p. As PyTorch's, a 3-D
    input is read as (N, C, L) (with a warning) and other ranks are deprecated but run."""
    if input.dim() not in (3, 4):
        _deprecated_rank("dropout2d", input.dim(), 2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=2)
    return _feature_dropout(input, p, training, inplace, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) / (C, D, H, W) inputs with probability p
    (other ranks are deprecated but run, unbatched below 5-D, as PyTorch's)."""
    if input.dim() not in (4, 5):
        _deprecated_rank("dropout3d", input.dim(), 3)
    return _feature_dropout(input, p, training, inplace, input.dim() == 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped values go to SELU's negative saturation and
    an affine correction keeps mean 0 and variance 1."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return input * 0.0
    return _alpha_masked(input, p, tuple(input.shape), inplace)


def _alpha_masked(input, p, mask_shape, inplace):
    alpha = 1.7580993408473766                    # -SELU's negative saturation
    noise = _noise(input, p, mask_shape)
    a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    b = noise.add(-1).mul_(alpha * a).add_(alpha * a * p)
    noise.mul_(a)
    return input.mul_(noise).add_(b) if inplace else (input * noise).add_(b)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: one draw per (N, C) entry, as PyTorch's
    make_feature_noise (dims after the second are broadcast)."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return _alpha_masked(input, p, mask_shape, inplace)
