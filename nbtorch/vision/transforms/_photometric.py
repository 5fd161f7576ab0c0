"""Colour transforms: ColorJitter, Grayscale, GaussianBlur, RandomErasing and the
probability-``p`` wrappers (RandomInvert, RandomPosterize, ...)."""
import math
import numbers
import warnings

import nbtorch
from nbtorch.vision.transforms import _color as F
from nbtorch.vision.transforms._basic import Transform
from nbtorch.vision.transforms._geometric import _setup_size, randint, uniform
from nbtorch.vision.transforms._kinds import get_dimensions, is_tensor

__all__ = ["ColorJitter", "Grayscale", "RandomGrayscale", "GaussianBlur", "RandomErasing",
           "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness",
           "RandomAutocontrast", "RandomEqualize"]


def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
    """A jitter amount -> its (low, high) range, or None when it changes nothing."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        value = [center - float(value), center + float(value)]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        value = [float(value[0]), float(value[1])]
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, but got {value}.")
    if value[0] == value[1] == center:
        return None
    return tuple(value)


class ColorJitter(Transform):
    """Randomly change brightness, contrast, saturation and hue, in a random order.

    Each of ``brightness``/``contrast``/``saturation`` is a number ``x`` (factor drawn from
    ``[max(0, 1 - x), 1 + x]``) or a ``(min, max)`` pair; ``hue`` is ``h`` in [0, 0.5]
    (shift from ``[-h, h]``) or a pair within [-0.5, 0.5].
    """

    _repr_keys = ("brightness", "contrast", "saturation", "hue")

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = _check_input(brightness, "brightness")
        self.contrast = _check_input(contrast, "contrast")
        self.saturation = _check_input(saturation, "saturation")
        self.hue = _check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """``(order, b, c, s, h)``: a permutation of the four ops and each one's factor
        (None for the ops that are off)."""
        fn_idx = nbtorch.randperm(4)
        b = None if brightness is None else uniform(brightness[0], brightness[1])
        c = None if contrast is None else uniform(contrast[0], contrast[1])
        s = None if saturation is None else uniform(saturation[0], saturation[1])
        h = None if hue is None else uniform(hue[0], hue[1])
        return fn_idx, b, c, s, h

    def forward(self, img):
        fn_idx, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation,
                                             self.hue)
        for fn_id in fn_idx.tolist():
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img


class Grayscale(Transform):
    """Convert to grayscale with 1 or 3 output channels."""

    _repr_keys = ("num_output_channels",)

    def __init__(self, num_output_channels=1):
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)


class RandomGrayscale(Transform):
    """Convert to grayscale (keeping the channel count) with probability ``p``."""

    _repr_keys = ("p",)

    def __init__(self, p=0.1):
        self.p = p

    def forward(self, img):
        channels = get_dimensions(img)[0]
        if float(nbtorch.rand(1)) < self.p:
            return F.rgb_to_grayscale(img, channels)
        return img


class GaussianBlur(Transform):
    """Blur with a Gaussian of ``kernel_size`` and a sigma drawn from ``sigma`` (min, max)."""

    _repr_keys = ("kernel_size", "sigma")

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        self.kernel_size = _setup_size(kernel_size,
                                       "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, (list, tuple)) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        return uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, list(self.kernel_size), [sigma, sigma])


class RandomErasing(Transform):
    """With probability ``p``, erase a random rectangle of a tensor image (Zhong et al.):
    area fraction from ``scale``, aspect from ``ratio``, filled with ``value`` (a number, one
    per channel, or 'random' for standard normal noise)."""

    _repr_keys = ("p", "scale", "ratio", "value", "inplace")

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, (tuple, list)):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, (tuple, list)):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p = p
        self.scale = scale
        self.ratio = ratio
        self.value = value
        self.inplace = inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        """``(i, j, h, w, v)``: up to 10 tries for a window inside the image; else the
        whole image with itself as the value (no change)."""
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            erase_area = area * uniform(scale[0], scale[1])
            aspect_ratio = math.exp(uniform(log_ratio[0], log_ratio[1]))
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = nbtorch.empty((img_c, h, w), dtype=nbtorch.float32).normal_()
            else:
                v = nbtorch.tensor(value)[:, None, None]
            i = randint(0, img_h - h + 1)
            j = randint(0, img_w - w + 1)
            return i, j, h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if not is_tensor(img):
            raise TypeError(f"img should be Tensor Image. Got {type(img)}")
        if float(nbtorch.rand(1)) < self.p:
            if isinstance(self.value, numbers.Number):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            else:
                value = [float(v) for v in self.value]
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError("If value is a sequence, it should have either a single value "
                                 f"or {img.shape[-3]} (number of input channels)")
            x, y, h, w, v = self.get_params(img, self.scale, self.ratio, value)
            if v is not img:
                v = v.to(device=img.device, dtype=img.dtype)
            return F.erase(img, x, y, h, w, v, self.inplace)
        return img


class _RandomApplyFn(Transform):
    """Apply ``self._fn(img, *self._args())`` with probability ``p``."""

    _repr_keys = ("p",)

    def forward(self, img):
        if float(nbtorch.rand(1)) < self.p:
            return self._apply(img)
        return img


class RandomInvert(_RandomApplyFn):
    """Invert the colours with probability ``p``."""

    def __init__(self, p=0.5):
        self.p = p

    def _apply(self, img):
        return F.invert(img)


class RandomPosterize(_RandomApplyFn):
    """Keep ``bits`` bits per channel with probability ``p``."""

    _repr_keys = ("bits", "p")

    def __init__(self, bits, p=0.5):
        self.bits, self.p = bits, p

    def _apply(self, img):
        return F.posterize(img, self.bits)


class RandomSolarize(_RandomApplyFn):
    """Invert the values above ``threshold`` with probability ``p``."""

    _repr_keys = ("threshold", "p")

    def __init__(self, threshold, p=0.5):
        self.threshold, self.p = threshold, p

    def _apply(self, img):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_RandomApplyFn):
    """Adjust sharpness by ``sharpness_factor`` with probability ``p``."""

    _repr_keys = ("sharpness_factor", "p")

    def __init__(self, sharpness_factor, p=0.5):
        self.sharpness_factor, self.p = sharpness_factor, p

    def _apply(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)


class RandomAutocontrast(_RandomApplyFn):
    """Autocontrast with probability ``p``."""

    def __init__(self, p=0.5):
        self.p = p

    def _apply(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomApplyFn):
    """Equalise the histogram with probability ``p``."""

    def __init__(self, p=0.5):
        self.p = p

    def _apply(self, img):
        return F.equalize(img)
