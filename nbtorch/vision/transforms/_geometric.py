"""Geometric transforms: Resize, crops, Pad, flips, RandomRotation, RandomAffine.

Random parameters come from nbtorch's global generator through each class's static
``get_params`` (torchvision's draws, in its order), so ``nbtorch.manual_seed`` replays them.
"""
import math
import numbers
import warnings

import nbtorch
from nbtorch.vision.transforms import _geometry as F
from nbtorch.vision.transforms._basic import Transform
from nbtorch.vision.transforms._kinds import InterpolationMode, get_dimensions, interpolation_mode

__all__ = ["Resize", "CenterCrop", "Pad", "RandomCrop", "RandomResizedCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation", "RandomAffine",
           "FiveCrop", "TenCrop"]

_SIZE_MESSAGE = "Please provide only two dimensions (h, w) for size."


def _setup_size(size, error_msg):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (list, tuple)) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size[0], size[1]


def _check_sequence_input(x, name, req_sizes):
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join(str(s) for s in req_sizes)
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{name} should be a sequence of length {msg}.")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {msg}.")


def _setup_angle(x, name, req_sizes=(2,)):
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        x = [-x, x]
    else:
        _check_sequence_input(x, name, req_sizes)
    return [float(d) for d in x]


def uniform(low, high):
    """One float drawn uniformly from [low, high) (``torch.empty(1).uniform_``)."""
    return float(nbtorch.empty(1).uniform_(low, high).item())


def randint(low, high):
    """One int drawn from [low, high) (``torch.randint(low, high, (1,))``)."""
    return int(nbtorch.randint(low, high, size=(1,)).item())


def _tensor_fill(fill, img):
    """A rotation's fill as a per-channel list for tensors (torchvision's forward)."""
    if not isinstance(img, nbtorch.Tensor):
        return fill
    channels = get_dimensions(img)[0]
    if isinstance(fill, (int, float)):
        return [float(fill)] * channels
    return [float(f) for f in fill]


class Resize(Transform):
    """Resize to ``size`` ``(h, w)``, or an int: the smaller edge, keeping the aspect ratio.

    Example:
        >>> Resize(4)(nbtorch.zeros(1, 2, 3)).shape
        torch.Size([1, 4, 6])
    """

    _repr_keys = ("size", "interpolation", "max_size", "antialias")

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        if not (size is None or isinstance(size, (int, list, tuple))):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, (list, tuple)) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.max_size = max_size
        self.interpolation = interpolation_mode(interpolation)
        self.antialias = antialias

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)


class CenterCrop(Transform):
    """Crop the central ``size`` window (zero-padded when the image is smaller)."""

    _repr_keys = ("size",)

    def __init__(self, size):
        self.size = _setup_size(size, _SIZE_MESSAGE)

    def forward(self, img):
        return F.center_crop(img, self.size)


class Pad(Transform):
    """Pad the borders: int, ``[left/right, top/bottom]`` or ``[left, top, right, bottom]``."""

    _repr_keys = ("padding", "fill", "padding_mode")

    def __init__(self, padding, fill=0, padding_mode="constant"):
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
            raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a "
                             f"{len(padding)} element tuple")
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class RandomCrop(Transform):
    """Crop a random ``size`` window, after optional ``padding``.

    Args:
        size: output ``(h, w)``, or an int for a square.
        padding: border added first: int, (left/right, top/bottom) or 4 values.
        pad_if_needed: pad images smaller than ``size`` instead of raising.
        fill: value of constant padding.
        padding_mode: 'constant', 'edge', 'reflect' or 'symmetric'.

    Example:
        >>> RandomCrop(8, padding=2)(nbtorch.zeros(1, 8, 8)).shape
        torch.Size([1, 8, 8])
    """

    _repr_keys = ("size", "padding")

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = tuple(_setup_size(size, _SIZE_MESSAGE))
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @staticmethod
    def get_params(img, output_size):
        """A random ``(top, left, height, width)`` window of ``output_size``."""
        _, height, width = get_dimensions(img)
        crop_height, crop_width = output_size
        if height < crop_height or width < crop_width:
            raise ValueError(f"Required crop size {(crop_height, crop_width)} is larger than "
                             f"input image size {(height, width)}")
        if width == crop_width and height == crop_height:
            return 0, 0, height, width
        top = randint(0, height - crop_height + 1)
        left = randint(0, width - crop_width + 1)
        return top, left, crop_height, crop_width

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        top, left, crop_height, crop_width = self.get_params(img, self.size)
        return F.crop(img, top, left, crop_height, crop_width)


