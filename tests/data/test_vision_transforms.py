"""nbtorch.vision.transforms against NumPy references, PyTorch's interpolate/grid_sample
(when torch is installed) and Pillow's own ops (when Pillow is installed).

Image kinds: CHW tensors, HWC NumPy arrays (processed as pictures, returned as HWC) and
PIL images (transformed with Pillow's methods, returned as PIL images)."""
import colorsys

import numpy as np
import pytest

import nbtorch
from nbtorch.vision import transforms as T
from nbtorch.vision.transforms import functional as F


def hwc(height=10, width=12, channels=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), dtype=np.uint8)


def chw(array):
    return nbtorch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


# ---- ToTensor / conversions ---------------------------------------------------------------

def test_to_tensor_dtypes_follow_torchvision():
    bools = np.array([[True, False], [False, True]])
    out = F.to_tensor(bools)                      # not ByteTensor: returned as bool, unscaled
    assert out.dtype == nbtorch.bool and out.shape == (1, 2, 2)
    assert out.numpy()[0].tolist() == bools.tolist()
    ints = np.arange(6, dtype=np.int16).reshape(1, 2, 3)
    assert F.to_tensor(ints).dtype == nbtorch.int16 and F.to_tensor(ints).shape == (3, 1, 2)
    image = hwc()
    np.testing.assert_allclose(F.to_tensor(image).numpy(),
                               image.transpose(2, 0, 1).astype(np.float32) / np.float32(255))


def test_to_tensor_follows_the_default_dtype():
    previous = nbtorch.get_default_dtype()
    nbtorch.set_default_dtype(nbtorch.float64)
    try:
        assert F.to_tensor(hwc()).dtype == nbtorch.float64
    finally:
        nbtorch.set_default_dtype(previous)


