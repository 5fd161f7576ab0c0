"""``nbtorch.ao.nn``: quantized, dynamic quantized, fused (intrinsic) and QAT modules."""
from . import intrinsic, qat, quantized  # noqa: F401
