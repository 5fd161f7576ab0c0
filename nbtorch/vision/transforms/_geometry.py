"""Geometric image ops: padding, crops, flips, resizing, rotation and affine warps.

Tensors go through nbtorch ops (``pad``, ``interpolate``, ``grid_sample``); PIL images
through Pillow's own methods where resampling is involved (as torchvision does), through
their pixel array where the op is exact; arrays as HWC pictures (see ``_kinds``).
"""
import math
import numbers

import numpy as np

import nbtorch
import nbtorch.nn.functional as NF
from nbtorch.vision.transforms._kinds import (_PIL_RESAMPLE, InterpolationMode, apply,
                                              array_to_pil_like, check_hwc, check_image_tensor,
                                              get_dimensions, interpolation_mode, is_pil,
                                              is_tensor)

__all__ = ["pad", "crop", "center_crop", "resized_crop", "hflip", "vflip", "resize",
           "resized_shape", "rotate", "affine", "five_crop", "ten_crop"]

_PADDING_MODES = ("constant", "edge", "reflect", "symmetric")


def _is_array(img):
    """True for a NumPy picture (checked to be HW(C), not CHW)."""
    if isinstance(img, np.ndarray):
        check_hwc(img)
        return True
    return False


def _padding_ltrb(padding):
    """int / [all] / [left-right, top-bottom] / [l, t, r, b] -> (left, top, right, bottom)."""
    if isinstance(padding, numbers.Number):
        return (int(padding),) * 4
    padding = [int(p) for p in padding]
    if len(padding) == 1:
        return tuple(padding * 4)
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    return tuple(padding)


def _pad_tensor(img, left, top, right, bottom, fill, padding_mode):
    check_image_tensor(img)
    # negative padding crops, as torch.nn.functional.pad does
    height, width = img.shape[-2:]
    img = img[..., max(-top, 0):height - max(-bottom, 0), max(-left, 0):width - max(-right, 0)]
    left, top, right, bottom = (max(p, 0) for p in (left, top, right, bottom))
    if padding_mode == "symmetric":
        rows = nbtorch.from_numpy(np.pad(np.arange(img.shape[-2]), (top, bottom), "symmetric"))
        cols = nbtorch.from_numpy(np.pad(np.arange(img.shape[-1]), (left, right), "symmetric"))
        return img.index_select(-2, rows.to(img.device)).index_select(-1, cols.to(img.device))
    lead = tuple(img.shape[:-2])
    work = img.reshape((-1, 1) + tuple(img.shape[-2:]))   # (N, C, H, W) for nn.functional.pad
    if padding_mode == "constant":
        out = NF.pad(work, [left, right, top, bottom], mode="constant", value=float(fill or 0))
    else:
        cast = work.dtype not in (nbtorch.float32, nbtorch.float64)
        source = work.to(nbtorch.float32) if cast else work
        out = NF.pad(source, [left, right, top, bottom],
                     mode="replicate" if padding_mode == "edge" else "reflect")
        out = out.to(work.dtype) if cast else out
    return out.reshape(lead + tuple(out.shape[-2:]))


def _pad_array(array, left, top, right, bottom, fill, padding_mode):
    """``pad`` of an HW(C) array with NumPy (negative amounts crop)."""
    height, width = array.shape[:2]
    array = array[max(-top, 0):height - max(-bottom, 0), max(-left, 0):width - max(-right, 0)]
    widths = [(max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))]
    widths += [(0, 0)] * (array.ndim - 2)
    if padding_mode != "constant":
        return np.pad(array, widths, mode=padding_mode)
    if isinstance(fill, (tuple, list)) and array.ndim == 3:
        planes = [np.pad(array[:, :, c], widths[:2], constant_values=fill[c % len(fill)])
                  for c in range(array.shape[2])]
        return np.stack(planes, axis=2)
    fill = fill[0] if isinstance(fill, (tuple, list)) else fill
    return np.pad(array, widths, constant_values=fill or 0)


