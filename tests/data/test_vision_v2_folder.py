"""transforms.v2 on whole samples, ImageFolder/DatasetFolder over a folder tree, and
utils.make_grid/save_image."""
import os

import numpy as np
import pytest

import nbtorch
from nbtorch.utils.data import DataLoader
from nbtorch.vision import datasets, transforms, utils
from nbtorch.vision.transforms import v2


def picture(seed=0, height=6, width=8):
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


# ---- v2 -----------------------------------------------------------------------------------

def test_v2_to_image_to_dtype_pipeline():
    image = picture()
    pipeline = v2.Compose([v2.ToImage(), v2.ToDtype(nbtorch.float32, scale=True),
                           v2.Normalize([0.5] * 3, [0.5] * 3)])
    out = pipeline(image)
    expected = (image.transpose(2, 0, 1).astype(np.float32) * np.float32(1 / 255) - 0.5) / 0.5
    assert out.dtype == nbtorch.float32 and out.shape == (3, 6, 8)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)
    as_uint8 = v2.ToImage()(image)
    assert as_uint8.dtype == nbtorch.uint8 and np.array_equal(as_uint8.numpy(), image.transpose(2, 0, 1))
    assert v2.ToDtype(nbtorch.float64)(as_uint8).numpy().max() == image.max()      # no scaling
    back = v2.ToDtype(nbtorch.uint8, scale=True)(v2.ToDtype(nbtorch.float32, scale=True)(as_uint8))
    np.testing.assert_array_equal(back.numpy(), as_uint8.numpy())


def test_v2_passes_labels_through_and_transforms_the_image():
    image = nbtorch.from_numpy(picture().transpose(2, 0, 1).copy())
    flipped, label = v2.RandomHorizontalFlip(p=1.0)(image, 3)
    assert label == 3 and np.array_equal(flipped.numpy(), image.numpy()[:, :, ::-1])
    sample = {"image": image, "label": 5, "name": "a"}
    out = v2.Compose([v2.CenterCrop(4), v2.ToDtype(nbtorch.float32, scale=True)])(sample)
    assert out["label"] == 5 and out["name"] == "a" and out["image"].shape == (3, 4, 4)
    assert isinstance(v2.Resize(3), transforms.Resize)
    nbtorch.manual_seed(0)
    cropped, target = v2.RandomResizedCrop(5)(image, nbtorch.tensor(1))
    assert cropped.shape == (3, 5, 5) and target.tolist() == 1       # only the first tensor


def test_v2_with_pil_images():
    Image = pytest.importorskip("PIL.Image")
    image = picture()
    pil = Image.fromarray(image)
    tensor, label = v2.Compose([v2.RandomCrop(4), v2.PILToTensor()])(pil, 2)
    assert tensor.dtype == nbtorch.uint8 and tensor.shape == (3, 4, 4) and label == 2
    assert np.array_equal(v2.ToImage()(pil).numpy(), image.transpose(2, 0, 1))


# ---- ImageFolder / DatasetFolder ----------------------------------------------------------

def make_tree(root, layout, write):
    """layout: {class: [file names]}; write(path, index) creates each file."""
    index = 0
    for name, files in layout.items():
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for file in files:
            write(os.path.join(root, name, file), index)
            index += 1


def test_dataset_folder_with_numpy_files(tmp_path):
    layout = {"dog": ["b.npy", "a.npy", "notes.txt"], "cat": ["z.npy"], "cat/sub": ["y.npy"]}
    make_tree(tmp_path, layout, lambda path, i: (np.save(path, np.full((2, 2, 3), i, np.uint8))
                                                 if path.endswith(".npy") else open(path, "w").close()))
    ds = datasets.DatasetFolder(tmp_path, loader=datasets.default_loader, extensions=(".npy",),
                                transform=transforms.ToTensor(), target_transform=lambda t: t * 10)
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    names = [os.path.relpath(path, tmp_path) for path, _ in ds.samples]
    # torchvision's order: sorted (root, dirs, files) walk tuples, then sorted file names
    assert names == [os.path.join("cat", "z.npy"), os.path.join("cat", "sub", "y.npy"),
                     os.path.join("dog", "a.npy"), os.path.join("dog", "b.npy")]
    assert ds.targets == [0, 0, 1, 1] and len(ds) == 4
    image, target = ds[2]
    assert target == 10 and image.shape == (3, 2, 2) and image.dtype == nbtorch.float32
    assert float(image.numpy()[0, 0, 0]) == pytest.approx(1 / 255)        # a.npy was written second
    images, targets = next(iter(DataLoader(ds, batch_size=4)))
    assert images.shape == (4, 3, 2, 2) and targets.tolist() == [0, 0, 10, 10]


