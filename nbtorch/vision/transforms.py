"""Image transforms with torchvision's names and defaults, for ``(..., C, H, W)`` tensors.

Random transforms draw from nbtorch's global generator, so ``nbtorch.manual_seed``
reproduces them, and DataLoader workers (each seeded differently) augment differently.

Example:
    >>> import numpy as np
    >>> from nbtorch.vision import transforms
    >>> pipeline = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
    >>> tuple(pipeline(np.full((4, 4), 255, dtype=np.uint8)).shape)
    (1, 4, 4)
"""
import enum
import numbers

from nbtorch.utils.data import _random
from nbtorch.vision import functional as F

__all__ = ["Compose", "ToTensor", "Normalize", "RandomCrop", "CenterCrop", "Pad",
           "RandomHorizontalFlip", "Resize", "Lambda", "InterpolationMode"]


class InterpolationMode(enum.Enum):
    """How ``Resize`` samples between pixels."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"


def _pair(size, name):
    """``int`` -> ``(size, size)``; a 1- or 2-element sequence -> ``(h, w)``."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    size = tuple(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for {name}.")
    return int(size[0]), int(size[1])


class Compose:
    """Apply several transforms one after another.

    Example:
        >>> Compose([Lambda(lambda x: x + 1), Lambda(lambda x: x * 2)])(1)
        4
    """

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for transform in self.transforms:
            img = transform(img)
        return img

    def __repr__(self):
        lines = "".join(f"\n    {transform}" for transform in self.transforms)
        return f"{self.__class__.__name__}({lines}\n)"


class ToTensor:
    """HWC (or HW) uint8 array or PIL image -> CHW float tensor in [0, 1].

    Arrays of other dtypes are transposed to CHW without scaling (as in torchvision). A
    tensor is taken to be CHW already: uint8 is scaled to [0, 1], anything else passes
    through, so ``Compose([ToTensor(), ...])`` also works on datasets such as ``Digits``
    that yield tensors.
    """

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class Normalize:
    """Per-channel ``(x - mean[c]) / std[c]`` of a float ``(..., C, H, W)`` tensor.

    Example:
        >>> import nbtorch
        >>> Normalize([0.5], [0.5])(nbtorch.ones(1, 2, 2)).tolist()
        [[[1.0, 1.0], [1.0, 1.0]]]
    """

    def __init__(self, mean, std, inplace=False):
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def __call__(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Pad:
    """Pad the borders: int, (left/right, top/bottom) or (left, top, right, bottom)."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def __call__(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self):
        return (f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, "
                f"padding_mode={self.padding_mode})")


class RandomCrop:
    """Crop a random ``size`` window, after optional padding.

    Args:
        size: output ``(h, w)``, or an int for a square.
        padding: border added first: int, (left/right, top/bottom) or 4 values.
        pad_if_needed: pad images smaller than ``size`` instead of raising.
        fill: value of constant padding.
        padding_mode: 'constant', 'edge', 'reflect' or 'symmetric'.

    Example:
        >>> import nbtorch
        >>> tuple(RandomCrop(8, padding=2)(nbtorch.zeros(1, 8, 8)).shape)
        (1, 8, 8)
    """

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _pair(size, "size")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @staticmethod
    def get_params(img, output_size):
        """Return a random ``(top, left, height, width)`` window of ``output_size``."""
        height, width = img.shape[-2:]
        crop_height, crop_width = output_size
        if height < crop_height or width < crop_width:
            raise ValueError(f"Required crop size {(crop_height, crop_width)} is larger than "
                             f"input image size {(height, width)}")
        if (height, width) == (crop_height, crop_width):
            return 0, 0, height, width
        top = _random.randint(0, height - crop_height + 1)
        left = _random.randint(0, width - crop_width + 1)
        return top, left, crop_height, crop_width

    def __call__(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        height, width = img.shape[-2:]
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, (self.size[1] - width, 0), self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, (0, self.size[0] - height), self.fill, self.padding_mode)
        top, left, crop_height, crop_width = self.get_params(img, self.size)
        return F.crop(img, top, left, crop_height, crop_width)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class CenterCrop:
    """Crop the central ``size`` window."""

    def __init__(self, size):
        self.size = _pair(size, "size")

    def __call__(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class RandomHorizontalFlip:
    """Mirror the image left-right with probability ``p``.

    Example:
        >>> import nbtorch
        >>> RandomHorizontalFlip(p=1.0)(nbtorch.tensor([[[1, 2, 3]]])).tolist()
        [[[3, 2, 1]]]
    """

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        if _random.rand() < self.p:
            return F.hflip(img)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class Resize:
    """Resize to ``size``: ``(h, w)``, or an int to match the smaller edge keeping the aspect.

    Interpolation is nearest or bilinear (``align_corners=False``, as ``F.interpolate``);
    ``antialias`` is accepted for compatibility but no antialiasing filter is applied, so
    large downscales alias as torchvision's ``antialias=False`` does.

    Example:
        >>> import nbtorch
        >>> tuple(Resize(4)(nbtorch.zeros(1, 2, 3)).shape)
        (1, 4, 6)
    """

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        if not isinstance(size, int) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.interpolation = InterpolationMode(getattr(interpolation, "value", interpolation))
        self.max_size = max_size
        self.antialias = antialias

    def __call__(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size)

    def __repr__(self):
        return (f"{self.__class__.__name__}(size={self.size}, "
                f"interpolation={self.interpolation.value}, max_size={self.max_size})")


class Lambda:
    """Wrap a function as a transform.

    Example:
        >>> Lambda(lambda x: x * 10)(3)
        30
    """

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{self.__class__.__name__}()"
