"""Quantized modules (``torch.ao.nn.quantized``): what `convert` puts in place of float
modules. Each holds an int8 weight (`functional.PackedWeight`) and its output's
(scale, zero_point), and runs the int8 kernels through `functional`.

State dicts have PyTorch's keys and values (quantized weights as qint8 tensors), so a
converted model's checkpoint loads in either framework; nbtorch's first layout
(``weight_int8``, ``weight_scale``, ...) still loads.
"""
import nbtorch
from nbtorch import nn
from nbtorch._qtensor import (qint8, quint8, quantize_per_tensor, check_qparams,
                              per_channel_affine, per_channel_symmetric,
                              per_channel_affine_float_qparams)

from nbtorch.fx import wrap as _wrap
from . import functional as qF
from .ops import (quantized_linear as _q_linear, quantized_linear_relu as _q_linear_relu,
                  quantized_conv2d as _q_conv2d, quantized_conv2d_relu as _q_conv2d_relu,
                  quantized_relu as _q_relu, quantized_clamp as _q_clamp,
                  quantized_max_pool2d as _q_max_pool2d)

# jit.trace / fx record these as one call_function each (the weight a graph constant)
for _name in ("_q_linear", "_q_linear_relu", "_q_conv2d", "_q_conv2d_relu", "_q_relu",
              "_q_clamp", "_q_max_pool2d"):
    _wrap(_name)

__all__ = ["Quantize", "DeQuantize", "Linear", "Conv2d", "ReLU", "ReLU6", "MaxPool2d",
           "FloatFunctional", "QFunctional", "LinearReLU", "ConvReLU2d"]


class Quantize(nn.Module):
    """Float -> quint8 with fixed (scale, zero_point) (what a QuantStub becomes)."""

    def __init__(self, scale, zero_point, dtype=quint8):
        super().__init__()
        self.scale, self.zero_point = check_qparams(scale, zero_point, dtype)
        self.dtype = dtype

    def forward(self, X):
        return quantize_per_tensor(X, self.scale, self.zero_point, self.dtype)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _save_qparams(destination, prefix, self.scale, self.zero_point, (1,))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        _pop_qparams(self, state_dict, prefix, missing_keys)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    @staticmethod
    def from_float(mod):
        scale, zp = _output_qparams(mod)
        return Quantize(scale, zp, mod.activation_post_process.dtype)

    def extra_repr(self):
        return f"scale=tensor([{self.scale:.4f}]), zero_point=tensor([{self.zero_point}]), " \
               f"dtype={self.dtype}"


class DeQuantize(nn.Module):
    """Quantized -> float32."""

    def forward(self, Xq):
        return Xq.dequantize()

    @staticmethod
    def from_float(mod):
        return DeQuantize()


def _output_qparams(mod):
    post = getattr(mod, "activation_post_process", None)
    if post is None:
        raise RuntimeError(f"convert: {type(mod).__name__} was not prepared (no "
                           "activation_post_process): call prepare() and calibrate first")
    # an observer that saw no data gives PyTorch's default qparams (1.0, 0) with its
    # warning (calculate_qparams), as PyTorch's convert does
    if getattr(post, "dtype", quint8) is not quint8 or getattr(post, "is_dynamic", False):
        raise RuntimeError(f"convert: {type(mod).__name__}'s qconfig observes its output as "
                           f"{getattr(post, 'dtype', None)}"
                           f"{' (dynamic)' if getattr(post, 'is_dynamic', False) else ''}; "
                           "the x86 quantized kernels take static torch.quint8 activations "
                           "(a dynamic qconfig belongs to quantize_dynamic)")
    scale, zp = post.calculate_qparams()
    if scale.numel() != 1:
        raise RuntimeError(f"convert: {type(mod).__name__}'s activation observer is per "
                           "channel; quantized activations are per tensor")
    return float(scale.reshape(-1)[0].item()), int(zp.reshape(-1)[0].item())


def _quantize_weight(weight, observer):
    """int8 QTensor of `weight` with the qparams its observer (having seen it) chooses."""
    observer(weight)
    scale, zp = observer.calculate_qparams()
    if observer.qscheme is per_channel_affine_float_qparams:      # embeddings: float qparams
        return nbtorch.quantize_per_channel(weight.detach().float(), scale.float(),
                                            zp.float(), getattr(observer, "ch_axis", 0),
                                            observer.dtype)
    if observer.dtype is not qint8:
        raise AssertionError("Weight observer must have dtype torch.qint8")
    if observer.qscheme in (per_channel_affine, per_channel_symmetric):
        return nbtorch.quantize_per_channel(weight.detach().float(), scale.double(),
                                            zp, getattr(observer, "ch_axis", 0), qint8)
    return quantize_per_tensor(weight.detach().float(), float(scale.item()), int(zp.item()),
                               qint8)