def test_to_tensor_pil_modes():
    Image = pytest.importorskip("PIL.Image")
    image = hwc()
    np.testing.assert_allclose(F.to_tensor(Image.fromarray(image)).numpy(),
                               image.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    gray = Image.fromarray(image[:, :, 0])
    assert F.to_tensor(gray).shape == (1, 10, 12)
    binary = F.to_tensor(Image.fromarray(image[:, :, 0] > 128))
    assert binary.dtype == nbtorch.float32
    assert binary.numpy()[0].tolist() == (image[:, :, 0] > 128).astype(np.float32).tolist()
    ints = Image.fromarray(np.arange(6, dtype=np.int32).reshape(2, 3))     # mode 'I'
    out = F.to_tensor(ints)
    assert out.dtype == nbtorch.int32 and out.numpy().ravel().tolist() == list(range(6))
    floats = F.to_tensor(Image.fromarray(np.full((2, 2), 0.25, np.float32)))  # mode 'F'
    assert floats.dtype == nbtorch.float32 and floats.numpy().max() == 0.25


def test_pil_to_tensor_and_to_pil_image_round_trip():
    Image = pytest.importorskip("PIL.Image")
    image = hwc()
    tensor = F.pil_to_tensor(Image.fromarray(image))
    assert tensor.dtype == nbtorch.uint8
    np.testing.assert_array_equal(tensor.numpy(), image.transpose(2, 0, 1))
    back = T.ToPILImage()(tensor)
    assert back.mode == "RGB" and np.array_equal(np.asarray(back), image)
    floats = T.ToPILImage()(nbtorch.full((1, 2, 2), 0.5))        # x * 255, truncated to uint8
    assert floats.mode == "L" and np.asarray(floats).tolist() == [[127, 127], [127, 127]]
    assert F.to_pil_image(image[:, :, :1]).mode == "L"
    assert F.to_pil_image(np.zeros((2, 2, 4), np.uint8)).mode == "RGBA"
    assert F.to_pil_image(np.zeros((2, 2), np.float32)).mode == "F"
    with pytest.raises(TypeError, match="pic should be Tensor or ndarray"):
        F.to_pil_image([1, 2])
    with pytest.raises(ValueError, match="pic should not have > 4 channels"):
        F.to_pil_image(nbtorch.zeros(5, 2, 2))
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional"):
        F.to_pil_image(nbtorch.zeros(1, 1, 2, 2))


def test_convert_image_dtype():
    u8 = nbtorch.tensor([[[0, 1, 128, 255]]], dtype=nbtorch.uint8)
    as_float = T.ConvertImageDtype(nbtorch.float32)(u8)
    np.testing.assert_allclose(as_float.numpy(), np.array([[[0, 1, 128, 255]]]) / 255.0, rtol=1e-6)
    floats = nbtorch.tensor([[[0.0, 0.5, 0.999, 1.0]]])
    assert F.convert_image_dtype(floats, nbtorch.uint8).tolist() == [[[0, 127, 255, 255]]]
    wide = F.convert_image_dtype(u8, nbtorch.int16)              # * 32768 // 256
    assert wide.dtype == nbtorch.int16 and wide.tolist() == [[[0, 128, 128 * 128, 255 * 128]]]
    assert F.convert_image_dtype(wide, nbtorch.uint8).tolist() == u8.tolist()
    with pytest.raises(RuntimeError, match="cannot be performed safely"):
        F.convert_image_dtype(floats, nbtorch.int32)


# ---- NumPy HWC arrays and PIL images go through every transform --------------------------

def test_hwc_arrays_are_pictures():
    image = hwc()
    flipped = F.hflip(image)
    assert isinstance(flipped, np.ndarray) and np.array_equal(flipped, image[:, ::-1])
    np.testing.assert_array_equal(F.vflip(image), image[::-1])
    np.testing.assert_array_equal(F.crop(image, 2, 3, 4, 5), image[2:6, 3:8])
    np.testing.assert_array_equal(F.center_crop(image, 4), image[3:7, 4:8])
    resized = F.resize(image, [5, 6])
    assert resized.shape == (5, 6, 3) and resized.dtype == np.uint8
    np.testing.assert_array_equal(resized, F.resize(chw(image), [5, 6]).numpy().transpose(1, 2, 0))
    padded = F.pad(image[:, :, 0], [1, 2], padding_mode="reflect")
    np.testing.assert_array_equal(padded, np.pad(image[:, :, 0], [(2, 2), (1, 1)], "reflect"))


def test_pil_images_use_pillow_ops():
    Image = pytest.importorskip("PIL.Image")
    image = hwc()
    pil = Image.fromarray(image)
    np.testing.assert_array_equal(np.asarray(F.hflip(pil)), image[:, ::-1])
    np.testing.assert_array_equal(np.asarray(F.vflip(pil)), image[::-1])
    np.testing.assert_array_equal(np.asarray(F.crop(pil, 2, 3, 4, 5)), image[2:6, 3:8])
    out = F.pad(pil, [1, 2, 3, 4], fill=(1, 2, 3))
    assert out.mode == "RGB" and out.size == (12 + 4, 10 + 6)
    np.testing.assert_array_equal(np.asarray(out)[0, 0], [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(F.pad(pil, 2, padding_mode="symmetric")),
                                  np.pad(image, [(2, 2), (2, 2), (0, 0)], "symmetric"))
    resized = T.Resize((5, 7))(pil)
    assert np.array_equal(np.asarray(resized), np.asarray(pil.resize((7, 5), Image.BILINEAR)))
    assert T.Resize(5)(pil).size == (6, 5)
    gray = T.Grayscale()(pil)
    assert gray.mode == "L"
    nbtorch.manual_seed(0)
    assert T.RandomResizedCrop(4)(pil).size == (4, 4)


# ---- crops, padding -----------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_modes_match_numpy_for_uint8_batches(mode):
    data = np.random.default_rng(1).integers(0, 256, (2, 3, 4, 5), dtype=np.uint8)
    out = F.pad(nbtorch.from_numpy(data), [1, 2, 3, 1], fill=9, padding_mode=mode)
    widths = [(0, 0), (0, 0), (2, 1), (1, 3)]
    numpy_mode = {"edge": "edge"}.get(mode, mode)
    kwargs = {"constant_values": 9} if mode == "constant" else {}
    assert out.dtype == nbtorch.uint8
    np.testing.assert_array_equal(out.numpy(), np.pad(data, widths, numpy_mode, **kwargs))


def test_negative_padding_crops_and_pad_errors():
    data = np.arange(20.0).reshape(1, 4, 5)
    out = F.pad(nbtorch.from_numpy(data), [-1, 1, 0, -2])     # left -1, top 1, right 0, bottom -2
    np.testing.assert_array_equal(out.numpy(), np.pad(data[:, :2, 1:], [(0, 0), (1, 0), (0, 0)]))
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4 element tuple, not a 3"):
        T.Pad([1, 2, 3])
    with pytest.raises(TypeError, match="Got inappropriate padding arg"):
        T.Pad("1")


def test_crop_outside_the_image_zero_pads():
    data = np.arange(1.0, 13.0).reshape(1, 3, 4)
    out = F.crop(nbtorch.from_numpy(data), -1, 2, 3, 4).numpy()
    expected = np.zeros((1, 3, 4))
    expected[:, 1:, :2] = data[:, :2, 2:]
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(F.center_crop(nbtorch.from_numpy(data), [5, 4]).numpy(),
                                  np.pad(data, [(0, 0), (1, 1), (0, 0)]))


# ---- RandomResizedCrop ---------------------------------------------------------------------

def test_random_resized_crop_params_within_scale_and_ratio():
    img = nbtorch.zeros(3, 40, 60)
    nbtorch.manual_seed(0)
    draws = [T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3)) for _ in range(50)]
    nbtorch.manual_seed(0)
    again = [T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3)) for _ in range(50)]
    assert draws == again and len(set(draws)) > 40
    for top, left, h, w in draws:
        assert 0 <= top <= 40 - h and 0 <= left <= 60 - w
        assert 0.08 * 2400 * 0.8 <= h * w <= 2400            # rounding slack
        assert 3 / 4 * 0.8 <= w / h <= 4 / 3 * 1.25


