"""``torch.nn.intrinsic``: PyTorch's older name of `nbtorch.ao.nn.intrinsic` (fused modules)."""
from ...ao.nn.intrinsic import *  # noqa: F401,F403
from ...ao.nn.intrinsic import __all__  # noqa: F401
from . import qat, quantized  # noqa: F401
