"""Colour and intensity ops: normalize, grayscale, brightness/contrast/saturation/hue,
gamma, sharpness, posterize/solarize/autocontrast/equalize, blur and erasing.

Tensor formulas follow torchvision's tensor backend (a blend ``r * img1 + (1 - r) * img2``
clamped to [0, max] and cast back, which truncates for uint8); PIL images use
``PIL.ImageEnhance`` / ``ImageOps`` as torchvision's PIL backend does.
"""
import numpy as np

import nbtorch
import nbtorch.nn.functional as NF
from nbtorch.vision.transforms._convert import convert_image_dtype
from nbtorch.vision.transforms._kinds import (apply, check_image_tensor, get_dimensions,
                                              is_pil, is_tensor, max_value)

__all__ = ["normalize", "rgb_to_grayscale", "to_grayscale", "adjust_brightness",
           "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_gamma",
           "adjust_sharpness", "invert", "posterize", "solarize", "autocontrast", "equalize",
           "gaussian_blur", "erase"]


def _channels(img, permitted):
    channels = get_dimensions(img)[0]
    if channels not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {permitted}, but "
                        f"found {channels}")
    return channels


def _blend(img1, img2, ratio):
    ratio = float(ratio)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, max_value(img1.dtype)).to(img1.dtype)


def _enhance(img, name, factor):
    from PIL import ImageEnhance
    return getattr(ImageEnhance, name)(img).enhance(factor)


def normalize(tensor, mean, std, inplace=False):
    """``(tensor - mean[c]) / std[c]`` per channel of a float ``(..., C, H, W)`` tensor.

    Example:
        >>> normalize(nbtorch.ones(1, 2, 2), [0.5], [0.5]).tolist()
        [[[1.0, 1.0], [1.0, 1.0]]]
    """
    if not is_tensor(tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.dim() < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got "
                         f"tensor.size() = {tuple(tensor.shape)}.")
    dtype = tensor.dtype.np
    mean = np.asarray(mean.tolist() if is_tensor(mean) else mean, dtype=dtype)
    std = np.asarray(std.tolist() if is_tensor(std) else std, dtype=dtype)
    if (std == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading "
                         "to division by zero.")
    if mean.ndim == 1:
        mean = mean.reshape(-1, 1, 1)
    if std.ndim == 1:
        std = std.reshape(-1, 1, 1)
    mean = nbtorch.from_numpy(mean).to(device=tensor.device, dtype=tensor.dtype)
    std = nbtorch.from_numpy(std).to(device=tensor.device, dtype=tensor.dtype)
    if inplace:
        return tensor.sub_(mean).div_(std)
    return (tensor - mean) / std


def _gray_tensor(img, num_output_channels):
    if img.dim() < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found "
                        f"{img.dim()}")
    _channels(img, [1, 3])
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(dim=-3)
        gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(-3)
    else:
        gray = img.clone()
    return gray.expand(img.shape) if num_output_channels == 3 else gray


def rgb_to_grayscale(img, num_output_channels=1):
    """ITU-R 601-2 luma ``0.2989 R + 0.587 G + 0.114 B`` (cast back to the image's dtype,
    so uint8 truncates), as 1 channel or repeated to 3."""
    if is_pil(img):
        gray = img.convert("L")
        return gray.convert("RGB") if num_output_channels == 3 else gray
    return apply(img, lambda t: _gray_tensor(t, num_output_channels))


to_grayscale = rgb_to_grayscale


def adjust_brightness(img, brightness_factor):
    """Multiply by ``brightness_factor`` (0 gives black, 1 the original), clamped."""
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    if is_pil(img):
        return _enhance(img, "Brightness", brightness_factor)

    def on_tensor(t):
        check_image_tensor(t)
        _channels(t, [1, 3])
        return _blend(t, nbtorch.zeros_like(t), brightness_factor)
    return apply(img, on_tensor)


def adjust_contrast(img, contrast_factor):
    """Blend with the mean gray level (0 gives a flat gray image, 1 the original)."""
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    if is_pil(img):
        return _enhance(img, "Contrast", contrast_factor)

    def on_tensor(t):
        check_image_tensor(t)
        channels = _channels(t, [3, 1])
        dtype = t.dtype if t.is_floating_point() else nbtorch.float32
        gray = _gray_tensor(t, 1) if channels == 3 else t
        mean = gray.to(dtype).mean(dim=(-3, -2, -1), keepdim=True)
        return _blend(t, mean, contrast_factor)
    return apply(img, on_tensor)


def adjust_saturation(img, saturation_factor):
    """Blend with the grayscale image (0 gives gray, 1 the original, 2 doubles saturation)."""
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    if is_pil(img):
        return _enhance(img, "Color", saturation_factor)

    def on_tensor(t):
        check_image_tensor(t)
        if _channels(t, [1, 3]) == 1:
            return t
        return _blend(t, _gray_tensor(t, 1), saturation_factor)
    return apply(img, on_tensor)