def _pad_picture(img, left, top, right, bottom, fill, padding_mode):
    """``pad`` of a NumPy array or PIL image (through its pixel array)."""
    if _is_array(img):
        return _pad_array(img, left, top, right, bottom, fill, padding_mode)
    padded = _pad_array(np.asarray(img), left, top, right, bottom, fill, padding_mode)
    return array_to_pil_like(padded, img)


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad the borders: ``padding`` is an int, ``[left/right, top/bottom]`` or
    ``[left, top, right, bottom]``; modes 'constant' (``fill``), 'edge', 'reflect'
    (without repeating the edge) and 'symmetric' (repeating it). Negative padding crops.

    Example:
        >>> pad(nbtorch.ones(1, 2, 2), [1, 0]).shape
        torch.Size([1, 2, 4])
    """
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
        raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a "
                         f"{len(padding)} element tuple")
    if padding_mode not in _PADDING_MODES:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    left, top, right, bottom = _padding_ltrb(padding)
    if isinstance(img, np.ndarray) or is_pil(img):
        return _pad_picture(img, left, top, right, bottom, fill, padding_mode)
    if is_tensor(img) and isinstance(fill, (tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if isinstance(fill, (tuple, list)):          # per-channel fill of a PIL image or array
        fill_values = list(fill)

        def on_tensor(t):
            planes = [_pad_tensor(t[..., c:c + 1, :, :], left, top, right, bottom,
                                  fill_values[c % len(fill_values)], padding_mode)
                      for c in range(t.shape[-3])]
            return nbtorch.cat(planes, dim=-3)
        return apply(img, on_tensor)
    return apply(img, lambda t: _pad_tensor(t, left, top, right, bottom, fill, padding_mode))


def crop(img, top, left, height, width):
    """The ``height x width`` window at ``(top, left)``; parts outside the image are zeros."""
    def on_tensor(t):
        check_image_tensor(t)
        h, w = t.shape[-2:]
        right, bottom = left + width, top + height
        if left < 0 or top < 0 or right > w or bottom > h:
            padding = [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                       max(right - max(w, left), 0), max(bottom - max(h, top), 0)]
            return pad(t[..., max(top, 0):bottom, max(left, 0):right], padding, fill=0)
        return t[..., top:bottom, left:right]
    if is_pil(img):
        return img.crop((left, top, left + width, top + height))
    if _is_array(img) and top >= 0 and left >= 0 and \
            top + height <= img.shape[0] and left + width <= img.shape[1]:
        return img[top:top + height, left:left + width]
    return apply(img, on_tensor)


def _crop_size(output_size):
    if isinstance(output_size, numbers.Number):
        return int(output_size), int(output_size)
    output_size = tuple(output_size)
    if len(output_size) == 1:
        return int(output_size[0]), int(output_size[0])
    return int(output_size[0]), int(output_size[1])


def center_crop(img, output_size):
    """The central ``output_size`` window (zero-padded first where the image is smaller)."""
    crop_height, crop_width = _crop_size(output_size)
    _, image_height, image_width = get_dimensions(img)
    if crop_width > image_width or crop_height > image_height:
        padding_ltrb = [(crop_width - image_width) // 2 if crop_width > image_width else 0,
                        (crop_height - image_height) // 2 if crop_height > image_height else 0,
                        (crop_width - image_width + 1) // 2 if crop_width > image_width else 0,
                        (crop_height - image_height + 1) // 2 if crop_height > image_height else 0]
        img = pad(img, padding_ltrb, fill=0)
        _, image_height, image_width = get_dimensions(img)
        if crop_width == image_width and crop_height == image_height:
            return img
    top = int(round((image_height - crop_height) / 2.0))
    left = int(round((image_width - crop_width) / 2.0))
    return crop(img, top, left, crop_height, crop_width)


def hflip(img):
    """Mirror left-right."""
    if is_pil(img):
        return img.transpose(0)           # Image.Transpose.FLIP_LEFT_RIGHT
    if _is_array(img):
        return np.ascontiguousarray(img[:, ::-1])
    return apply(img, lambda t: (check_image_tensor(t), t.flip(-1))[1])


def vflip(img):
    """Mirror top-bottom."""
    if is_pil(img):
        return img.transpose(1)           # Image.Transpose.FLIP_TOP_BOTTOM
    if _is_array(img):
        return np.ascontiguousarray(img[::-1])
    return apply(img, lambda t: (check_image_tensor(t), t.flip(-2))[1])


def resized_shape(height, width, size, max_size=None):
    """The ``(height, width)`` that ``resize(size, max_size)`` gives an image (torchvision's
    rule: an int or 1-sequence sets the smaller edge, keeping the aspect ratio)."""
    if size is None or isinstance(size, int) or len(size) == 1:
        short, long = (height, width) if height <= width else (width, height)
        if size is None:
            if max_size is None:
                raise ValueError("If size=None, max_size must be set")
            new_short, new_long = int(max_size * short / long), max_size
        else:
            requested = size if isinstance(size, int) else size[0]
            new_short, new_long = requested, int(requested * long / short)
            if max_size is not None:
                if max_size <= requested:
                    raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                                     f"requested size for the smaller edge size = {size}")
                if new_long > max_size:
                    new_short, new_long = int(max_size * new_short / new_long), max_size
        return (new_short, new_long) if height <= width else (new_long, new_short)
    if max_size is not None:
        raise ValueError("max_size should only be passed if size is None or specifies the "
                         "length of the smaller edge, i.e. size should be an int or a sequence "
                         "of length 1 in torchscript mode.")
    return int(size[0]), int(size[1])


def _resize_tensor(img, height, width, mode, antialias):
    check_image_tensor(img)
    if mode not in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT,
                    InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
        raise ValueError(f"Interpolation mode '{mode.value}' is unsupported with Tensor input")
    lead = tuple(img.shape[:-2])
    work = img.reshape((-1, 1) + tuple(img.shape[-2:]))
    dtype = work.dtype
    smooth = mode in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC)
    native = dtype in (nbtorch.float32, nbtorch.float64, nbtorch.uint8) or not smooth
    if not native:
        work = work.to(nbtorch.float32)
    out = NF.interpolate(work, size=(height, width), mode=mode.value,
                         align_corners=False if smooth else None,
                         antialias=bool(antialias) and smooth)
    if not native:
        if not (dtype.is_floating_point or dtype is nbtorch.bool):
            out = out.round()
            if mode is InterpolationMode.BICUBIC:
                info = np.iinfo(dtype.np)
                out = out.clamp(info.min, info.max)
        out = out.to(dtype)
    return out.reshape(lead + (height, width))


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to ``size`` ``(h, w)``, or (an int) so the smaller edge gets that length.

    Tensors: ``interpolate`` with ``align_corners=False``; bilinear and bicubic
    antialias when downscaling unless ``antialias=False`` (torchvision's default since
    0.17). uint8 stays uint8 (rounded). PIL images use Pillow's ``resize``, whose
    filters always antialias.

    Example:
        >>> resize(nbtorch.zeros(3, 4, 6), 2).shape
        torch.Size([3, 2, 3])
    """
    mode = interpolation_mode(interpolation)
    if not (size is None or isinstance(size, (int, list, tuple))):
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    if isinstance(size, (list, tuple)) and len(size) not in (1, 2):
        raise ValueError("If size is a sequence, it should have 1 or 2 values")
    _, height, width = get_dimensions(img)
    out_height, out_width = resized_shape(height, width, size, max_size)
    if out_height <= 0 or out_width <= 0:
        raise ValueError(f"Resize: output size must be positive, got {(out_height, out_width)}")
    if (out_height, out_width) == (height, width):
        return img
    if is_pil(img):
        if mode is InterpolationMode.NEAREST_EXACT:
            raise ValueError("Interpolation mode 'nearest-exact' is unsupported with PIL input")
        return img.resize((out_width, out_height), _PIL_RESAMPLE[mode])
    return apply(img, lambda t: _resize_tensor(t, out_height, out_width, mode, antialias))


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
    """``crop`` then ``resize`` to ``size`` (what ``RandomResizedCrop`` applies)."""
    img = crop(img, top, left, height, width)
    return resize(img, size, interpolation, antialias=antialias)