def test_dataset_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.DatasetFolder(tmp_path, loader=np.load, extensions=".npy")
    make_tree(tmp_path, {"a": ["x.npy"], "b": ["y.txt"]}, lambda path, i: open(path, "w").close())
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes b. Supported extensions are: .npy"):
        datasets.DatasetFolder(tmp_path, loader=np.load, extensions=".npy")
    assert len(datasets.DatasetFolder(tmp_path, loader=np.load, extensions=".npy", allow_empty=True)) == 1
    with pytest.raises(ValueError, match="Both extensions and is_valid_file cannot be None"):
        datasets.DatasetFolder(tmp_path, loader=np.load)
    only_txt = datasets.DatasetFolder(tmp_path, loader=str, is_valid_file=lambda p: p.endswith(".txt"),
                                      allow_empty=True)
    assert [t for _, t in only_txt.samples] == [1]


def test_image_folder_reads_pictures_as_rgb(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    colours = {}

    def write(path, i):
        if path.endswith(".md"):
            return open(path, "w").close()
        array = picture(i, 5, 7)
        colours[os.path.basename(path)] = array
        Image.fromarray(array).save(path)
    make_tree(tmp_path, {"ants": ["1.png", "2.PNG"], "bees": ["3.png", "readme.md"]}, write)
    ds = datasets.ImageFolder(tmp_path, transform=transforms.Compose([transforms.ToTensor()]))
    assert ds.classes == ["ants", "bees"] and ds.imgs == ds.samples and len(ds) == 3
    image, target = ds[1]
    assert target == 0 and image.shape == (3, 5, 7)
    np.testing.assert_allclose(image.numpy(), colours["2.PNG"].transpose(2, 0, 1) / 255.0, rtol=1e-6)
    gray_path = tmp_path / "bees" / "4.png"
    Image.fromarray(picture(9, 5, 7)[:, :, 0]).save(gray_path)
    raw = datasets.ImageFolder(tmp_path)
    assert raw[3][0].mode == "RGB" and raw[3][1] == 1                     # converted to RGB


# ---- make_grid / save_image -----------------------------------------------------------------

def test_make_grid_layout_matches_numpy():
    batch = np.random.default_rng(1).random((5, 3, 4, 6)).astype(np.float32)
    grid = utils.make_grid(nbtorch.from_numpy(batch), nrow=2, padding=1, pad_value=0.5).numpy()
    assert grid.shape == (3, 3 * 5 + 1, 2 * 7 + 1)
    for k in range(5):
        y, x = divmod(k, 2)
        np.testing.assert_array_equal(grid[:, 1 + 5 * y:5 * y + 5, 1 + 7 * x:7 * x + 7], batch[k])
    assert grid[:, 0, :].min() == 0.5 and (grid[:, 11:, 8:] == 0.5).all()    # empty sixth cell
    gray = utils.make_grid([nbtorch.zeros(1, 2, 2), nbtorch.ones(1, 2, 2)], padding=0)
    assert gray.shape == (3, 2, 4) and gray.numpy()[:, :, 2:].min() == 1.0
    normalized = utils.make_grid(nbtorch.from_numpy(batch * 4 - 1), normalize=True, padding=0)
    assert normalized.numpy().min() == 0.0 and normalized.numpy().max() == pytest.approx(1.0)
    assert utils.make_grid(nbtorch.ones(1, 3, 2, 2)).shape == (3, 2, 2)
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(nbtorch.ones(2, 3, 2, 2), normalize=True, value_range=[0, 1])


def test_save_image_round_trip(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    batch = nbtorch.from_numpy(np.random.default_rng(2).random((2, 3, 4, 4)).astype(np.float32))
    path = tmp_path / "grid.png"
    utils.save_image(batch, path, nrow=2, padding=0)
    saved = np.asarray(Image.open(path))
    expected = np.clip(utils.make_grid(batch, nrow=2, padding=0).numpy() * 255 + 0.5, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(saved, expected.transpose(1, 2, 0))


# ---- MixUp / CutMix --------------------------------------------------------------------------

def test_mixup_blends_neighbours_and_labels():
    images = nbtorch.from_numpy(np.random.default_rng(3).random((4, 3, 5, 5)).astype(np.float32))
    labels = nbtorch.tensor([0, 2, 1, 2])
    nbtorch.manual_seed(0)
    mixed, soft = v2.MixUp(num_classes=3)(images, labels)
    lam = float(soft[0, 0])                                   # sample 0 keeps lam of class 0
    x = images.numpy()
    np.testing.assert_allclose(mixed.numpy(), lam * x + (1 - lam) * np.roll(x, 1, axis=0), rtol=1e-5)
    one_hot = np.eye(3)[labels.numpy()]
    np.testing.assert_allclose(soft.numpy(), lam * one_hot + (1 - lam) * np.roll(one_hot, 1, axis=0), rtol=1e-5)
    nbtorch.manual_seed(0)
    again, _ = v2.MixUp(num_classes=3)(images, labels)
    np.testing.assert_array_equal(again.numpy(), mixed.numpy())


def test_cutmix_pastes_a_box_and_weights_labels_by_area():
    x = np.arange(4 * 1 * 8 * 8, dtype=np.float32).reshape(4, 1, 8, 8)     # every pixel distinct
    labels = nbtorch.tensor([0, 1, 2, 3])
    for seed in range(5):
        nbtorch.manual_seed(seed)
        out, soft = v2.CutMix(num_classes=4)({"image": nbtorch.from_numpy(x), "labels": labels}).values()
        changed = out.numpy() != x
        assert (out.numpy()[changed] == np.roll(x, 1, axis=0)[changed]).all()
        kept = 1.0 - changed[0].mean()
        np.testing.assert_allclose(soft.numpy()[0, 0], kept, rtol=1e-6)
        np.testing.assert_allclose(soft.numpy().sum(axis=1), 1.0, rtol=1e-6)
        rows, cols = np.nonzero(changed[0, 0])
        if rows.size:                                          # one rectangle
            assert changed[0, 0, rows.min():rows.max() + 1, cols.min():cols.max() + 1].all()


def test_mix_errors():
    images, labels = nbtorch.zeros(2, 3, 4, 4), nbtorch.tensor([0, 1])
    with pytest.raises(ValueError, match="num_classes must be passed if the labels are index-based"):
        v2.MixUp()(images, labels)
    with pytest.raises(ValueError, match="Expected a batched input with 4 dims"):
        v2.CutMix(num_classes=2)(images[0], labels)
    with pytest.raises(ValueError, match="does not match the batch size of the labels: 2 != 3"):
        v2.MixUp(num_classes=2)(images, nbtorch.tensor([0, 1, 1]))


# ---- io ------------------------------------------------------------------------------------------

def test_read_write_png_round_trip(tmp_path):
    pytest.importorskip("PIL.Image")
    from nbtorch.vision import io
    image = nbtorch.from_numpy(picture(4).transpose(2, 0, 1).copy())
    io.write_png(image, tmp_path / "a.png")
    back = io.read_image(str(tmp_path / "a.png"))
    assert back.dtype == nbtorch.uint8 and np.array_equal(back.numpy(), image.numpy())
    gray = io.read_image(str(tmp_path / "a.png"), io.ImageReadMode.GRAY)
    assert gray.shape == (1, 6, 8)
    assert np.array_equal(io.decode_image(io.read_file(tmp_path / "a.png")).numpy(), image.numpy())
    rgba = io.decode_image(io.encode_png(image), mode=io.ImageReadMode.RGB_ALPHA)
    assert rgba.shape == (4, 6, 8) and (rgba.numpy()[3] == 255).all()
    smooth = nbtorch.from_numpy(np.broadcast_to(np.arange(0, 240, 15, dtype=np.uint8), (3, 16, 16)).copy())
    jpeg = io.decode_image(io.encode_jpeg(smooth, quality=95))
    assert jpeg.shape == (3, 16, 16) and np.abs(jpeg.numpy().astype(int) - smooth.numpy()).mean() < 4
    with pytest.raises(RuntimeError, match="Input should be a uint8 tensor"):
        io.encode_png(image.float())
