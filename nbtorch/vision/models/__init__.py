"""Model builders of ``torchvision.models`` (architectures only: nbtorch downloads no
weights; load a state dict saved by torchvision with ``load_state_dict``, the keys match).

Example:
    >>> from nbtorch.vision import models
    >>> models.resnet18(num_classes=10)(nbtorch.randn(2, 3, 32, 32)).shape
    torch.Size([2, 10])
"""
from nbtorch.vision.models.resnet import (BasicBlock, Bottleneck, ResNet, resnet18, resnet34,
                                          resnet50, resnet101, resnet152)

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50",
           "resnet101", "resnet152"]