def test_random_resized_crop_fallback_is_the_clipped_centre():
    img = nbtorch.zeros(1, 10, 40)                         # aspect 4 > 4/3: no try can fit
    assert T.RandomResizedCrop.get_params(img, (5.0, 6.0), (3 / 4, 4 / 3)) == (0, 13, 10, 13)
    tall = nbtorch.zeros(1, 40, 10)
    assert T.RandomResizedCrop.get_params(tall, (5.0, 6.0), (3 / 4, 4 / 3)) == (13, 0, 13, 10)
    square = nbtorch.zeros(1, 8, 8)
    assert T.RandomResizedCrop.get_params(square, (5.0, 6.0), (3 / 4, 4 / 3)) == (0, 0, 8, 8)


def test_random_resized_crop_forward_is_resized_crop_of_its_params():
    data = nbtorch.from_numpy(np.random.default_rng(2).random((3, 20, 30)).astype(np.float32))
    transform = T.RandomResizedCrop((7, 9), interpolation=T.InterpolationMode.BICUBIC)
    nbtorch.manual_seed(5)
    out = transform(data)
    nbtorch.manual_seed(5)
    top, left, h, w = transform.get_params(data, transform.scale, transform.ratio)
    expected = F.resize(data[:, top:top + h, left:left + w], [7, 9], T.InterpolationMode.BICUBIC)
    assert out.shape == (3, 7, 9)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    with pytest.raises(ValueError, match="Please provide only two dimensions"):
        T.RandomResizedCrop((1, 2, 3))
    with pytest.raises(TypeError, match="Scale should be a sequence"):
        T.RandomResizedCrop(4, scale=0.5)


def test_resize_uint8_antialias_matches_torch_within_one():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(3).integers(0, 256, (2, 3, 31, 37), dtype=np.uint8)
    for mode in ("bilinear", "bicubic"):
        out = T.Resize((11, 13), interpolation=mode)(nbtorch.from_numpy(data))
        expected = torch.nn.functional.interpolate(torch.from_numpy(data).float(), size=(11, 13),
                                                   mode=mode, align_corners=False, antialias=True)
        expected = expected.round().clamp(0, 255).to(torch.uint8).numpy()
        assert out.dtype == nbtorch.uint8 and out.shape == (2, 3, 11, 13)
        assert np.abs(out.numpy().astype(int) - expected.astype(int)).max() <= 1


def test_resize_keeps_small_images_and_validates():
    data = nbtorch.zeros(3, 4, 6)
    assert F.resize(data, 4) is data                      # already the requested size
    assert F.resize(data, None, max_size=3).shape == (3, 2, 3)
    with pytest.raises(TypeError, match="Size should be int or sequence"):
        T.Resize(4.5)
    with pytest.raises(ValueError, match="If size is a sequence, it should have 1 or 2 values"):
        T.Resize([1, 2, 3])


# ---- flips -----------------------------------------------------------------------------------

def test_vertical_flip_and_probabilities():
    data = nbtorch.from_numpy(np.arange(24.0).reshape(2, 3, 4))
    np.testing.assert_array_equal(T.RandomVerticalFlip(1.0)(data).numpy(), data.numpy()[:, ::-1])
    assert T.RandomVerticalFlip(0.0)(data) is data
    nbtorch.manual_seed(3)
    flips = sum(T.RandomVerticalFlip()(data).numpy()[0, 0, 0] != 0 for _ in range(200))
    assert 60 < flips < 140


# ---- colour ------------------------------------------------------------------------------------

def gray_np(rgb):
    return 0.2989 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]


def test_grayscale_matches_luma_formula():
    image = hwc()
    as_float = chw(image).to(nbtorch.float32) / 255
    out = F.rgb_to_grayscale(as_float)
    np.testing.assert_allclose(out.numpy()[0], gray_np(as_float.numpy()), rtol=1e-5)
    truncated = F.rgb_to_grayscale(chw(image)).numpy()[0]      # uint8 result is truncated
    np.testing.assert_array_equal(truncated, gray_np(image.transpose(2, 0, 1).astype(np.float32)).astype(np.uint8))
    three = T.Grayscale(3)(as_float)
    assert three.shape == (3, 10, 12) and np.array_equal(three.numpy()[0], three.numpy()[2])
    with pytest.raises(TypeError, match="permitted channel values are \\[1, 3\\], but found 2"):
        F.rgb_to_grayscale(nbtorch.zeros(2, 3, 3))


