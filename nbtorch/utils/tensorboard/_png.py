"""PNG encoding of uint8 images with zlib alone, so images need no Pillow.

PyTorch hands images to Pillow; a PNG of 8-bit grey, RGB or RGBA rows is
small enough to write directly (signature, IHDR, one IDAT, IEND; filter 0
on every row). Pillow is used only to resize (``rescale != 1``).
"""
import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}      # channels -> grey, grey+alpha, RGB, RGBA


def _chunk(kind, data):
    """One PNG chunk: length, type, data, CRC over type and data."""
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def encode_png(image, compress_level=6):
    """PNG bytes of `image`, a uint8 array of shape (H, W) or (H, W, C) with C in 1..4.

    Example:
        >>> encode_png(np.zeros((2, 3, 3), np.uint8))[:8] == _SIGNATURE
        True
    """
    image = np.asarray(image)
    if image.dtype != np.uint8:
        raise TypeError(f"encode_png expects a uint8 image, got {image.dtype}")
    if image.ndim == 2:
        image = image[:, :, None]
    if image.ndim != 3 or image.shape[2] not in _COLOR_TYPE:
        raise ValueError(f"encode_png expects an (H, W) or (H, W, 1..4) image, got shape "
                         f"{tuple(image.shape)}")
    height, width, channels = image.shape
    rows = np.zeros((height, 1 + width * channels), np.uint8)   # column 0: filter type 0
    rows[:, 1:] = image.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPE[channels], 0, 0, 0)
    return (_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), compress_level))
            + _chunk(b"IEND", b""))


def resize(image, height, width):
    """`image` (H, W, C uint8) resized with Pillow's Lanczos filter, as PyTorch does."""
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError("rescaling an image for TensorBoard requires Pillow "
                          "(pip install pillow)") from err
    squeeze = image.shape[2] == 1
    pil = Image.fromarray(image[:, :, 0] if squeeze else image)
    out = np.asarray(pil.resize((width, height), Image.Resampling.LANCZOS))
    return out[:, :, None] if squeeze else out
