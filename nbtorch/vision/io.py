"""Image files to and from uint8 CHW tensors (``torchvision.io``'s image functions),
decoded and encoded with Pillow (optional; an ImportError names it when missing).

Example:
    >>> image = read_image("cat.png", mode=ImageReadMode.RGB)  # doctest: +SKIP
    >>> image.dtype, image.shape                               # doctest: +SKIP
    (torch.uint8, torch.Size([3, 240, 320]))
"""
import enum
import io as _io

import numpy as np

import nbtorch
from nbtorch.vision.transforms._kinds import pil_module

__all__ = ["ImageReadMode", "read_image", "decode_image", "read_file", "write_png",
           "write_jpeg", "encode_png", "encode_jpeg"]


class ImageReadMode(enum.Enum):
    """The channels to decode to: as stored, gray, gray + alpha, RGB or RGB + alpha."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4


_PIL_MODES = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA",
              ImageReadMode.RGB: "RGB", ImageReadMode.RGB_ALPHA: "RGBA"}


def read_file(path):
    """The bytes of a file as a 1-D uint8 tensor."""
    with open(path, "rb") as handle:
        return nbtorch.from_numpy(np.frombuffer(handle.read(), dtype=np.uint8).copy())


def decode_image(input, mode=ImageReadMode.UNCHANGED):
    """Decode image bytes (a uint8 tensor, or a path) into a ``(C, H, W)`` uint8 tensor."""
    if isinstance(input, nbtorch.Tensor):
        if input.dtype is not nbtorch.uint8 or input.dim() != 1:
            raise RuntimeError("Expected a 1 dimensional uint8 tensor of encoded bytes, got "
                               f"{input.dtype} of shape {tuple(input.shape)}")
        source = _io.BytesIO(input.numpy().tobytes())
    else:
        source = input
    if isinstance(mode, str):
        mode = ImageReadMode[mode.upper()]
    Image = pil_module()
    with Image.open(source) as image:
        if mode is not ImageReadMode.UNCHANGED:
            image = image.convert(_PIL_MODES[mode])
        elif image.mode not in ("L", "LA", "RGB", "RGBA"):
            image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
        array = np.array(image, dtype=np.uint8)
    if array.ndim == 2:
        array = array[:, :, None]
    return nbtorch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


def read_image(path, mode=ImageReadMode.UNCHANGED):
    """Read a PNG/JPEG/... file into a ``(C, H, W)`` uint8 tensor."""
    return decode_image(path, mode)


def _encode(input, format, **options):
    if not isinstance(input, nbtorch.Tensor) or input.dtype is not nbtorch.uint8 or \
            input.dim() != 3 or input.shape[0] not in (1, 3, 4):
        raise RuntimeError("Input should be a uint8 tensor of shape (C, H, W) with C in 1, 3, 4")
    array = np.ascontiguousarray(input.detach().cpu().numpy().transpose(1, 2, 0))
    image = pil_module().fromarray(array[:, :, 0] if array.shape[2] == 1 else array)
    buffer = _io.BytesIO()
    image.save(buffer, format=format, **options)
    return nbtorch.from_numpy(np.frombuffer(buffer.getvalue(), dtype=np.uint8).copy())


def encode_png(input, compression_level=6):
    """A uint8 ``(C, H, W)`` image as PNG bytes (a 1-D uint8 tensor)."""
    return _encode(input, "PNG", compress_level=compression_level)


def encode_jpeg(input, quality=75):
    """A uint8 ``(C, H, W)`` image as JPEG bytes (a 1-D uint8 tensor)."""
    if not 1 <= quality <= 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    return _encode(input, "JPEG", quality=quality)


def _write(data, filename):
    with open(filename, "wb") as handle:
        handle.write(data.numpy().tobytes())


def write_png(input, filename, compression_level=6):
    _write(encode_png(input, compression_level), filename)


def write_jpeg(input, filename, quality=75):
    _write(encode_jpeg(input, quality), filename)
