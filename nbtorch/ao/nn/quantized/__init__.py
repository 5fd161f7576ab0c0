"""``nbtorch.ao.nn.quantized``: modules over quantized tensors, run by int8 Numba kernels."""
from .modules import (Quantize, DeQuantize, Linear, Conv2d, ReLU, ReLU6, MaxPool2d,
                      FloatFunctional, QFunctional, LinearReLU, ConvReLU2d)
from .batchnorm import BatchNorm2d, BatchNorm3d, BNReLU2d
from .activation import Hardswish, ELU, LeakyReLU, Sigmoid, Softmax, Dropout
from .normalization import (LayerNorm, GroupNorm, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d)
from .conv1d import Conv1d, ConvReLU1d
from .embedding import Embedding, EmbeddingBag
from .conv_transpose import ConvTranspose2d
from . import functional, dynamic  # noqa: F401

__all__ = ["Quantize", "DeQuantize", "Linear", "Conv2d", "ReLU", "ReLU6", "MaxPool2d",
           "FloatFunctional", "QFunctional", "LinearReLU", "ConvReLU2d", "BatchNorm2d",
           "BatchNorm3d", "BNReLU2d", "Hardswish", "ELU", "LeakyReLU", "Sigmoid", "Softmax",
           "Dropout", "Conv1d", "ConvReLU1d", "LayerNorm", "GroupNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "Embedding", "EmbeddingBag", "ConvTranspose2d",
           "functional", "dynamic"]
