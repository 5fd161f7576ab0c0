"""nbtorch.vision: transforms against NumPy, the bundled Digits, and MNIST's IDX parsing."""
import gzip
import os

import numpy as np
import pytest

import nbtorch
from nbtorch.utils.data import DataLoader
from nbtorch.vision import datasets, transforms
from nbtorch.vision.datasets import read_idx


def image(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)


# ---- ToTensor / Normalize -------------------------------------------------------------

def test_to_tensor_scales_uint8_hwc_to_chw():
    pic = (np.arange(24).reshape(2, 4, 3) * 10).astype(np.uint8)
    out = transforms.ToTensor()(pic)
    assert out.dtype == nbtorch.float32 and out.shape == (3, 2, 4)
    np.testing.assert_allclose(out.numpy(), pic.transpose(2, 0, 1) / 255.0, rtol=1e-6)


def test_to_tensor_2d_and_other_dtypes():
    assert transforms.ToTensor()(np.zeros((5, 6), dtype=np.uint8)).shape == (1, 5, 6)
    floats = transforms.ToTensor()(np.full((2, 2, 1), 7.0))
    assert floats.dtype == nbtorch.float64 and floats.numpy().max() == 7.0  # no scaling
    tensor = nbtorch.zeros(1, 2, 2)
    assert transforms.ToTensor()(tensor) is tensor
    scaled = transforms.ToTensor()(nbtorch.full((1, 2, 2), 51, dtype=nbtorch.uint8))
    assert scaled.dtype == nbtorch.float32
    np.testing.assert_allclose(scaled.numpy(), np.full((1, 2, 2), 0.2), rtol=1e-6)


def test_to_tensor_with_real_pil():
    Image = pytest.importorskip("PIL.Image")
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    out = transforms.ToTensor()(Image.fromarray(rgb))
    np.testing.assert_allclose(out.numpy(), rgb.transpose(2, 0, 1) / 255.0, rtol=1e-6)


def test_to_tensor_errors():
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        transforms.ToTensor()([1, 2])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional"):
        transforms.ToTensor()(np.zeros((1, 2, 2, 2), dtype=np.uint8))


def test_normalize_matches_numpy():
    data = np.random.default_rng(0).random((3, 4, 5)).astype(np.float32)
    mean, std = [0.1, 0.2, 0.3], [0.5, 1.0, 2.0]
    out = transforms.Normalize(mean, std)(nbtorch.from_numpy(data.copy()))
    expected = (data - np.array(mean, np.float32)[:, None, None]) / np.array(std, np.float32)[:, None, None]
    assert out.dtype == nbtorch.float32
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_normalize_inplace_and_batched():
    batch = nbtorch.ones(2, 1, 2, 2)
    out = transforms.Normalize([0.5], [0.25], inplace=True)(batch)
    assert out is batch and batch.numpy().tolist() == np.full((2, 1, 2, 2), 2.0).tolist()


def test_normalize_errors():
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        transforms.Normalize([0], [1])(nbtorch.zeros(1, 2, 2, dtype=nbtorch.int64))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        transforms.Normalize([0], [0])(nbtorch.zeros(1, 2, 2))
    with pytest.raises(ValueError, match="Expected tensor to be a tensor image"):
        transforms.Normalize([0], [1])(nbtorch.zeros(2, 2))
    with pytest.raises(RuntimeError, match="must match the size"):
        transforms.Normalize([0, 0], [1])(nbtorch.zeros(3, 2, 2))
    with pytest.raises(TypeError, match="img should be Tensor Image"):
        transforms.Normalize([0], [1])(np.zeros((1, 2, 2)))


# ---- crops, flips, padding -----------------------------------------------------------------

def windows(array, height, width):
    return [array[..., i:i + height, j:j + width]
            for i in range(array.shape[-2] - height + 1) for j in range(array.shape[-1] - width + 1)]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_random_crop_is_a_window_of_the_padded_image(mode):
    data = image(2, 5, 6)
    padded = np.pad(data, [(0, 0), (2, 2), (1, 1)], mode=mode)
    crop = transforms.RandomCrop((4, 5), padding=(1, 2), padding_mode=mode)
    for seed in range(4):
        nbtorch.manual_seed(seed)
        out = crop(nbtorch.from_numpy(data)).numpy()
        assert out.shape == (2, 4, 5)
        assert any(np.array_equal(out, w) for w in windows(padded, 4, 5))


