"""Quantization-aware training modules (``torch.ao.nn.qat`` and ``intrinsic.qat``): float
Linear/Conv2d whose weight passes through a FakeQuantize on every forward, so training
sees int8 weights (the gradient goes straight through)."""
import nbtorch
from nbtorch import nn
from nbtorch.nn import functional as F

__all__ = ["Linear", "Conv2d", "LinearReLU", "ConvReLU2d", "ConvBn2d", "ConvBnReLU2d"]


def _copy_from(qat, mod, qconfig):
    qat.qconfig = qconfig
    qat.weight = mod.weight
    qat.bias = mod.bias
    qat.weight_fake_quant = qconfig.weight()
    return qat


def _check(mod, cls):
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise AssertionError("Input float module must have a valid qconfig")
    return qconfig


class Linear(nn.Linear):
    """Linear with a fake-quantized weight."""

    _FLOAT = nn.Linear

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if hasattr(mod, "_fused_relu_of"):
            qconfig, mod = _check(mod, cls), mod[0]
        else:
            qconfig = _check(mod, cls)
        q = cls(mod.in_features, mod.out_features, mod.bias is not None)
        return _copy_from(q, mod, qconfig)

    def to_float(self):
        f = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        f.weight, f.bias = self.weight, self.bias
        return f


class Conv2d(nn.Conv2d):
    """Conv2d with a fake-quantized weight."""

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    def _conv_forward(self, input, weight, bias):
        return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        qconfig = _check(mod, cls)
        if hasattr(mod, "_fused_relu_of"):
            mod = mod[0]
        q = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding,
                mod.dilation, mod.groups, mod.bias is not None, mod.padding_mode)
        return _copy_from(q, mod, qconfig)


class LinearReLU(Linear):
    """intrinsic.qat.LinearReLU: relu(Linear with fake-quantized weight)."""

    _fused_relu_of = "Linear"

    def forward(self, input):
        return F.relu(super().forward(input))

    def __getitem__(self, i):        # the fused-module protocol of `from_float`
        return self


class ConvReLU2d(Conv2d):
    """intrinsic.qat.ConvReLU2d: relu(Conv2d with fake-quantized weight)."""

    _fused_relu_of = "Conv2d"

    def forward(self, input):
        return F.relu(super().forward(input))

    def __getitem__(self, i):
        return self


class ConvBn2d(Conv2d):
    """intrinsic.qat.ConvBn2d: Conv2d + BatchNorm2d trained with the BatchNorm folded into
    the fake-quantized weight, as PyTorch's: the weight is scaled by gamma / running_std
    before fake quantization, the convolution's output scaled back and passed through the
    BatchNorm (batch statistics in training), so that `convert` can fold the running
    statistics into an int8 weight the network was trained with."""

    _fused_relu = False
    _version = 2                    # PyTorch's

    def forward(self, input):
        bn = self.bn
        std = (bn.running_var + bn.eps).sqrt()
        gamma = bn.weight if bn.weight is not None else nbtorch.ones_like(std)
        factor = gamma / std
        w = self.weight_fake_quant(self.weight * factor.reshape(-1, 1, 1, 1))
        out = self._conv_forward(input, w, None) / factor.reshape(1, -1, 1, 1)
        if self.bias is not None:
            out = out + self.bias.reshape(1, -1, 1, 1)
        out = bn(out)
        return F.relu(out) if self._fused_relu else out

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        qconfig = _check(mod, cls)
        conv, bn = mod[0], mod[1]
        q = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                conv.padding_mode)
        q.bn = bn                   # registered before weight_fake_quant: PyTorch's key order
        return _copy_from(q, conv, qconfig)

    freeze_bn = False

    def train(self, mode=True):
        """As PyTorch's: a frozen BatchNorm (`freeze_bn_stats`) keeps its eval mode."""
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    def freeze_bn_stats(self):
        """Stop updating the BatchNorm's running statistics (late QAT epochs)."""
        self.freeze_bn = True
        self.bn.training = False
        return self

    def update_bn_stats(self):
        self.freeze_bn = False
        self.bn.training = True
        return self

    def folded_weight_bias(self):
        """The weight and bias with the BatchNorm's running statistics folded in."""
        from nbtorch.ao.quantization.fuse_modules import _fold_bn
        return _fold_bn(self.weight, self.bias, self.bn)

    def __getitem__(self, i):
        return self


class ConvBnReLU2d(ConvBn2d):
    """intrinsic.qat.ConvBnReLU2d: `ConvBn2d` followed by ReLU."""

    _fused_relu = True
    _fused_relu_of = "Conv2d"
