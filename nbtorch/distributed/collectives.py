"""Collectives on tensors, as in ``torch.distributed``, each one MPI non-blocking call.

Tensor bytes reach MPI through the buffer protocol of the storage (no copy for contiguous
CPU tensors; a staged copy written back afterwards for non-contiguous ones, for half types
in reductions, and for CUDA tensors unless the MPI library is CUDA-aware). Roots
(`src`/`dst`) are global ranks, or group ranks through `group_src`/`group_dst`.
`async_op=True` returns a `Work`; otherwise the call returns when done (or raises after
the group's timeout). On a rank outside `group` a collective does nothing.

Shapes and dtypes are not compared across ranks by default (MPI would reduce the common
part of mismatched buffers without a word): set NBTORCH_DISTRIBUTED_DEBUG=DETAIL while
debugging, and every collective checks them first (see debug.py).
"""
import numpy as np

from . import debug
from ._buffers import Staged, check_tensor, data_buffer, reduce_buffer
from .process_group import resolve
from .reduce_op import ReduceOp, check_op, mpi_op
from .work import Work

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
           "all_to_all_single", "barrier", "monitored_barrier"]


def launch(pg, what, start, finish=None, async_op=False, result=None, keep=None):
    """Start `start(comm)` (one MPI request or a list) and wait, or return its Work."""
    pg.check_usable()
    reqs = start(pg.comm)
    work = Work(reqs if isinstance(reqs, list) else [reqs], pg, what, finish, result, keep)
    if async_op:
        return work
    work.wait()
    return None


def _group(group, what):
    pg = resolve(group)
    if not pg.is_member:
        return None         # PyTorch: a rank outside the group skips the collective
    return pg