def test_random_crop_is_reproducible_and_varies():
    crop = transforms.RandomCrop(3, padding=2)
    data = nbtorch.from_numpy(image(1, 6, 6))
    nbtorch.manual_seed(0)
    first = [crop(data).numpy().copy() for _ in range(6)]
    nbtorch.manual_seed(0)
    again = [crop(data).numpy().copy() for _ in range(6)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(first[0], f) for f in first)


def test_random_crop_pad_if_needed_and_errors():
    small = nbtorch.from_numpy(image(1, 2, 3))
    assert transforms.RandomCrop(4, pad_if_needed=True)(small).shape == (1, 4, 4)
    with pytest.raises(ValueError, match=r"Required crop size \(4, 4\) is larger than input image size \(2, 3\)"):
        transforms.RandomCrop(4)(small)
    with pytest.raises(ValueError, match="Padding mode should be either constant, edge, reflect or symmetric"):
        transforms.RandomCrop(2, padding=1, padding_mode="wrap")(small)


def test_center_crop_and_pad():
    data = image(1, 5, 5)
    np.testing.assert_array_equal(transforms.CenterCrop(3)(nbtorch.from_numpy(data)).numpy(), data[:, 1:4, 1:4])
    padded = transforms.Pad((1, 2, 3, 4), fill=9)(nbtorch.from_numpy(data)).numpy()
    np.testing.assert_array_equal(padded, np.pad(data, [(0, 0), (2, 4), (1, 3)], constant_values=9))


def test_random_horizontal_flip():
    data = image(2, 3, 4)
    flipped = transforms.RandomHorizontalFlip(p=1.0)(nbtorch.from_numpy(data)).numpy()
    np.testing.assert_array_equal(flipped, data[..., ::-1])
    same = transforms.RandomHorizontalFlip(p=0.0)(nbtorch.from_numpy(data)).numpy()
    np.testing.assert_array_equal(same, data)
    nbtorch.manual_seed(1)
    outcomes = {transforms.RandomHorizontalFlip()(nbtorch.from_numpy(data)).numpy()[0, 0, 0] for _ in range(20)}
    assert outcomes == {0.0, 3.0}


# ---- Resize ---------------------------------------------------------------------------

def reference_nearest(data, height, width):
    in_h, in_w = data.shape[-2:]
    out = np.empty(data.shape[:-2] + (height, width), data.dtype)
    for y in range(height):
        for x in range(width):
            out[..., y, x] = data[..., min(int(np.floor(y * in_h / height)), in_h - 1),
                                  min(int(np.floor(x * in_w / width)), in_w - 1)]
    return out


def reference_bilinear(data, height, width):
    in_h, in_w = data.shape[-2:]
    out = np.empty(data.shape[:-2] + (height, width), np.float64)

    def source(dst, in_size, out_size):
        s = max((dst + 0.5) * in_size / out_size - 0.5, 0.0)
        lo = min(int(np.floor(s)), in_size - 1)
        return lo, min(lo + 1, in_size - 1), s - lo

    for y in range(height):
        y0, y1, wy = source(y, in_h, height)
        for x in range(width):
            x0, x1, wx = source(x, in_w, width)
            out[..., y, x] = ((1 - wy) * ((1 - wx) * data[..., y0, x0] + wx * data[..., y0, x1])
                              + wy * ((1 - wx) * data[..., y1, x0] + wx * data[..., y1, x1]))
    return out


@pytest.mark.parametrize("size", [(7, 3), (2, 9), (5, 6)])
def test_resize_nearest_and_bilinear_match_loops(size):
    data = np.random.default_rng(1).random((2, 5, 6))
    tensor = nbtorch.from_numpy(data)
    nearest = transforms.Resize(size, interpolation=transforms.InterpolationMode.NEAREST)(tensor)
    np.testing.assert_array_equal(nearest.numpy(), reference_nearest(data, *size))
    bilinear = transforms.Resize(size, interpolation="bilinear", antialias=False)(tensor)
    np.testing.assert_allclose(bilinear.numpy(), reference_bilinear(data, *size), rtol=1e-12)


