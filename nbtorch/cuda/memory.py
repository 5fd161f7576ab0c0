"""Memory statistics and cache control of the caching allocator (``torch.cuda.memory_*``).

Counts are in bytes of the allocator's size-rounded blocks (as PyTorch's are).
Before CUDA is initialised (and so without CUDA) the statistics are PyTorch's:
an empty `memory_stats`, zero bytes, and `empty_cache` does nothing.
"""
import collections

from . import _runtime

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats",
           "empty_cache", "memory_stats", "memory_summary", "mem_get_info"]


def _alloc(device):
    _runtime.lazy_init()
    return _runtime.allocator(_runtime.device_index(device, optional=True))


def memory_allocated(device=None):
    """Bytes held by live tensors (and Numba device arrays) on the device."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    """The peak of `memory_allocated` since start or `reset_peak_memory_stats`."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Bytes obtained from the driver: allocated plus cached free blocks."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device=None):
    """Restart the peak counters from the current values."""
    _alloc(device).reset_peak_stats()



def empty_cache():
    """Give cached free blocks back to the driver (live tensors are untouched).

    Example:
        >>> del big; nbtorch.cuda.empty_cache()
    """
    if not _runtime._STATE["initialized"]:
        return
    for a in list(_runtime._STATE["allocators"].values()):
        a.empty_cache()


def memory_stats(device=None):
    """An ordered dict of the allocator's counters, named as in ``torch.cuda.memory_stats``
    (empty before CUDA is initialised, as PyTorch's)."""
    if not _runtime._STATE["initialized"]:
        return collections.OrderedDict()
    return collections.OrderedDict(sorted(_alloc(device).memory_stats().items()))


def memory_summary(device=None, abbreviated=False):
    """A printable table of the allocator's statistics."""
    return _alloc(device).memory_summary()


def mem_get_info(device=None):
    """(free, total) bytes of device memory as the driver reports them."""
    _runtime.lazy_init()
    if _runtime.simulator():      # simulated device memory is host memory (properties.py)
        from .properties import get_device_properties
        idx = _runtime.device_index(device, optional=True)
        total = get_device_properties(idx).total_memory
        return (max(total - _alloc(idx).memory_reserved(), 0), total)
    ctx = _runtime.cuda_module().current_context()
    info = ctx.get_memory_info()
    return info.free, info.total


# the rest of torch.cuda.memory's public names live beside it (one concern each)
from .memory_tools import *  # noqa: E402,F401,F403
from ._deprecated import *  # noqa: E402,F401,F403
from .memory_history import _record_memory_history, _snapshot, _dump_snapshot  # noqa: E402,F401