def _save_qparams(destination, prefix, scale, zero_point, shape=()):
    """PyTorch's state-dict entries for an output's qparams: float32 scale, int64 zero
    point (0-d, or shape (1,) for Quantize)."""
    destination[prefix + "scale"] = nbtorch.tensor(scale, dtype=nbtorch.float32).reshape(shape)
    destination[prefix + "zero_point"] = nbtorch.tensor(zero_point,
                                                        dtype=nbtorch.int64).reshape(shape)


def _save_packed(destination, prefix, weight, bias, dtype=qint8):
    """PyTorch's linear layout: a LinearPackedParams child (version 3) holding dtype and
    the (weight, bias) pair; PyTorch's loader reads the child's version from metadata."""
    destination[prefix + "_packed_params.dtype"] = dtype
    destination[prefix + "_packed_params._packed_params"] = (weight, bias)
    metadata = getattr(destination, "_metadata", None)
    if metadata is not None:
        metadata[prefix + "_packed_params"] = {"version": 3}


def _pop_qparams(module, state_dict, prefix, missing_keys):
    """Take (scale, zero_point) from a state dict into `module`; a missing one is reported."""
    for name, cast in (("scale", float), ("zero_point", int)):
        v = state_dict.pop(prefix + name, None)
        if v is None:
            missing_keys.append(prefix + name)
        else:
            setattr(module, name, cast(v.reshape(-1)[0].item()))


def _pop_weight_bias(state_dict, prefix):
    """(quantized weight, float bias) from a state dict in any layout it may come in:
    PyTorch's conv (``weight``, ``bias``), PyTorch's linear (``_packed_params.dtype``,
    ``_packed_params._packed_params`` = (weight, bias)) or nbtorch's first one
    (``weight_int8``, ``weight_scale``, ``weight_zero_point``, ``bias_``); None if absent."""
    packed = state_dict.pop(prefix + "_packed_params._packed_params", None)
    state_dict.pop(prefix + "_packed_params.dtype", None)
    if packed is not None:
        return packed[0], packed[1]
    if prefix + "weight" in state_dict:
        return state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias", None)
    if prefix + "weight_int8" in state_dict:
        keys = ("weight_int8", "weight_scale", "weight_zero_point", "bias_")
        w, s, z, b = (state_dict.pop(prefix + k, None) for k in keys)
        return qF.PackedWeight.from_buffers(w, s, z, b).qweight, b
    return None