def test_brightness_contrast_saturation_match_numpy():
    image = hwc().transpose(2, 0, 1).astype(np.float32) / 255
    tensor = nbtorch.from_numpy(image)
    np.testing.assert_allclose(F.adjust_brightness(tensor, 1.7).numpy(), np.clip(image * 1.7, 0, 1), rtol=1e-6)
    mean = gray_np(image).mean()
    np.testing.assert_allclose(F.adjust_contrast(tensor, 0.3).numpy(),
                               np.clip(0.3 * image + 0.7 * mean, 0, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.adjust_saturation(tensor, 1.5).numpy(),
                               np.clip(1.5 * image - 0.5 * gray_np(image), 0, 1), rtol=1e-5, atol=1e-6)
    u8 = chw(hwc())
    expected = np.clip(1.7 * u8.numpy().astype(np.float32), 0, 255).astype(np.uint8)   # truncation
    np.testing.assert_array_equal(F.adjust_brightness(u8, 1.7).numpy(), expected)
    with pytest.raises(ValueError, match=r"brightness_factor \(-1\) is not non-negative"):
        F.adjust_brightness(tensor, -1)


def test_adjust_hue_matches_colorsys():
    image = np.random.default_rng(4).random((3, 4, 5)).astype(np.float32)
    out = F.adjust_hue(nbtorch.from_numpy(image), 0.2).numpy()
    expected = np.empty_like(image)
    for y in range(4):
        for x in range(5):
            h, s, v = colorsys.rgb_to_hsv(*image[:, y, x])
            expected[:, y, x] = colorsys.hsv_to_rgb((h + 0.2) % 1.0, s, v)
    np.testing.assert_allclose(out, expected, atol=1e-5)
    u8 = chw(hwc())
    assert F.adjust_hue(u8, -0.3).dtype == nbtorch.uint8
    with pytest.raises(ValueError, match=r"hue_factor \(0.6\) is not in \[-0.5, 0.5\]"):
        F.adjust_hue(u8, 0.6)


def test_tensor_colour_ops_agree_with_pillow():
    Image = pytest.importorskip("PIL.Image")
    image = hwc(16, 16)
    pil, tensor = Image.fromarray(image), chw(image)
    for fn, factor in ((F.adjust_brightness, 1.3), (F.adjust_saturation, 0.6),
                       (F.adjust_sharpness, 1.8), (F.adjust_hue, 0.1)):
        from_pil = np.asarray(fn(pil, factor)).astype(int)
        from_tensor = fn(tensor, factor).numpy().transpose(1, 2, 0).astype(int)
        assert np.abs(from_pil - from_tensor).mean() < 2.5, fn.__name__
    for fn in (F.equalize, F.invert, F.autocontrast):
        np.testing.assert_array_equal(np.asarray(fn(pil)), fn(tensor).numpy().transpose(1, 2, 0))
    np.testing.assert_array_equal(np.asarray(F.posterize(pil, 3)), F.posterize(tensor, 3).numpy().transpose(1, 2, 0))
    np.testing.assert_array_equal(np.asarray(F.solarize(pil, 100)), F.solarize(tensor, 100).numpy().transpose(1, 2, 0))


def test_posterize_solarize_invert_autocontrast_values():
    u8 = nbtorch.tensor([[[0, 37, 128, 255]]], dtype=nbtorch.uint8)
    assert F.posterize(u8, 3).tolist() == [[[0, 32, 128, 224]]]
    assert F.solarize(u8, 100).tolist() == [[[0, 37, 127, 0]]]
    assert F.invert(u8).tolist() == [[[255, 218, 127, 0]]]
    floats = nbtorch.tensor([[[0.25, 0.5, 0.75]]])
    np.testing.assert_allclose(F.autocontrast(floats).numpy(), [[[0.0, 0.5, 1.0]]])
    with pytest.raises(TypeError, match="Only torch.uint8 image tensors are supported"):
        F.posterize(floats, 3)


def test_color_jitter_params_and_reproducibility():
    jitter = T.ColorJitter(brightness=0.5, contrast=(0.2, 0.4), saturation=0, hue=0.25)
    assert jitter.brightness == (0.5, 1.5) and jitter.saturation is None and jitter.hue == (-0.25, 0.25)
    nbtorch.manual_seed(7)
    order, b, c, s, h = T.ColorJitter.get_params(jitter.brightness, jitter.contrast, None, jitter.hue)
    assert sorted(order.tolist()) == [0, 1, 2, 3] and s is None
    assert 0.5 <= b < 1.5 and 0.2 <= c < 0.4 and -0.25 <= h < 0.25
    image = nbtorch.from_numpy(np.random.default_rng(5).random((3, 6, 6)).astype(np.float32))
    nbtorch.manual_seed(11)
    first = jitter(image)
    nbtorch.manual_seed(11)
    np.testing.assert_array_equal(first.numpy(), jitter(image).numpy())
    nbtorch.manual_seed(11)
    order, b, c, _, h = T.ColorJitter.get_params(jitter.brightness, jitter.contrast, None, jitter.hue)
    expected = image
    for index in order.tolist():
        expected = {0: lambda x: F.adjust_brightness(x, b), 1: lambda x: F.adjust_contrast(x, c),
                    2: lambda x: x, 3: lambda x: F.adjust_hue(x, h)}[index](expected)
    np.testing.assert_array_equal(first.numpy(), expected.numpy())
    with pytest.raises(ValueError, match="If brightness is a single number, it must be non negative"):
        T.ColorJitter(brightness=-0.1)
    with pytest.raises(ValueError, match=r"hue values should be between \(-0.5, 0.5\)"):
        T.ColorJitter(hue=0.7)
    with pytest.raises(TypeError, match="contrast should be a single number or a list/tuple with length 2"):
        T.ColorJitter(contrast=(1, 2, 3))


# ---- blur, erasing -----------------------------------------------------------------------------

def reference_blur(image, size, sigma):
    half = (size - 1) / 2
    kernel = np.exp(-0.5 * (np.linspace(-half, half, size) / sigma) ** 2)
    kernel /= kernel.sum()
    radius = size // 2
    padded = np.pad(image, [(0, 0), (radius, radius), (radius, radius)], "reflect")
    out = np.zeros_like(image, dtype=np.float64)
    for dy in range(size):
        for dx in range(size):
            out += kernel[dy] * kernel[dx] * padded[:, dy:dy + image.shape[1], dx:dx + image.shape[2]]
    return out


def test_gaussian_blur_matches_a_direct_convolution():
    image = np.random.default_rng(6).random((3, 9, 11))
    out = F.gaussian_blur(nbtorch.from_numpy(image), [5, 5], [1.3, 1.3])
    np.testing.assert_allclose(out.numpy(), reference_blur(image, 5, 1.3), rtol=1e-10)
    u8 = chw(hwc())
    blurred = F.gaussian_blur(u8, 3)                       # sigma 3 * 0.15 + 0.35 = 0.8
    expected = np.round(reference_blur(u8.numpy().astype(np.float64), 3, 0.8))
    assert blurred.dtype == nbtorch.uint8
    assert np.abs(blurred.numpy().astype(int) - expected).max() <= 1
    nbtorch.manual_seed(0)
    assert T.GaussianBlur(3, sigma=(0.5, 1.5))(u8).shape == u8.shape
    with pytest.raises(ValueError, match="Kernel size value should be an odd and positive number"):
        T.GaussianBlur(4)
    with pytest.raises(ValueError, match="kernel_size should have odd and positive integers"):
        F.gaussian_blur(u8, [3, 4])


def test_random_erasing():
    image = nbtorch.ones(3, 20, 20)
    nbtorch.manual_seed(1)
    i, j, h, w, v = T.RandomErasing.get_params(image, (0.02, 0.33), (0.3, 3.3), [0.0])
    assert 0 < h < 20 and 0 < w < 20 and 0.3 * 0.5 <= h / w <= 3.3 * 2
    nbtorch.manual_seed(1)
    nbtorch.rand(1)                                          # the p draw comes first in forward
    i2, j2, h2, w2, _ = T.RandomErasing.get_params(image, (0.02, 0.33), (0.3, 3.3), [0.0])
    nbtorch.manual_seed(1)
    out = T.RandomErasing(p=1.0, value=(1.0, 2.0, 3.0))(image).numpy()
    assert image.numpy().min() == 1.0                        # not in place
    assert out[1, i2:i2 + h2, j2:j2 + w2].min() == 2.0 and out[2, i2, j2] == 3.0
    assert (out[0] == 1.0).all() and (out[1] == 2.0).sum() == h2 * w2
    noisy = T.RandomErasing(p=1.0, value="random")(image)
    assert noisy.shape == image.shape
    with pytest.raises(ValueError, match="If value is str, it should be 'random'"):
        T.RandomErasing(value="noise")
    with pytest.raises(ValueError, match="Random erasing probability should be between 0 and 1"):
        T.RandomErasing(p=1.5)
    with pytest.raises(TypeError, match="img should be Tensor Image"):
        T.RandomErasing(p=1.0)(np.zeros((4, 4, 3)))


# ---- rotation and affine warps ---------------------------------------------------------------

def test_rotations_by_right_angles_are_exact():
    data = np.random.default_rng(7).random((2, 6, 6)).astype(np.float32)
    tensor = nbtorch.from_numpy(data)
    np.testing.assert_allclose(F.rotate(tensor, 90).numpy(), np.rot90(data, 1, axes=(1, 2)), atol=1e-6)
    np.testing.assert_allclose(F.rotate(tensor, 180).numpy(), data[:, ::-1, ::-1], atol=1e-6)
    np.testing.assert_allclose(F.rotate(tensor, -90, T.InterpolationMode.BILINEAR).numpy(),
                               np.rot90(data, -1, axes=(1, 2)), atol=1e-5)
    wide = nbtorch.from_numpy(np.random.default_rng(8).random((1, 4, 6)).astype(np.float32))
    expanded = F.rotate(wide, 90, expand=True)
    assert expanded.shape == (1, 6, 4)
    np.testing.assert_allclose(expanded.numpy(), np.rot90(wide.numpy(), 1, axes=(1, 2)), atol=1e-6)


def test_rotation_fill_and_uint8():
    ones = nbtorch.ones(3, 9, 9, dtype=nbtorch.uint8) * 200
    out = F.rotate(ones, 45, fill=[7, 8, 9]).numpy()
    assert out.dtype == np.uint8 and out[:, 4, 4].tolist() == [200, 200, 200]
    assert out[:, 0, 0].tolist() == [7, 8, 9]
    zero_fill = F.rotate(ones, 45).numpy()
    assert zero_fill[0, 0, 0] == 0
    nbtorch.manual_seed(2)
    angle = T.RandomRotation.get_params([-30.0, 30.0])
    assert -30 <= angle < 30
    with pytest.raises(ValueError, match="If degrees is a single number, it must be positive"):
        T.RandomRotation(-5)
    with pytest.raises(ValueError, match="degrees should be a sequence of length 2"):
        T.RandomRotation([1, 2, 3])


def test_affine_translation_shifts_and_matches_torch_grid_sample():
    data = np.random.default_rng(9).random((1, 5, 7)).astype(np.float32)
    out = F.affine(nbtorch.from_numpy(data), angle=0.0, translate=[2, -1], scale=1.0, shear=0.0).numpy()
    expected = np.zeros_like(data)
    expected[:, :4, 2:] = data[:, 1:, :5]
    np.testing.assert_allclose(out, expected, atol=1e-6)
    torch = pytest.importorskip("torch")
    # a general warp: the inverse matrix through torch's grid_sample on the same grid
    image = np.random.default_rng(10).random((2, 3, 8, 10)).astype(np.float32)
    out = F.affine(nbtorch.from_numpy(image), 25.0, [1, 2], 1.2, [10.0, -5.0],
                   interpolation=T.InterpolationMode.BILINEAR)
    from nbtorch.vision.transforms._geometry import _affine_grid, _get_inverse_affine_matrix
    matrix = _get_inverse_affine_matrix([0.0, 0.0], 25.0, [1.0, 2.0], 1.2, [10.0, -5.0])
    grid = torch.from_numpy(_affine_grid(matrix, 10, 8, 10, 8)).float().expand(2, 8, 10, 2)
    expected = torch.nn.functional.grid_sample(torch.from_numpy(image), grid, mode="bilinear",
                                               padding_mode="zeros", align_corners=False)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=1e-5)


