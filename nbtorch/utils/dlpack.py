"""`torch.utils.dlpack`: `to_dlpack` / `from_dlpack` capsules (see `nbtorch/_dlpack.py`)."""
from .._dlpack import DLDeviceType, from_dlpack, to_dlpack

__all__ = ["to_dlpack", "from_dlpack", "DLDeviceType"]
