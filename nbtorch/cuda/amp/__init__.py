"""`nbtorch.cuda.amp`: PyTorch's deprecated CUDA spellings of `nbtorch.amp`."""
import warnings

from ...amp import autocast_mode as _autocast_mode, grad_scaler as _grad_scaler
from ..._dtype import float16

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast_mode.autocast):
    """``nbtorch.amp.autocast("cuda", ...)``, with PyTorch's FutureWarning."""

    def __init__(self, enabled=True, dtype=float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """``nbtorch.amp.GradScaler("cuda", ...)``, with PyTorch's FutureWarning."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``nbtorch.amp.custom_fwd(device_type="cuda")``, with PyTorch's FutureWarning."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return _autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``nbtorch.amp.custom_bwd(device_type="cuda")``, with PyTorch's FutureWarning."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return _autocast_mode.custom_bwd(bwd, device_type="cuda")
