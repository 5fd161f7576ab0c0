"""``torch.nn.qat``: PyTorch's older name of `nbtorch.ao.nn.qat` (the same classes)."""
from ..ao.nn.qat import *  # noqa: F401,F403
from ..ao.nn.qat import __all__  # noqa: F401