def test_inverse_affine_matrix_inverts_the_forward_one():
    from nbtorch.vision.transforms._geometry import _get_inverse_affine_matrix
    args = ([3.0, -2.0], 33.0, [4.0, 1.5], 0.8, [12.0, -7.0])
    forward = np.vstack([np.reshape(_get_inverse_affine_matrix(*args, inverted=False), (2, 3)), [0, 0, 1]])
    inverse = np.vstack([np.reshape(_get_inverse_affine_matrix(*args), (2, 3)), [0, 0, 1]])
    np.testing.assert_allclose(forward @ inverse, np.eye(3), atol=1e-12)


def test_random_affine_params_and_validation():
    nbtorch.manual_seed(4)
    angle, (tx, ty), scale, (sx, sy) = T.RandomAffine.get_params(
        [-10.0, 10.0], (0.1, 0.2), (0.9, 1.1), [-5.0, 5.0, -3.0, 3.0], [40, 30])
    assert -10 <= angle < 10 and abs(tx) <= 4 and abs(ty) <= 6 and 0.9 <= scale < 1.1
    assert -5 <= sx < 5 and -3 <= sy < 3 and isinstance(tx, int)
    assert T.RandomAffine(0)(nbtorch.ones(1, 4, 4)).tolist() == nbtorch.ones(1, 4, 4).tolist()
    with pytest.raises(ValueError, match="translation values should be between 0 and 1"):
        T.RandomAffine(0, translate=(0.5, 1.5))
    with pytest.raises(ValueError, match="scale values should be positive"):
        T.RandomAffine(0, scale=(0.0, 1.0))
    with pytest.raises(ValueError, match="shear should be a sequence of length 2 or 4"):
        T.RandomAffine(0, shear=[1, 2, 3])


