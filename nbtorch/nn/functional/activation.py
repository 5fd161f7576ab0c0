"""Activation functions of `nn.functional`.

The elementwise ones with kernels (relu, gelu, silu, softplus, elu, ...) are
the core's ops from `nbtorch.ops.pointwise_activation`, re-exported here;
the rest are composed from nbtorch ops, arranged so that no branch of a
`where` overflows (an inf in the unselected branch would turn its zero
gradient into NaN).
"""
import warnings

import nbtorch as torch
from ...autograd import Function
from ...ops.pointwise_activation import (celu, celu_, elu, elu_, gelu, hardsigmoid,  # noqa: F401
                                         hardswish, hardtanh, hardtanh_, leaky_relu,
                                         leaky_relu_, mish, relu, relu6, relu_, selu,
                                         selu_, silu, softplus)

__all__ = ["relu", "relu_", "relu6", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_",
           "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish",
           "sigmoid", "tanh", "hardsigmoid", "hardswish", "logsigmoid", "softplus",
           "softsign", "tanhshrink", "threshold", "threshold_", "glu", "prelu", "softmax",
           "log_softmax", "softmin", "hardshrink", "softshrink", "rrelu", "rrelu_",
           "gumbel_softmax"]


def _maybe_inplace(input, result, inplace):
    """For inplace=True, write `result` into `input` when autograd allows it."""
    if inplace and not (torch.is_grad_enabled() and input.requires_grad):
        with torch.no_grad():
            input.copy_(result)
        return input
    return result


def sigmoid(input):
    """1 / (1 + exp(-x))."""
    if input.is_quantized:          # PyTorch's quantized sigmoid (fixed output qparams)
        from ...ao.nn.quantized.activation import sigmoid as qsigmoid
        return qsigmoid(input)
    return torch.sigmoid(input)


def tanh(input):
    """tanh(x)."""
    if input.is_quantized:
        from ...ao.nn.quantized.activation import tanh as qtanh
        return qtanh(input)
    return torch.tanh(input)


class _LogSigmoid(Function):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)); gradient sigmoid(-x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(max=0) - (-x.abs()).exp().log1p()

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * torch.sigmoid(-x)


def logsigmoid(input):
    """log(sigmoid(x)), exact and stable for large |x|."""
    return _LogSigmoid.apply(input)


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - torch.tanh(input)


def _threshold(input, th, value, inplace):
    result = torch.where(input > th, input, torch.full_like(input, value))
    return _maybe_inplace(input, result, inplace)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input, threshold, value):
    """In-place threshold."""
    return _threshold(input, threshold, value, True)


def glu(input, dim=-1):
    """a * sigmoid(b) where (a, b) are the two halves of `input` along `dim`."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension "
                           f"{dim % input.dim()} is size {n}")
    a, b = input.split(n // 2, dim)
    return a * torch.sigmoid(b)


def prelu(input, weight):
    """x where x > 0 else weight * x (weight per channel, dim 1, or a single one)."""
    if weight.numel() != 1:
        if input.dim() < 2 or input.shape[1] != weight.numel():
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {weight.numel()} and channel size = "
                f"{input.shape[1] if input.dim() >= 2 else 1}.")
        weight = weight.reshape([1, -1] + [1] * (input.dim() - 2))
    else:
        weight = weight.reshape(())         # one slope: the input's shape (a 0-d stays 0-d)
    return torch.where(input > 0, input, input * weight)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                  "call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim` (the core's stable kernel)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return torch.softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along `dim` (the core's stable kernel)."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return torch.log_softmax(input, dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along `dim`."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return softmax(-input, dim, dtype=dtype)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return torch.where(input.abs() > lambd, input, torch.zeros_like(input))


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 in between (halves computed in
    float32 and rounded once, as PyTorch's kernel does)."""
    x = input.to(input.dtype.compute)
    out = torch.where(x > lambd, x - lambd, torch.where(x < -lambd, x + lambd,
                                                        torch.zeros_like(x)))
    return out.to(input.dtype)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with a random slope from U(lower, upper) per element in training, and
    the mean slope (lower + upper) / 2 in evaluation."""
    if training:
        slope = torch.rand(tuple(input.shape), device=input.device).to(input.dtype)
        slope = slope * (upper - lower) + lower
        result = torch.where(input > 0, input, input * slope)
    else:                   # at 0 the slope's side, as PyTorch's (leaky_relu's gradient)
        result = torch.where(input > 0, input, input * ((lower + upper) / 2))
    return _maybe_inplace(input, result, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place `rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Sample from the Gumbel-softmax distribution; ``hard=True`` returns one-hot samples
    whose gradient is the soft sample's (straight-through)."""
    u = torch.rand(tuple(logits.shape), device=logits.device).to(logits.dtype)
    gumbels = -(-(u.clamp(min=eps)).log()).clamp(min=eps).log()
    y_soft = torch.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = torch.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
