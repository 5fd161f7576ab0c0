"""``nbtorch.ao.quantization`` (also ``nbtorch.quantization``): observers, qconfigs,
fake-quantize, fusion and the eager-mode workflows (dynamic, static post-training,
quantization-aware training), on int8 kernels written with Numba."""
from nbtorch._qtensor import (qint8, quint8, qint32, per_tensor_affine,  # noqa: F401
                              per_channel_affine, per_tensor_symmetric, per_channel_symmetric)

from .observer import *  # noqa: F401,F403
from .observer import ObserverBase, HistogramObserver  # noqa: F401
from .fake_quantize import *  # noqa: F401,F403
from .qconfig import *  # noqa: F401,F403
from .qconfig_mapping import *  # noqa: F401,F403
from .stubs import QuantStub, DeQuantStub, QuantWrapper  # noqa: F401
from .fuse_modules import (fuse_modules, fuse_modules_qat, fuse_conv_bn_eval,  # noqa: F401
                           fuse_conv_bn, fuse_conv_bn_relu, fuse_linear_bn, get_fuser_method)
from .quantization_mappings import *  # noqa: F401,F403
from .quantize import *  # noqa: F401,F403
