"""QConfig: which observer (or fake-quantize) each module's activation and weight get,
and the default configurations of the x86 (fbgemm) backend, as in PyTorch."""
import warnings
from collections import namedtuple

from nbtorch._dtype import float16
from nbtorch._qtensor import qint8, quint8, per_channel_symmetric, per_tensor_symmetric

from .fake_quantize import (FakeQuantize, FusedMovingAvgObsFakeQuantize,
                            default_fake_quant, default_weight_fake_quant,
                            default_per_channel_weight_fake_quant,
                            default_fused_wt_fake_quant,
                            default_fused_per_channel_wt_fake_quant)
from .observer import (HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
                       MovingAveragePerChannelMinMaxObserver, PerChannelMinMaxObserver,
                       PlaceholderObserver, default_dynamic_quant_observer,
                       default_observer, default_per_channel_weight_observer,
                       default_float_qparams_observer,
                       default_weight_observer)

__all__ = ["QConfig", "QConfigDynamic", "default_qconfig", "default_dynamic_qconfig",
           "per_channel_dynamic_qconfig", "default_per_channel_qconfig",
           "float16_dynamic_qconfig", "float_qparams_weight_only_qconfig",
           "default_qat_qconfig", "get_default_qconfig", "get_default_qat_qconfig",
           "qconfig_equals"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Observer factories (classes or ``Observer.with_args(...)``) for activations and
    weights. Instances are refused: each module needs its own observer."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        from nbtorch import nn
        if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer "
                             "class instead. Use MyObserver.with_args(x=1) to override "
                             "arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


QConfigDynamic = QConfig

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(
    activation=PlaceholderObserver, weight=default_float_qparams_observer)
float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=float16))
default_qat_qconfig = QConfig(activation=default_fake_quant,
                              weight=default_weight_fake_quant)

_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]     # PyTorch's order (its message)


def _check_backend(backend):
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of "
                             f"{_BACKENDS}")


def _vnni_warning():
    from nbtorch.kernels.cpu import vnni
    if not vnni.AVAILABLE:
        warnings.warn("Default qconfig of oneDNN backend with reduce_range of false may have "
                      "accuracy issues on CPU without Vector Neural Network Instruction "
                      "support.", stacklevel=3)


def get_default_qconfig(backend="x86", version=0):
    """Post-training static quantization's default (PyTorch's, version 0 only): a
    histogram observer over uint8 activations (x86/fbgemm with reduce_range: 7-bit, no
    overflow in vpmaddubsw) and symmetric int8 weights, per channel except for qnnpack."""
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not "
                             "supported. Version number must be 0")
    if backend == "onednn":
        _vnni_warning()
    weight = (default_weight_observer if backend == "qnnpack"
              else default_per_channel_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(
        reduce_range=backend in ("x86", "fbgemm")), weight=weight)


def get_default_qat_qconfig(backend="x86", version=1):
    """Quantization-aware training's default (PyTorch's): moving-average min/max
    fake-quantize, fused with the observer (version 1) or not (version 0); weights
    symmetric int8, per channel except for qnnpack."""
    _check_backend(backend)
    if version not in (0, 1):
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not "
                             "supported. Version number must be 0 or 1")
    fq = FusedMovingAvgObsFakeQuantize if version == 1 else FakeQuantize
    act_kwargs = dict(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    if backend != "onednn":
        act_kwargs["reduce_range"] = backend in ("x86", "fbgemm")
    if version == 1:
        weight = (default_fused_wt_fake_quant if backend == "qnnpack"
                  else default_fused_per_channel_wt_fake_quant)
    else:
        weight = (default_weight_fake_quant if backend == "qnnpack"
                  else default_per_channel_weight_fake_quant)
    return QConfig(activation=fq.with_args(**act_kwargs), weight=weight)


def qconfig_equals(q1, q2):
    """Whether two qconfigs build the same observers (compares partial arguments)."""
    if q1 is None or q2 is None:
        return q1 is q2

    def same(a, b):
        pa, pb = getattr(a, "p", a), getattr(b, "p", b)
        return (getattr(pa, "func", pa) is getattr(pb, "func", pb) and
                getattr(pa, "keywords", None) == getattr(pb, "keywords", None))
    return same(q1.activation, q2.activation) and same(q1.weight, q2.weight)


# keep the names PyTorch exports from this module importable
_unused = (MinMaxObserver, PerChannelMinMaxObserver, PlaceholderObserver, quint8,
           MovingAveragePerChannelMinMaxObserver, per_channel_symmetric,
           per_tensor_symmetric, qint8)