# ---- affine warps ----------------------------------------------------------------------

def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True):
    """The 2x3 matrix (flattened) mapping output pixels to input pixels of the warp
    ``T * C * R * S * Sh * C^-1`` (translate, rotate ``angle`` degrees clockwise about
    ``center``, scale, shear in degrees), torchvision's convention."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        matrix = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
        matrix[2] += matrix[0] * (-cx - tx) + matrix[1] * (-cy - ty) + cx
        matrix[5] += matrix[3] * (-cx - tx) + matrix[4] * (-cy - ty) + cy
        return matrix
    matrix = [a * scale, b * scale, 0.0, c * scale, d * scale, 0.0]
    matrix[2] += matrix[0] * (-cx) + matrix[1] * (-cy) + cx + tx
    matrix[5] += matrix[3] * (-cx) + matrix[4] * (-cy) + cy + ty
    return matrix


def _affine_grid(matrix, width, height, out_width, out_height):
    """grid_sample coordinates of each output pixel: the matrix applied to pixel centres
    measured from the image centre, normalised by the input's half-size."""
    theta = np.asarray(matrix, np.float64).reshape(2, 3)
    xs = np.linspace(-out_width * 0.5 + 0.5, out_width * 0.5 - 0.5, out_width)
    ys = np.linspace(-out_height * 0.5 + 0.5, out_height * 0.5 - 0.5, out_height)
    base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], np.ones((1, 1))), axis=-1)
    grid = base @ theta.T / np.array([0.5 * width, 0.5 * height])
    return grid[None]


