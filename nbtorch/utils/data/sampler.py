"""Samplers: the order in which a DataLoader visits a dataset's indices.

A sampler is an iterable of indices (or, for ``BatchSampler``, of lists of indices).
Random samplers draw with nbtorch's ``randperm``/``randint``/``multinomial`` exactly as
PyTorch's do (``RandomSampler`` without a generator seeds a fresh one from the global
generator each epoch), so after the same ``manual_seed`` they give PyTorch's order.
"""
import numpy as np

import nbtorch
from nbtorch.utils.data import _random

__all__ = [
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "BatchSampler",
]


def _check_positive_int(name, value):
    """Raise PyTorch's ValueError unless ``value`` is a positive int (bools refused)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


def _check_bool(name, value, error=ValueError):
    """Raise PyTorch's ValueError (RandomSampler: TypeError) unless ``value`` is a bool."""
    if not isinstance(value, bool):
        raise error(f"{name} should be a boolean value, but got {name}={value}")


class Sampler:
    """Base class: subclasses define ``__iter__`` over indices and usually ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices ``0, 1, ..., len(data_source) - 1`` in order.

    Example:
        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order; with ``replacement`` each one drawn independently.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement (then ``num_samples`` may exceed the length).
        num_samples: how many indices per epoch (default ``len(data_source)``); without
            replacement, more than the length means several concatenated permutations.
        generator: an ``nbtorch.Generator`` (None: nbtorch's global generator).

    Example:
        >>> import nbtorch
        >>> sorted(RandomSampler(range(4), generator=nbtorch.Generator().manual_seed(1)))
        [0, 1, 2, 3]
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_bool("replacement", replacement, TypeError)
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:   # bools pass,
            raise ValueError("num_samples should be a positive integer value, but got "  # as
                             f"num_samples={self.num_samples}")                   # PyTorch's

    @property
    def num_samples(self):
        """The number of indices drawn per epoch."""
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        size, count = len(self.data_source), self.num_samples
        generator = _random.seeded_generator(self.generator)
        if self.replacement:  # PyTorch's draws: 32 indices at a time, then the rest
            for _ in range(count // 32):
                yield from nbtorch.randint(high=size, size=(32,), dtype=nbtorch.int64,
                                           generator=generator).tolist()
            yield from nbtorch.randint(high=size, size=(count % 32,), dtype=nbtorch.int64,
                                       generator=generator).tolist()
            return
        for _ in range(count // size):
            yield from nbtorch.randperm(size, generator=generator).tolist()
        yield from nbtorch.randperm(size, generator=generator).tolist()[:count % size]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (no replacement).

    Example:
        >>> sorted(SubsetRandomSampler([7, 3, 5]))
        [3, 5, 7]
    """

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for position in nbtorch.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[position]

    def __len__(self):
        return len(self.indices)


def _as_float64_vector(values):
    """Return ``values`` (list, NumPy array or nbtorch tensor) as a float64 NumPy array."""
    return np.array(values, dtype=np.float64)  # a tensor converts itself (Tensor.__array__)


class WeightedRandomSampler(Sampler):
    """Indices ``0..len(weights)-1`` drawn with probability proportional to ``weights``.

    Args:
        weights: a 1-D sequence of non-negative weights (need not sum to one).
        num_samples: how many indices per epoch.
        replacement: draw with replacement (without it, no index repeats in an epoch;
            once the non-zero weights are used up, zero-weight indices follow, as in
            PyTorch, though their order among themselves may differ).
        generator: an ``nbtorch.Generator`` (None: nbtorch's global generator).

    Example:
        >>> set(WeightedRandomSampler([0.0, 1.0, 0.0], 5))
        {1}
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_positive_int("num_samples", num_samples)
        _check_bool("replacement", replacement)
        probabilities = _as_float64_vector(weights)
        if probabilities.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(probabilities.shape)}")
        self.weights = nbtorch.as_tensor(probabilities)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        # PyTorch checks the weights when it draws (multinomial's CPU messages); without
        # replacement and too few non-zero weights it goes on with zero-weight indices
        w = self.weights.numpy()
        if not np.all(w >= 0):                                   # NaN lands here too
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        if not np.all(np.isfinite(w)):
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
        if not w.sum() > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        yield from nbtorch.multinomial(self.weights, self.num_samples, self.replacement,
                                       generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``.

    Args:
        sampler: any iterable of indices.
        batch_size: indices per batch.
        drop_last: drop the last batch if it is smaller than ``batch_size``.

    Example:
        >>> list(BatchSampler(range(5), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        _check_positive_int("batch_size", batch_size)
        _check_bool("drop_last", drop_last)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
