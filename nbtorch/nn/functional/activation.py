"""Activation functions of `nn.functional`, built from nbtorch ops.

Each formula is arranged so that no branch of a `where` overflows (an inf in
the unselected branch would turn its zero gradient into NaN): exponentials
see their argument clamped to the range where they are used.
`relu`, `sigmoid`, `tanh`, `softmax` and `log_softmax` are the core ops.
"""
import math
import warnings

import nbtorch as torch

__all__ = ["relu", "relu_", "relu6", "hardtanh", "leaky_relu", "elu", "selu", "celu",
           "gelu", "silu", "mish", "sigmoid", "tanh", "hardsigmoid", "hardswish",
           "logsigmoid", "softplus", "softsign", "tanhshrink", "threshold", "glu",
           "prelu", "softmax", "log_softmax", "softmin"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _maybe_inplace(input, result, inplace):
    """For inplace=True, write `result` into `input` when autograd allows it."""
    if inplace and not (torch.is_grad_enabled() and input.requires_grad):
        with torch.no_grad():
            input.copy_(result)
        return input
    return result


def relu(input, inplace=False):
    """max(0, x) elementwise.

    Example:
        >>> F.relu(torch.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """
    return torch.relu(input) if not inplace else _maybe_inplace(input, torch.relu(input),
                                                                True)


def relu_(input):
    """In-place relu."""
    return relu(input, inplace=True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val)."""
    return _maybe_inplace(input, input.clamp(min_val, max_val), inplace)


def relu6(input, inplace=False):
    """min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x if x > 0 else negative_slope * x."""
    return _maybe_inplace(input, torch.where(input > 0, input, input * negative_slope),
                          inplace)


def elu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha * (exp(x) - 1)."""
    neg = (input.clamp(max=0).exp() - 1) * alpha
    return _maybe_inplace(input, torch.where(input > 0, input, neg), inplace)


def celu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha * (exp(x / alpha) - 1)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    neg = ((input.clamp(max=0) / alpha).exp() - 1) * alpha
    return _maybe_inplace(input, torch.where(input > 0, input, neg), inplace)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _maybe_inplace(input, elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def gelu(input, approximate="none"):
    """x * Phi(x) (Phi the normal CDF); approximate='tanh' uses the tanh formula.

    Example:
        >>> F.gelu(torch.tensor([1.0]), approximate="tanh")
    """
    if approximate == "none":
        return input * 0.5 * (1 + (input * (1 / math.sqrt(2))).erf())
    if approximate == "tanh":
        inner = (input + 0.044715 * input * input * input) * math.sqrt(2 / math.pi)
        return input * 0.5 * (1 + inner.tanh())
    raise RuntimeError("approximate argument must be either none or tanh.")


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    return _maybe_inplace(input, input * torch.sigmoid(input), inplace)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return _maybe_inplace(input, input * torch.tanh(softplus(input)), inplace)


def sigmoid(input):
    """1 / (1 + exp(-x))."""
    return torch.sigmoid(input)


def tanh(input):
    """tanh(x)."""
    return torch.tanh(input)


def hardsigmoid(input, inplace=False):
    """clamp(x / 6 + 1/2, 0, 1)."""
    return _maybe_inplace(input, (input / 6 + 0.5).clamp(0, 1), inplace)


def hardswish(input, inplace=False):
    """x * hardsigmoid(x)."""
    return _maybe_inplace(input, input * (input / 6 + 0.5).clamp(0, 1), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold.

    Example:
        >>> F.softplus(torch.tensor([0.0, 100.0]))
        tensor([  0.6931, 100.0000])
    """
    z = input * beta
    soft = z.clamp(max=threshold).exp().log1p()
    if beta != 1:
        soft = soft / beta
    return torch.where(z > threshold, input, soft)


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-input)


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - torch.tanh(input)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return _maybe_inplace(input, torch.where(input > threshold, input,
                                             torch.full_like(input, value)), inplace)


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
