"""Activation functions (the elementwise part of ``torch.nn.functional``).

Each takes PyTorch's arguments, including ``inplace=`` (which runs the
in-place form). relu and the hard* family keep integer dtypes where PyTorch
does; the smooth ones require floating input. Gradients follow PyTorch at the
kinks: relu'(0) = 0, hardtanh passes the gradient strictly inside its bounds.
relu, gelu, silu name fused first-order gradient kernels that run when no
double-backward graph is being recorded; their nbtorch-op formulas run otherwise.
"""
import math

from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import APPLY_WRAPPERS
from ._elementwise import Elementwise, tensor_method
from ._small_calls import _SmallKeys, _small_result

__all__ = ["relu", "relu_", "selu", "selu_", "celu", "celu_"]
# Also public for nn.functional: relu6, gelu, silu, mish, softplus, elu, elu_, leaky_relu,
# leaky_relu_, hardtanh, hardtanh_, hardsigmoid, hardswish.

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _where(cond, x, y):
    from .pointwise_select import where
    return where(cond, x, y)


def _run(cls, input, params, inplace):
    if input.is_quantized:          # a QTensor: PyTorch's quantized kernels (or its error)
        from ..ao.nn.quantized.activation import float_activation
        return float_activation(cls.__name__, input, params)
    if inplace:
        return cls.inplace(input, (input,) + params)
    return cls.apply(input, *params)


class Relu(Elementwise):
    kernel, save, grad_kernel = "relu", "out", "relu_grad"

    @staticmethod
    def grad(g, x, out):
        return _where(out > 0, g, 0.0)


class Hardtanh(Elementwise):
    kernel, grad_kernel = "hardtanh", "hardtanh_grad"

    @staticmethod
    def grad(g, x, out, lo, hi):
        return _where((x > lo) & (x < hi), g, 0.0)


class LeakyRelu(Elementwise):
    kernel, result, grad_kernel = "leaky_relu", "float_only", "leaky_relu_grad"

    @staticmethod
    def grad(g, x, out, slope):
        return _where(x > 0, g, g * slope)


def relu(input, inplace=False):
    """max(input, 0); the gradient at 0 is 0.

    Example:
        >>> nbtorch.relu(nbtorch.tensor([-1., 0., 2.]))
        tensor([0., 0., 2.])
    """
    if input.__class__ is Tensor and not inplace:
        # x.relu()'s body inline (one Python frame fewer): the small or large dense
        # unrecorded call answered first, else Relu.apply
        if (_RELU_FAST and not APPLY_WRAPPERS[0]
                and not (_STATE.enabled and input._requires_grad)):
            out = _small_result(_RELU_KEYS, input, None, None)
            if out is not None:
                return out
        return Relu.apply(input)
    if input.is_quantized:          # a QTensor: max(q, zero_point) on its integers
        return input.relu()
    return _run(Relu, input, (), inplace)


