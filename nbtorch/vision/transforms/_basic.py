"""Containers and conversions: Compose, RandomApply/Choice/Order, Lambda, ToTensor,
PILToTensor, ToPILImage, ConvertImageDtype, Normalize."""
import nbtorch
from nbtorch.vision.transforms import _color, _convert

__all__ = ["Compose", "RandomApply", "RandomChoice", "RandomOrder", "Lambda", "ToTensor",
           "PILToTensor", "ToPILImage", "ConvertImageDtype", "Normalize"]


class Transform:
    """Base of the transforms: ``__call__`` runs ``forward``; ``repr`` lists ``_repr_keys``."""

    _repr_keys = ()

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def __repr__(self):
        fields = ", ".join(f"{key}={getattr(self, key)!r}" for key in self._repr_keys)
        return f"{self.__class__.__name__}({fields})"


def _listed(transforms, name):
    if not isinstance(transforms, (list, tuple)):
        raise TypeError(f"Argument transforms should be a sequence of callables, got "
                        f"{type(transforms).__name__}")
    return list(transforms)


class Compose(Transform):
    """Apply several transforms one after another.

    Example:
        >>> Compose([Lambda(lambda x: x + 1), Lambda(lambda x: x * 2)])(1)
        4
    """

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def forward(self, img):
        for transform in self.transforms:
            img = transform(img)
        return img

    def __repr__(self):
        lines = "".join(f"\n    {transform}" for transform in self.transforms)
        return f"{self.__class__.__name__}({lines}\n)"


class RandomApply(Transform):
    """Apply all of ``transforms`` with probability ``p`` (one draw), else none."""

    def __init__(self, transforms, p=0.5):
        self.transforms = _listed(transforms, "transforms")
        self.p = p

    def forward(self, img):
        if self.p < float(nbtorch.rand(1)):
            return img
        for transform in self.transforms:
            img = transform(img)
        return img

    def __repr__(self):
        lines = "".join(f"\n    {transform}" for transform in self.transforms)
        return f"{self.__class__.__name__}(\n    p={self.p}{lines}\n)"


class RandomChoice(Transform):
    """Apply one transform picked at random (weighted by ``p`` when given)."""

    def __init__(self, transforms, p=None):
        self.transforms = _listed(transforms, "transforms")
        if p is not None and not isinstance(p, (list, tuple)):
            raise TypeError("Argument p should be a sequence")
        if p is not None and len(p) != len(self.transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != "
                             f"{len(self.transforms)}")
        self.p = p

    def forward(self, *args):
        weights = [1.0] * len(self.transforms) if self.p is None else list(self.p)
        index = int(nbtorch.multinomial(nbtorch.tensor(weights, dtype=nbtorch.float64), 1))
        return self.transforms[index](*args)

    def __repr__(self):
        return f"{self.__class__.__name__}(transforms={self.transforms}, p={self.p})"


class RandomOrder(Transform):
    """Apply all ``transforms`` in a random order."""

    def __init__(self, transforms):
        self.transforms = _listed(transforms, "transforms")

    def forward(self, img):
        for i in nbtorch.randperm(len(self.transforms)).tolist():
            img = self.transforms[i](img)
        return img

    def __repr__(self):
        lines = "".join(f"\n    {transform}" for transform in self.transforms)
        return f"{self.__class__.__name__}({lines}\n)"


class Lambda(Transform):
    """Wrap a function as a transform.

    Example:
        >>> Lambda(lambda x: x * 10)(3)
        30
    """

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def forward(self, img):
        return self.lambd(img)


class ToTensor(Transform):
    """PIL image or HW(C) array -> CHW tensor; uint8 scaled to [0, 1] (see ``to_tensor``)."""

    def forward(self, pic):
        return _convert.to_tensor(pic)


class PILToTensor(Transform):
    """PIL image -> CHW tensor of the same dtype, unscaled."""

    def forward(self, pic):
        return _convert.pil_to_tensor(pic)


class ToPILImage(Transform):
    """CHW tensor or HWC array -> PIL image (float tensors are multiplied by 255)."""

    _repr_keys = ("mode",)

    def __init__(self, mode=None):
        self.mode = mode

    def forward(self, pic):
        return _convert.to_pil_image(pic, self.mode)


class ConvertImageDtype(Transform):
    """Change a tensor image's dtype, rescaling values (see ``convert_image_dtype``)."""

    _repr_keys = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype

    def forward(self, image):
        return _convert.convert_image_dtype(image, self.dtype)


class Normalize(Transform):
    """Per-channel ``(x - mean[c]) / std[c]`` of a float ``(..., C, H, W)`` tensor.

    Example:
        >>> import nbtorch
        >>> Normalize([0.5], [0.5])(nbtorch.ones(1, 2, 2)).tolist()
        [[[1.0, 1.0], [1.0, 1.0]]]
    """

    _repr_keys = ("mean", "std")

    def __init__(self, mean, std, inplace=False):
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def forward(self, tensor):
        return _color.normalize(tensor, self.mean, self.std, self.inplace)
