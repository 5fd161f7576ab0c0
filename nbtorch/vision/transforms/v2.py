"""``transforms.v2``: the same transforms, called on whole samples.

A v2 transform takes any structure (``image``, ``(image, label)``, a dict ...) and
transforms its image: the first PIL image, or failing one, the first tensor (torchvision's
rule for plain tensors); everything else passes through unchanged. NumPy arrays pass
through too, except in ``ToImage``, which turns them into CHW tensors. Bounding boxes,
masks and videos (``tv_tensors``) are not modelled.

Example:
    >>> import numpy as np, nbtorch
    >>> from nbtorch.vision.transforms import v2
    >>> pipeline = v2.Compose([v2.ToImage(), v2.ToDtype(nbtorch.float32, scale=True)])
    >>> image, label = pipeline(np.full((2, 2, 3), 255, np.uint8), 7)
    >>> image.shape, float(image.max()), label
    (torch.Size([3, 2, 2]), 1.0, 7)
"""
import nbtorch
from nbtorch.vision.transforms import (_autoaugment, _basic, _convert, _geometric, _perspective,
                                      _photometric)
from nbtorch.vision.transforms import functional  # noqa: F401  (v2.functional)
from nbtorch.vision.transforms._kinds import InterpolationMode, is_pil
from nbtorch.vision.transforms._mix import CutMix, MixUp

__all__ = ["Compose", "RandomApply", "RandomChoice", "RandomOrder", "Lambda", "Identity",
           "ToImage", "ToDtype", "ToPureTensor", "PILToTensor", "ToPILImage", "ToTensor",
           "ConvertImageDtype", "Normalize", "Resize", "CenterCrop", "Pad", "RandomCrop",
           "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation",
           "RandomAffine", "ColorJitter", "Grayscale", "RandomGrayscale", "GaussianBlur",
           "RandomErasing", "RandomInvert", "RandomPosterize", "RandomSolarize",
           "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize", "AutoAugment",
           "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide", "InterpolationMode",
           "MixUp", "CutMix", "RandomPerspective", "FiveCrop", "TenCrop"]


def _leaves(obj):
    """Every leaf of nested tuples, lists and dicts, in order."""
    if isinstance(obj, (tuple, list)):
        return [leaf for item in obj for leaf in _leaves(item)]
    if isinstance(obj, dict):
        return [leaf for item in obj.values() for leaf in _leaves(item)]
    return [obj]


def _replace(obj, target, new):
    """``obj`` with the leaf that *is* ``target`` replaced by ``new``."""
    if obj is target:
        return new
    if isinstance(obj, (tuple, list)):
        return type(obj)(_replace(item, target, new) for item in obj)
    if isinstance(obj, dict):
        return {key: _replace(value, target, new) for key, value in obj.items()}
    return obj


def _transform_sample(inputs, fn, takes_arrays=False):
    sample = inputs[0] if len(inputs) == 1 else inputs
    leaves = _leaves(sample)
    image = next((leaf for leaf in leaves if is_pil(leaf)), None)
    if image is None:
        kinds = (nbtorch.Tensor,) + ((__import__("numpy").ndarray,) if takes_arrays else ())
        image = next((leaf for leaf in leaves if isinstance(leaf, kinds)), None)
    if image is None:
        return sample
    return _replace(sample, image, fn(image))


def _v2(cls, takes_arrays=False):
    """The v2 form of a v1 transform class: same arguments, called on whole samples."""
    def __call__(self, *inputs):
        return _transform_sample(inputs, lambda img: cls.forward(self, img), takes_arrays)
    return type(cls.__name__, (cls,), {"__call__": __call__, "__module__": __name__,
                                       "__doc__": cls.__doc__})


class Compose(_basic.Compose):
    """Apply transforms in turn to the whole sample."""

    def __call__(self, *inputs):
        unpack = len(inputs) > 1
        sample = inputs if unpack else inputs[0]
        for transform in self.transforms:
            sample = transform(*sample) if unpack else transform(sample)
        return sample


