"""Vision helpers: image ``transforms`` and ``datasets`` (``Digits`` ships with nbtorch).

Example:
    >>> from nbtorch.vision import datasets, transforms
    >>> train = datasets.Digits(train=True, transform=transforms.Normalize([0.5], [0.5]))
    >>> len(train)
    1438
"""
from nbtorch.vision import datasets, functional, transforms

__all__ = ["datasets", "functional", "transforms"]
