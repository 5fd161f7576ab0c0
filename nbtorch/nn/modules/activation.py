"""Activation layers: thin Modules over `nn.functional` (repr like PyTorch's)."""
import warnings

from .. import functional as F
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
           "Sigmoid", "Tanh", "Hardtanh", "Hardsigmoid", "Hardswish", "LogSigmoid",
           "Softplus", "Softsign", "Tanhshrink", "Threshold", "GLU", "PReLU",
           "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "Hardshrink", "Softshrink",
           "RReLU"]


def _inplace_str(inplace, first=False):
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class ReLU(Module):
    """max(0, x) elementwise.

    Example:
        >>> nn.ReLU()(torch.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, first=True)


class Hardtanh(Module):
    """clamp(x, min_val, max_val)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        if min_value is not None or max_value is not None:
            warnings.warn("keyword argument `min_value`/`max_value` is deprecated and will "
                          "be removed; use `min_val`/`max_val` instead.", FutureWarning,
                          stacklevel=2)
            min_val = min_val if min_value is None else min_value
            max_val = max_val if max_value is None else max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val "
                                 f"({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_str(self.inplace)


class ReLU6(Hardtanh):
    """min(max(0, x), 6)."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, first=True)


class LeakyReLU(Module):
    """x if x >= 0 else negative_slope * x."""

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + _inplace_str(self.inplace)


class ELU(Module):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + _inplace_str(self.inplace)


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class SELU(Module):
    """scale * elu(x, alpha) with the self-normalising constants."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, first=True)


class GELU(Module):
    """x * Phi(x); ``approximate='tanh'`` uses the tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x) (a.k.a. swish)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, first=True)


class Mish(SiLU):
    """x * tanh(softplus(x))."""

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class Hardswish(SiLU):
    """x * relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardswish(input, self.inplace)

    def extra_repr(self):
        return ""               # PyTorch's Hardswish prints no inplace flag


class Hardsigmoid(SiLU):
    """relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self):
        return ""               # PyTorch's Hardsigmoid prints no inplace flag


class _NoArg(Module):
    _fn = None

    def forward(self, input):
        return getattr(F, self._fn)(input)


class Sigmoid(_NoArg):
    """1 / (1 + exp(-x))."""
    _fn = "sigmoid"


class Tanh(_NoArg):
    """tanh(x)."""
    _fn = "tanh"


class LogSigmoid(_NoArg):
    """log(sigmoid(x)), computed stably."""
    _fn = "logsigmoid"


class Softsign(_NoArg):
    """x / (1 + |x|)."""
    _fn = "softsign"


class Tanhshrink(_NoArg):
    """x - tanh(x)."""
    _fn = "tanhshrink"


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above `threshold` (stable)."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Threshold(Module):
    """x if x > threshold else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + _inplace_str(self.inplace)


class GLU(Module):
    """a * sigmoid(b), where a and b are the halves of the input along `dim`."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """LeakyReLU with a learned slope (one, or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        from ... import full
        from ..parameter import Parameter
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        kw = {"device": device} if dtype is None else {"device": device, "dtype": dtype}
        self.weight = Parameter(full((num_parameters,), float(init), **kw))

    def reset_parameters(self):
        from .. import init as nn_init
        nn_init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("dim", None)

    def forward(self, input):
        return getattr(F, self._fn)(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along `dim` (numerically stable).

    Example:
        >>> nn.Softmax(dim=1)(torch.randn(2, 3)).sum(1)
        tensor([1., 1.])
    """
    _fn = "softmax"


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along `dim`, computed stably."""
    _fn = "log_softmax"


class Softmin(_SoftmaxBase):
    """softmax(-x) along `dim`."""
    _fn = "softmin"


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Shrink x towards 0 by lambd (0 inside [-lambd, lambd])."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class RReLU(Module):
    """Leaky ReLU with a random negative slope in training, the mean slope in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + _inplace_str(self.inplace)


# PyTorch defines MultiheadAttention in this module; code names it as nn.modules.activation.*
from .activation_mha import MultiheadAttention  # noqa: E402,F401