def _rgb2hsv(img):
    r, g, b = img.unbind(dim=-3)
    maxc = img.max(dim=-3).values
    minc = img.min(dim=-3).values
    eqc = maxc == minc
    cr = maxc - minc
    ones = nbtorch.ones_like(maxc)
    s = cr / nbtorch.where(eqc, ones, maxc)
    cr_divisor = nbtorch.where(eqc, ones, cr)
    rc, gc, bc = (maxc - r) / cr_divisor, (maxc - g) / cr_divisor, (maxc - b) / cr_divisor
    hr = (maxc == r).to(img.dtype) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)).to(img.dtype) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)).to(img.dtype) * (4.0 + gc - rc)
    h = nbtorch.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return h, s, maxc


def _hsv2rgb(h, s, v):
    i = nbtorch.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.to(nbtorch.int32) % 6
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    table = ((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))
    sectors = [(i == k).to(h.dtype) for k in range(6)]
    channels = [sum(sector * value for sector, value in zip(sectors, row)) for row in table]
    return nbtorch.stack(channels, dim=-3)


def adjust_hue(img, hue_factor):
    """Rotate the hue by ``hue_factor`` turns (in [-0.5, 0.5]) through HSV space."""
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if is_pil(img):
        return _adjust_hue_pil(img, hue_factor)

    def on_tensor(t):
        check_image_tensor(t)
        if _channels(t, [1, 3]) == 1:
            return t
        dtype = t.dtype
        h, s, v = _rgb2hsv(convert_image_dtype(t, nbtorch.float32))
        return convert_image_dtype(_hsv2rgb((h + hue_factor) % 1.0, s, v), dtype)
    return apply(img, on_tensor)


def _adjust_hue_pil(img, hue_factor):
    """Pillow's HSV conversion with the hue byte shifted (torchvision's PIL backend)."""
    if img.mode in ("L", "1", "I", "F"):
        return img
    from PIL import Image
    h, s, v = img.convert("HSV").split()
    shifted = np.array(h, dtype=np.uint8)
    with np.errstate(over="ignore"):
        shifted += np.uint8(int(hue_factor * 255) % 256)
    h = Image.fromarray(shifted)
    return Image.merge("HSV", (h, s, v)).convert(img.mode)


def adjust_gamma(img, gamma, gain=1):
    """``gain * img ** gamma`` on the [0, 1] scale, clamped."""
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    if is_pil(img):
        mode = img.mode
        table = [int((255 + 1 - 1e-3) * gain * pow(x / 255.0, gamma)) for x in range(256)]
        return img.convert("RGB").point(table * 3).convert(mode)

    def on_tensor(t):
        _channels(t, [1, 3])
        dtype = t.dtype
        result = t if t.is_floating_point() else convert_image_dtype(t, nbtorch.float32)
        return convert_image_dtype((gain * result ** gamma).clamp(0, 1), dtype)
    return apply(img, on_tensor)


def _blurred_degenerate(t):
    """PIL's SMOOTH filter (3x3, centre weight 5) on the interior, the border kept."""
    dtype = t.dtype if t.is_floating_point() else nbtorch.float32
    kernel = np.ones((3, 3))
    kernel[1, 1] = 5.0
    kernel /= kernel.sum()
    channels = t.shape[-3]
    weight = nbtorch.from_numpy(kernel).to(device=t.device, dtype=dtype).expand(channels, 1, 3, 3)
    work = t.reshape((-1, channels) + tuple(t.shape[-2:])).to(dtype)
    smooth = NF.conv2d(work, weight, groups=channels)
    if not t.is_floating_point():
        smooth = smooth.round()
    result = t.clone()
    inner = tuple(t.shape[:-2]) + tuple(smooth.shape[-2:])
    result[..., 1:-1, 1:-1] = smooth.to(t.dtype).reshape(inner)
    return result


def adjust_sharpness(img, sharpness_factor):
    """Blend with a smoothed copy (0 blurs, 1 keeps, 2 sharpens)."""
    if sharpness_factor < 0:
        raise ValueError(f"sharpness_factor ({sharpness_factor}) is not non-negative.")
    if is_pil(img):
        return _enhance(img, "Sharpness", sharpness_factor)

    def on_tensor(t):
        check_image_tensor(t)
        _channels(t, [1, 3])
        if t.shape[-1] <= 2 or t.shape[-2] <= 2:
            return t
        return _blend(t, _blurred_degenerate(t), sharpness_factor)
    return apply(img, on_tensor)


def _at_least_3d(t):
    check_image_tensor(t)
    if t.dim() < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found "
                        f"{t.dim()}")
    _channels(t, [1, 3])


def invert(img):
    """``max - img`` (255 - x for uint8, 1 - x for floats)."""
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.invert(img)

    def on_tensor(t):
        _at_least_3d(t)
        if t.dtype is nbtorch.bool:
            return ~t
        return max_value(t.dtype) - t
    return apply(img, on_tensor)


