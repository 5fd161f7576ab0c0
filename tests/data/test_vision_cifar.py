"""datasets.CIFAR10 / CIFAR100 from small fake batches in both distributions (python
pickles read by an arrays-only unpickler, and binary records)."""
import os
import pickle

import numpy as np
import pytest

import nbtorch
from nbtorch.utils.data import DataLoader
from nbtorch.vision import datasets, transforms


def fake_batch(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 3072), dtype=np.uint8), rng.integers(0, 10, n).tolist()


def write_python_cifar10(root):
    folder = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(folder)
    batches = {}
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        data, labels = fake_batch(3, i)
        batches[name] = (data, labels)
        with open(os.path.join(folder, name), "wb") as handle:
            pickle.dump({"batch_label": name, "labels": labels, "data": data,
                         "filenames": [f"{name}_{j}.png" for j in range(3)]}, handle, protocol=2)
    with open(os.path.join(folder, "batches.meta"), "wb") as handle:
        pickle.dump({"label_names": [f"c{k}" for k in range(10)], "num_vis": 3072}, handle)
    return batches


def test_cifar10_python_version(tmp_path):
    batches = write_python_cifar10(tmp_path)
    train = datasets.CIFAR10(tmp_path, train=True)
    assert len(train) == 15 and train.data.shape == (15, 32, 32, 3) and train.data.dtype == np.uint8
    assert train.classes[3] == "c3" and train.class_to_idx["c9"] == 9
    data, labels = batches["data_batch_2"]
    image, label = train[4]                                   # second image of the second batch
    np.testing.assert_array_equal(image, data[1].reshape(3, 32, 32).transpose(1, 2, 0))
    assert label == labels[1]
    test = datasets.CIFAR10(tmp_path, train=False, transform=transforms.Compose(
        [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(), transforms.ToTensor()]))
    images, targets = next(iter(DataLoader(test, batch_size=3)))
    assert images.shape == (3, 3, 32, 32) and images.dtype == nbtorch.float32
    assert targets.tolist() == batches["test_batch"][1]


def test_cifar_pickles_cannot_run_code(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo owned",))
    for name in [f"data_batch_{k}" for k in range(1, 6)]:
        (folder / name).write_bytes(pickle.dumps({"data": Evil(), "labels": []}))
    with pytest.raises(ValueError, match="refusing to load .*system"):
        datasets.CIFAR10(tmp_path)
    (folder / "data_batch_1").write_bytes(b"\x80\x02}q")
    with pytest.raises(ValueError, match="corrupt CIFAR file"):
        datasets.CIFAR10(tmp_path)


def test_cifar10_and_100_binary_versions(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    data, labels = fake_batch(4, 7)
    (folder / "test_batch.bin").write_bytes(np.hstack([np.array(labels, np.uint8)[:, None], data]).tobytes())
    test = datasets.CIFAR10(tmp_path, train=False)
    assert test.targets == labels and test.classes[0] == "airplane"
    np.testing.assert_array_equal(test[2][0], data[2].reshape(3, 32, 32).transpose(1, 2, 0))
    folder100 = tmp_path / "cifar-100-binary"
    folder100.mkdir()
    fine = np.array([5, 99, 42, 0], np.uint8)
    coarse = fine // 5
    (folder100 / "train.bin").write_bytes(np.hstack([coarse[:, None], fine[:, None], data]).tobytes())
    (folder100 / "fine_label_names.txt").write_text("\n".join(f"f{k}" for k in range(100)) + "\n")
    train100 = datasets.CIFAR100(tmp_path, train=True)
    assert train100.targets == fine.tolist() and train100.classes[99] == "f99"
    np.testing.assert_array_equal(train100.data[1], data[1].reshape(3, 32, 32).transpose(1, 2, 0))
    (folder100 / "train.bin").write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match="not a multiple of the 3074-byte record"):
        datasets.CIFAR100(tmp_path)


def test_cifar_missing_and_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py"):
        datasets.CIFAR10(tmp_path)
    with pytest.raises(RuntimeError, match="downloads are unavailable"):
        datasets.CIFAR100(tmp_path, download=True)


def test_cifar_pickles_from_old_numpy_load(tmp_path):
    """The published files name numpy.core.multiarray (NumPy 1), not numpy._core."""
    write_python_cifar10(tmp_path)
    path = tmp_path / "cifar-10-batches-py" / "test_batch"
    path.write_bytes(path.read_bytes().replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))
    assert len(datasets.CIFAR10(tmp_path, train=False)) == 3


def test_fake_data_is_deterministic_per_index():
    ds = datasets.FakeData(size=5, image_size=(3, 6, 4), num_classes=3, transform=transforms.ToTensor())
    image, target = ds[2]
    assert image.shape == (3, 6, 4) and 0 <= target < 3 and len(ds) == 5
    np.testing.assert_array_equal(ds[2][0].numpy(), image.numpy())
    assert not np.array_equal(ds[3][0].numpy(), image.numpy())
    assert datasets.FakeData(size=2, image_size=(1, 5, 5))[0][0].shape == (5, 5)
    with pytest.raises(IndexError):
        ds[5]
