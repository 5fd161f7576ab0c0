"""`torch.nn.parallel`: `DataParallel` (one process, the batch split over CUDA devices)
and `DistributedDataParallel` (one process per replica, gradients averaged over MPI by
nbtorch.distributed)."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .scatter_gather import gather, scatter

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel", "scatter", "gather"]
