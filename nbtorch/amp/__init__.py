"""`nbtorch.amp`: automatic mixed precision (`autocast`) and loss scaling (`GradScaler`).

`autocast` runs matmuls and convolutions in a low-precision dtype (bfloat16 on
the CPU, float16 on CUDA by default) and precision-sensitive ops in float32, with
PyTorch 2.13's op lists (`_policies`); `GradScaler` keeps float16 gradients from
underflowing. See `autocast_mode` and `grad_scaler`.
"""
from . import autocast_mode, grad_scaler  # noqa: F401
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