def root_of(pg, rank, group_rank, what, default=None):
    """The group rank of a root given as a global rank or as `group_rank` (`default`, a
    global rank, when neither is given: PyTorch's gather/scatter use 0, broadcast and
    reduce refuse)."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        if not isinstance(group_rank, int) or not 0 <= group_rank < pg.size():
            raise ValueError(f"Invalid group rank {group_rank} for a group of size "
                             f"{pg.size()}")
        return group_rank
    if rank is None:
        if default is None:
            raise ValueError("Must specify global_rank or group_rank")
        rank = default
    return pg.group_rank(rank, what)


def _finish(*steps):
    def run():
        for s in steps:
            if s is not None:
                s()
    return run


def _average(st, n, op):
    """ReduceOp.AVG: the SUM divided by the group size, on the host buffer (written back
    afterwards) or, for CUDA memory given to a CUDA-aware MPI, on the tensor itself."""
    if op is not ReduceOp.AVG:
        return None
    if isinstance(st.array, np.ndarray):
        return lambda: np.divide(st.array, n, out=st.array, casting="unsafe")

    def on_device():
        from ..autograd.grad_mode import no_grad
        with no_grad():
            st.tensor.div_(n)
    return on_device


def _same_kind(tensors, like, what, name):
    for i, t in enumerate(tensors):
        check_tensor(t, name)
        if t.dtype is not like.dtype:
            raise ValueError(f"{what}: {name}[{i}] has dtype {t.dtype}, expected {like.dtype} "
                             f"(all tensors must have the same dtype)")
        if tuple(t.shape) != tuple(like.shape):
            raise ValueError(f"{what}: {name}[{i}] has shape {tuple(t.shape)}, expected "
                             f"{tuple(like.shape)}")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over the ranks of `group`, in place on every rank."""
    check_tensor(tensor)
    pg = _group(group, "all_reduce")
    if pg is None:
        return None
    op = check_op(op, tensor.dtype, "all_reduce")
    debug.check_collective(pg, "ALLREDUCE", [tensor], op=op.name)
    st = reduce_buffer(tensor, pg.MPI)
    mop = mpi_op(pg.MPI, op, tensor.dtype)
    return launch(pg, "all_reduce", lambda c: c.Iallreduce(pg.MPI.IN_PLACE, st.array, mop),
                  _finish(_average(st, pg.size(), op), st.write_back), async_op,
                  [tensor], st)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy `tensor` from rank `src` into `tensor` on every other rank."""
    check_tensor(tensor)
    pg = _group(group, "broadcast")
    if pg is None:
        return None
    root = root_of(pg, src, group_src, "src")
    debug.check_collective(pg, "BROADCAST", [tensor], root=root)
    st = data_buffer(tensor, pg.MPI)
    return launch(pg, "broadcast", lambda c: c.Ibcast(st.array, root),
                  st.write_back if pg.rank() != root else None, async_op, [tensor], st)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` over the ranks into `tensor` on rank `dst` (others keep theirs)."""
    check_tensor(tensor)
    pg = _group(group, "reduce")
    if pg is None:
        return None
    root = root_of(pg, dst, group_dst, "dst")
    op = check_op(op, tensor.dtype, "reduce")
    debug.check_collective(pg, "REDUCE", [tensor], op=op.name, root=root)
    st = reduce_buffer(tensor, pg.MPI)
    mop = mpi_op(pg.MPI, op, tensor.dtype)
    if pg.rank() == root:
        return launch(pg, "reduce", lambda c: c.Ireduce(pg.MPI.IN_PLACE, st.array, mop, root),
                      _finish(_average(st, pg.size(), op), st.write_back), async_op,
                      [tensor], st)
    return launch(pg, "reduce", lambda c: c.Ireduce(st.array, None, mop, root), None,
                  async_op, [tensor], st)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's `tensor` into `tensor_list` (one per rank, in rank order)."""
    check_tensor(tensor)
    pg = _group(group, "all_gather")
    if pg is None:
        return None
    _list_len(tensor_list, pg, "all_gather", "tensor_list")
    _same_kind(tensor_list, tensor, "all_gather", "tensor_list")
    debug.check_collective(pg, "ALLGATHER", [tensor])
    st = data_buffer(tensor, pg.MPI)
    out = np.empty(st.array.size * pg.size(), st.array.dtype)
    return launch(pg, "all_gather", lambda c: c.Iallgather(st.array, out),
                  lambda: _unstack(out, tensor_list), async_op, tensor_list, (st, out))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's `input_tensor` concatenated (dim 0) or stacked into `output_tensor`."""
    check_tensor(output_tensor, "output_tensor")
    check_tensor(input_tensor, "input_tensor")
    pg = _group(group, "all_gather_into_tensor")
    if pg is None:
        return None
    _sizes_match(output_tensor, input_tensor, pg.size(), "all_gather_into_tensor",
                 "output tensor size must be equal to world_size times input tensor size")
    debug.check_collective(pg, "_ALLGATHER_BASE", [input_tensor])
    src = data_buffer(input_tensor, pg.MPI)
    dst = data_buffer(output_tensor, pg.MPI)
    return launch(pg, "all_gather_into_tensor", lambda c: c.Iallgather(src.array, dst.array),
                  dst.write_back, async_op, [output_tensor], (src, dst))


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's `tensor` into `gather_list` on rank `dst` (None elsewhere)."""
    check_tensor(tensor)
    pg = _group(group, "gather")
    if pg is None:
        return None
    root = root_of(pg, dst, group_dst, "dst", default=0)
    debug.check_collective(pg, "GATHER", [tensor], root=root)
    st = data_buffer(tensor, pg.MPI)
    if pg.rank() != root:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                             "ranks.")
        return launch(pg, "gather", lambda c: c.Igather(st.array, None, root), None, async_op,
                      None, st)
    _list_len(gather_list, pg, "gather", "gather_list")
    _same_kind(gather_list, tensor, "gather", "gather_list")
    out = np.empty(st.array.size * pg.size(), st.array.dtype)
    return launch(pg, "gather", lambda c: c.Igather(st.array, out, root),
                  lambda: _unstack(out, gather_list), async_op, gather_list, (st, out))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """`scatter_list[i]` of rank `src` into `tensor` on rank i."""
    check_tensor(tensor)
    pg = _group(group, "scatter")
    if pg is None:
        return None
    root = root_of(pg, src, group_src, "src", default=0)
    debug.check_collective(pg, "SCATTER", [tensor], root=root)
    st = data_buffer(tensor, pg.MPI)
    send = None
    if pg.rank() == root:
        _list_len(scatter_list, pg, "scatter", "scatter_list")
        _same_kind(scatter_list, tensor, "scatter", "scatter_list")
        send = _stack(scatter_list, st.array.dtype, pg.MPI)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    return launch(pg, "scatter", lambda c: c.Iscatter(send, st.array, root), st.write_back,
                  async_op, [tensor], (st, send))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input_list[i]` over the ranks into `output` on rank i."""
    check_tensor(output, "output")
    pg = _group(group, "reduce_scatter")
    if pg is None:
        return None
    _list_len(input_list, pg, "reduce_scatter", "input_list")
    _same_kind(input_list, output, "reduce_scatter", "input_list")
    op = check_op(op, output.dtype, "reduce_scatter")
    debug.check_collective(pg, "REDUCE_SCATTER", [output], op=op.name)
    st = reduce_buffer(output, pg.MPI)
    send = np.concatenate([_host(reduce_buffer(t, pg.MPI).array) for t in input_list]) \
        if input_list else np.empty(0, st.array.dtype)
    mop = mpi_op(pg.MPI, op, output.dtype)
    return launch(pg, "reduce_scatter", lambda c: c.Ireduce_scatter_block(send, st.array, mop),
                  _finish(_average(st, pg.size(), op), st.write_back), async_op,
                  [output], (st, send))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` (world_size chunks along dim 0) over the ranks; chunk i into
    `output` on rank i."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = _group(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    _sizes_match(input, output, pg.size(), "reduce_scatter_tensor",
                 "input tensor must be the same size as output size times world size")
    op = check_op(op, output.dtype, "reduce_scatter_tensor")
    debug.check_collective(pg, "_REDUCE_SCATTER_BASE", [input], op=op.name)
    src = reduce_buffer(input, pg.MPI)
    st = reduce_buffer(output, pg.MPI)
    mop = mpi_op(pg.MPI, op, output.dtype)
    return launch(pg, "reduce_scatter_tensor",
                  lambda c: c.Ireduce_scatter_block(src.array, st.array, mop),
                  _finish(_average(st, pg.size(), op), st.write_back), async_op,
                  [output], (src, st))


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """`input_tensor_list[j]` of rank i into `output_tensor_list[i]` of rank j."""
    pg = _group(group, "all_to_all")
    if pg is None:
        return None
    _list_len(output_tensor_list, pg, "all_to_all", "output_tensor_list")
    _list_len(input_tensor_list, pg, "all_to_all", "input_tensor_list")
    if not input_tensor_list:
        return None
    like = input_tensor_list[0]
    for name, tl in (("input_tensor_list", input_tensor_list),
                     ("output_tensor_list", output_tensor_list)):
        for t in tl:
            check_tensor(t, name)
            if t.dtype is not like.dtype:
                raise ValueError(f"all_to_all: all tensors must have dtype {like.dtype}, "
                                 f"got {t.dtype}")
    debug.check_collective(pg, "ALLTOALL", [like])
    send = _stack(input_tensor_list, None, pg.MPI)
    scount = [t.numel() for t in input_tensor_list]
    rcount = [t.numel() for t in output_tensor_list]
    recv = np.empty(sum(rcount), send.dtype)
    sspec = [send, (scount, _offsets(scount))]
    rspec = [recv, (rcount, _offsets(rcount))]
    return launch(pg, "all_to_all", lambda c: c.Ialltoallv(sspec, rspec),
                  lambda: _unstack(recv, output_tensor_list), async_op, output_tensor_list,
                  (send, recv))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split `input` along dim 0 (equally, or by `input_split_sizes`), send piece j to rank
    j, and concatenate what arrives into `output` (by `output_split_sizes`)."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = _group(group, "all_to_all_single")
    if pg is None:
        return None
    if output.dtype is not input.dtype:
        raise ValueError(f"all_to_all_single: output dtype {output.dtype} differs from input "
                         f"dtype {input.dtype}")
    n = pg.size()
    scount = _split_counts(input, input_split_sizes, n, "input")
    rcount = _split_counts(output, output_split_sizes, n, "output")
    debug.check_collective(pg, "ALLTOALL_BASE", [], dtype=str(input.dtype))
    src = data_buffer(input, pg.MPI)
    dst = data_buffer(output, pg.MPI)
    sspec = [src.array, (scount, _offsets(scount))]
    rspec = [dst.array, (rcount, _offsets(rcount))]
    return launch(pg, "all_to_all_single", lambda c: c.Ialltoallv(sspec, rspec),
                  dst.write_back, async_op, [output], (src, dst))


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of `group` reached the barrier (or raise after the timeout)."""
    pg = _group(group, "barrier")
    if pg is None:
        return None
    debug.check_collective(pg, "BARRIER")
    pg.check_usable()
    work = Work([pg.comm.Ibarrier()], pg, "barrier")
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that raises after `timeout` (nbtorch's barriers all do)."""
    return barrier(group, timeout=timeout)


