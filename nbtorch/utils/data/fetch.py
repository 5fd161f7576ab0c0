"""Fetchers: turn one entry of the index sampler into one (collated) batch.

The same fetchers run in the main process (``num_workers=0``) and inside worker
processes, so both paths produce identical batches.
"""

from nbtorch.utils.data.collate import default_collate

__all__ = ["MapDatasetFetcher", "IterableDatasetFetcher", "create_fetcher"]


class MapDatasetFetcher:
    """Read ``dataset[i]`` for each index of a batch (or one index), then collate."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, possibly_batched_index):
        """Return the collated batch for a list of indices (or the sample for one index)."""
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            gather = getattr(self.dataset, "_collated_batch", None)
            if gather is not None and self.collate_fn is default_collate:
                # TensorDataset (or a Subset of one): one gather per tensor
                batch = gather(possibly_batched_index)
                if batch is not None:
                    return batch
            if getitems is not None:
                data = getitems(possibly_batched_index)
            else:
                data = [self.dataset[index] for index in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)


class IterableDatasetFetcher:
    """Pull the next sample (or ``len(batch)`` samples) from ``iter(dataset)``, then collate.

    Raises StopIteration when the stream ends; a short final batch is dropped when
    ``drop_last`` is set.
    """

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, possibly_batched_index):
        """Return the next collated batch of the stream; StopIteration at its end."""
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last):
    """Return the fetcher for a map-style (``is_iterable=False``) or iterable dataset."""
    fetcher_class = IterableDatasetFetcher if is_iterable else MapDatasetFetcher
    return fetcher_class(dataset, auto_collation, collate_fn, drop_last)