def test_resize_int_keeps_aspect_and_rounds_uint8():
    assert transforms.Resize(4)(nbtorch.zeros(1, 2, 3)).shape == (1, 4, 6)
    assert transforms.Resize(4)(nbtorch.zeros(1, 6, 3)).shape == (1, 8, 4)
    assert transforms.Resize(4, max_size=5)(nbtorch.zeros(1, 2, 3)).shape == (1, 3, 5)
    data = np.array([[[0, 255]]], dtype=np.uint8)
    out = transforms.Resize((1, 4), antialias=False)(nbtorch.from_numpy(data))
    assert out.dtype == nbtorch.uint8
    assert out.numpy().tolist() == [[np.round(reference_bilinear(data.astype(float), 1, 4)[0, 0]).tolist()]]


def test_resize_matches_torch_interpolate():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(2).random((1, 3, 5, 7)).astype(np.float32)
    for mode in ("nearest", "bilinear"):
        kwargs = {} if mode == "nearest" else {"align_corners": False}
        expected = torch.nn.functional.interpolate(torch.from_numpy(data), size=(4, 9), mode=mode, **kwargs)
        out = transforms.Resize((4, 9), interpolation=mode, antialias=False)(nbtorch.from_numpy(data))
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    # torchvision's default: antialiased bilinear/bicubic when downscaling
    for mode in ("bilinear", "bicubic"):
        expected = torch.nn.functional.interpolate(torch.from_numpy(data), size=(3, 4), mode=mode,
                                                   align_corners=False, antialias=True)
        out = transforms.Resize((3, 4), interpolation=mode)(nbtorch.from_numpy(data))
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


def test_resize_errors():
    with pytest.raises(ValueError):
        transforms.Resize((4, 4), interpolation="bicubicc")
    with pytest.raises(ValueError, match="Interpolation mode 'lanczos' is unsupported with Tensor input"):
        transforms.Resize((4, 4), interpolation="lanczos")(nbtorch.zeros(1, 2, 2))
    with pytest.raises(ValueError, match="max_size should only be passed"):
        transforms.Resize((4, 4), max_size=8)(nbtorch.zeros(1, 2, 2))


def test_lambda_and_compose():
    pipeline = transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda t: t * 2)])
    out = pipeline(np.full((2, 2), 255, dtype=np.uint8))
    assert out.tolist() == [[[2.0, 2.0], [2.0, 2.0]]]
    assert repr(pipeline).startswith("Compose(\n    ToTensor()\n    Lambda()")
    with pytest.raises(TypeError, match="Argument lambd should be callable"):
        transforms.Lambda(3)


# ---- Digits -----------------------------------------------------------------------------

def test_digits_splits_shapes_and_labels():
    train, test = datasets.Digits(train=True), datasets.Digits(train=False)
    assert (len(train), len(test)) == (1438, 359)
    assert len(train.classes) == 10
    image_tensor, label = train[0]
    assert image_tensor.shape == (1, 8, 8) and image_tensor.dtype == nbtorch.float32
    assert isinstance(label, int)
    for split in (train, test):
        data = split.data.numpy()
        assert data.shape == (len(split), 1, 8, 8) and data.min() == 0.0 and data.max() == 1.0
        assert set(split.targets.tolist()) == set(range(10))
        counts = np.bincount(split.targets.numpy(), minlength=10)
        assert counts.min() > 0.1 * counts.sum() / 10 * 7  # stratified: every class well represented


