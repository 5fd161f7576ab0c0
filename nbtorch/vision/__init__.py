"""Vision helpers: image ``transforms`` (v1 and ``transforms.v2``), ``datasets`` (``Digits``
ships with nbtorch; ``ImageFolder`` reads a folder tree), ``io`` (``read_image``), ``models``
(ResNets), ``ops`` (box IoU, NMS, focal loss) and ``utils`` (``make_grid``).

Example:
    >>> from nbtorch.vision import datasets, transforms
    >>> train = datasets.Digits(train=True, transform=transforms.Normalize([0.5], [0.5]))
    >>> len(train)
    1438
"""
from nbtorch.vision import datasets, functional, io, models, ops, transforms, utils

__all__ = ["datasets", "functional", "io", "models", "ops", "transforms", "utils"]