# ---- containers ----------------------------------------------------------------------------------

def test_random_apply_choice_order():
    add, double = T.Lambda(lambda x: x + 1), T.Lambda(lambda x: x * 2)
    assert T.RandomApply([add, double], p=1.0)(1) == 4 and T.RandomApply([add], p=0.0)(1) == 1
    nbtorch.manual_seed(0)
    assert {T.RandomChoice([add, double])(3) for _ in range(30)} == {4, 6}
    assert {T.RandomChoice([add, double], p=[0.0, 1.0])(3) for _ in range(10)} == {6}
    nbtorch.manual_seed(0)
    assert {T.RandomOrder([add, double])(1) for _ in range(30)} == {3, 4}
    with pytest.raises(TypeError, match="Argument transforms should be a sequence"):
        T.RandomApply(add)


# ---- auto-augment ------------------------------------------------------------------------------

def test_autoaugment_family_is_reproducible_on_uint8_tensors_and_pil():
    image = chw(hwc(16, 16))
    for policy in T.AutoAugmentPolicy:
        transform = T.AutoAugment(policy)
        nbtorch.manual_seed(3)
        first = [transform(image).numpy().copy() for _ in range(6)]
        nbtorch.manual_seed(3)
        assert all(np.array_equal(a, transform(image).numpy()) for a in first)
        assert all(f.shape == (3, 16, 16) and f.dtype == np.uint8 for f in first)
    nbtorch.manual_seed(0)
    outs = [T.RandAugment()(image) for _ in range(5)] + [T.TrivialAugmentWide()(image) for _ in range(5)]
    assert all(o.dtype == nbtorch.uint8 and o.shape == (3, 16, 16) for o in outs)
    Image = pytest.importorskip("PIL.Image")
    pil = Image.fromarray(hwc(16, 16))
    for transform in (T.AutoAugment(), T.RandAugment(), T.TrivialAugmentWide(fill=[1, 2, 3])):
        assert transform(pil).size == (16, 16)