def test_digits_split_is_fixed_disjoint_and_matches_the_file():
    with gzip.open(os.path.join(os.path.dirname(datasets.__file__), "data", "digits.csv.gz"), "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    assert table.shape == (1797, 65)
    both = np.concatenate([datasets.Digits(train=True).data.numpy(), datasets.Digits(train=False).data.numpy()])
    rows = {tuple(r) for r in (table[:, :64] / 16).astype(np.float32)}
    assert {tuple(r) for r in both.reshape(-1, 64)} == rows
    test_indices = datasets._digits_test_indices(table[:, 64].astype(int), datasets.Digits.TEST_FRACTION)
    assert len(test_indices) == 359 and len(set(test_indices.tolist())) == 359
    first = datasets.Digits(train=False).targets.tolist()
    assert first == table[test_indices, 64].astype(int).tolist()


def test_digits_transforms_and_loader():
    ds = datasets.Digits(train=False, transform=transforms.Normalize([0.5], [0.5]),
                         target_transform=lambda y: y + 100)
    image_tensor, label = ds[3]
    assert label >= 100 and image_tensor.numpy().min() >= -1.0
    images, labels = next(iter(DataLoader(datasets.Digits(train=False), batch_size=32)))
    assert images.shape == (32, 1, 8, 8) and labels.dtype == nbtorch.int64
    assert "Dataset Digits" in repr(ds) and "Split: Test" in repr(ds)


# ---- MNIST (small IDX files written here) ---------------------------------------------------

def write_idx(path, array, type_code=0x08):
    header = bytes([0, 0, type_code, array.ndim]) + np.array(array.shape, ">u4").tobytes()
    payload = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(payload)


def make_mnist(folder, prefix="train", n=5, gz=False):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    suffix = ".gz" if gz else ""
    os.makedirs(folder, exist_ok=True)
    write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte{suffix}"), images)
    write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte{suffix}"), labels)
    return images, labels


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_reads_idx_files(tmp_path, gz):
    images, labels = make_mnist(tmp_path, gz=gz)
    ds = datasets.MNIST(tmp_path, train=True)
    assert len(ds) == 5 and ds.data.shape == (5, 28, 28) and ds.targets.dtype == nbtorch.int64
    picture, label = ds[2]
    np.testing.assert_array_equal(picture, images[2])
    assert label == int(labels[2])
    tensor, _ = datasets.MNIST(tmp_path, transform=transforms.ToTensor())[2]
    assert tensor.shape == (1, 28, 28) and float(tensor.numpy().max()) <= 1.0


def test_mnist_torchvision_layout_and_test_split(tmp_path):
    make_mnist(tmp_path / "MNIST" / "raw", prefix="t10k", n=3)
    assert len(datasets.MNIST(tmp_path, train=False)) == 3
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        datasets.MNIST(tmp_path, train=True)


def test_mnist_download_is_a_clear_error(tmp_path):
    with pytest.raises(RuntimeError, match="downloads are unavailable"):
        datasets.MNIST(tmp_path, download=True)


def test_mnist_corrupt_files(tmp_path):
    make_mnist(tmp_path)
    images_path = tmp_path / "train-images-idx3-ubyte"
    raw = images_path.read_bytes()
    images_path.write_bytes(raw[:-10])
    with pytest.raises(ValueError, match="corrupt IDX file .*truncated"):
        datasets.MNIST(tmp_path)
    images_path.write_bytes(b"\x01\x02" + raw[2:])
    with pytest.raises(ValueError, match="bad magic number"):
        datasets.MNIST(tmp_path)
    images_path.write_bytes(raw[:2] + b"\x07" + raw[3:])
    with pytest.raises(ValueError, match="unknown data type code 0x07"):
        datasets.MNIST(tmp_path)
    images_path.write_bytes(raw + b"xx")
    with pytest.raises(ValueError, match="trailing bytes"):
        datasets.MNIST(tmp_path)
    images_path.write_bytes(raw[:3])
    with pytest.raises(ValueError, match="too short"):
        datasets.MNIST(tmp_path)


def test_mnist_corrupt_gzip_and_inconsistent_labels(tmp_path):
    make_mnist(tmp_path, gz=True)
    labels_path = tmp_path / "train-labels-idx1-ubyte.gz"
    good_labels = labels_path.read_bytes()
    labels_path.write_bytes(good_labels[:-6])
    with pytest.raises(ValueError, match="cannot decompress"):
        datasets.MNIST(tmp_path)
    write_idx(labels_path, np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="5 images but labels of shape"):
        datasets.MNIST(tmp_path)
    write_idx(labels_path, np.full(5, 12, np.uint8))
    with pytest.raises(ValueError, match="labels should be in 0..9"):
        datasets.MNIST(tmp_path)


def test_read_idx_wider_types_are_big_endian(tmp_path):
    values = np.array([[1, -2], [300000, 4]], dtype=np.int32)
    write_idx(tmp_path / "a.idx", values, type_code=0x0C)
    np.testing.assert_array_equal(read_idx(str(tmp_path / "a.idx")), values)
    floats = np.array([1.5, -2.25], dtype=np.float64)
    write_idx(tmp_path / "b.idx", floats, type_code=0x0E)
    np.testing.assert_array_equal(read_idx(str(tmp_path / "b.idx")), floats)