# ---- helpers -------------------------------------------------------------------------

def _list_len(tensors, pg, what, name):
    if tensors is None or len(tensors) != pg.size():
        got = "None" if tensors is None else len(tensors)
        raise ValueError(f"{what}: {name} must hold one tensor per rank of the group "
                         f"({pg.size()}), got {got}")


def _sizes_match(big, small, n, what, message):
    if big.dtype is not small.dtype:
        raise ValueError(f"{what}: output and input must have the same dtype, got "
                         f"{big.dtype} and {small.dtype}")
    if big.numel() != small.numel() * n:
        raise ValueError(f"{what}: {message} (got {big.numel()} and {small.numel()} "
                         f"elements, world size {n})")


def _split_counts(t, splits, n, name):
    rows = t.shape[0] if t.dim() else 1
    per_row = t.numel() // rows if rows else 0
    if splits is None:
        if rows % n:
            raise ValueError(f"all_to_all_single: {name} dim 0 ({rows}) is not divisible by "
                             f"the world size {n}; pass {name}_split_sizes")
        return [rows // n * per_row] * n
    splits = [int(s) for s in splits]
    if len(splits) != n or sum(splits) != rows or min(splits) < 0:
        raise ValueError(f"all_to_all_single: {name}_split_sizes {splits} must have {n} "
                         f"non-negative entries summing to dim 0 ({rows})")
    return [s * per_row for s in splits]


def _offsets(counts):
    return [int(v) for v in np.concatenate(([0], np.cumsum(counts)[:-1]))] if counts else []


def _host(arr):
    """A NumPy array of `arr` (a device array given to a CUDA-aware MPI is copied)."""
    return arr if isinstance(arr, np.ndarray) else arr.copy_to_host()


def _stack(tensors, dtype, MPI):
    arrays = [_host(data_buffer(t, MPI).array) for t in tensors]
    if not arrays:
        return np.empty(0, dtype or np.uint8)
    return np.concatenate(arrays)


def _unstack(flat, tensors):
    """Copy consecutive pieces of `flat` into `tensors` (each its own numel)."""
    pos = 0
    for t in tensors:
        n = t.numel()
        host = None if t.device.type == "cpu" else t.detach().cpu()
        Staged(t, flat[pos:pos + n], True, host).write_back()
        pos += n
