"""``torch.nn.intrinsic.qat``: the older name of `nbtorch.ao.nn.intrinsic.qat`."""
from ...ao.nn.intrinsic.qat import *  # noqa: F401,F403
from ...ao.nn.intrinsic.qat import __all__  # noqa: F401
