"""Image operations behind ``nbtorch.vision.transforms``, on ``(..., H, W)`` images.

Each function accepts an nbtorch tensor (on any device) or a NumPy array and returns the
same kind: tensors are processed as NumPy arrays on the host and moved back to their
device. These are data-preparation steps run once per sample, not differentiable ops.
"""
import numpy as np

import nbtorch

__all__ = ["to_tensor", "normalize", "pad", "crop", "center_crop", "hflip", "resize",
           "resized_shape"]

_PADDING_MODES = ("constant", "edge", "reflect", "symmetric")


def _host_array(img):
    """Return ``(array, device)``: the image's values as NumPy and where they came from."""
    if isinstance(img, nbtorch.Tensor):
        if img.device.type == "cpu":
            return img.detach()._host(), img.device  # shares memory (for inplace=True)
        return np.asarray(img), img.device
    if isinstance(img, np.ndarray):
        return img, None
    raise TypeError(f"img should be an nbtorch Tensor or a NumPy array. Got {type(img)}")


def _like(array, device):
    """Return ``array`` as the same kind of image as the input (tensor on ``device`` or array)."""
    if device is None:
        return array
    return nbtorch.from_numpy(np.ascontiguousarray(array)).to(device)


def _check_image(array):
    if array.ndim < 2:
        raise ValueError(f"Expected an image of shape (..., H, W), got shape {tuple(array.shape)}")


def to_tensor(pic):
    """HWC (or HW) uint8 image -> CHW float tensor in [0, 1]; other dtypes keep their values.

    Accepts a NumPy array, a PIL image, or an nbtorch tensor (already CHW: uint8 is
    scaled to [0, 1], anything else is returned unchanged).
    """
    if isinstance(pic, nbtorch.Tensor):
        if pic.dtype == nbtorch.uint8:
            return pic.to(nbtorch.get_default_dtype()).div(255)
        return pic
    if hasattr(pic, "getbands") and hasattr(pic, "mode"):  # a PIL image, without importing PIL
        mode = pic.mode
        pic = np.asarray(pic)
        if mode == "1":
            pic = pic.astype(np.uint8) * 255
    if not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if pic.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.ndim == 2:
        pic = pic[:, :, None]
    chw = np.ascontiguousarray(pic.transpose(2, 0, 1))
    if chw.dtype == np.uint8:
        float_dtype = nbtorch.get_default_dtype().np
        return nbtorch.from_numpy(chw.astype(float_dtype) / float_dtype.type(255))
    if chw.dtype == np.bool_:
        return nbtorch.from_numpy(chw.astype(np.uint8))
    return nbtorch.from_numpy(chw)


def normalize(img, mean, std, inplace=False):
    """``(img - mean[c]) / std[c]`` per channel of a float ``(..., C, H, W)`` tensor."""
    if not isinstance(img, nbtorch.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if not img.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {img.dtype}.")
    if img.dim() < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). "
                         f"Got tensor.size() = {tuple(img.shape)}")
    array, device = _host_array(img)
    mean = np.asarray(mean, dtype=array.dtype).reshape(-1)
    std = np.asarray(std, dtype=array.dtype).reshape(-1)
    channels = array.shape[-3]
    for name, values in (("mean", mean), ("std", std)):
        if values.size not in (1, channels):
            raise ValueError(f"Normalize: {name} has {values.size} values but the image has "
                             f"{channels} channels")
    if np.any(std == 0):
        raise ValueError(f"std evaluated to zero after conversion to {img.dtype}, "
                         "leading to division by zero.")
    result = (array - mean[:, None, None]) / std[:, None, None]
    if inplace and device.type == "cpu":
        array[...] = result
        return img
    return _like(result.astype(array.dtype, copy=False), device)