def posterize(img, bits):
    """Keep the ``bits`` high bits of each uint8 value."""
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.posterize(img, bits)

    def on_tensor(t):
        _at_least_3d(t)
        if t.dtype is not nbtorch.uint8:
            raise TypeError(f"Only torch.uint8 image tensors are supported, but found {t.dtype}")
        return t & (256 - 2 ** (8 - bits))
    return apply(img, on_tensor)


def solarize(img, threshold):
    """Invert every value at or above ``threshold``."""
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.solarize(img, threshold)

    def on_tensor(t):
        _at_least_3d(t)
        if threshold > max_value(t.dtype):
            raise TypeError("Threshold should be less than bound of img.")
        return nbtorch.where(t >= threshold, invert(t), t)
    return apply(img, on_tensor)


def autocontrast(img):
    """Stretch each channel so its minimum becomes 0 and its maximum full intensity."""
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.autocontrast(img)

    def on_tensor(t):
        _at_least_3d(t)
        bound = max_value(t.dtype)
        dtype = t.dtype if t.is_floating_point() else nbtorch.float32
        minimum = t.amin(dim=(-2, -1), keepdim=True).to(dtype)
        maximum = t.amax(dim=(-2, -1), keepdim=True).to(dtype)
        flat = maximum == minimum
        scale = bound / nbtorch.where(flat, nbtorch.ones_like(maximum), maximum - minimum)
        minimum = nbtorch.where(flat, nbtorch.zeros_like(minimum), minimum)
        scale = nbtorch.where(flat, nbtorch.ones_like(scale), scale)
        return ((t - minimum) * scale).clamp(0, bound).to(t.dtype)
    return apply(img, on_tensor)


def _equalize_channel(values):
    """PIL's histogram equalisation of one uint8 channel (a NumPy array)."""
    hist = np.bincount(values.reshape(-1), minlength=256)
    nonzero = hist[hist != 0]
    step = int(nonzero[:-1].sum()) // 255
    if step == 0:
        return values
    lut = (np.cumsum(hist) + step // 2) // step
    lut = np.clip(np.concatenate([[0], lut[:-1]]), 0, 255).astype(np.uint8)
    return lut[values]


def equalize(img):
    """Equalise each channel's histogram (uint8 images)."""
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.equalize(img)

    def on_tensor(t):
        _at_least_3d(t)
        if t.dtype is not nbtorch.uint8:
            raise TypeError(f"Only torch.uint8 image tensors are supported, but found {t.dtype}")
        array = t.detach().cpu().numpy()
        planes = array.reshape((-1,) + array.shape[-2:])
        out = np.stack([_equalize_channel(plane) for plane in planes]).reshape(array.shape)
        return nbtorch.from_numpy(out).to(t.device)
    return apply(img, on_tensor)


def _gaussian_kernel1d(size, sigma):
    half = (size - 1) * 0.5
    pdf = np.exp(-0.5 * (np.linspace(-half, half, size) / sigma) ** 2)
    return pdf / pdf.sum()


def gaussian_blur(img, kernel_size, sigma=None):
    """Blur with a ``kernel_size`` Gaussian (``sigma`` default ``0.3 * ((k - 1) * 0.5 - 1)
    + 0.8``, i.e. ``k * 0.15 + 0.35``), reflecting at the borders."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got "
                        f"{type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got "
                         f"{len(kernel_size)}")
    for ksize in kernel_size:
        if ksize % 2 == 0 or ksize < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got "
                             f"{kernel_size}")
    if sigma is None:
        sigma = [ksize * 0.15 + 0.35 for ksize in kernel_size]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    if len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")

    def on_tensor(t):
        check_image_tensor(t)
        dtype = t.dtype if t.is_floating_point() else nbtorch.float32
        kernel = np.outer(_gaussian_kernel1d(kernel_size[1], sigma[1]),
                          _gaussian_kernel1d(kernel_size[0], sigma[0]))
        channels = 1 if t.dim() == 2 else t.shape[-3]
        weight = nbtorch.from_numpy(kernel.astype(dtype.np)).to(t.device)
        weight = weight.expand(channels, 1, kernel_size[1], kernel_size[0])
        work = t.reshape((-1, channels) + tuple(t.shape[-2:])).to(dtype)
        kx, ky = kernel_size[0] // 2, kernel_size[1] // 2
        out = NF.conv2d(NF.pad(work, [kx, kx, ky, ky], mode="reflect"), weight, groups=channels)
        if not t.is_floating_point():
            out = out.round()
        return out.to(t.dtype).reshape(t.shape)
    return apply(img, on_tensor)


def erase(img, i, j, h, w, v, inplace=False):
    """Set the ``h x w`` window at ``(i, j)`` to ``v`` (a value or a tensor broadcastable
    to ``(C, h, w)``)."""
    if not is_tensor(img):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img
