"""Symbolics of quantized models (``convert``'s output) in ONNX's QDQ format.

A quantized activation is a uint8 ONNX tensor. ``quantize_per_tensor`` becomes
QuantizeLinear, ``dequantize`` DequantizeLinear, and each quantized layer
(`nbtorch.ao.nn.quantized.ops`) the float op between a DequantizeLinear of its
input and weight (an int8 initializer, per-tensor or per-channel) and a
QuantizeLinear to its output's (scale, zero_point): the pattern runtimes fuse into
QLinearConv / QLinearMatMul. Each layer matches nbtorch's int8 kernels to within one
quantization step (the runtime rounds the bias, the float products and averages its own
way), so a few steps after several layers.
Activations and pooling on quantized values (``relu(q)``, ``max_pool2d(q)``...) run
their float symbolic between a DequantizeLinear and a QuantizeLinear to the result's
qparams (`_float_between_qdq`), which is exact: they keep or recompute them as ONNX does.
"""
import numpy as np

from ._graph import UnsupportedOperatorError, Value
from ._registry import FUNCTIONS, register


def _qparams(e, scale, zero_point, zp_dtype=np.uint8):
    return e.g.const(np.asarray(scale, np.float32)), e.g.const(
        np.asarray(zero_point, zp_dtype))


def _dequant(e, x):
    """float ONNX value of the quantized Value `x` (per-tensor quint8)."""
    s, z = x.value._qparams
    return e.g.op("DequantizeLinear", e.name(x), *_qparams(e, s, z))


def _quant(e, y, scale, zero_point):
    return e.g.op("QuantizeLinear", y, *_qparams(e, scale, zero_point))


def _weight(e, w):
    """DequantizeLinear of a qint8 weight kept as an int8 initializer."""
    q = w.value
    ints = e.name(w)            # the initializer holds its int8 values (`Emitter.weight`)
    if len(q._qparams) == 2:
        return e.g.op("DequantizeLinear", ints, *_qparams(e, *q._qparams, np.int8))
    scales, zps, axis = q._qparams
    return e.g.op("DequantizeLinear", ints, *_qparams(e, scales, zps, np.int8),
                  axis=int(axis))


def _bias(e, bias):
    return None if bias is None else e.g.const(np.asarray(bias.value.numpy(), np.float32))


@register("quantize_per_tensor")
def _quantize_per_tensor(e, out, x, scale, zero_point, dtype):
    if out.dtype.name != "quint8":
        raise UnsupportedOperatorError(f"ONNX export: quantize_per_tensor to {out.dtype} "
                                       "(quint8 activations only)")
    return _quant(e, e.name(x), scale, zero_point)


@register("dequantize")
def _dequantize(e, out, x):
    if not getattr(x.value, "is_quantized", False):
        return e.name(x)
    return _dequant(e, x)


def _conv(e, out, x, weight, bias, stride, padding, dilation, groups, scale, zero_point,
          relu=False):
    (ph, pw) = padding
    y = e.g.op("Conv", _dequant(e, x), _weight(e, weight), _bias(e, bias),
               kernel_shape=list(weight.shape[2:]), strides=list(stride),
               pads=[ph, pw, ph, pw], dilations=list(dilation), group=int(groups))
    return _quant(e, e.g.op("Relu", y) if relu else y, scale, zero_point)


def _linear(e, out, x, weight, bias, scale, zero_point, relu=False):
    y = e.g.op("MatMul", _dequant(e, x), e.g.op("Transpose", _weight(e, weight), perm=[1, 0]))
    if bias is not None:
        y = e.g.op("Add", y, _bias(e, bias))
    return _quant(e, e.g.op("Relu", y) if relu else y, scale, zero_point)


@register("quantized_conv2d")
def _quantized_conv2d(e, out, *args):
    return _conv(e, out, *args)


@register("quantized_conv2d_relu")
def _quantized_conv2d_relu(e, out, *args):
    return _conv(e, out, *args, relu=True)


@register("quantized_linear")
def _quantized_linear(e, out, *args):
    return _linear(e, out, *args)


@register("quantized_linear_relu")
def _quantized_linear_relu(e, out, *args):
    return _linear(e, out, *args, relu=True)


