"""Process groups over MPI: the default (world) group, sub-groups, and the rank queries.

The processes are started by MPI's launcher (``mpiexec -n N python train.py`` or
``python -m nbtorch.distributed.run``), which also wires them together: there is no
rendezvous store. ``init_method``, ``MASTER_ADDR`` and ``MASTER_PORT`` are accepted and
unused; ``RANK`` and ``WORLD_SIZE`` (torchrun's variables), when set, must agree with MPI.
"""
import atexit
import datetime
import os
import sys
import time
import warnings

from ._mpi import mpi, mpi_available

__all__ = ["Backend", "ProcessGroup", "GroupMember", "group", "init_process_group",
           "destroy_process_group", "is_available", "is_initialized", "is_mpi_available",
           "is_gloo_available", "is_nccl_available", "is_torchelastic_launched", "get_rank",
           "get_world_size", "get_backend", "new_group", "get_global_rank", "get_group_rank",
           "get_process_group_ranks", "default_pg_timeout"]

default_pg_timeout = datetime.timedelta(minutes=30)
_NOT_INIT = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")


class Backend(str):
    """A backend name. ``"mpi"`` is the engine; ``"gloo"`` (and ``"nccl"``, with a warning)
    are aliases that run on MPI, so PyTorch scripts start unchanged."""
    UNDEFINED = "undefined"
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name}")
        value = name.lower()
        # "cpu:gloo,cuda:nccl" picks one backend per device: all of them are MPI here
        if ":" in value:
            value = value.split(",")[0].split(":")[1]
        if value not in ("mpi", "gloo", "nccl"):
            raise ValueError(f"Invalid backend: '{name}' (nbtorch runs 'mpi'; 'gloo' and "
                             "'nccl' are aliases for it)")
        return str.__new__(cls, value)


class ProcessGroup:
    """A set of ranks with its own MPI communicator, like ``torch.distributed.ProcessGroup``.

    `ranks` are global ranks: group rank i is global rank ranks[i]. On a rank outside the
    group `comm` is None (collectives there do nothing, as in PyTorch)."""

    def __init__(self, comm, ranks, backend, timeout, MPI, world_rank):
        self.comm = comm
        self.ranks = tuple(ranks)
        self.backend = backend
        self.timeout = timeout.total_seconds() if hasattr(timeout, "total_seconds") \
            else float(timeout)
        self.MPI = MPI
        self._world_rank = world_rank
        self._index = {g: i for i, g in enumerate(self.ranks)}
        self._broken = None
        self._seq = 0

    @property
    def is_member(self):
        return self.comm is not None

    def rank(self):
        return self._index.get(self._world_rank, -1)

    def size(self):
        return len(self.ranks)

    def name(self):
        return "MPI"

    def group_rank(self, global_rank, what="rank"):
        """The group rank of `global_rank`; ValueError when it is not in the group."""
        if not isinstance(global_rank, int) or global_rank not in self._index:
            raise ValueError(f"Invalid {what} {global_rank}: global rank {global_rank} is not "
                             f"part of the group (ranks {list(self.ranks)})")
        return self._index[global_rank]

    def check_usable(self):
        if self._broken is not None:
            raise RuntimeError(f"The process group cannot be used: an earlier operation "
                               f"failed ({self._broken}). Destroy it and start again.")

    def __repr__(self):
        return f"<ProcessGroup MPI ranks={list(self.ranks)}>"


class _Defaults:
    world = None
    groups = []
    hook_installed = False
    broken = False          # a group timed out (and may be destroyed since)


class GroupMember:
    """``GroupMember.WORLD`` is the default group; NON_GROUP_MEMBER marks outsiders."""
    NON_GROUP_MEMBER = -100

    class _World:
        def __get__(self, obj, cls):
            return _Defaults.world

    WORLD = _World()


group = GroupMember          # ``dist.group.WORLD``


def is_available():
    """True when mpi4py is installed (``pip install nbtorch[distributed]``)."""
    return mpi_available()


def is_mpi_available():
    return mpi_available()


def is_gloo_available():
    return mpi_available()           # "gloo" runs on MPI


def is_nccl_available():
    return False


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized():
    """True after init_process_group and before destroy_process_group."""
    return _Defaults.world is not None


def default_group():
    """The world group; ValueError (PyTorch's message) before init_process_group."""
    if _Defaults.world is None:
        raise ValueError(_NOT_INIT)
    return _Defaults.world


