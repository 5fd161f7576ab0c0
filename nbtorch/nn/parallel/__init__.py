"""`torch.nn.parallel`: `DataParallel` (one process, the batch split over CUDA devices)
and `DistributedDataParallel` (a name that explains it needs distributed training)."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .scatter_gather import gather, scatter

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel", "scatter", "gather"]
