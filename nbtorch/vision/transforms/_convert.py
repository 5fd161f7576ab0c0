"""Conversions between PIL images, HWC arrays and CHW tensors, and between image dtypes."""
import sys

import numpy as np

import nbtorch
from nbtorch.vision.transforms._kinds import (array_to_chw, is_pil, is_tensor, max_value,
                                              pil_module, pil_to_chw)

__all__ = ["to_tensor", "pil_to_tensor", "to_pil_image", "convert_image_dtype", "to_dtype",
           "to_image"]

# PIL modes whose pixels are not bytes (torchvision's table)
_PIL_NUMPY_TYPES = {"I": np.int32, "I;16" if sys.byteorder == "little" else "I;16B": np.int16,
                    "F": np.float32}


def _scaled_uint8(chw):
    """uint8 -> default float dtype in [0, 1] (``x / 255``); any other dtype unchanged."""
    if chw.dtype is nbtorch.uint8:
        return chw.to(nbtorch.get_default_dtype()).div(255)
    return chw


def to_tensor(pic):
    """A PIL image or HW(C) array -> CHW tensor; uint8 is scaled to [0, 1] in the default
    float dtype, every other dtype (bool, int16, float ...) keeps its dtype and values.

    nbtorch also takes a tensor, read as CHW already: uint8 is scaled, anything else is
    returned as it is (so ``ToTensor`` works on datasets such as ``Digits`` that yield
    tensors; torchvision raises TypeError there).

    Example:
        >>> import numpy as np
        >>> to_tensor(np.full((1, 2, 3), 255, np.uint8)).shape
        torch.Size([3, 1, 2])
    """
    if is_tensor(pic):
        return _scaled_uint8(pic)
    if is_pil(pic):
        array = np.array(pic, _PIL_NUMPY_TYPES.get(pic.mode, np.uint8), copy=True)
        if pic.mode == "1":
            array = array * np.uint8(255)
        array = array.reshape(pic.size[1], pic.size[0], len(pic.getbands()))
        return _scaled_uint8(array_to_chw(array))
    if not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if pic.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    return _scaled_uint8(array_to_chw(pic))


def pil_to_tensor(pic):
    """A PIL image -> CHW tensor of its own dtype, unscaled (uint8 stays uint8)."""
    if not is_pil(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    return pil_to_chw(pic)


def to_image(inpt):
    """``v2.ToImage``: a PIL image, HW(C) array or tensor -> CHW tensor, values unchanged."""
    if is_pil(inpt):
        return pil_to_chw(inpt)
    if isinstance(inpt, np.ndarray):
        if inpt.ndim < 2:
            raise ValueError(f"pic should be 2/3 dimensional. Got {inpt.ndim} dimensions.")
        return array_to_chw(inpt)
    if is_tensor(inpt):
        return inpt.unsqueeze(0) if inpt.dim() == 2 else inpt
    raise TypeError(f"Input can either be a pure Tensor, a numpy array, or a PIL image, but got "
                    f"{type(inpt)} instead.")


def to_pil_image(pic, mode=None):
    """A CHW tensor or HWC array -> PIL image. Float tensors are multiplied by 255 and cast
    to uint8 first (unless ``mode='F'``); the mode follows the dtype and channel count."""
    Image = pil_module()
    if is_tensor(pic):
        if pic.dim() not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.dim()} dimensions.")
        if pic.dim() == 2:
            pic = pic.unsqueeze(0)
        if pic.shape[-3] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-3]} channels.")
        if pic.is_floating_point() and mode != "F":
            pic = pic.mul(255).to(nbtorch.uint8)
        array = np.transpose(pic.detach().cpu().numpy(), (1, 2, 0))
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        array = pic[:, :, None] if pic.ndim == 2 else pic
        if array.shape[-1] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {array.shape[-1]} channels.")
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    channels = array.shape[2]
    if channels == 1:
        array = array[:, :, 0]
        expected = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16",
                    np.dtype(np.int32): "I", np.dtype(np.float32): "F"}.get(array.dtype)
        if mode is not None and expected is not None and mode != expected:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type "
                             f"{array.dtype}. Should be {expected}")
        mode = mode or expected
        if array.dtype == np.int16:
            array = array.astype(np.uint16)
    else:
        permitted = {2: ["LA"], 3: ["RGB", "YCbCr", "HSV"], 4: ["RGBA", "CMYK", "RGBX"]}[channels]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for {channels}D inputs")
        if mode is None and array.dtype == np.uint8:
            mode = permitted[0]
    if mode is None:
        raise TypeError(f"Input type {array.dtype} is not supported")
    array = np.ascontiguousarray(array)
    image = Image.fromarray(array)
    if image.mode == mode:
        return image
    return Image.frombytes(mode, image.size, array.tobytes())


def convert_image_dtype(image, dtype=nbtorch.float32):
    """Change an image's dtype, rescaling its values: ints span [0, max], floats [0, 1].

    float -> int multiplies by ``max + 1 - 1e-3`` and truncates (so 1.0 -> max and the
    values spread evenly); int -> float divides by the input's max; int -> int shifts.
    """
    if not is_tensor(image):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype is dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if ((image.dtype is nbtorch.float32 and dtype in (nbtorch.int32, nbtorch.int64))
                or (image.dtype is nbtorch.float64 and dtype is nbtorch.int64)):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed "
                               "safely.")
        return image.mul(float(max_value(dtype)) + 1.0 - 1e-3).to(dtype)
    input_max = float(max_value(image.dtype))
    if dtype.is_floating_point:
        return image.to(dtype) / input_max
    output_max = float(max_value(dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return nbtorch.div(image, factor, rounding_mode="floor").to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


def to_dtype(image, dtype=nbtorch.float32, scale=False):
    """``v2.ToDtype``: cast; with ``scale=True`` rescale values as ``convert_image_dtype``
    does (int -> float multiplies by ``1 / max``, as torchvision's v2 kernel does)."""
    if image.dtype is dtype:
        return image
    if not scale:
        return image.to(dtype)
    if not image.is_floating_point() and dtype.is_floating_point:
        return image.to(dtype).mul_(1.0 / max_value(image.dtype))
    return convert_image_dtype(image, dtype)
