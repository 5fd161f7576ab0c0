"""torchvision's ``transforms.functional``: every image op, on tensors, PIL images and
HW(C) NumPy arrays (see ``_kinds`` for how each kind is handled).

Example:
    >>> import nbtorch
    >>> from nbtorch.vision.transforms import functional as F
    >>> F.hflip(nbtorch.tensor([[[1, 2, 3]]])).tolist()
    [[[3, 2, 1]]]
"""
from nbtorch.vision.transforms._color import (adjust_brightness, adjust_contrast, adjust_gamma,
                                              adjust_hue, adjust_saturation, adjust_sharpness,
                                              autocontrast, equalize, erase, gaussian_blur,
                                              invert, normalize, posterize, rgb_to_grayscale,
                                              solarize, to_grayscale)
from nbtorch.vision.transforms._convert import (convert_image_dtype, pil_to_tensor, to_dtype,
                                                to_image, to_pil_image, to_tensor)
from nbtorch.vision.transforms._geometry import (affine, center_crop, crop, five_crop, hflip, pad,
                                                 resize, resized_crop, resized_shape, rotate,
                                                 ten_crop, vflip)
from nbtorch.vision.transforms._perspective import perspective
from nbtorch.vision.transforms._kinds import (InterpolationMode, get_dimensions,
                                              get_image_num_channels, get_image_size)

__all__ = ["InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels",
           "to_tensor", "pil_to_tensor", "to_pil_image", "convert_image_dtype", "to_dtype",
           "to_image", "normalize", "pad", "crop", "center_crop", "resized_crop", "hflip", "vflip",
           "resize", "resized_shape", "rotate", "affine", "five_crop", "ten_crop", "perspective",
           "rgb_to_grayscale", "to_grayscale", "adjust_brightness", "adjust_contrast",
           "adjust_saturation", "adjust_hue", "adjust_gamma", "adjust_sharpness", "invert",
           "posterize", "solarize", "autocontrast", "equalize", "gaussian_blur", "erase"]
