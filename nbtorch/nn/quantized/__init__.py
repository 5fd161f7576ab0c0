"""``torch.nn.quantized``: PyTorch's older name of `nbtorch.ao.nn.quantized` (the same classes)."""
from ...ao.nn.quantized import *  # noqa: F401,F403
from ...ao.nn.quantized import __all__, functional  # noqa: F401
from . import dynamic  # noqa: F401
