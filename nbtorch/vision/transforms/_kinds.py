"""The three kinds of image the transforms take, and how each is handled.

* an nbtorch ``Tensor`` of shape ``(..., C, H, W)`` (any dtype, any device): processed
  with nbtorch ops (``interpolate``, ``grid_sample``, ``pad``, ``conv2d``), as torchvision
  processes torch tensors;
* a PIL image (Pillow is optional and imported lazily): resampling and colour ops use
  Pillow's own methods, as torchvision's PIL backend does, so results match it;
* a NumPy array: taken as an ``H x W`` or ``H x W x C`` picture (what ``ToTensor`` and
  PIL use), transformed through a CHW tensor view and returned in its own layout and
  dtype. torchvision refuses arrays in most transforms; nbtorch's MNIST yields them.
"""
import enum

import numpy as np

import nbtorch

__all__ = ["InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels"]


class InterpolationMode(enum.Enum):
    """How resampling transforms read between pixels (torchvision's names and values)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# Pillow's integer resampling constants, accepted in place of a mode (as torchvision does)
_PIL_CODES = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR,
              3: InterpolationMode.BICUBIC, 4: InterpolationMode.BOX,
              5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}
_PIL_RESAMPLE = {mode: code for code, mode in _PIL_CODES.items()}


def interpolation_mode(value):
    """An ``InterpolationMode`` from itself, its string value or a Pillow integer code."""
    if isinstance(value, InterpolationMode):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value in _PIL_CODES:
        return _PIL_CODES[value]
    if isinstance(value, str):
        return InterpolationMode(value)
    raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding "
                    "Pillow integer constant")


def pil_module():
    """Pillow's ``Image`` module; ImportError naming the package when it is missing."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("this needs Pillow (pip install pillow) for PIL images") from None
    return Image


def is_pil(img):
    """True for a PIL image, found without importing Pillow when nothing could be one."""
    cls = type(img)
    if not cls.__module__.startswith("PIL"):
        return False
    return isinstance(img, pil_module().Image)


def is_tensor(img):
    return isinstance(img, nbtorch.Tensor)


def max_value(dtype):
    """The value of full intensity: 255 for uint8, the integer maximum, 1 for floats."""
    if dtype.is_floating_point:
        return 1
    if dtype is nbtorch.bool:
        return 1
    return int(np.iinfo(dtype.np).max)


def check_image_tensor(img):
    if img.dim() < 2:
        raise TypeError("Tensor is not a torch image.")


def get_dimensions(img):
    """``[channels, height, width]`` of a tensor, PIL image or HW(C) array."""
    if is_tensor(img):
        check_image_tensor(img)
        channels = 1 if img.dim() == 2 else img.shape[-3]
        return [channels, img.shape[-2], img.shape[-1]]
    if isinstance(img, np.ndarray):
        if img.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {img.ndim} dimensions.")
        check_hwc(img)
        return [1 if img.ndim == 2 else img.shape[2], img.shape[0], img.shape[1]]
    if is_pil(img):
        width, height = img.size
        return [len(img.getbands()), height, width]
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_size(img):
    """``[width, height]`` (torchvision's order)."""
    _, height, width = get_dimensions(img)
    return [width, height]


def get_image_num_channels(img):
    return get_dimensions(img)[0]


def check_hwc(array):
    """Refuse what looks like a CHW array (few leading, many trailing "channels"): NumPy
    images are HW(C) pictures here, and reading CHW as HWC would give garbage silently."""
    if array.ndim == 3 and array.shape[2] > 4 and array.shape[0] <= 4:
        raise ValueError(f"NumPy images are H x W x C pictures; an array of shape "
                         f"{array.shape} looks like C x H x W: convert it with "
                         "nbtorch.from_numpy (a CHW tensor) or transpose it to HWC")


def array_to_chw(array):
    """An HW or HWC array as a CHW tensor (shares memory when the array allows it)."""
    if array.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {array.ndim} dimensions.")
    if array.ndim == 2:
        array = array[:, :, None]
    return nbtorch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


def chw_to_array(tensor, ndim):
    """A CHW tensor back to an HWC array (HW when ``ndim`` is 2)."""
    array = np.ascontiguousarray(tensor.detach().cpu().numpy().transpose(1, 2, 0))
    return array[:, :, 0] if ndim == 2 and array.shape[2] == 1 else array


def pil_to_chw(pic):
    """A PIL image's pixels as a CHW tensor of the image's own dtype (``pil_to_tensor``)."""
    array = np.array(pic, copy=True)
    if array.ndim == 2:
        array = array[:, :, None]
    return nbtorch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


def array_to_pil_like(array, like):
    """An HW(C) array as a PIL image of ``like``'s mode (palette images keep the palette)."""
    Image = pil_module()
    if like.mode == "1":
        return Image.fromarray(array.astype(bool))
    image = Image.fromarray(np.ascontiguousarray(array))
    if like.mode == "P" and image.mode == "L":
        image.putpalette(like.getpalette())
        return image
    return image if image.mode == like.mode else image.convert(like.mode)


def chw_to_pil(tensor, like):
    """A CHW tensor to a PIL image of ``like``'s mode."""
    return array_to_pil_like(chw_to_array(tensor, 2), like)


def apply(img, on_tensor, on_pil=None, name="img"):
    """Run a transform on any kind of image: tensors directly, arrays through a CHW view,
    PIL images through ``on_pil`` (Pillow's own op) or, without one, through a tensor."""
    if is_tensor(img):
        return on_tensor(img)
    if isinstance(img, np.ndarray):
        check_hwc(img)
        return chw_to_array(on_tensor(array_to_chw(img)), img.ndim)
    if is_pil(img):
        if on_pil is not None:
            return on_pil(img)
        return chw_to_pil(on_tensor(pil_to_chw(img)), img)
    raise TypeError(f"{name} should be PIL Image or Tensor. Got {type(img)}")
