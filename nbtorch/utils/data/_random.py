"""Random draws for samplers, splits and transforms, seeded from nbtorch's generators.

Every random choice in ``nbtorch.utils.data`` and ``nbtorch.vision`` starts from one
63-bit seed drawn from an nbtorch ``Generator`` (or nbtorch's global generator when
``generator`` is None), then runs on a NumPy ``Generator`` seeded with it. So
``nbtorch.manual_seed(0)`` or ``DataLoader(..., generator=g)`` makes shuffles
reproducible, and each draw advances the nbtorch generator exactly once, as PyTorch
advances its generator when a sampler starts an epoch.
"""
import numpy as np

import nbtorch

_SEED_HIGH = 2 ** 63 - 1


def new_seed(generator=None):
    """Return a fresh seed in [0, 2**63 - 1) drawn from ``generator`` (None: the global one)."""
    value = nbtorch.randint(0, _SEED_HIGH, (), dtype=nbtorch.int64, generator=generator)
    return int(value.item())


def numpy_rng(generator=None):
    """Return a NumPy Generator seeded from ``generator`` (None: nbtorch's global generator)."""
    return np.random.default_rng(new_seed(generator))


def randint(low, high):
    """Return one integer in [low, high) drawn from nbtorch's global generator."""
    return int(nbtorch.randint(low, high, (1,)).item())


def rand():
    """Return one float in [0, 1) drawn from nbtorch's global generator."""
    return float(nbtorch.rand(1).item())
