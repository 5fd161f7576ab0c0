"""`nbtorch.cpu.amp`: PyTorch's deprecated CPU spellings of `nbtorch.amp`."""
import warnings

from . import autocast_mode as _autocast_mode, grad_scaler as _grad_scaler
from .._dtype import bfloat16

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast_mode.autocast):
    """``nbtorch.amp.autocast("cpu", ...)``, with PyTorch's FutureWarning."""

    def __init__(self, enabled=True, dtype=bfloat16, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """``nbtorch.amp.GradScaler("cpu", ...)``, with PyTorch's FutureWarning."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
