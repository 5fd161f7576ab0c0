"""Collectives on picklable Python objects. Like PyTorch's, these PICKLE: unpickling runs
code chosen by the sender, so use them only between ranks you trust. Each object travels
as bytes: lengths first, then the bytes, both through MPI with the group's timeout."""
import pickle

import numpy as np

from .collectives import launch, root_of
from .process_group import resolve

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object",
           "scatter_object_list"]


def _bytes(obj):
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def _load(arr):
    return pickle.loads(arr.tobytes())


def _member(group):
    pg = resolve(group)
    return pg if pg.is_member else None


def _allgatherv(pg, what, data):
    """Every rank's uint8 array, in rank order."""
    sizes = np.empty(pg.size(), np.int64)
    launch(pg, what, lambda c: c.Iallgather(np.array([data.size], np.int64), sizes))
    out = np.empty(int(sizes.sum()), np.uint8)
    counts = [int(s) for s in sizes]
    displs = [int(v) for v in np.concatenate(([0], np.cumsum(sizes)[:-1]))]
    launch(pg, what, lambda c: c.Iallgatherv(data, [out, (counts, displs)]))
    return [out[d:d + n] for d, n in zip(displs, counts)]


def all_gather_object(object_list, obj, group=None):
    """`object_list[i]` = rank i's `obj` on every rank (pickled)."""
    pg = _member(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have {pg.size()} entries, "
                         f"got {len(object_list)}")
    for i, b in enumerate(_allgatherv(pg, "all_gather_object", _bytes(obj))):
        object_list[i] = _load(b)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """`object_gather_list[i]` = rank i's `obj` on rank `dst` (pickled)."""
    pg = _member(group)
    if pg is None:
        return
    root = root_of(pg, dst, group_dst, "dst", default=0)
    if pg.rank() == root and (object_gather_list is None
                              or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must have {pg.size()} entries "
                         "on the destination rank")
    pieces = _allgatherv(pg, "gather_object", _bytes(obj))
    if pg.rank() == root:
        for i, b in enumerate(pieces):
            object_gather_list[i] = _load(b)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """`object_list` of rank `src` copied, element by element, into every rank's list."""
    pg = _member(group)
    if pg is None:
        return
    root = root_of(pg, src, group_src, "src", default=0)
    data = _bytes(list(object_list)) if pg.rank() == root else None
    size = np.array([0 if data is None else data.size], np.int64)
    launch(pg, "broadcast_object_list", lambda c: c.Ibcast(size, root))
    if data is None:
        data = np.empty(int(size[0]), np.uint8)
    launch(pg, "broadcast_object_list", lambda c: c.Ibcast(data, root))
    if pg.rank() != root:
        got = _load(data)
        if len(got) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {pg.ranks[root]} sent "
                             f"{len(got)} objects, this list has {len(object_list)}")
        object_list[:] = got


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None,
                        src=None, group=None, group_src=None):
    """`scatter_object_output_list[0]` = `scatter_object_input_list[i]` of rank `src`, on
    rank i (pickled)."""
    pg = _member(group)
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    root = root_of(pg, src, group_src, "src", default=0)
    objs = [None] * pg.size()
    if pg.rank() == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
            raise ValueError(f"scatter_object_list: scatter_object_input_list must have "
                             f"{pg.size()} entries on the source rank")
        objs = list(scatter_object_input_list)
    holder = [objs]
    broadcast_object_list(holder, src=pg.ranks[root], group=group)
    scatter_object_output_list[0] = holder[0][pg.rank()]
