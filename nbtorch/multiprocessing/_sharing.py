"""`Tensor.share_memory_`, `Tensor.is_shared`, and moving many storages at once.

Sharing moves a storage's buffer into a shared segment (see `_segment`): the values are
copied once into the segment and the Storage object's ``data`` is swapped, so every
tensor viewing that Storage (views, the Parameter over it, saved tensors) now reads
and writes shared memory. Tensors cache a NumPy view of their storage (``_arr``); the
caches pointing at the old buffer are found through the garbage collector's referrer
walk (one walk for a whole model: ~7 ms with nbtorch imported) and dropped. A tensor
made with ``view(dtype)`` before sharing has a Storage of its own and keeps the old
buffer (PyTorch's would follow): share before reinterpreting.
"""
import gc

import numpy as np

from .._tensor import Tensor, Storage, Size, contiguous_strides
from . import _segment
from .reductions import remember_storage

__all__ = ["share_memory_", "is_shared", "share_storages", "share_tensors", "empty_shared"]


def _check_device(tensor):
    if tensor.device.type != "cpu":
        raise RuntimeError(
            f"share_memory_: cannot share a {tensor.device} tensor between processes: nbtorch "
            "has no CUDA IPC, and a silent copy through host memory would not be shared. "
            "Share a CPU tensor (tensor.cpu().share_memory_()) and move it to the device in "
            "each process.")


def share_memory_(self):
    """Move this tensor's storage into shared memory (in place; no-op if already shared).

    Afterwards the tensor, and its views, pickle through `nbtorch.multiprocessing`
    queues and as arguments of spawned processes as the same memory: a write in one
    process is seen in the others. CUDA tensors raise RuntimeError.

    Example:
        >>> t = nbtorch.zeros(3).share_memory_()
        >>> t.is_shared()
        True
    """
    _check_device(self)
    share_storages([self._storage])
    return self


def is_shared(self):
    """True if this tensor's storage lives in shared memory (see `share_memory_`)."""
    return self.device.type == "cpu" and _segment.segment_of(self._storage.data) is not None


def share_storages(storages):
    """Move every not-yet-shared CPU Storage in `storages` into its own shared segment."""
    moved = {}
    for storage in storages:
        if id(storage) in moved or _segment.segment_of(storage.data) is not None:
            continue
        old = storage.data
        segment = _segment.create(old.nbytes)
        new = np.frombuffer(segment, old.dtype, count=old.size, offset=segment.data_offset)
        np.copyto(new, old)
        storage.data = new
        remember_storage(storage, segment, segment.data_offset)
        moved[id(storage)] = storage
    if moved:
        for ref in gc.get_referrers(*moved.values()):   # drop views of the old buffers
            if isinstance(ref, Tensor) and id(ref._storage) in moved:
                ref._arr = None


def share_tensors(tensors):
    """`share_memory_` on many tensors with one referrer walk (`Module.share_memory`)."""
    for t in tensors:
        _check_device(t)
    share_storages([t._storage for t in tensors])


def empty_shared(shape, dtype):
    """An uninitialised contiguous CPU tensor allocated directly in shared memory.

    What a producer process fills and sends (no copy, no referrer walk), e.g.
    ``empty_shared((64, 3, 32, 32), nbtorch.float32)``.
    """
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    segment = _segment.create(n * dtype.itemsize)
    storage = Storage(np.frombuffer(segment, dtype.np, count=n, offset=segment.data_offset))
    remember_storage(storage, segment, segment.data_offset)
    return Tensor.__new__(Tensor)._init(storage, 0, Size(shape), contiguous_strides(shape), dtype)