def resolve(group):
    """`group`, or the default one when None."""
    if group is None or group is GroupMember.WORLD:
        return default_group()
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    if _Defaults.world is None:
        raise ValueError(_NOT_INIT)
    return group


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the default process group; every rank started by ``mpiexec`` must call it.

    backend: "mpi" (default); "gloo" and "nccl" run on MPI too (CUDA tensors go through
    host copies unless the MPI library is CUDA-aware). timeout: how long a collective waits
    for its peers before raising (a timedelta or seconds; default 30 minutes).
    world_size/rank, or the ``WORLD_SIZE``/``RANK`` environment that torchrun sets, must
    agree with what MPI says. Raises ImportError naming the ``distributed`` extra when
    mpi4py is missing.

    Example (run with ``mpiexec -n 2 python script.py``):
        >>> import nbtorch.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> t = nbtorch.ones(3) * dist.get_rank()
        >>> dist.all_reduce(t)          # tensor([1., 1., 1.]) on both ranks
    """
    if _Defaults.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend or "mpi")
    if name == Backend.NCCL:
        warnings.warn("nbtorch has no NCCL: backend 'nccl' runs on MPI (CUDA tensors are "
                      "copied through the host unless the MPI library is CUDA-aware)",
                      stacklevel=2)
    MPI = mpi()
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    _check_launch(size, me, world_size, rank)
    comm = world.Dup()
    _Defaults.world = ProcessGroup(comm, range(size), name, timeout or default_pg_timeout,
                                   MPI, me)
    _Defaults.groups = [_Defaults.world]
    if size > 1:
        _install_abort_hook(MPI)


def _check_launch(size, me, world_size, rank):
    env_size = os.environ.get("WORLD_SIZE")
    env_rank = os.environ.get("RANK")
    want_size = world_size if world_size not in (-1, None) else (
        int(env_size) if env_size else size)
    want_rank = rank if rank not in (-1, None) else (int(env_rank) if env_rank else me)
    if want_size != size:
        raise RuntimeError(
            f"world_size is {want_size} but MPI started {size} process(es): launch the ranks "
            f"with `mpiexec -n {want_size} python script.py` or `python -m "
            f"nbtorch.distributed.run --nproc-per-node {want_size} script.py` (nbtorch's "
            f"process groups run on MPI, which must start every rank)")
    if want_rank != me:
        raise RuntimeError(f"rank is {want_rank} but MPI gave this process rank {me}: "
                           "ranks are assigned by the MPI launcher")


_ABORT_GRACE_S = 0.5


def _install_abort_hook(MPI):
    """An uncaught exception on one rank aborts the job (its peers would otherwise wait in
    their next collective until the timeout), as ``python -m mpi4py`` does."""
    if _Defaults.hook_installed:
        return
    _Defaults.hook_installed = True
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        if _Defaults.world is not None and kind is not KeyboardInterrupt:
            sys.stderr.write(f"nbtorch.distributed: rank {_Defaults.world._world_rank} failed "
                             f"with {kind.__name__}; aborting the job\n")
            sys.stderr.flush()
            # MPI's launcher forwards output asynchronously and drops what it still holds
            # when the job aborts: give it a moment, or the traceback can be cut off
            time.sleep(_ABORT_GRACE_S)
            MPI.COMM_WORLD.Abort(1)

    sys.excepthook = hook
    atexit.register(_abort_if_broken, MPI)


def _abort_if_broken(MPI):
    """At exit after a timed-out operation: MPI_Finalize would wait for the pending one."""
    if _Defaults.broken or any(g._broken for g in _Defaults.groups):
        MPI.COMM_WORLD.Abort(1)


def destroy_process_group(group=None):
    """Free `group`'s communicator, or every group when None (then `is_initialized()` is
    False and init_process_group may be called again)."""
    if group is None or group is _Defaults.world:
        if _Defaults.world is None:
            raise ValueError(_NOT_INIT)
        for g in _Defaults.groups:
            _free(g)
        _Defaults.world, _Defaults.groups = None, []
        return
    _free(group)
    if group in _Defaults.groups:
        _Defaults.groups.remove(group)


def _free(g):
    if g._broken:
        _Defaults.broken = True         # its pending request would hang MPI_Finalize
    elif g.comm is not None:
        g.comm.Free()
    g.comm = None


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A group of the given global ranks (all ranks when None). Every rank of the world
    must call it, members or not, in the same order (as in PyTorch)."""
    world = default_group()
    size = world.size()
    ranks = list(range(size)) if ranks is None else list(ranks)
    for r in ranks:
        if not isinstance(r, int) or not 0 <= r < size:
            raise ValueError(f"Invalid rank {r} in new_group: the world has ranks 0..{size - 1}")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group got duplicate ranks: {ranks}")
    if sort_ranks:
        ranks = sorted(ranks)
    world.check_usable()
    mpi_group = world.comm.Get_group().Incl(ranks)
    comm = world.comm.Create(mpi_group)
    mpi_group.Free()
    if comm == world.MPI.COMM_NULL:
        comm = None
    g = ProcessGroup(comm, ranks, Backend(backend) if backend else world.backend,
                     timeout or world.timeout, world.MPI, world._world_rank)
    _Defaults.groups.append(g)
    return g


def get_rank(group=None):
    """This process's rank in `group` (default: the world); -1 outside the group."""
    return resolve(group).rank()


def get_world_size(group=None):
    """The number of ranks in `group`; -1 on a rank outside it."""
    g = resolve(group)
    return g.size() if g.is_member else -1


def get_backend(group=None):
    """The backend name the group was created with ("mpi", or the alias asked for)."""
    return resolve(group).backend


def get_global_rank(group, group_rank):
    g = resolve(group)
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g.ranks[group_rank]


def get_group_rank(group, global_rank):
    return resolve(group).group_rank(global_rank)


def get_process_group_ranks(group):
    return list(resolve(group).ranks)
