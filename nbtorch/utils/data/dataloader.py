"""DataLoader: batches from a dataset, in the main process or in worker processes.

The loader turns its options into an *index sampler* (a ``BatchSampler`` when it
batches, a plain sampler when ``batch_size=None``), a fetcher and a ``collate_fn``; an
iterator then walks the index sampler, either fetching in this process
(``num_workers=0``) or handing each entry to worker processes
(``multiprocess.MultiProcessIter``). Options, defaults and error messages follow
``torch.utils.data.DataLoader``.
"""
import itertools
import multiprocessing
import os
import warnings

import nbtorch
from nbtorch.utils.data import _random
from nbtorch.utils.data.collate import default_collate, default_convert
from nbtorch.utils.data.dataset import IterableDataset
from nbtorch.utils.data.fetch import create_fetcher
from nbtorch.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_FROZEN_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                      "persistent_workers")


class _InfiniteConstantSampler(Sampler):
    """Yields None forever: the 'index' stream behind an IterableDataset."""

    def __iter__(self):
        return itertools.repeat(None)


def _check_loader_options(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
                          drop_last, timeout, prefetch_factor, persistent_workers):
    """Raise PyTorch's ValueError for every invalid or mutually exclusive option."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; "
                         "use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 1:
        raise ValueError(f"prefetch_factor option should be a positive integer, "
                         f"got {prefetch_factor}")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if isinstance(dataset, IterableDataset):
        for name, value in (("shuffle", shuffle), ("sampler", sampler),
                            ("batch_sampler", batch_sampler)):
            if value not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"{name} option, but got {name}={value}")
    elif shuffle not in (None, False) and sampler is not None:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                             "shuffle, sampler, and drop_last")
    elif batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually "
                         "exclusive with drop_last")



def _check_multiprocessing_context(context, num_workers):
    """Refuse a context without workers, or an unknown start method name."""
    if context is None:
        return
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError("multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got multiprocessing_context={context!r}")
    elif not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        f"string specifying the start method, but got "
                        f"multiprocessing_context={context!r}")


class DataLoader:
    """Iterate over ``dataset`` in (collated) batches, optionally with worker processes.

    Args:
        dataset: a map-style ``Dataset`` (``__getitem__``/``__len__``) or an ``IterableDataset``.
        batch_size: samples per batch; None disables batching (each sample is converted
            with ``default_convert`` instead of collated).
        shuffle: visit a map-style dataset in a new random order every epoch.
        sampler: an iterable of indices (exclusive with ``shuffle``).
        batch_sampler: an iterable of lists of indices (exclusive with ``batch_size``,
            ``shuffle``, ``sampler`` and ``drop_last``).
        num_workers: worker processes loading in parallel (0: load in this process).
        collate_fn: list of samples -> batch (default ``default_collate``).
        pin_memory: accepted for compatibility; no effect (there is no pinned memory;
            without a GPU it warns, as PyTorch's).
        drop_last: drop the final incomplete batch.
        timeout: seconds to wait for one batch from the workers (0: wait forever, while
            still noticing workers that die).
        worker_init_fn: called as ``fn(worker_id)`` in each worker after seeding.
        multiprocessing_context: a start method name or a context (default 'fork' on
            Linux, else the platform default); with 'spawn' the dataset and functions
            must be picklable.
        generator: an ``nbtorch.Generator`` for the shuffle order and the workers' seeds.
        prefetch_factor: batches loaded in advance per worker (default 2 with workers).
        persistent_workers: keep the workers alive between epochs.
        pin_memory_device, in_order: accepted for compatibility; batches always arrive in
            sampler order.

    Example:
        >>> import nbtorch
        >>> from nbtorch.utils.data import TensorDataset
        >>> loader = DataLoader(TensorDataset(nbtorch.arange(5)), batch_size=2)
        >>> [batch[0].tolist() for batch in loader]
        [[0, 1], [2, 3], [4]]
    """

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        _check_loader_options(dataset, batch_size, shuffle, sampler, batch_sampler,
                              num_workers, drop_last, timeout, prefetch_factor,
                              persistent_workers)
        _check_multiprocessing_context(multiprocessing_context, num_workers)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._is_iterable = isinstance(dataset, IterableDataset)
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._IterableDataset_len_called = None
        self._initialized = True
        self.check_worker_number_rationality()

    def check_worker_number_rationality(self):
        """Warn, as PyTorch does, when num_workers exceeds the CPUs this process may use."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            why = ("DataLoader is not able to compute a suggested max number of worker in "
                   "current system.")
        else:
            why = (f"Our suggested max number of worker in current system is {suggest}"
                   f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, "
                   "which is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {why} Please be aware that excessive worker creation might get "
                      "DataLoader running slow or even freeze, lower the worker number to "
                      "avoid potential slowness/freeze if necessary.", stacklevel=2)

    def __setattr__(self, name, value):
        if self._initialized and name in _FROZEN_AFTER_INIT:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        """True when the loader batches samples itself (there is a batch sampler)."""
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterator walks: the batch sampler when batching, else the sampler."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        from nbtorch.utils.data.multiprocess import MultiProcessIter
        self.check_worker_number_rationality()
        return MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._is_iterable:
            length = len(self.dataset)  # TypeError when the stream has no length
            self._IterableDataset_len_called = length     # iterators warn past it
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return (length + self.batch_size - 1) // self.batch_size
            return length
        return len(self._index_sampler)


class BaseIter:
    """State shared by both iterators: the sampler walk, the base seed, the batch count."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be "
                          "used as the device,ignore pin_memory_device="
                          f"'{loader.pin_memory_device}'.", stacklevel=2)
        if loader.pin_memory and not nbtorch.accelerator.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
        self._is_iterable = loader._is_iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._generator = loader.generator
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _random.new_seed(loader.generator)
        self._num_yielded = 0
        self._len_called = loader._IterableDataset_len_called

    def _reset(self, loader):
        """Start a new epoch (persistent workers): a fresh walk over the index sampler.
        The base seed stays: PyTorch draws it once per iterator, and persistent workers
        keep their random state, so a new draw would shift the global stream."""
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def __iter__(self):
        return self

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._is_iterable and self._len_called is not None
                and self._num_yielded > self._len_called):
            # PyTorch's check (it compares batches fetched with the dataset's length)
            message = (f"Length of IterableDataset {self._dataset} was reported to be "
                       f"{self._len_called}(when accessing len(dataloader)), but "
                       f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not "
                            "properly configuring the IterableDataset replica at each worker. "
                            "Please see https://pytorch.org/docs/stable/data.html#torch.utils."
                            "data.IterableDataset for examples.")
            warnings.warn(message)
        return data

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessIter(BaseIter):
    """Fetch every batch in the main process."""

    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = create_fetcher(self._is_iterable, self._dataset, self._auto_collation,
                                       self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()  # StopIteration ends the epoch
        return self._fetcher.fetch(index)
