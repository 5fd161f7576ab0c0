"""``torch.nn.intrinsic.quantized``: the older name of `nbtorch.ao.nn.intrinsic.quantized`."""
from ...ao.nn.intrinsic.quantized import *  # noqa: F401,F403
from ...ao.nn.intrinsic.quantized import __all__  # noqa: F401