def _padding_ltrb(padding):
    """Normalise int / (lr, tb) / (l, t, r, b) padding to (left, top, right, bottom)."""
    if isinstance(padding, int):
        return (padding,) * 4
    padding = tuple(padding)
    if len(padding) == 1:
        return padding * 4
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    if len(padding) == 4:
        return padding
    raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a "
                     f"{len(padding)} element tuple")


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad the last two dims: int, (left/right, top/bottom) or (left, top, right, bottom)."""
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"Padding mode should be one of {_PADDING_MODES}, got {padding_mode!r}")
    left, top, right, bottom = _padding_ltrb(padding)
    if min(left, top, right, bottom) < 0:
        raise ValueError(f"padding must be non-negative, got {padding}")
    array, device = _host_array(img)
    _check_image(array)
    widths = [(0, 0)] * (array.ndim - 2) + [(top, bottom), (left, right)]
    if padding_mode == "constant":
        padded = np.pad(array, widths, mode="constant", constant_values=fill)
    else:
        padded = np.pad(array, widths, mode=padding_mode)
    return _like(padded, device)


def crop(img, top, left, height, width):
    """The ``height x width`` window whose top-left corner is ``(top, left)``."""
    array, device = _host_array(img)
    _check_image(array)
    return _like(array[..., top:top + height, left:left + width], device)


def center_crop(img, output_size):
    """The central ``output_size`` window (zero-padded first if the image is smaller)."""
    height, width = output_size
    array, _ = _host_array(img)
    _check_image(array)
    image_height, image_width = array.shape[-2:]
    if height > image_height or width > image_width:
        pad_h, pad_w = max(height - image_height, 0), max(width - image_width, 0)
        img = pad(img, (pad_w // 2, pad_h // 2, (pad_w + 1) // 2, (pad_h + 1) // 2))
        image_height, image_width = image_height + pad_h, image_width + pad_w
    top = int(round((image_height - height) / 2.0))
    left = int(round((image_width - width) / 2.0))
    return crop(img, top, left, height, width)


def hflip(img):
    """Mirror the image left-right (reverse the last dimension)."""
    array, device = _host_array(img)
    _check_image(array)
    return _like(array[..., ::-1], device)


def resized_shape(height, width, size, max_size=None):
    """The ``(height, width)`` that ``Resize(size, max_size)`` produces for an image."""
    if isinstance(size, int) or len(size) == 1:
        requested = size if isinstance(size, int) else size[0]
        short, long = (height, width) if height <= width else (width, height)
        new_short, new_long = requested, int(requested * long / short)
        if max_size is not None:
            if max_size <= requested:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                                 f"requested size for the smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        return (new_short, new_long) if height <= width else (new_long, new_short)
    if max_size is not None:
        raise ValueError("max_size should only be passed if size specifies the length of the "
                         "smaller edge, i.e. size should be an int or a sequence of length 1")
    return int(size[0]), int(size[1])


def _nearest_indices(in_size, out_size):
    """Source index of each output position: floor(dst * in / out), as F.interpolate does."""
    scale = in_size / out_size
    return np.minimum(np.floor(np.arange(out_size) * scale).astype(np.int64), in_size - 1)


def _linear_weights(in_size, out_size):
    """Neighbours and weights for bilinear sampling with align_corners=False."""
    scale = in_size / out_size
    source = np.maximum((np.arange(out_size) + 0.5) * scale - 0.5, 0.0)
    lower = np.minimum(np.floor(source).astype(np.int64), in_size - 1)
    upper = np.minimum(lower + 1, in_size - 1)
    return lower, upper, source - lower


def _resize_axis(array, axis, out_size, mode):
    """Resample one axis of a float array to ``out_size`` (nearest or linear)."""
    in_size = array.shape[axis]
    if mode == "nearest":
        return np.take(array, _nearest_indices(in_size, out_size), axis=axis)
    lower, upper, weight = _linear_weights(in_size, out_size)
    shape = [1] * array.ndim
    shape[axis] = out_size
    weight = weight.reshape(shape)
    return np.take(array, lower, axis=axis) * (1 - weight) + np.take(array, upper, axis=axis) * weight


def resize(img, size, interpolation="bilinear", max_size=None):
    """Resize the last two dims (nearest or bilinear, align_corners=False, no antialiasing)."""
    mode = getattr(interpolation, "value", interpolation)
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"Resize supports interpolation 'nearest' and 'bilinear', got {mode!r}")
    array, device = _host_array(img)
    _check_image(array)
    height, width = resized_shape(array.shape[-2], array.shape[-1], size, max_size)
    if height <= 0 or width <= 0:
        raise ValueError(f"Resize: output size must be positive, got {(height, width)}")
    work = array if array.dtype.kind == "f" else array.astype(np.float64)
    out = _resize_axis(_resize_axis(work, -2, height, mode), -1, width, mode)
    if array.dtype.kind != "f":
        if array.dtype == np.bool_:
            out = out >= 0.5
        else:
            info = np.iinfo(array.dtype)
            out = np.clip(np.round(out), info.min, info.max)
    return _like(out.astype(array.dtype, copy=False), device)
