"""``torch.distributed`` on MPI: process groups, collectives, point-to-point messages.

Start the ranks with MPI's launcher, which also connects them:
``mpiexec -n 2 python train.py`` or ``python -m nbtorch.distributed.run --nproc-per-node 2
train.py`` (the ``torchrun`` analog). MPI comes from PyPI: ``pip install
'nbtorch[distributed]'`` (mpi4py and the mpich wheel, whose ``mpiexec`` lands in the
environment's ``bin/``). Without it ``is_available()`` is False and
``init_process_group`` raises an ImportError saying what to install. MPI itself is
started only by ``init_process_group``.

Modules: process_group (groups, ranks), collectives (tensor collectives), p2p
(send/recv), object_collectives (pickled objects), work (async handles, timeouts),
debug (NBTORCH_DISTRIBUTED_DEBUG=DETAIL mismatch checks), run (the launcher).
"""
from .collectives import (
    all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single, barrier,
    broadcast, gather, monitored_barrier, reduce, reduce_scatter, reduce_scatter_tensor,
    scatter,
)
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from .object_collectives import (
    all_gather_object, broadcast_object_list, gather_object, scatter_object_list,
)
from .p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from .process_group import (
    Backend, GroupMember, ProcessGroup, default_pg_timeout, destroy_process_group,
    get_backend, get_global_rank, get_group_rank, get_process_group_ranks, get_rank,
    get_world_size, group, init_process_group, is_available, is_gloo_available,
    is_initialized, is_mpi_available, is_nccl_available, is_torchelastic_launched, new_group,
)
from .reduce_op import ReduceOp
from .work import Work

_all_gather_base = all_gather_into_tensor
_reduce_scatter_base = reduce_scatter_tensor

__all__ = [
    "Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError",
    "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work", "all_gather",
    "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
    "get_world_size", "group", "init_process_group", "irecv", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
    "is_torchelastic_launched", "isend", "monitored_barrier", "new_group", "recv", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]
