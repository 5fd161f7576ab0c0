"""``DatasetFolder`` / ``ImageFolder``: samples laid out as ``root/<class>/**/<file>``.

Classes are the sorted sub-folder names (``class_to_idx`` numbers them in that order);
files are collected per class in sorted walk order, as torchvision does, so the sample
order is the same on every machine.
"""
import os

from nbtorch.utils.data import Dataset

__all__ = ["IMG_EXTENSIONS", "has_file_allowed_extension", "is_image_file", "find_classes",
           "make_dataset", "DatasetFolder", "ImageFolder", "pil_loader", "default_loader"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename, extensions):
    """True when ``filename`` ends (case-insensitively) with one of ``extensions``."""
    return filename.lower().endswith(extensions if isinstance(extensions, str)
                                     else tuple(extensions))


def is_image_file(filename):
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory):
    """``(classes, class_to_idx)`` from the sub-folders of ``directory``."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None,
                 allow_empty=False):
    """The ``(path, class_index)`` samples under ``directory``, files chosen by
    ``extensions`` or by ``is_valid_file`` (exactly one of them)."""
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the "
                         "same time")
    if extensions is not None:
        def is_valid_file(path):
            return has_file_allowed_extension(path, extensions)
    instances, found = [], set()
    for target_class in sorted(class_to_idx):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, class_index))
                    found.add(target_class)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        message = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            listed = extensions if isinstance(extensions, str) else ", ".join(extensions)
            message += f"Supported extensions are: {listed}"
        raise FileNotFoundError(message)
    return instances


class DatasetFolder(Dataset):
    """Samples ``root/<class>/.../<file>`` read by ``loader(path)``; ``dataset[i]`` is
    ``(transform(sample), target_transform(class_index))``.

    Attributes: ``classes``, ``class_to_idx``, ``samples`` (path, index) and ``targets``.
    """

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None,
                 is_valid_file=None, allow_empty=False):
        self.root = os.path.expanduser(os.fspath(root))
        self.transform = transform
        self.target_transform = target_transform
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx, extensions, is_valid_file,
                                    allow_empty=allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [target for _, target in samples]

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None,
                     allow_empty=False):
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory):
        return find_classes(directory)

    def __getitem__(self, index):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __len__(self):
        return len(self.samples)

    def __repr__(self):
        lines = [f"Dataset {self.__class__.__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}"]
        if self.transform is not None:
            lines.append(f"    StandardTransform\n    Transform: {self.transform!r}")
        return "\n".join(lines)


def pil_loader(path):
    """Open an image file with Pillow as RGB."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("ImageFolder's default loader needs Pillow (pip install pillow); "
                          "or pass loader=") from None
    with open(path, "rb") as handle:
        image = Image.open(handle)
        return image.convert("RGB")


def default_loader(path):
    """``.npy`` files load as NumPy arrays (HW or HWC); anything else through Pillow as RGB."""
    if path.lower().endswith(".npy"):
        import numpy as np
        return np.load(path, allow_pickle=False)
    return pil_loader(path)


class ImageFolder(DatasetFolder):
    """Images in ``root/<class>/...`` (the ImageNet layout), loaded as RGB PIL images by
    default; ``imgs`` is ``samples``.

    Example:
        >>> train = ImageFolder("data/train", transform=transforms.ToTensor())  # doctest: +SKIP
    """

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader,
                 is_valid_file=None, allow_empty=False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None,
                         transform=transform, target_transform=target_transform,
                         is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
