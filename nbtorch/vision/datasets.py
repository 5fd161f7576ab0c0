"""Image datasets: ``Digits`` (shipped with nbtorch), ``MNIST`` read from local IDX files,
``CIFAR10``/``CIFAR100`` from their local batches (``_cifar.py``) and
``ImageFolder``/``DatasetFolder`` over a ``root/<class>/<file>`` tree (``_folder.py``).

All follow torchvision's interface: ``dataset[i]`` is ``(image, target)`` after
``transform`` / ``target_transform``, with ``.data``, ``.targets`` and ``.classes``.
"""
import functools
import gzip
import os
import zlib

import numpy as np

import nbtorch
from nbtorch.utils.data import Dataset
from nbtorch.vision import _folder as folder  # torchvision.datasets.folder's place
from nbtorch.vision._cifar import CIFAR10, CIFAR100
from nbtorch.vision._folder import (IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader,
                                    find_classes, has_file_allowed_extension, make_dataset,
                                    pil_loader)

__all__ = ["VisionDataset", "Digits", "MNIST", "FashionMNIST", "read_idx", "DatasetFolder",
           "ImageFolder", "IMG_EXTENSIONS", "default_loader", "pil_loader", "find_classes",
           "make_dataset", "has_file_allowed_extension", "folder", "CIFAR10", "CIFAR100",
           "FakeData"]

_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_DIGITS_FILE = "digits.csv.gz"


class VisionDataset(Dataset):
    """Shared plumbing: root, transforms, and a torchvision-style ``repr``."""

    def __init__(self, root=None, transform=None, target_transform=None):
        self.root = None if root is None else os.path.expanduser(os.fspath(root))
        self.transform = transform
        self.target_transform = target_transform

    def _apply_transforms(self, image, target):
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __len__(self):
        return len(self.targets)

    def __repr__(self):
        lines = [f"Dataset {self.__class__.__name__}", f"    Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"    Root location: {self.root}")
        lines.append(f"    Split: {'Train' if self.train else 'Test'}")
        if self.transform is not None:
            lines.append(f"    StandardTransform\n    Transform: {self.transform!r}")
        return "\n".join(lines)


# ---- Digits -----------------------------------------------------------------------

def _split_key(index):
    """A fixed pseudo-random order key for sample ``index`` (Knuth's multiplicative hash)."""
    return (index * 2654435761) % 2 ** 32


@functools.lru_cache(maxsize=4)
def _load_digits(path):
    """Parse ``digits.csv.gz`` (64 pixel columns in 0..16, then the label) once per path."""
    try:
        with gzip.open(path, "rt") as handle:
            table = np.loadtxt(handle, delimiter=",", dtype=np.int64)
    except (OSError, EOFError, zlib.error, ValueError) as error:
        raise ValueError(f"Digits: cannot read {path}: {error}") from None
    if table.ndim != 2 or table.shape[1] != 65:
        raise ValueError(f"Digits: {path} should have 65 columns (64 pixels and a label), "
                         f"got shape {table.shape}")
    images = (table[:, :64].astype(np.float32) / np.float32(16)).reshape(-1, 1, 8, 8)
    return images, table[:, 64].copy()


def _digits_test_indices(labels, test_fraction):
    """Stratified fixed split: per class, the ``round(n * test_fraction)`` first by ``_split_key``."""
    chosen = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label).tolist()
        members.sort(key=_split_key)
        chosen.extend(members[:int(round(len(members) * test_fraction))])
    return np.array(sorted(chosen), dtype=np.int64)


