"""Copies between devices: host -> device, device -> host, device -> device, and pinned memory.

`transfer(x, device, non_blocking)` is what `Tensor.to(device)` / `.cuda()` /
`.cpu()` run (inside autograd's `ToDevice`); the result is a new contiguous
tensor with x's dtype and shape. Copies are queued on the current CUDA stream:

- blocking (default): the call returns when the data has arrived;
- ``non_blocking=True``: host -> device returns at once (truly asynchronous
  from pinned memory, `pin_memory()`; the source is kept alive until the copy
  is done); device -> host lands in a fresh pinned buffer, valid after
  `nbtorch.cuda.synchronize()` (or an event/stream sync), as in PyTorch.

No op calls this implicitly except for 0-d CPU tensors used as scalars with
CUDA tensors (PyTorch allows that mix).
"""
import weakref

import numpy as np

from .._device import to_device
from .._tensor import Tensor, empty, wrap

__all__ = ["transfer", "pin_memory", "is_pinned"]

_PINNED = weakref.WeakValueDictionary()   # id(storage array) -> pinned host storage array
_IN_FLIGHT = []                           # [(event, host array)] async copies reading host memory


def transfer(x, device, non_blocking=False):
    """A contiguous copy of tensor `x` on `device` (no autograd)."""
    dst = to_device(device)
    src = x.device
    if src.type == "meta" or dst.type == "meta":
        if dst.type == "meta":          # to meta: the shape and dtype, no data
            return empty(x._shape, x.dtype, dst)
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    if dst.type == "cuda":
        from ..cuda import _runtime
        _runtime.lazy_init()
        _runtime.check_index(dst.index)
    if dst.type == "cuda" or src.type == "cuda":
        from ..cuda._transfer_hooks import on_transfer
        on_transfer(x, src, dst)             # CUDA graph capture, sync debug mode
    if src.type == "cpu" and dst.type == "cuda":
        return _to_device(x, dst, non_blocking)
    if src.type == "cuda" and dst.type == "cpu":
        return _to_host(x, non_blocking)
    if src.type == "cuda" and dst.type == "cuda":
        return _device_to_device(x, dst)
    return wrap(np.array(x._array, copy=True))


def _stream():
    from ..cuda import _runtime
    return _runtime.raw_stream()


def _to_device(x, dst, non_blocking):
    host = np.ascontiguousarray(x._array).reshape(-1)
    out = empty(x._shape, x.dtype, dst)
    if host.size:
        stream = _stream()
        out._storage.data.copy_to_device(host, stream=stream)
        if non_blocking and is_pinned(x):
            _keep_alive_until_done(host, stream)
        elif stream != 0:
            stream.synchronize()
    return out


def _keep_alive_until_done(host, stream):
    """Hold `host` until the async copy reading it has finished (checked on later copies)."""
    from .. import cuda
    _IN_FLIGHT[:] = [(e, h) for e, h in _IN_FLIGHT if not e.query()]
    e = cuda.Event()
    e.record(cuda.current_stream())
    _IN_FLIGHT.append((e, host))


def _contiguous_device_array(x):
    """x's data as one contiguous 1-D device array (a device copy if x is strided)."""
    if not x.is_contiguous():
        from .copy import Clone
        x = Clone.forward(None, x)
    n = x.numel()
    return x._storage.data[x._offset:x._offset + n] if n else None


def _to_host(x, non_blocking):
    from ..cuda import _runtime
    n = x.numel()
    if non_blocking and not _runtime.simulator():
        host = _runtime.cuda_module().pinned_array(n, x.dtype.np)
    else:
        host = np.empty(n, x.dtype.np)
    if n:
        src = _contiguous_device_array(x)
        stream = _stream()
        src.copy_to_host(host, stream=stream)
        if not non_blocking and stream != 0:
            stream.synchronize()
    t = wrap(host.reshape(x._shape))
    if non_blocking:
        _PINNED[id(t._storage.data)] = t._storage.data
    return t


def _device_to_device(x, dst):
    from ..cuda import _runtime
    if dst.index != x.device.index:      # across GPUs: through the host (no peer access setup)
        return _to_device(_to_host(x, False), dst, False)
    out = empty(x._shape, x.dtype, dst)
    if x.numel():
        out._storage.data.copy_to_device(_contiguous_device_array(x),
                                         stream=_runtime.raw_stream())
    return out


def pin_memory(self, device=None):
    """A copy of this CPU tensor in page-locked (pinned) host memory, for async copies.

    Example:
        >>> x = nbtorch.ones(1000).pin_memory()
        >>> y = x.to('cuda', non_blocking=True)
    """
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors can be "
                           "pinned")
    if is_pinned(self):
        return self
    from ..cuda import _runtime
    _runtime.lazy_init()
    host = _runtime.cuda_module().pinned_array(self._shape, self.dtype.np)
    host[...] = self._array
    t = wrap(host)
    _PINNED[id(t._storage.data)] = t._storage.data
    t.requires_grad = self.requires_grad
    return t


def is_pinned(self, device=None):
    """True if this CPU tensor's storage is page-locked host memory (see `pin_memory`)."""
    data = self._storage.data
    return self.device.type == "cpu" and _PINNED.get(id(data)) is data


Tensor.pin_memory = pin_memory
Tensor.is_pinned = is_pinned