def _fill_list(fill, channels):
    if fill is None:
        return None
    if isinstance(fill, (tuple, list)):
        if len(fill) > 1 and len(fill) != channels:
            raise ValueError("The number of elements in 'fill' cannot broadcast to match the "
                             f"number of channels of the image ({len(fill)} != {channels})")
        return [float(f) for f in fill]
    return [float(fill)]


def _warp_tensor(img, matrix, mode, fill, out_height=None, out_width=None, grid=None):
    """torchvision's grid transform: ``grid_sample`` (zeros outside), then ``fill`` blended
    in through an extra all-ones channel that records where the samples came from."""
    check_image_tensor(img)
    if mode not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
        raise ValueError(f"Interpolation mode '{mode.value}' is unsupported with Tensor input")
    height, width = img.shape[-2:]
    out_height, out_width = out_height or height, out_width or width
    channels = 1 if img.dim() == 2 else img.shape[-3]
    fill = _fill_list(fill, channels)
    dtype = img.dtype
    work_dtype = dtype if dtype in (nbtorch.float32, nbtorch.float64) else nbtorch.float32
    lead = tuple(img.shape[:-3]) if img.dim() > 2 else ()
    work = img.reshape((-1, channels, height, width)).to(work_dtype)
    batch = work.shape[0]
    if fill is not None:
        ones = nbtorch.ones((batch, 1, height, width), dtype=work_dtype, device=img.device)
        work = nbtorch.cat([work, ones], dim=1)
    if grid is None:
        grid = _affine_grid(matrix, width, height, out_width, out_height)
    grid = nbtorch.from_numpy(grid)
    grid = grid.to(device=img.device, dtype=work_dtype).expand(batch, out_height, out_width, 2)
    out = NF.grid_sample(work, grid, mode=mode.value, padding_mode="zeros",
                         align_corners=False)
    if fill is not None:
        mask, out = out[:, -1:], out[:, :-1]
        fill_img = nbtorch.tensor(fill, dtype=work_dtype, device=img.device).reshape(1, -1, 1, 1)
        if mode is InterpolationMode.NEAREST:
            out = nbtorch.where(mask < 0.5, fill_img.expand_as(out), out)
        else:
            out = out * mask + (1.0 - mask) * fill_img
    if work_dtype is not dtype:
        out = (out.round() if not dtype.is_floating_point else out).to(dtype)
    shape = lead + ((channels,) if img.dim() > 2 else ()) + (out_height, out_width)
    return out.reshape(shape)


