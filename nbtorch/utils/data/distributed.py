"""`DistributedSampler`: each rank of a distributed job visits its own share of a dataset.

Every rank shuffles the same way (a generator seeded with `seed + epoch`, so call
`set_epoch` at the start of each epoch for a new order), then takes every
`num_replicas`-th index starting at its rank. Unless `drop_last`, the index list is padded
with its own first indices to a multiple of `num_replicas`, so all ranks see as many
samples (and run as many steps) as one another.
"""
import math

import nbtorch
from nbtorch.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Like ``torch.utils.data.DistributedSampler`` (the same permutation as PyTorch for a
    given seed and epoch: nbtorch's generator is PyTorch's MT19937).

    Example:
        >>> s = DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)
        >>> list(s)
        [1, 4, 7, 0]
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            import nbtorch.distributed as dist
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = nbtorch.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = nbtorch.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use `seed + epoch` for the next shuffle, so each epoch has its own order."""
        self.epoch = epoch