class RandomResizedCrop(Transform):
    """Crop a random window of ``scale`` of the area and ``ratio`` aspect, resized to
    ``size``: the Inception/ImageNet training augmentation.

    Example:
        >>> RandomResizedCrop(4)(nbtorch.zeros(3, 10, 12)).shape
        torch.Size([3, 4, 4])
    """

    _repr_keys = ("size", "scale", "ratio", "interpolation", "antialias")

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        self.size = _setup_size(size, _SIZE_MESSAGE)
        if not isinstance(scale, (list, tuple)):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, (list, tuple)):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        self.interpolation = interpolation_mode(interpolation)
        self.antialias = antialias
        self.scale = scale
        self.ratio = ratio

    @staticmethod
    def get_params(img, scale, ratio):
        """``(top, left, height, width)``: up to 10 random tries, then the centre crop
        clipped to the ratio range."""
        _, height, width = get_dimensions(img)
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target_area = area * uniform(scale[0], scale[1])
            aspect_ratio = math.exp(uniform(log_ratio[0], log_ratio[1]))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return randint(0, height - h + 1), randint(0, width - w + 1), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        top, left, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, top, left, h, w, self.size, self.interpolation,
                              antialias=self.antialias)


class RandomHorizontalFlip(Transform):
    """Mirror left-right with probability ``p``.

    Example:
        >>> RandomHorizontalFlip(p=1.0)(nbtorch.tensor([[[1, 2, 3]]])).tolist()
        [[[3, 2, 1]]]
    """

    _repr_keys = ("p",)

    def __init__(self, p=0.5):
        self.p = p

    def forward(self, img):
        if float(nbtorch.rand(1)) < self.p:
            return F.hflip(img)
        return img


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror top-bottom with probability ``p``."""

    def forward(self, img):
        if float(nbtorch.rand(1)) < self.p:
            return F.vflip(img)
        return img


class RandomRotation(Transform):
    """Rotate by an angle drawn from ``degrees`` (a number d: [-d, d]), counter-clockwise."""

    _repr_keys = ("degrees", "interpolation", "expand", "fill")

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=0):
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        self.interpolation = interpolation_mode(interpolation)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        if fill is None:
            fill = 0
        elif not isinstance(fill, (list, tuple, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.center = center
        self.expand = expand
        self.fill = fill

    @staticmethod
    def get_params(degrees):
        """A random angle in ``[degrees[0], degrees[1])``."""
        return uniform(float(degrees[0]), float(degrees[1]))

    def forward(self, img):
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center,
                        _tensor_fill(self.fill, img))


class RandomAffine(Transform):
    """Random rotation (``degrees``), translation (fractions of width/height), scale and
    shear, applied about the centre (torchvision's parameters and draws)."""

    _repr_keys = ("degrees", "translate", "scale", "shear", "interpolation", "fill")

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        self.interpolation = interpolation_mode(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            for t in translate:
                if not 0.0 <= t <= 1.0:
                    raise ValueError("translation values should be between 0 and 1")
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            for s in scale:
                if s <= 0:
                    raise ValueError("scale values should be positive")
        self.translate = translate
        self.scale = scale
        self.shear = None if shear is None else _setup_angle(shear, name="shear",
                                                             req_sizes=(2, 4))
        if fill is None:
            fill = 0
        elif not isinstance(fill, (list, tuple, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """``(angle, (tx, ty), scale, (shear_x, shear_y))`` for an image of ``img_size``
        ``[width, height]``."""
        angle = uniform(float(degrees[0]), float(degrees[1]))
        if translate is not None:
            max_dx = float(translate[0] * img_size[0])
            max_dy = float(translate[1] * img_size[1])
            translations = (int(round(uniform(-max_dx, max_dx))),
                            int(round(uniform(-max_dy, max_dy))))
        else:
            translations = (0, 0)
        scale = 1.0 if scale_ranges is None else uniform(scale_ranges[0], scale_ranges[1])
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        _, height, width = get_dimensions(img)
        params = self.get_params(self.degrees, self.translate, self.scale, self.shear,
                                 [width, height])
        return F.affine(img, *params, interpolation=self.interpolation,
                        fill=_tensor_fill(self.fill, img), center=self.center)


class FiveCrop(Transform):
    """The four corners and the centre, as a tuple of 5 images (stack them for a batch)."""

    _repr_keys = ("size",)

    def __init__(self, size):
        self.size = _setup_size(size, _SIZE_MESSAGE)

    def forward(self, img):
        return F.five_crop(img, self.size)


class TenCrop(Transform):
    """``FiveCrop`` of the image and of its mirror image: a tuple of 10 images."""

    _repr_keys = ("size", "vertical_flip")

    def __init__(self, size, vertical_flip=False):
        self.size = _setup_size(size, _SIZE_MESSAGE)
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)