class RandomApply(_basic.RandomApply):
    """Apply all transforms (to the whole sample) with probability ``p``."""

    def __call__(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        if self.p < float(nbtorch.rand(1)):
            return sample
        return Compose(self.transforms)(*inputs)


class RandomChoice(_basic.RandomChoice):
    """Apply one transform (to the whole sample) picked at random."""


class RandomOrder(_basic.RandomOrder):
    """Apply all transforms (to the whole sample) in a random order."""

    def __call__(self, *inputs):
        unpack = len(inputs) > 1
        sample = inputs if unpack else inputs[0]
        for i in nbtorch.randperm(len(self.transforms)).tolist():
            sample = self.transforms[i](*sample) if unpack else self.transforms[i](sample)
        return sample


class Lambda(_basic.Lambda):
    """Apply a function to the whole sample."""

    def __call__(self, *inputs):
        return self.lambd(*inputs)


class Identity(_basic.Transform):
    """Return the sample unchanged."""

    def __call__(self, *inputs):
        return inputs[0] if len(inputs) == 1 else inputs


class ToImage(_basic.Transform):
    """PIL image, HW(C) array or tensor -> CHW tensor with the same values and dtype."""

    def __call__(self, *inputs):
        return _transform_sample(inputs, _convert.to_image, takes_arrays=True)


class ToDtype(_basic.Transform):
    """Cast the image to ``dtype``; ``scale=True`` also rescales the value range
    (uint8 [0, 255] <-> float [0, 1])."""

    _repr_keys = ("dtype", "scale")

    def __init__(self, dtype, scale=False):
        if isinstance(dtype, dict):
            values = set(dtype.values())
            if len(values) != 1:
                raise ValueError("nbtorch's v2.ToDtype takes one dtype for the image")
            dtype = values.pop()
        self.dtype = dtype
        self.scale = scale

    def __call__(self, *inputs):
        return _transform_sample(inputs, lambda img: _convert.to_dtype(img, self.dtype,
                                                                       self.scale))


class ToPureTensor(Identity):
    """No-op here: nbtorch images are plain tensors already."""


PILToTensor = _v2(_basic.PILToTensor)
ToPILImage = _v2(_basic.ToPILImage, takes_arrays=True)
ToTensor = _v2(_basic.ToTensor, takes_arrays=True)
ConvertImageDtype = _v2(_basic.ConvertImageDtype)
Normalize = _v2(_basic.Normalize)
Resize = _v2(_geometric.Resize)
CenterCrop = _v2(_geometric.CenterCrop)
Pad = _v2(_geometric.Pad)
RandomCrop = _v2(_geometric.RandomCrop)
RandomResizedCrop = _v2(_geometric.RandomResizedCrop)
RandomHorizontalFlip = _v2(_geometric.RandomHorizontalFlip)
RandomVerticalFlip = _v2(_geometric.RandomVerticalFlip)
RandomRotation = _v2(_geometric.RandomRotation)
RandomAffine = _v2(_geometric.RandomAffine)
RandomPerspective = _v2(_perspective.RandomPerspective)
FiveCrop = _v2(_geometric.FiveCrop)
TenCrop = _v2(_geometric.TenCrop)
ColorJitter = _v2(_photometric.ColorJitter)
Grayscale = _v2(_photometric.Grayscale)
RandomGrayscale = _v2(_photometric.RandomGrayscale)
GaussianBlur = _v2(_photometric.GaussianBlur)
RandomErasing = _v2(_photometric.RandomErasing)
RandomInvert = _v2(_photometric.RandomInvert)
RandomPosterize = _v2(_photometric.RandomPosterize)
RandomSolarize = _v2(_photometric.RandomSolarize)
RandomAdjustSharpness = _v2(_photometric.RandomAdjustSharpness)
RandomAutocontrast = _v2(_photometric.RandomAutocontrast)
RandomEqualize = _v2(_photometric.RandomEqualize)
AutoAugment = _v2(_autoaugment.AutoAugment)
AutoAugmentPolicy = _autoaugment.AutoAugmentPolicy
RandAugment = _v2(_autoaugment.RandAugment)
TrivialAugmentWide = _v2(_autoaugment.TrivialAugmentWide)