class _WeightedQuantized(nn.Module):
    """Shared by Linear and Conv2d: the packed int8 weight and the output qparams.

    State dicts are PyTorch's: a conv saves ``weight`` (a qint8 tensor), ``bias``,
    ``scale``, ``zero_point``; a linear ``scale``, ``zero_point``,
    ``_packed_params.dtype`` and ``_packed_params._packed_params`` (weight, bias), so
    checkpoints go both ways between nbtorch and PyTorch."""

    _FUSED_RELU = False
    _PACKED_KEYS = False            # Linear: weight and bias under _packed_params

    def _get_name(self):
        return "Quantized" + type(self).__name__       # PyTorch's reprs

    def _set_weight_bias(self, qweight, bias):
        if qweight.dtype is not qint8:
            raise RuntimeError(f"quantized {type(self).__name__}: the weight must be "
                               f"torch.qint8, got {qweight.dtype}")
        self._packed = qF.PackedWeight(qweight, bias)

    def weight(self):
        return self._packed.qweight

    def bias(self):
        p = self._packed
        return nbtorch.from_numpy(p.bias) if p.has_bias else None

    def set_weight_bias(self, w, b):
        self._set_weight_bias(w, b)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if self._PACKED_KEYS:
            _save_qparams(destination, prefix, self.scale, self.zero_point)
            _save_packed(destination, prefix, self.weight(), self.bias())
        else:
            destination[prefix + "weight"] = self.weight()
            destination[prefix + "bias"] = self.bias()
            _save_qparams(destination, prefix, self.scale, self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        wb = _pop_weight_bias(state_dict, prefix)
        if wb is None:
            missing_keys.append(prefix + ("_packed_params._packed_params"
                                          if self._PACKED_KEYS else "weight"))
        else:
            w, b = wb
            if tuple(w.shape) != tuple(self.weight().shape):
                error_msgs.append(f"size mismatch for {prefix}weight: copying a param with "
                                  f"shape {w.shape} from checkpoint, the shape in current "
                                  f"model is {self.weight().shape}.")
            else:
                self._set_weight_bias(w, b)
        _pop_qparams(self, state_dict, prefix, missing_keys)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized twin of a prepared float module (its qconfig's weight observer
        quantizes the weight; its activation observer gives the output qparams)."""
        float_mod = mod
        if hasattr(mod, "_fused_relu_of"):          # a fused Linear/Conv + ReLU
            float_mod = mod[0]
        if not hasattr(mod, "qconfig") or mod.qconfig is None:
            raise AssertionError("Input float module must have qconfig defined")
        scale, zp = _output_qparams(mod)
        wpp = getattr(float_mod, "weight_fake_quant", None) or mod.qconfig.weight()
        weight, bias = float_mod.weight, float_mod.bias
        if hasattr(float_mod, "folded_weight_bias"):     # QAT conv + BatchNorm
            weight, bias = float_mod.folded_weight_bias()
        qweight = _quantize_weight(weight, wpp)
        qmod = cls._from_float_module(float_mod)
        qmod._set_weight_bias(qweight, bias)
        qmod.scale, qmod.zero_point = scale, zp
        return qmod


class Linear(_WeightedQuantized):
    """Quantized Linear: quint8 in, quint8 out, int8 weight, float bias."""

    _PACKED_KEYS = True
    _version = 3                    # PyTorch's: its loader checks it

    def __init__(self, in_features, out_features, bias_=True, dtype=qint8):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.scale, self.zero_point = 1.0, 0
        w = quantize_per_tensor(nbtorch.zeros(out_features, in_features), 1.0, 0, qint8)
        self._set_weight_bias(w, nbtorch.zeros(out_features) if bias_ else None)

    @classmethod
    def _from_float_module(cls, mod):
        return cls(mod.in_features, mod.out_features, mod.bias is not None)

    def forward(self, x):
        op = _q_linear_relu if self._FUSED_RELU else _q_linear
        p = self._packed
        return op(x, p.qweight, p.bias_tensor, self.scale, self.zero_point)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self._packed.qweight.qscheme()}")


class Conv2d(_WeightedQuantized):
    """Quantized Conv2d (zero padding; grouped and depthwise too)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros"):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError("quantized Conv2d: only padding_mode='zeros'")
        k = qF._pair(kernel_size)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride, self.padding = qF._pair(stride), qF._pair(padding)
        self.dilation, self.groups = qF._pair(dilation), groups
        self.scale, self.zero_point = 1.0, 0
        w = quantize_per_tensor(nbtorch.zeros(out_channels, in_channels // groups, *k), 1.0,
                                0, qint8)
        self._set_weight_bias(w, nbtorch.zeros(out_channels) if bias else None)

    @classmethod
    def _from_float_module(cls, mod):
        if isinstance(mod.padding, str):
            raise NotImplementedError("quantized Conv2d: string padding is not implemented")
        return cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride,
                   mod.padding, mod.dilation, mod.groups,
                   mod.bias is not None or hasattr(mod, "folded_weight_bias"),
                   mod.padding_mode)

    def forward(self, x):
        op = _q_conv2d_relu if self._FUSED_RELU else _q_conv2d
        p = self._packed
        return op(x, p.qweight, p.bias_tensor, self.stride, self.padding, self.dilation,
                  self.groups, self.scale, self.zero_point)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        for name, default in (("padding", (0, 0)), ("dilation", (1, 1))):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + (", bias=False" if not self._packed.has_bias else "")


class LinearReLU(Linear):
    """Quantized Linear with the ReLU fused into the requantization (its lower bound)."""
    _FUSED_RELU = True


class ConvReLU2d(Conv2d):
    """Quantized Conv2d with the ReLU fused into the requantization."""
    _FUSED_RELU = True


class ReLU(nn.Module):
    """ReLU on quantized tensors (the real 0 is the zero point)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return _q_relu(x)

    @staticmethod
    def from_float(mod):
        return ReLU()


class ReLU6(nn.Module):
    """clamp(x, 0, 6) on quantized values."""

    def _get_name(self):
        return "QuantizedReLU6"

    def forward(self, x):
        # PyTorch's qrelu6: the bounds are quantize(0) and quantize(6) with x's qparams
        # (it took rint(6 / s) and cast to uint8: wrong for qint8 and on ties)
        return _q_clamp(x, 0.0, 6.0)

    @staticmethod
    def from_float(mod):
        return ReLU6()


class MaxPool2d(nn.Module):
    """Max pooling of quantized tensors (float nn.MaxPool2d also accepts them)."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x):
        return _q_max_pool2d(x, self.kernel_size, self.stride, self.padding)


from .functional_modules import FloatFunctional, QFunctional  # noqa: E402,F401  (re-export)
