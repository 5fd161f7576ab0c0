"""FakeQuantize: quantize-then-dequantize in float during training, with the
straight-through gradient (quantization-aware training).

Forward: ``out = (clamp(rint(x / scale) + zp, qmin, qmax) - zp) * scale``, PyTorch's
fake_quantize_per_tensor_affine / _per_channel_affine (round half to even, the zero
point added after rounding). Backward: the gradient passes where
``qmin <= rint(x / scale) + zp <= qmax`` and is zero where the value was clipped.
"""
import numpy as np

import nbtorch
from nbtorch import nn
from nbtorch._qtensor import (per_channel_affine, per_channel_symmetric,
                              per_channel_affine_float_qparams, qint8, quint8,
                              per_tensor_symmetric, per_tensor_affine)
from nbtorch.autograd import Function

from .observer import (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
                       FixedQParamsObserver, HistogramObserver, _with_args, _host,
                       default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer)

__all__ = ["FakeQuantizeBase", "FakeQuantize", "FusedMovingAvgObsFakeQuantize",
           "FixedQParamsFakeQuantize", "default_histogram_fake_quant",
           "default_dynamic_fake_quant", "default_fixed_qparams_range_0to1_fake_quant",
           "default_fixed_qparams_range_neg1to1_fake_quant",
           "default_symmetric_fixed_qparams_fake_quant",
           "default_affine_fixed_qparams_fake_quant",
           "fused_wt_fake_quant_range_neg_127_to_127",
           "fused_per_channel_wt_fake_quant_range_neg_127_to_127", "fake_quantize_per_tensor_affine",
           "fake_quantize_per_channel_affine", "default_fake_quant",
           "default_weight_fake_quant", "default_per_channel_weight_fake_quant",
           "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
           "default_fused_per_channel_wt_fake_quant",
           "disable_fake_quant", "enable_fake_quant", "disable_observer", "enable_observer"]

_F32 = np.float32


def _fake_quant(x, scale, zp, qmin, qmax):
    """(values, mask) in float32; scale/zp broadcast against x."""
    inv = _F32(1) / scale.astype(_F32)
    q = np.rint(x * inv) + zp
    mask = (q >= qmin) & (q <= qmax)
    out = ((np.clip(q, qmin, qmax) - zp) * scale.astype(_F32)).astype(x.dtype)
    return out, mask


class _FakeQuantize(Function):
    """Straight-through fake quantization (the mask is saved for backward)."""

    @staticmethod
    def forward(ctx, x, scale, zp, qmin, qmax):
        out, mask = _fake_quant(_host(x), scale, zp, qmin, qmax)
        ctx.save_for_backward(nbtorch.from_numpy(mask))
        return nbtorch.from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        mask, = ctx.saved_tensors
        return grad * mask, None, None, None, None


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """``torch.fake_quantize_per_tensor_affine``."""
    s = np.asarray(float(scale), _F32)
    z = np.asarray(int(zero_point), _F32)
    return _FakeQuantize.apply(input, s, z, quant_min, quant_max)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """``torch.fake_quantize_per_channel_affine``: one (scale, zp) per slice of `axis`."""
    shape = [1] * input.dim()
    shape[axis] = -1
    s = _host(scale).astype(_F32).reshape(shape)
    z = _host(zero_point).astype(_F32).reshape(shape)
    return _FakeQuantize.apply(input, s, z, quant_min, quant_max)


class FakeQuantizeBase(nn.Module):
    """Base of the fake-quantize modules: the enable flags (uint8 buffers) and their
    toggles."""

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", nbtorch.tensor([1], dtype=nbtorch.uint8))
        self.register_buffer("observer_enabled", nbtorch.tensor([1], dtype=nbtorch.uint8))

    def forward(self, x):
        raise NotImplementedError

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled[0] = 1 if enabled else 0
        return self

    def disable_fake_quant(self):
        return self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        self.observer_enabled[0] = 1 if enabled else 0
        return self

    def disable_observer(self):
        return self.enable_observer(False)

    with_args = classmethod(_with_args)


