"""Random draws for samplers, splits and transforms, seeded from nbtorch's generators.

Samplers and ``random_split`` draw as PyTorch does (``randperm``/``randint``/
``multinomial`` on nbtorch's generators, seeds by ``random_()`` on an int64 scalar), so
after the same ``manual_seed`` a shuffled DataLoader visits PyTorch's order. The rest
(vision transforms) runs on a NumPy ``Generator`` seeded with one 63-bit seed drawn from
an nbtorch ``Generator`` (nbtorch's global one when ``generator`` is None).
"""
import numpy as np

import nbtorch


def new_seed(generator=None):
    """Return a fresh seed in [0, 2**63) drawn from ``generator`` (None: the global one).

    PyTorch's draw: ``empty((), dtype=int64).random_(generator=generator)``.
    """
    value = nbtorch.empty((), dtype=nbtorch.int64).random_(generator=generator)
    return int(value.item())


def seeded_generator(generator=None):
    """``generator`` itself, or (None) a new Generator seeded from the global one, as
    PyTorch's ``RandomSampler`` does at the start of each epoch."""
    if generator is not None:
        return generator
    fresh = nbtorch.Generator()
    fresh.manual_seed(new_seed(None))
    return fresh


def numpy_rng(generator=None):
    """Return a NumPy Generator seeded from ``generator`` (None: nbtorch's global generator)."""
    return np.random.default_rng(new_seed(generator))


def randint(low, high):
    """Return one integer in [low, high) drawn from nbtorch's global generator."""
    return int(nbtorch.randint(low, high, (1,)).item())


def rand():
    """Return one float in [0, 1) drawn from nbtorch's global generator."""
    return float(nbtorch.rand(1).item())