def test_autoaugment_ops_are_the_named_ops():
    from nbtorch.vision.transforms._autoaugment import _apply_op
    image = chw(hwc(8, 8))
    nearest = T.InterpolationMode.NEAREST
    np.testing.assert_array_equal(_apply_op(image, "Invert", 0.0, nearest, None).numpy(), 255 - image.numpy())
    np.testing.assert_array_equal(_apply_op(image, "Posterize", 4.0, nearest, None).numpy(), image.numpy() & 0xF0)
    shifted = _apply_op(image, "TranslateX", 2.0, nearest, None).numpy()
    np.testing.assert_array_equal(shifted[:, :, 2:], image.numpy()[:, :, :6])
    with pytest.raises(ValueError, match="The provided operator Blur is not recognized"):
        _apply_op(image, "Blur", 0.0, nearest, None)


def test_five_and_ten_crop():
    data = np.arange(2 * 5 * 6.0).reshape(2, 5, 6)
    crops = T.FiveCrop((2, 3))(nbtorch.from_numpy(data))
    # corners, then the centre at (round(1.5), round(1.5)) = (2, 2)
    expected = [data[:, :2, :3], data[:, :2, 3:], data[:, 3:, :3], data[:, 3:, 3:], data[:, 2:4, 2:5]]
    for got, want in zip(crops, expected):
        np.testing.assert_array_equal(got.numpy(), want)
    ten = T.TenCrop(2, vertical_flip=True)(data.transpose(1, 2, 0).copy())    # HWC array
    assert len(ten) == 10 and all(c.shape == (2, 2, 2) for c in ten)
    np.testing.assert_array_equal(ten[5], data.transpose(1, 2, 0)[::-1][:2, :2])
    with pytest.raises(ValueError, match="Requested crop size"):
        F.five_crop(nbtorch.from_numpy(data), 6)


