"""The quantized layers' ops as graph nodes (PyTorch's ``torch.ops.quantized.*``).

Each takes tensors and plain values only: the quantized (or float) input, the qint8
weight, the float bias and the output's qparams; the int8 weight packed for the GEMM
is found on the weight (`functional.packed_of`: the layer's own, or packed once on the
first call of a loaded graph). The quantized modules' forward calls these, so
``jit.trace`` records one ``call_function`` per layer with its weight as a constant,
and ``jit.save`` stores the weight as a quantized tensor and the call by its public
name (``nbtorch.ao.nn.quantized.ops.quantized_conv2d``), resolved on load from this module.

Example:
    >>> traced = nbtorch.jit.trace(converted_model, x)      # quantized layers: one node
    >>> nbtorch.jit.save(traced, "q.pt"); nbtorch.jit.load("q.pt")(x)
"""
from . import functional as qF

# distinct names: tables keyed by a function's __name__ (the ONNX exporter's symbolics)
# must not take them for F.linear / F.conv2d
__all__ = ["quantized_linear", "quantized_linear_relu", "quantized_conv2d",
           "quantized_conv2d_relu", "quantized_linear_dynamic", "quantized_add",
           "quantized_add_relu", "quantized_mul", "quantized_cat", "quantized_add_scalar",
           "quantized_mul_scalar", "quantized_matmul", "quantized_hardswish",
           "quantized_elu", "quantized_leaky_relu", "quantized_relu", "quantized_clamp",
           "quantized_max_pool2d", "quantized_batch_norm", "quantized_batch_norm_relu"]


def quantized_linear(x, weight, bias, scale, zero_point):
    """Quantized ``x @ weight^T + bias`` requantized to (scale, zero_point), quint8."""
    return qF.linear_packed(x, qF.packed_of(weight, bias), scale, zero_point)


def quantized_linear_relu(x, weight, bias, scale, zero_point):
    """`quantized_linear` with the ReLU fused into the requantization."""
    return qF.linear_packed(x, qF.packed_of(weight, bias), scale, zero_point, True)


def quantized_conv2d(x, weight, bias, stride, padding, dilation, groups, scale, zero_point):
    """Quantized 2-D convolution (zero padding) requantized to (scale, zero_point)."""
    return qF.conv2d_packed(x, qF.packed_of(weight, bias), stride, padding, dilation,
                            groups, scale, zero_point)


def quantized_conv2d_relu(x, weight, bias, stride, padding, dilation, groups, scale, zero_point):
    """`quantized_conv2d` with the ReLU fused into the requantization."""
    return qF.conv2d_packed(x, qF.packed_of(weight, bias), stride, padding, dilation,
                            groups, scale, zero_point, True)


def quantized_linear_dynamic(x, weight, bias, reduce_range=True):
    """Float ``x @ weight^T + bias`` with x quantized on the fly (qint8 weight); float out."""
    from .dynamic.linear import linear_dynamic as run
    return run(x, qF.packed_of(weight, bias), reduce_range)


# QFunctional's ops (a converted FloatFunctional): output (scale, zero_point) given


def quantized_add(x, y, scale, zero_point):
    """Quantized ``x + y`` requantized to (scale, zero_point)."""
    return qF.add(x, y, scale, zero_point)


def quantized_add_relu(x, y, scale, zero_point):
    """Quantized ``relu(x + y)`` requantized to (scale, zero_point)."""
    return qF.add(x, y, scale, zero_point, relu=True)


def quantized_mul(x, y, scale, zero_point):
    """Quantized ``x * y`` requantized to (scale, zero_point)."""
    return qF.mul(x, y, scale, zero_point)


def quantized_cat(xs, dim, scale, zero_point):
    """Quantized concatenation requantized to (scale, zero_point)."""
    return qF.cat(xs, dim, scale, zero_point)


def quantized_add_scalar(x, c):
    """Quantized ``x + c`` (qparams chosen as PyTorch's)."""
    return qF.add_scalar(x, c)


def quantized_mul_scalar(x, c):
    """Quantized ``x * c`` (qparams chosen as PyTorch's)."""
    return qF.mul_scalar(x, c)


def quantized_matmul(x, y, scale, zero_point):
    """Quantized ``x @ y`` requantized to (scale, zero_point)."""
    return qF.matmul(x, y, scale, zero_point)


# activations with their own output qparams


def quantized_hardswish(x, scale, zero_point):
    """Quantized hardswish requantized to (scale, zero_point)."""
    from .activation import hardswish
    return hardswish(x, scale, zero_point)


def quantized_elu(x, scale, zero_point, alpha=1.0):
    """Quantized ELU requantized to (scale, zero_point)."""
    from .activation import elu
    return elu(x, scale, zero_point, alpha)


def quantized_leaky_relu(x, negative_slope, scale, zero_point):
    """Quantized leaky ReLU requantized to (scale, zero_point)."""
    from .activation import leaky_relu
    return leaky_relu(x, negative_slope, False, scale, zero_point)


# ops that keep their input's qparams


def quantized_relu(x):
    """max(x, zero_point) on the integers."""
    return qF.relu(x)


def quantized_clamp(x, min_, max_):
    """Clamp on the integers (bounds quantized with x's qparams)."""
    from .activation import clamp
    return clamp(x, min_, max_)


def quantized_max_pool2d(x, kernel_size, stride, padding):
    """Max pooling on the integers."""
    return qF.max_pool2d(x, kernel_size, stride, padding)


def quantized_batch_norm(x, weight, bias, mean, var, eps, scale, zero_point):
    """Quantized batch norm (running statistics) requantized to (scale, zero_point)."""
    from .batchnorm import batch_norm
    return batch_norm(x, weight, bias, mean, var, eps, scale, zero_point)


def quantized_batch_norm_relu(x, weight, bias, mean, var, eps, scale, zero_point):
    """`quantized_batch_norm` with the ReLU fused into the requantization."""
    from .batchnorm import batch_norm
    return batch_norm(x, weight, bias, mean, var, eps, scale, zero_point, True)
