"""Datasets: the map-style and iterable protocols and the ready-made combinators.

A map-style dataset answers ``dataset[i]`` and ``len(dataset)``; an iterable dataset
answers ``iter(dataset)``. ``TensorDataset``, ``Subset``, ``ConcatDataset``,
``ChainDataset`` and ``random_split`` build new datasets out of existing ones without
copying any sample, exactly as ``torch.utils.data`` does.
"""
import bisect
import math
import warnings

import numpy as np

import nbtorch

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
    "Subset", "StackDataset", "random_split",
]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, i):
        ...         return i * i
        >>> [Squares()[i] for i in range(4)]
        [0, 1, 4, 9]
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy of the dataset; use
    ``nbtorch.utils.data.get_worker_info()`` inside ``__iter__`` to give each worker
    its own shard, otherwise every sample appears once per worker.

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(3))
        >>> list(Count())
        [0, 1, 2]
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the ``i``-th rows of tensors that share their first dimension.

    Example:
        >>> import nbtorch
        >>> ds = TensorDataset(nbtorch.zeros(5, 2), nbtorch.arange(5))
        >>> len(ds), ds[1][1].item()
        (5, 1)
    """

    def __init__(self, *tensors):
        sizes = [tensor.size(0) for tensor in tensors]
        if any(size != sizes[0] for size in sizes):
            raise AssertionError("Size mismatch between tensors")      # PyTorch's type
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0) if self.tensors else 0

    def _collated_batch(self, indices):
        """``default_collate([self[i] for i in indices])``, one gather per tensor (the
        DataLoader's fetcher asks; a 64-row batch cost 128 row views and two stacks:
        388 us vs PyTorch's 228), or None where the result could differ: a subclass's
        own ``__getitem__``, CUDA or grad-requiring tensors, an index out of range (the
        per-sample path then raises PyTorch's error)."""
        tensors = self.tensors
        if (type(self).__getitem__ is not TensorDataset.__getitem__ or not tensors
                or any(t.device.type != "cpu" or t.requires_grad for t in tensors)):
            return None
        idx = np.asarray(indices)
        n = len(self)
        if (idx.ndim != 1 or not idx.size or idx.dtype.kind not in "iu"
                or idx.min() < -n or idx.max() >= n):
            return None
        return [nbtorch.from_numpy(np.take(t._host(), idx, axis=0)) for t in tensors]


class ConcatDataset(Dataset):
    """The concatenation of several map-style datasets, indexed end to end.

    Example:
        >>> ds = ConcatDataset([[1, 2], [3]])
        >>> len(ds), ds[2], ds[-1]
        (3, 3, 3)
    """

    @staticmethod
    def cumsum(sequence):
        """Return the running totals of the lengths of ``sequence``'s datasets."""
        totals, total = [], 0
        for dataset in sequence:
            total += len(dataset)
            totals.append(total)
        return totals

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:                      # PyTorch raises AssertionErrors
            raise AssertionError("datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    @property
    def cummulative_sizes(self):
        """The old, misspelt name of `cumulative_sizes` (PyTorch warns too)."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`",
                      FutureWarning, stacklevel=2)
        return self.cumulative_sizes

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"index {idx} is out of range for ConcatDataset of length "
                             f"{len(self)}")
        dataset_index = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[dataset_index - 1] if dataset_index > 0 else 0
        return self.datasets[dataset_index][idx - start]


class ChainDataset(IterableDataset):
    """The concatenation of several iterable datasets, streamed one after the other
    (each must be an ``IterableDataset``, as in PyTorch).

    Example:
        >>> class Range(IterableDataset):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(self.n))
        >>> list(ChainDataset([Range(2), Range(3)]))
        [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            _check_iterable(dataset)
            yield from dataset

    def __len__(self):
        total = 0
        for dataset in self.datasets:
            _check_iterable(dataset)
            total += len(dataset)
        return total


def _check_iterable(dataset):
    if not isinstance(dataset, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")


class Subset(Dataset):
    """The samples of ``dataset`` at positions ``indices``, in that order.

    Example:
        >>> Subset(["a", "b", "c"], [2, 0])[0]
        'c'
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        if (type(self).__getitem__ is not Subset.__getitem__
                and type(self).__getitems__ is Subset.__getitems__):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. When "
                "subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\ndef __getitems__(self, indices):\n    return "
                "[self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        """The samples at ``indices`` (the DataLoader fetches a batch with it); the
        dataset's own ``__getitems__`` serves them when it has one."""
        inner = [self.indices[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(inner)
        return [self.dataset[i] for i in inner]

    def _collated_batch(self, indices):
        """The dataset's fast collated batch (TensorDataset's) for these positions, or
        None (a subclass's own item access, or a dataset without one)."""
        gather = getattr(self.dataset, "_collated_batch", None)
        if (gather is None or type(self).__getitem__ is not Subset.__getitem__
                or type(self).__getitems__ is not Subset.__getitems__):
            return None
        try:
            inner = [self.indices[i] for i in indices]
        except (IndexError, TypeError):
            return None                         # the per-sample path raises PyTorch's error
        return gather(inner)

    def __len__(self):
        return len(self.indices)


class StackDataset(Dataset):
    """Samples of several equal-length datasets side by side: a tuple (positional
    datasets) or a dict (keyword datasets) per index.

    Example:
        >>> StackDataset(["a", "b"], [1, 2])[1]
        ('b', 2)
        >>> StackDataset(x=["a", "b"], y=[1, 2])[0]
        {'x': 'a', 'y': 1}
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        datasets = args or tuple(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(self._length != len(d) for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else dict(kwargs)

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        """One batch: each dataset's ``__getitems__`` where it has one (PyTorch's)."""
        if isinstance(self.datasets, dict):
            columns = {k: self._column(d, indices) for k, d in self.datasets.items()}
            return [{k: col[i] for k, col in columns.items()} for i in range(len(indices))]
        columns = [self._column(d, indices) for d in self.datasets]
        return [tuple(col[i] for col in columns) for i in range(len(indices))]

    @staticmethod
    def _column(dataset, indices):
        getitems = getattr(dataset, "__getitems__", None)
        if not callable(getitems):
            return [dataset[i] for i in indices]
        items = getitems(indices)
        if len(items) != len(indices):
            raise ValueError("Nested dataset's output size mismatch. Expected "
                             f"{len(indices)}, got {len(items)}")
        return items

    def __len__(self):
        return self._length


def _lengths_from_fractions(fractions, total):
    """Turn fractions summing to 1 into integer lengths summing to ``total`` (PyTorch's rule)."""
    lengths = []
    for i, fraction in enumerate(fractions):
        if fraction < 0 or fraction > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(int(math.floor(total * fraction)))
    remainder = total - sum(lengths)
    for i in range(remainder):  # hand out the leftover samples round-robin
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. "
                          f"This might result in an empty dataset.")
    return lengths


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` at random into non-overlapping ``Subset``s of the given lengths.

    Args:
        dataset: a map-style dataset.
        lengths: integer lengths summing to ``len(dataset)``, or fractions summing to 1
            (floored, then the remainder is handed out one by one from the first split).
        generator: an ``nbtorch.Generator`` for a reproducible split (None: the global one).

    Example:
        >>> import nbtorch
        >>> train, test = random_split(range(10), [0.8, 0.2], nbtorch.Generator().manual_seed(0))
        >>> len(train), len(test)
        (8, 2)
    """
    lengths = list(lengths)
    total = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, total)
    if sum(lengths) != total:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    permutation = nbtorch.randperm(total, generator=generator).tolist()
    subsets, offset = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, permutation[offset:offset + length]))
        offset += length
    return subsets