class Digits(VisionDataset):
    """The 1,797 8x8 handwritten digits of the UCI optical-recognition test set.

    Shipped with nbtorch (``nbtorch/vision/data/digits.csv.gz``, from scikit-learn; CC BY 4.0,
    Alpaydin & Kaynak, see ``DIGITS_LICENSE.txt``). Each image is a ``1x8x8`` float32 tensor
    in [0, 1] (the 0..16 pixel counts divided by 16), each target an int in 0..9.

    The split is fixed and stratified: for every class, ``TEST_FRACTION`` (20%) of its
    samples, picked by a fixed hash of their position in the file, form the test set
    (359 images); the other 1,438 form the training set. It never changes between runs,
    machines or NumPy versions.

    Args:
        root: a folder holding another ``digits.csv.gz`` to use; None (or a folder without
            one) uses the bundled copy.
        train: the training split (True) or the test split (False).
        transform: applied to each image tensor.
        target_transform: applied to each target.
        download: accepted for torchvision compatibility; the data is already bundled.

    Example:
        >>> train = Digits(train=True)
        >>> image, label = train[0]
        >>> len(train), tuple(image.shape), len(train.classes)
        (1438, (1, 8, 8), 10)
    """

    TEST_FRACTION = 0.2
    classes = [str(digit) for digit in range(10)]

    def __init__(self, root=None, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        path = os.path.join(_DATA_DIR, _DIGITS_FILE)
        if self.root is not None and os.path.isfile(os.path.join(self.root, _DIGITS_FILE)):
            path = os.path.join(self.root, _DIGITS_FILE)
        images, labels = _load_digits(path)
        test = np.zeros(len(labels), dtype=bool)
        test[_digits_test_indices(labels, self.TEST_FRACTION)] = True
        keep = ~test if train else test
        self._images = np.ascontiguousarray(images[keep])
        self._labels = labels[keep]
        self.data = nbtorch.from_numpy(self._images)
        self.targets = nbtorch.from_numpy(self._labels)
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def __getitem__(self, index):
        image = nbtorch.from_numpy(self._images[index].copy())
        return self._apply_transforms(image, int(self._labels[index]))

    def __len__(self):
        return len(self._labels)


# ---- IDX files (MNIST) --------------------------------------------------------------

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def _read_bytes(path):
    """The (decompressed, for ``.gz``) contents of ``path``; ValueError for a broken gzip."""
    if not path.endswith(".gz"):
        with open(path, "rb") as handle:
            return handle.read()
    try:
        with gzip.open(path, "rb") as handle:
            return handle.read()
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"corrupt IDX file {path}: cannot decompress it ({error})") from None


def read_idx(path):
    """Parse an IDX file (MNIST's format; optionally gzipped) into a NumPy array.

    The header is two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
    0x0D float32, 0x0E float64), the number of dimensions, then each dimension as a
    big-endian uint32; the values follow, big-endian, row-major. Raises ValueError naming
    the file for a bad header or a data size that does not match the header.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "x-idx1-ubyte")
        >>> open(path, "wb").write(bytes([0, 0, 8, 1, 0, 0, 0, 2, 7, 9]))
        10
        >>> read_idx(path).tolist()
        [7, 9]
    """
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise ValueError(f"corrupt IDX file {path}: {len(raw)} bytes is too short for a header")
    if raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"corrupt IDX file {path}: bad magic number 0x{raw[:4].hex()} "
                         "(an IDX file starts with two zero bytes)")
    type_code, ndim = raw[2], raw[3]
    if type_code not in _IDX_TYPES:
        raise ValueError(f"corrupt IDX file {path}: unknown data type code 0x{type_code:02x}")
    header = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header:
        raise ValueError(f"corrupt IDX file {path}: header for {ndim} dimensions is truncated")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[type_code])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(raw) - header
    if found != expected:
        problem = "truncated" if found < expected else "has trailing bytes"
        raise ValueError(f"corrupt IDX file {path}: {problem}: shape {shape} needs {expected} "
                         f"bytes of data, found {found}")
    values = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


