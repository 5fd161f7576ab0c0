"""``nbtorch.quantization``: the old name of `nbtorch.ao.quantization` (as in PyTorch)."""
from nbtorch.ao.quantization import *  # noqa: F401,F403
from nbtorch.ao.quantization import (QuantStub, DeQuantStub, QuantWrapper,  # noqa: F401
                                     fuse_modules, fuse_modules_qat, HistogramObserver,
                                     ObserverBase, fuse_conv_bn_eval)
