"""Identity, Linear and Bilinear layers (PyTorch's default initialisation)."""
import math

from ... import _dtype
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


def _empty(shape, device, dtype):
    """An uninitialised parameter tensor (the layer's reset_parameters fills it)."""
    from ... import empty
    return empty(*shape, device=device,
                 dtype=dtype if dtype is not None else _dtype.get_default_dtype())


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b, over the last dimension of x.

    Weights and bias start from U(-1/sqrt(in_features), 1/sqrt(in_features))
    (kaiming_uniform_ with a=sqrt(5), as in PyTorch).

    Example:
        >>> fc = nn.Linear(20, 30)
        >>> fc(torch.randn(128, 20)).shape
        torch.Size([128, 30])
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in_features), device, dtype))
        if bias:
            self.bias = Parameter(_empty((out_features,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """y = x1^T A x2 + b, with A of shape (out_features, in1_features, in2_features).

    Example:
        >>> m = nn.Bilinear(20, 30, 40)
        >>> m(torch.randn(128, 20), torch.randn(128, 30)).shape
        torch.Size([128, 40])
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in1_features, in2_features),
                                       device, dtype))
        if bias:
            self.bias = Parameter(_empty((out_features,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


def __getattr__(name):
    """``nn.modules.linear.NonDynamicallyQuantizableLinear`` (defined beside
    MultiheadAttention, whose out_proj it is; imported lazily to avoid a cycle)."""
    if name == "NonDynamicallyQuantizableLinear":
        from .activation_mha import NonDynamicallyQuantizableLinear
        return NonDynamicallyQuantizableLinear
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