class MNIST(VisionDataset):
    """MNIST from the four standard IDX files in a local folder (nothing is downloaded).

    Looks for ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte`` (``train=True``) or
    ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte`` (``train=False``), each
    optionally ``.gz``, in ``root``, ``root/MNIST/raw`` or ``root/MNIST``. Each image is
    a 28x28 uint8 NumPy array (the PIL-free stand-in for torchvision's PIL image:
    ``transforms.ToTensor()`` turns it into a 1x28x28 float tensor in [0, 1]); each
    target an int. ``.data`` is a uint8 tensor (N, 28, 28), ``.targets`` an int64 tensor.

    Raises FileNotFoundError listing where it looked, ValueError for a corrupt file,
    and RuntimeError for ``download=True`` (downloads are unavailable).

    Example:
        >>> from nbtorch.vision import transforms
        >>> train = MNIST("data", train=True, transform=transforms.ToTensor())  # doctest: +SKIP
    """

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        if root is None:
            raise ValueError(f"{self.__class__.__name__} needs root: the folder holding the "
                             "IDX files")
        super().__init__(root, transform, target_transform)
        self.train = train
        if download:
            raise RuntimeError(
                f"{self.__class__.__name__}: downloads are unavailable in nbtorch (it never "
                "uses the network). Download the four IDX files yourself and place them in "
                f"{self.root!r} (or {os.path.join(str(self.root), self.__class__.__name__, 'raw')!r}), "
                "then pass download=False.")
        prefix = "train" if train else "t10k"
        images = read_idx(self._find(f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(self._find(f"{prefix}-labels-idx1-ubyte"))
        if images.ndim != 3 or images.dtype != np.uint8:
            raise ValueError(f"{self.__class__.__name__}: images should be uint8 of shape "
                             f"(N, H, W), got {images.dtype} of shape {images.shape}")
        if labels.ndim != 1 or len(labels) != len(images):
            raise ValueError(f"{self.__class__.__name__}: {len(images)} images but labels of "
                             f"shape {labels.shape}")
        if len(labels) and (labels.min() < 0 or labels.max() >= len(self.classes)):
            raise ValueError(f"{self.__class__.__name__}: labels should be in "
                             f"0..{len(self.classes) - 1}, found {labels.min()}..{labels.max()}")
        self._images = np.ascontiguousarray(images)
        self._labels = labels.astype(np.int64)
        self.data = nbtorch.from_numpy(self._images)
        self.targets = nbtorch.from_numpy(self._labels)
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def _find(self, name):
        """The path of ``name`` (or ``name.gz``, or with '.idx' spelled so) in the search folders."""
        folders = [self.root, os.path.join(self.root, self.__class__.__name__, "raw"),
                   os.path.join(self.root, self.__class__.__name__)]
        spellings = [name, name.replace("-idx", ".idx")]
        candidates = [os.path.join(folder, spelling + suffix)
                      for folder in folders for spelling in spellings for suffix in ("", ".gz")]
        for candidate in candidates:
            if os.path.isfile(candidate):
                return candidate
        raise FileNotFoundError(
            f"{self.__class__.__name__}: {name}[.gz] not found; looked in "
            f"{', '.join(repr(folder) for folder in folders)}. Downloads are unavailable: "
            "place the IDX files there yourself.")

    def __getitem__(self, index):
        return self._apply_transforms(self._images[index].copy(), int(self._labels[index]))

    def __len__(self):
        return len(self._labels)


class FashionMNIST(MNIST):
    """Fashion-MNIST from its local IDX files (same file names and layout as ``MNIST``)."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]


class FakeData(Dataset):
    """``size`` random images with random targets, for trying a pipeline without data.

    Image ``i`` is an ``H x W x C`` uint8 array (``image_size`` is ``(C, H, W)``, as in
    torchvision) drawn from a generator seeded with ``i + random_offset``, so every epoch
    and every worker sees the same sample at the same index.
    """

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        self.size = size
        self.image_size = tuple(image_size)
        self.num_classes = num_classes
        self.transform = transform
        self.target_transform = target_transform
        self.random_offset = random_offset

    def __getitem__(self, index):
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        rng = np.random.default_rng(index + self.random_offset)
        channels, height, width = self.image_size
        image = rng.integers(0, 256, (height, width, channels), dtype=np.uint8)
        target = int(rng.integers(0, self.num_classes))
        if channels == 1:
            image = image[:, :, 0]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __len__(self):
        return self.size
