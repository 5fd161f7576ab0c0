"""QuantStub / DeQuantStub: where a model's float input becomes quantized and back.

Before `convert` they are identities (`prepare` attaches an observer to QuantStub's
output); `convert` swaps them for `nn.quantized.Quantize` / `DeQuantize`."""
from nbtorch import nn

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(nn.Module):
    """Marks the point where float input is quantized (an identity until convert)."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(nn.Module):
    """Marks the point where quantized values return to float (identity until convert)."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(nn.Module):
    """``quant -> module -> dequant`` around a float module."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
