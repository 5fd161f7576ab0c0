"""Data for the tutorial programs without downloads: the Digits set that ships with nbtorch.

Pure NumPy (no framework import), so that the same program runs under nbtorch and PyTorch.
"""
import gzip
import os

import numpy as np

_DIGITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                       os.pardir, "nbtorch", "vision", "data", "digits.csv.gz")


def load_digits(n_train=1500):
    """((x_train, y_train), (x_valid, y_valid)): 8x8 images flattened to 64 float32 in [0, 1]."""
    with gzip.open(os.path.normpath(_DIGITS), "rt") as handle:
        table = np.loadtxt(handle, delimiter=",", dtype=np.int64)
    x = (table[:, :64] / 16.0).astype(np.float32)
    y = table[:, 64].copy()
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


def synthetic_images(n, size=28, classes=10, seed=0):
    """``n`` float32 images (size x size) and labels: a class-dependent bright bar plus noise.

    A stand-in for FashionMNIST with the same shapes that a small network can learn.
    """
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, classes, size=n)
    images = rng.rand(n, 1, size, size).astype(np.float32) * 0.5
    rows = (labels * size) // classes
    for i, row in enumerate(rows):
        images[i, 0, row:row + size // classes, :] += 0.5
    return images, labels.astype(np.int64)