def _pil_fill(fill, img):
    """``fill`` as Pillow's ``fillcolor``: one value per band, ints unless the mode is 'F'."""
    bands = len(img.getbands())
    fill = 0 if fill is None else fill
    if isinstance(fill, numbers.Number) and bands > 1:
        fill = (fill,) * bands
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = tuple(fill) * bands
        elif len(fill) != bands:
            raise ValueError("The number of elements in 'fill' does not match the number of "
                             f"channels of the image ({len(fill)} != {bands})")
        return tuple(fill if img.mode == "F" else (int(x) for x in fill))
    return fill if img.mode == "F" else int(fill)


def _expanded_size(matrix, width, height):
    """Output (width, height) that holds the whole warped image (PIL's ``expand=True``)."""
    theta = np.asarray(matrix, np.float64).reshape(2, 3)
    corners = np.array([[-0.5 * width, -0.5 * height, 1.0], [-0.5 * width, 0.5 * height, 1.0],
                        [0.5 * width, 0.5 * height, 1.0], [0.5 * width, -0.5 * height, 1.0]])
    points = corners @ theta.T
    low = points.min(axis=0) + (width * 0.5, height * 0.5)
    high = points.max(axis=0) + (width * 0.5, height * 0.5)
    tol = 1e-4
    size = np.ceil(np.trunc(high / tol) * tol) - np.floor(np.trunc(low / tol) * tol)
    return int(size[0]), int(size[1])


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Rotate ``angle`` degrees counter-clockwise about ``center`` (default: the middle).

    Pixels from outside the image take ``fill`` (zeros when None); ``expand=True`` grows
    the output to hold the whole rotated image.
    """
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    mode = interpolation_mode(interpolation)
    if is_pil(img):
        return img.rotate(angle, _PIL_RESAMPLE[mode], expand, center,
                          fillcolor=_pil_fill(fill, img))
    _, height, width = get_dimensions(img)
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    out_width, out_height = _expanded_size(matrix, width, height) if expand else (width, height)
    return apply(img, lambda t: _warp_tensor(t, matrix, mode, fill, out_height, out_width))


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Rotate ``angle`` degrees clockwise, scale, shear (degrees, x then y) about the
    centre, then translate by ``translate`` pixels, keeping the image size."""
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    mode = interpolation_mode(interpolation)
    _, height, width = get_dimensions(img)
    if is_pil(img):
        pil_center = [width * 0.5, height * 0.5] if center is None else list(center)
        matrix = _get_inverse_affine_matrix(pil_center, angle, translate, scale, shear)
        return img.transform(img.size, 0, matrix, _PIL_RESAMPLE[mode],   # Image.AFFINE
                             fillcolor=_pil_fill(fill, img))
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    matrix = _get_inverse_affine_matrix(center_f, angle, [1.0 * t for t in translate], scale,
                                        shear)
    return apply(img, lambda t: _warp_tensor(t, matrix, mode, fill))


def five_crop(img, size):
    """The four corner crops and the centre crop of ``size``: ``(tl, tr, bl, br, center)``."""
    if isinstance(size, numbers.Number):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = size
    if crop_width > image_width or crop_height > image_height:
        raise ValueError(f"Requested crop size {size} is bigger than input size "
                         f"{(image_height, image_width)}")
    bottom, right = image_height - crop_height, image_width - crop_width
    return (crop(img, 0, 0, crop_height, crop_width), crop(img, 0, right, crop_height, crop_width),
            crop(img, bottom, 0, crop_height, crop_width),
            crop(img, bottom, right, crop_height, crop_width),
            center_crop(img, [crop_height, crop_width]))


def ten_crop(img, size, vertical_flip=False):
    """``five_crop`` of the image, then of its mirror (left-right, or top-bottom)."""
    flipped = vflip(img) if vertical_flip else hflip(img)
    return five_crop(img, size) + five_crop(flipped, size)
