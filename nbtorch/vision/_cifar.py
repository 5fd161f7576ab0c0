"""CIFAR-10 / CIFAR-100 from their local files (nothing is downloaded).

Reads either distribution: the "python version" (``cifar-10-batches-py``,
``cifar-100-python``: pickled dicts, which torchvision downloads) through an unpickler that
only admits NumPy's array reconstruction, so a tampered file cannot run code; or the
"binary version" (``cifar-10-batches-bin``, ``cifar-100-binary``: fixed-size records).
"""
import io
import os
import pickle

import numpy as np

from nbtorch.utils.data import Dataset

__all__ = ["CIFAR10", "CIFAR100"]

_ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
            ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
            ("numpy._core.multiarray", "scalar"), ("_codecs", "encode")}


class _ArraysOnly(pickle.Unpickler):
    """An unpickler for data files: plain containers and NumPy arrays, nothing callable."""

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data file "
                                     "(only NumPy arrays are allowed)")


def _load_pickle(path):
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        return _ArraysOnly(io.BytesIO(raw), encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as error:
        raise ValueError(f"corrupt CIFAR file {path}: {error}") from None


class CIFAR10(Dataset):
    """CIFAR-10: 32x32 colour images in 10 classes (50,000 train, 10,000 test).

    ``root`` holds ``cifar-10-batches-py`` (torchvision's layout) or
    ``cifar-10-batches-bin``. Each image is a 32x32x3 uint8 NumPy array (HWC, what
    ``transforms.ToTensor()`` and every transform take); ``.data`` is the
    ``(N, 32, 32, 3)`` uint8 array and ``.targets`` a list of ints, as in torchvision.

    Example:
        >>> train = CIFAR10("data", train=True, transform=transforms.ToTensor())  # doctest: +SKIP
    """

    python_folder = "cifar-10-batches-py"
    binary_folder = "cifar-10-batches-bin"
    train_files = [f"data_batch_{i}" for i in range(1, 6)]
    test_files = ["test_batch"]
    labels_key = "labels"
    meta = ("batches.meta", "label_names")
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.root = os.path.expanduser(os.fspath(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        if download:
            raise RuntimeError(f"{type(self).__name__}: downloads are unavailable in nbtorch (it "
                               "never uses the network). Place the extracted archive in "
                               f"{self.root!r} and pass download=False.")
        python_dir = os.path.join(self.root, self.python_folder)
        binary_dir = os.path.join(self.root, self.binary_folder)
        if os.path.isdir(python_dir):
            data, targets = self._read_python(python_dir)
        elif os.path.isdir(binary_dir):
            data, targets = self._read_binary(binary_dir)
        else:
            raise FileNotFoundError(f"{type(self).__name__}: neither {python_dir!r} nor "
                                    f"{binary_dir!r} exists. Downloads are unavailable: extract "
                                    "the dataset archive there yourself.")
        self.data = np.ascontiguousarray(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        self.targets = [int(t) for t in targets]
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def _read_python(self, folder):
        data, targets = [], []
        for name in self.train_files if self.train else self.test_files:
            entry = _load_pickle(os.path.join(folder, name))
            data.append(np.asarray(entry["data"], dtype=np.uint8))
            targets.extend(entry[self.labels_key])
        meta_path = os.path.join(folder, self.meta[0])
        if os.path.isfile(meta_path):
            self.classes = list(_load_pickle(meta_path)[self.meta[1]])
        return np.concatenate(data), targets

    def _read_binary(self, folder):
        data, targets = [], []
        for name in self._binary_files():
            path = os.path.join(folder, name)
            raw = np.fromfile(path, dtype=np.uint8)
            record = self._label_bytes + 3072
            if raw.size % record:
                raise ValueError(f"corrupt CIFAR file {path}: {raw.size} bytes is not a "
                                 f"multiple of the {record}-byte record")
            raw = raw.reshape(-1, record)
            targets.extend(raw[:, self._label_bytes - 1].tolist())
            data.append(raw[:, self._label_bytes:])
        return np.concatenate(data), targets

    _label_bytes = 1

    def _binary_files(self):
        return [f"{name}.bin" for name in (self.train_files if self.train else self.test_files)]

    def __getitem__(self, index):
        image, target = self.data[index].copy(), self.targets[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        return (f"Dataset {type(self).__name__}\n    Number of datapoints: {len(self)}\n"
                f"    Root location: {self.root}\n    Split: {'Train' if self.train else 'Test'}")


class CIFAR100(CIFAR10):
    """CIFAR-100: 100 fine classes (``targets``); ``root`` holds ``cifar-100-python`` or
    ``cifar-100-binary`` (whose records carry the coarse label, then the fine one)."""

    python_folder = "cifar-100-python"
    binary_folder = "cifar-100-binary"
    train_files = ["train"]
    test_files = ["test"]
    labels_key = "fine_labels"
    meta = ("meta", "fine_label_names")
    classes = [str(i) for i in range(100)]
    _label_bytes = 2

    def _read_binary(self, folder):
        names = os.path.join(folder, "fine_label_names.txt")
        if os.path.isfile(names):
            with open(names) as handle:
                self.classes = [line.strip() for line in handle if line.strip()]
        return super()._read_binary(folder)
