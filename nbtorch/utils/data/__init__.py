"""Datasets, samplers, collation and the DataLoader, as in ``torch.utils.data``.

Example:
    >>> import nbtorch
    >>> from nbtorch.utils.data import DataLoader, TensorDataset
    >>> dataset = TensorDataset(nbtorch.arange(6).float(), nbtorch.arange(6))
    >>> [y.tolist() for x, y in DataLoader(dataset, batch_size=4)]
    [[0, 1, 2, 3], [4, 5]]
"""
from nbtorch.utils.data.collate import collate, default_collate, default_convert
from nbtorch.utils.data.dataloader import DataLoader
from nbtorch.utils.data.distributed import DistributedSampler
from nbtorch.utils.data.dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
    random_split,
)
from nbtorch.utils.data.sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)
from nbtorch.utils.data.worker import WorkerInfo, get_worker_info
from nbtorch.utils.data import _utils  # noqa: F401,E402  (torch.utils.data._utils)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo",
    "collate", "default_collate", "default_convert", "get_worker_info", "random_split",
]
