"""`nn.utils.fusion`: fold an eval-mode BatchNorm into the convolution or linear layer
before it (inference only: w' = w * gamma / sqrt(var + eps) per output channel,
b' = (b - mean) * gamma / sqrt(var + eps) + beta)."""
import copy

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _check_eval(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of `conv` computing conv followed by `bn` (both in eval mode).

    Example:
        >>> fused = fuse_conv_bn_eval(conv.eval(), bn.eval())
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    _check_eval(conv, bn)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(fused weight, fused bias) Parameters of a convolution followed by a BatchNorm."""
    from ... import ones_like, zeros_like
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(w_dtype)
    b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(b_dtype)
    return Parameter(w.detach(), conv_w.requires_grad), Parameter(b.detach(), conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` computing linear followed by `bn` (both in eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or "
                             f"bn.num_features == 1, got linear.out_features="
                             f"{linear.out_features} and bn.num_features={bn.num_features}")
    _check_eval(linear, bn)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(fused weight, fused bias) Parameters of a linear layer followed by a BatchNorm."""
    from ... import zeros_like
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    w = linear_w * scale.unsqueeze(-1).to(w_dtype)
    b = ((linear_b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(w.detach(), linear_w.requires_grad), \
        Parameter(b.detach(), linear_b.requires_grad)