@register("quantized_linear_dynamic")
def _quantized_linear_dynamic(e, out, *args, **kwargs):
    raise UnsupportedOperatorError("ONNX export of a dynamically quantized Linear is not "
                                   "supported (as in PyTorch): export the float model, or a "
                                   "statically quantized one")


def _binary(e, op, x, y, scale, zero_point, relu=False):
    z = e.g.op(op, _dequant(e, x), _dequant(e, y))
    return _quant(e, e.g.op("Relu", z) if relu else z, scale, zero_point)


@register("quantized_add")
def _quantized_add(e, out, x, y, scale, zero_point):
    return _binary(e, "Add", x, y, scale, zero_point)


@register("quantized_add_relu")
def _quantized_add_relu(e, out, x, y, scale, zero_point):
    return _binary(e, "Add", x, y, scale, zero_point, relu=True)


@register("quantized_mul")
def _quantized_mul(e, out, x, y, scale, zero_point):
    return _binary(e, "Mul", x, y, scale, zero_point)


@register("quantized_cat")
def _quantized_cat(e, out, xs, dim, scale, zero_point):
    return _quant(e, e.g.op("Concat", *[_dequant(e, x) for x in xs], axis=int(dim)), scale,
                  zero_point)



def _is_q(v):
    return isinstance(v, Value) and getattr(v.value, "is_quantized", False)


def _float_between_qdq(symbolic):
    """`symbolic` made to take quantized Values: DequantizeLinear in, its float ONNX op,
    QuantizeLinear to the result's qparams (unchanged for float inputs)."""
    def run(e, out, *args, **kwargs):
        if not getattr(out, "is_quantized", False) or not any(_is_q(a) for a in args):
            return symbolic(e, out, *args, **kwargs)
        floats = [Value(_dequant(e, a), a.value.dequantize()) if _is_q(a) else a
                  for a in args]
        y = symbolic(e, out.dequantize(), *floats, **kwargs)
        return _quant(e, e.name(y) if isinstance(y, Value) else y, *out._qparams)
    return run


# ops that accept quantized tensors in nbtorch (activations, pooling, resizing)
for _name in ("relu", "relu_", "relu6", "leaky_relu", "elu", "hardtanh", "hardswish",
              "sigmoid", "tanh", "clamp", "max_pool1d", "max_pool2d", "avg_pool2d",
              "adaptive_avg_pool2d", "interpolate", "upsample", "upsample_nearest"):
    if _name in FUNCTIONS:
        FUNCTIONS[_name] = _float_between_qdq(FUNCTIONS[_name])


def _activation(e, x, scale, zero_point, op, **attrs):
    return _quant(e, e.g.op(op, _dequant(e, x), **attrs), scale, zero_point)


@register("quantized_hardswish")
def _quantized_hardswish(e, out, x, scale, zero_point):
    return _activation(e, x, scale, zero_point, "HardSwish")


@register("quantized_elu")
def _quantized_elu(e, out, x, scale, zero_point, alpha=1.0):
    return _activation(e, x, scale, zero_point, "Elu", alpha=float(alpha))


@register("quantized_leaky_relu")
def _quantized_leaky_relu(e, out, x, negative_slope, scale, zero_point):
    return _activation(e, x, scale, zero_point, "LeakyRelu", alpha=float(negative_slope))


@register("quantized_relu")
def _quantized_relu(e, out, x):
    return FUNCTIONS["relu"](e, out, x)


@register("quantized_clamp")
def _quantized_clamp(e, out, x, min_, max_):
    return FUNCTIONS["clamp"](e, out, x, min_, max_)


@register("quantized_max_pool2d")
def _quantized_max_pool2d(e, out, x, kernel_size, stride, padding):
    return FUNCTIONS["max_pool2d"](e, out, x, kernel_size, stride, padding)


def _batch_norm(e, x, weight, bias, mean, var, eps, scale, zero_point, relu=False):
    y = e.g.op("BatchNormalization", _dequant(e, x), e.name(weight), e.name(bias),
               e.name(mean), e.name(var), epsilon=float(eps))
    return _quant(e, e.g.op("Relu", y) if relu else y, scale, zero_point)


@register("quantized_batch_norm")
def _quantized_batch_norm(e, out, *args):
    return _batch_norm(e, *args)


@register("quantized_batch_norm_relu")
def _quantized_batch_norm_relu(e, out, *args):
    return _batch_norm(e, *args, relu=True)