def relu_(input):
    """In-place relu."""
    return Relu.inplace(input, (input,))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to [min_val, max_val]; the gradient passes strictly inside."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _run(Hardtanh, input, (min_val, max_val), inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(input, 0), 6)."""
    return _run(Hardtanh, input, (0.0, 6.0), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """input where positive, negative_slope * input elsewhere.

    Example:
        >>> nbtorch.nn.functional.leaky_relu(nbtorch.tensor([-2., 3.]), 0.5)
        tensor([-1.,  3.])
    """
    return _run(LeakyRelu, input, (negative_slope,), inplace)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


# ---- smooth activations ---------------------------------------------------------------

class _Smooth(Elementwise):
    result = "float_only"


class Gelu(_Smooth):
    kernel, grad_kernel = "gelu", "gelu_grad"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import erf, exp
        cdf = (erf(x * _SQRT_HALF) + 1) * 0.5
        pdf = exp(x * x * -0.5) * _INV_SQRT_2PI
        return g * (cdf + x * pdf)


class GeluTanh(_Smooth):
    kernel, grad_kernel = "gelu_tanh", "gelu_tanh_grad"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import tanh
        k = math.sqrt(2.0 / math.pi)
        t = tanh((x + x * x * x * 0.044715) * k)
        dinner = (x * x * (3 * 0.044715) + 1) * k
        return g * ((t + 1 + x * (1 - t * t) * dinner) * 0.5)


class Silu(_Smooth):
    kernel, grad_kernel = "silu", "silu_grad"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import sigmoid
        s = sigmoid(x)
        return g * (s * (x * (1 - s) + 1))


class Mish(_Smooth):
    kernel = "mish"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import sigmoid, tanh
        t = tanh(softplus(x))
        return g * (t + x * sigmoid(x) * (1 - t * t))


class Softplus(_Smooth):
    kernel = "softplus"

    @staticmethod
    def grad(g, x, out, beta, threshold):
        from .pointwise_math import sigmoid
        z = x * beta
        return _where(z > threshold, g, g * sigmoid(z))


class Elu(_Smooth):
    """alpha, scale, input_scale: elu (alpha, 1, 1), selu, celu (alpha, 1, 1/alpha)."""
    kernel = "elu"

    @staticmethod
    def grad(g, x, out, alpha, scale, input_scale):
        from .pointwise_math import exp
        neg = exp(x * input_scale) * (alpha * scale * input_scale)
        return g * _where(x > 0, scale, neg)


class Hardsigmoid(_Smooth):
    kernel, grad_kernel = "hardsigmoid", "hardsigmoid_grad"

    @staticmethod
    def grad(g, x, out):
        return _where((x > -3) & (x < 3), g / 6, 0.0)


class Hardswish(_Smooth):
    kernel, grad_kernel = "hardswish", "hardswish_grad"

    @staticmethod
    def grad(g, x, out):
        mid = g * (x / 3 + 0.5)
        return _where(x <= -3, 0.0, _where(x < 3, mid, g))     # PyTorch's boundaries


def gelu(input, approximate="none"):
    """x * Phi(x) (Phi the normal CDF); approximate='tanh' uses the tanh formula.

    Example:
        >>> nbtorch.nn.functional.gelu(nbtorch.tensor([0., 1.]))
        tensor([0.0000, 0.8413])
    """
    if approximate == "none":
        return _GELU(input)
    if approximate == "tanh":
        return _GELU_TANH(input)
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate}")


def silu(input, inplace=False):
    """input * sigmoid(input) (swish)."""
    if input.__class__ is Tensor and not inplace:
        return _SILU(input)
    return _run(Silu, input, (), inplace)


def mish(input, inplace=False):
    """input * tanh(softplus(input))."""
    return _run(Mish, input, (), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * input)) / beta, linear where beta * input > threshold."""
    return Softplus.apply(input, beta, threshold)


def elu(input, alpha=1.0, inplace=False):
    """input where positive, alpha * (exp(input) - 1) elsewhere."""
    return _run(Elu, input, (alpha, 1.0, 1.0), inplace)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """scale * elu(input, alpha) with the self-normalising constants."""
    return _run(Elu, input, (_SELU_ALPHA, _SELU_SCALE, 1.0), inplace)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _run(Elu, input, (alpha, 1.0, 1.0 / alpha), inplace)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def hardsigmoid(input, inplace=False):
    """relu6(input + 3) / 6."""
    return _run(Hardsigmoid, input, (), inplace)


def hardswish(input, inplace=False):
    """input * relu6(input + 3) / 6."""
    return _run(Hardswish, input, (), inplace)


Tensor.relu = tensor_method(Relu)
_RELU_KEYS = _SmallKeys(Relu.kernel, 1)
_RELU_FAST = Relu._fast                 # (its unrecorded call is run_elementwise alone)
_STATE = grad_mode.STATE
# The functional forms (F.relu, F.gelu, F.silu: what nn.ReLU & co. call) take the methods'
# path: a small unrecorded call answered by `_small_calls` before Function.apply (F.relu
# on one element 2.42 -> ~1.5 us, as x.relu()), everything else `cls.apply`.
_GELU, _GELU_TANH, _SILU = tensor_method(Gelu), tensor_method(GeluTanh), tensor_method(Silu)
Tensor.relu_ = relu_
