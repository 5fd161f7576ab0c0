"""How tensors cross process boundaries through multiprocessing's pickler.

Registered with ``multiprocessing.reduction.ForkingPickler`` (used by every
multiprocessing Queue, Pipe, Pool and by the arguments of spawned processes):

- a tensor whose storage is shared (`Tensor.share_memory_`) travels as a handle to its
  segment plus its view (storage offset, shape, strides, dtype, requires_grad), and
  arrives as the *same memory*: a write on either side is seen by the other. Its
  Storage is rebuilt once per process (a cache keyed by segment, offset, size and
  dtype), so tensors sent separately that share a storage share it again on arrival,
  and a tensor sent back to its sender is a view of the sender's own Storage;
- a tensor that is not shared pickles by value (`Tensor.__reduce_ex__`), as plain
  ``pickle`` does. PyTorch would move it into shared memory first; here sharing is
  explicit, so a DataLoader batch or a queued result stays a private copy;
- a CUDA tensor is a RuntimeError: there is no CUDA IPC in nbtorch, and a host copy
  would silently break the "same memory" promise.

Like PyTorch, gradients, hooks and autograd history are not sent, and a non-leaf
tensor that requires grad is refused.
"""
import os
import pickle
import threading
import weakref
from multiprocessing import reduction

import numpy as np

from .. import _dtype
from .._tensor import Tensor, Storage, Size
from . import _segment

__all__ = ["init_reductions", "reduce_tensor", "reduce_storage", "remember_storage"]

# (segment key, byte offset, elements, dtype name) -> Storage living in this process
_STORAGES = weakref.WeakValueDictionary()
_lock = threading.Lock()


def _new_lock_after_fork():
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)


def remember_storage(storage, segment, byte_offset):
    """Record `storage` as this process's Storage for its place in `segment`."""
    key = (segment.key, byte_offset, storage.data.size, _storage_dtype(storage))
    _STORAGES[key] = storage


def _storage_dtype(storage):
    return _dtype.from_numpy_dtype(storage.data.dtype).name


# ---- segments ---------------------------------------------------------------------
def reduce_segment(segment):
    if segment.kind == "fd":
        return (_rebuild_fd_segment, (reduction.DupFd(segment.fd), len(segment)))
    _segment.add_message_ref(segment)        # the receiver takes this reference over
    return (_segment.attach_name, (segment.name, len(segment)))


def _rebuild_fd_segment(dup, size):
    return _segment.attach_fd(dup.detach(), size)


# ---- storages ---------------------------------------------------------------------
def reduce_storage(storage):
    if storage.device.type != "cpu":
        raise RuntimeError(f"Cannot pickle a {storage.device} storage for another process: "
                           "nbtorch has no CUDA IPC (send a CPU tensor)")
    found = _segment.segment_of(storage.data)
    if found is None:
        return (_rebuild_storage_by_value, (np.array(storage.data), _storage_dtype(storage)))
    segment, byte_offset = found
    return (_rebuild_storage, (segment, byte_offset, storage.data.size,
                               _storage_dtype(storage)))


def _rebuild_storage(segment, byte_offset, size, dtype_name):
    key = (segment.key, byte_offset, size, dtype_name)
    with _lock:
        storage = _STORAGES.get(key)
        if storage is None:
            data = np.frombuffer(segment, _dtype._by_name(dtype_name).np, count=size,
                                 offset=byte_offset)
            storage = _STORAGES[key] = Storage(data)
    return storage


def _rebuild_storage_by_value(array, dtype_name):
    return Storage(array.view(_dtype._by_name(dtype_name).np))


# ---- tensors ----------------------------------------------------------------------
def reduce_tensor(tensor):
    if tensor.device.type != "cpu":
        raise RuntimeError(
            f"Cannot send a {tensor.device} tensor to another process: nbtorch has no CUDA "
            "IPC, and a copy through host memory would not be shared. Send tensor.cpu() "
            "(shared with share_memory_() if the processes must see each other's writes).")
    if _segment.segment_of(tensor._storage.data) is None:
        return tensor.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue).")
    return (_rebuild_tensor, (type(tensor), tensor._storage, tensor._offset,
                              tuple(tensor._shape), tuple(tensor._strides), tensor.dtype.name,
                              tensor.requires_grad))


def _rebuild_tensor(cls, storage, offset, shape, strides, dtype_name, requires_grad):
    t = Tensor.__new__(cls)._init(storage, offset, Size(shape), strides,
                                  _dtype._by_name(dtype_name))
    t.requires_grad = requires_grad
    return t


def init_reductions():
    """Register the reducers with multiprocessing's pickler (idempotent)."""
    from ..nn.parameter import Parameter
    reduction.register(_segment.SharedMap, reduce_segment)
    reduction.register(Storage, reduce_storage)
    reduction.register(Tensor, reduce_tensor)
    reduction.register(Parameter, reduce_tensor)