class FakeQuantize(FakeQuantizeBase):
    """Observe (when enabled), then fake-quantize (when enabled) with the observer's
    current qparams; ``FakeQuantize.with_args(observer=..., quant_min=...)``."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None,
                 quant_max=None, is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None and quant_min > quant_max:
            raise ValueError("quant_min must be less than or equal to quant_max")
        if quant_min is not None and quant_max is not None:   # else the observer's own
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        if is_dynamic:
            observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        obs = self.activation_post_process
        self.quant_min, self.quant_max = obs.quant_min, obs.quant_max
        self.is_dynamic = is_dynamic
        self.register_buffer("scale", nbtorch.tensor([1.0]))
        self.register_buffer("zero_point", nbtorch.tensor([0], dtype=nbtorch.int32))
        self.dtype = obs.dtype
        self.qscheme = obs.qscheme
        self.ch_axis = getattr(obs, "ch_axis", -1)
        self.is_per_channel = self.qscheme in (per_channel_affine, per_channel_symmetric,
                                               per_channel_affine_float_qparams)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if self.observer_enabled[0].item() == 1:
            self.activation_post_process(X.detach())
            scale, zp = self.calculate_qparams()
            self.scale = scale
            self.zero_point = zp.to(nbtorch.int32)
        if self.fake_quant_enabled[0].item() == 1:
            if self.is_per_channel:
                return fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                        self.ch_axis, self.quant_min,
                                                        self.quant_max)
            return fake_quantize_per_tensor_affine(X, self.scale.item(),
                                                   self.zero_point.item(), self.quant_min,
                                                   self.quant_max)
        return X

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled="
                f"{self.observer_enabled}, quant_min={self.quant_min}, quant_max="
                f"{self.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, ch_axis="
                f"{self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """PyTorch's fused observer + fake-quantize (``torch.fused_moving_avg_obs_fake_quant``).

    The observer's moving-average min/max are updated as usual, but the qparams the
    forward uses come from ATen's ChooseQuantizationParams, not from the observer's
    formula: for symmetric int8 weights the scale is max(-min / 128, max / 127), not
    max(-min, max) / 127.5 (0.4% apart; it drifted before). ``calculate_qparams()``
    (what `convert` reads) stays the observer's, as in PyTorch."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                 **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        self.is_symmetric_quant = self.qscheme in (per_tensor_symmetric,
                                                   per_channel_symmetric)
        self.fake_quant_enabled = nbtorch.tensor([1], dtype=nbtorch.long)
        self.observer_enabled = nbtorch.tensor([1], dtype=nbtorch.long)

    def forward(self, X):
        obs = self.activation_post_process
        if self.observer_enabled[0].item() == 1:
            obs(X.detach())
        if self.fake_quant_enabled[0].item() != 1:
            return X
        lo, hi = _host(obs.min_val).reshape(-1), _host(obs.max_val).reshape(-1)
        if lo.size and not np.isinf(lo).all():
            from nbtorch.ao.nn.quantized.dynamic.linear import choose_qparams_dynamic
            pairs = [choose_qparams_dynamic(a, b, obs.quant_min, obs.quant_max,
                                            reduce_range=False,
                                            preserve_sparsity=self.is_symmetric_quant)
                     for a, b in zip(lo.tolist(), hi.tolist())]
            self.scale = nbtorch.tensor([p[0] for p in pairs], dtype=nbtorch.float32)
            self.zero_point = nbtorch.tensor([p[1] for p in pairs], dtype=nbtorch.int32)
        if self.is_per_channel:
            return fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                    self.ch_axis, obs.quant_min,
                                                    obs.quant_max)
        return fake_quantize_per_tensor_affine(X, self.scale.item(), self.zero_point.item(),
                                               obs.quant_min, obs.quant_max)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake-quantize with the fixed qparams of its `FixedQParamsObserver` (sigmoid-like
    outputs in QAT)."""

    def __init__(self, observer):
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise AssertionError(f"{type(self).__name__}'s observer must be a "
                                 "FixedQParamsObserver")
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point

    def calculate_qparams(self):
        return self.scale, self.zero_point

    def forward(self, X):
        if self.fake_quant_enabled[0].item() == 1:
            return fake_quantize_per_tensor_affine(X, self.scale.item(),
                                                   self.zero_point.item(), self.quant_min,
                                                   self.quant_max)
        return X


def _toggle(attr, *args):
    def apply(mod):
        if isinstance(mod, FakeQuantizeBase):
            getattr(mod, attr)(*args)
    return apply


disable_fake_quant = _toggle("enable_fake_quant", False)
enable_fake_quant = _toggle("enable_fake_quant", True)
disable_observer = _toggle("enable_observer", False)
enable_observer = _toggle("enable_observer", True)

default_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver,
                                            quant_min=0, quant_max=255, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric, reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=qint8, qscheme=per_channel_symmetric, reduce_range=False, ch_axis=0)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=qint8, qscheme=per_channel_symmetric)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver, quant_min=0, quant_max=255, dtype=quint8,
    qscheme=per_tensor_affine, reduce_range=True)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, is_dynamic=True,
    dtype=quint8, averaging_constant=1)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
    dtype=qint8, qscheme=per_channel_symmetric, eps=2 ** -12)