def test_tensor_warps_agree_with_pillow():
    Image = pytest.importorskip("PIL.Image")
    image = hwc(26, 34)
    pil, tensor = Image.fromarray(image), chw(image)
    warps = [lambda x: F.rotate(x, 37), lambda x: F.rotate(x, -60, expand=True),
             lambda x: F.rotate(x, 25, center=[5, 7]),
             lambda x: F.affine(x, 20, [3, -2], 0.9, [10, 5]),
             lambda x: F.affine(x, -15, [1, 1], 1.1, [0, 12], center=[10, 4])]
    for warp in warps:
        from_pil = np.asarray(warp(pil))
        from_tensor = warp(tensor).numpy().transpose(1, 2, 0)
        assert from_pil.shape == from_tensor.shape
        assert np.any(from_pil != from_tensor, axis=2).mean() < 0.01     # nearest: same pixels


def test_perspective_identity_and_agreement_with_pillow():
    image = hwc(20, 24)
    corners = [[0, 0], [23, 0], [23, 19], [0, 19]]
    same = F.perspective(chw(image), corners, corners, T.InterpolationMode.NEAREST)
    np.testing.assert_array_equal(same.numpy(), chw(image).numpy())
    shifted = [[x + 2, y + 1] for x, y in corners]                # a pure translation
    out = F.perspective(chw(image), corners, shifted, T.InterpolationMode.NEAREST).numpy()
    np.testing.assert_array_equal(out[:, 1:, 2:], chw(image).numpy()[:, :-1, :-2])
    assert (out[:, 0, :] == 0).all() and (out[:, :, :2] == 0).all()
    Image = pytest.importorskip("PIL.Image")
    moved = [[2, 1], [21, 3], [22, 18], [1, 17]]
    nearest = T.InterpolationMode.NEAREST
    from_pil = np.asarray(F.perspective(Image.fromarray(image), corners, moved, nearest))
    from_tensor = F.perspective(chw(image), corners, moved, nearest).numpy().transpose(1, 2, 0)
    assert np.any(from_pil != from_tensor, axis=2).mean() < 0.01        # Pillow's pixels
    nbtorch.manual_seed(0)
    start, end = T.RandomPerspective.get_params(24, 20, 0.5)
    assert start == corners
    assert all(0 <= x <= 23 and 0 <= y <= 19 for x, y in end)
    assert end[0][0] <= 6 and end[1][0] >= 23 - 7 and end[2][1] >= 19 - 6
    assert T.RandomPerspective(p=1.0)(chw(image)).shape == (3, 20, 24)


def test_palette_images_keep_their_palette():
    Image = pytest.importorskip("PIL.Image")
    rgb = Image.fromarray(hwc(8, 8))
    palette = rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    padded = T.Pad(2, padding_mode="edge")(palette)
    assert padded.mode == "P" and padded.getpalette() == palette.getpalette()
    np.testing.assert_array_equal(np.asarray(padded)[2:-2, 2:-2], np.asarray(palette))
    np.testing.assert_array_equal(np.asarray(padded.convert("RGB"))[2:-2, 2:-2], np.asarray(palette.convert("RGB")))


def test_chw_shaped_arrays_are_refused():
    with pytest.raises(ValueError, match="looks like C x H x W"):
        T.RandomCrop(8)(np.zeros((3, 32, 32), np.float32))
    with pytest.raises(ValueError, match="looks like C x H x W"):
        T.RandomHorizontalFlip(1.0)(np.zeros((3, 32, 32), np.float32))
    assert F.hflip(np.zeros((32, 32, 3))).shape == (32, 32, 3)


def test_adjust_gamma_matches_numpy():
    image = np.random.default_rng(11).random((3, 4, 5)).astype(np.float32)
    out = F.adjust_gamma(nbtorch.from_numpy(image), 2.2, gain=1.1).numpy()
    np.testing.assert_allclose(out, np.clip(1.1 * image ** 2.2, 0, 1), rtol=1e-5)
    u8 = chw(hwc())
    expected = (np.clip((u8.numpy() / 255.0) ** 0.5, 0, 1) * (255 + 1 - 1e-3)).astype(np.uint8)
    assert np.abs(F.adjust_gamma(u8, 0.5).numpy().astype(int) - expected).max() <= 1
    with pytest.raises(ValueError, match="Gamma should be a non-negative real number"):
        F.adjust_gamma(u8, -1)


def test_autoaugment_shears_agree_between_pillow_and_tensors():
    Image = pytest.importorskip("PIL.Image")
    from nbtorch.vision.transforms._autoaugment import _apply_op
    image = hwc(16, 20)
    nearest = T.InterpolationMode.NEAREST
    for op, magnitude in (("ShearX", 0.3), ("ShearY", -0.25), ("TranslateY", 5.0), ("Rotate", 20.0)):
        from_pil = np.asarray(_apply_op(Image.fromarray(image), op, magnitude, nearest, None))
        from_tensor = _apply_op(chw(image), op, magnitude, nearest, None).numpy().transpose(1, 2, 0)
        assert np.any(from_pil != from_tensor, axis=2).mean() < 0.02, op
