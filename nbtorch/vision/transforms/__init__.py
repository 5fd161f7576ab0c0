"""Image transforms with torchvision's names, defaults and random draws.

They take nbtorch tensors ``(..., C, H, W)``, PIL images (Pillow optional) and HW(C)
NumPy arrays. Random transforms draw from nbtorch's global generator, so
``nbtorch.manual_seed`` reproduces them, and DataLoader workers (each seeded
differently) augment differently. ``transforms.v2`` holds the v2 names.

Example:
    >>> import numpy as np
    >>> from nbtorch.vision import transforms
    >>> pipeline = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
    >>> tuple(pipeline(np.full((4, 4), 255, dtype=np.uint8)).shape)
    (1, 4, 4)
"""
from nbtorch.vision.transforms import functional
from nbtorch.vision.transforms._autoaugment import (AutoAugment, AutoAugmentPolicy,
                                                    RandAugment, TrivialAugmentWide)
from nbtorch.vision.transforms._basic import (Compose, ConvertImageDtype, Lambda, Normalize,
                                              PILToTensor, RandomApply, RandomChoice,
                                              RandomOrder, ToPILImage, ToTensor)
from nbtorch.vision.transforms._geometric import (CenterCrop, FiveCrop, Pad, RandomAffine,
                                                  RandomCrop, RandomHorizontalFlip,
                                                  RandomResizedCrop, RandomRotation,
                                                  RandomVerticalFlip, Resize, TenCrop)
from nbtorch.vision.transforms._kinds import InterpolationMode
from nbtorch.vision.transforms._perspective import RandomPerspective
from nbtorch.vision.transforms._photometric import (ColorJitter, GaussianBlur, Grayscale,
                                                    RandomAdjustSharpness, RandomAutocontrast,
                                                    RandomEqualize, RandomErasing,
                                                    RandomGrayscale, RandomInvert,
                                                    RandomPosterize, RandomSolarize)

__all__ = ["Compose", "RandomApply", "RandomChoice", "RandomOrder", "Lambda", "ToTensor",
           "PILToTensor", "ToPILImage", "ConvertImageDtype", "Normalize", "Resize", "CenterCrop",
           "Pad", "RandomCrop", "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip",
           "RandomRotation", "RandomAffine", "FiveCrop", "TenCrop", "RandomPerspective",
           "ColorJitter", "Grayscale", "RandomGrayscale", "GaussianBlur", "RandomErasing",
           "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness",
           "RandomAutocontrast", "RandomEqualize", "AutoAugment", "AutoAugmentPolicy",
           "RandAugment", "TrivialAugmentWide", "InterpolationMode", "functional", "v2"]


def __getattr__(name):
    if name == "v2":                       # imported on first use
        import importlib
        return importlib.import_module("nbtorch.vision.transforms.v2")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
