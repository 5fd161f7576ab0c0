"""``torch.cpu``: the CPU as a device module, with torch.cuda's shape, for device-generic
code. Work on the CPU runs eagerly on the calling thread, so streams are always idle and
synchronisation has nothing to wait for.

Memory statistics of the CPU caching allocator (`nbtorch._cpu_allocator`), named as
``torch.cuda``'s: ``memory_allocated``, ``memory_reserved``, their ``max_`` forms,
``reset_peak_memory_stats``, ``memory_stats``, ``memory_summary`` and ``empty_cache``.
PyTorch 2.13's ``torch.cpu`` has none of them (and ``torch.accelerator``'s refuse the
CPU); they are nbtorch's. They count the buffers the cache serves, tensor storages of
128 KiB and more, in size-rounded bytes; smaller tensors come from malloc, uncounted.
With ``NBTORCH_CPU_ALLOCATOR=malloc`` nothing is cached or counted.
"""
from ._cpu_allocator import ALLOCATOR as _ALLOCATOR
from ._torch_extras import Event, Stream

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "amp",
           "current_stream", "stream", "StreamContext", "Stream", "Event",
           "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated",
           "empty_cache", "memory_stats", "memory_summary"]

_DEFAULT = Stream("cpu")


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def set_device(device):
    """Nothing to choose: there is one CPU device."""


def synchronize(device=None):
    """Nothing to wait for (CPU work is eager)."""


def current_stream(device=None):
    return _DEFAULT


class StreamContext:
    """``with torch.cpu.stream(s):``: a no-op context on the CPU."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)


def memory_allocated(device=None):
    """Bytes of the cached-size buffers held by live tensors (and their NumPy views).

    Example:
        >>> x = nbtorch.empty(10**6); nbtorch.cpu.memory_allocated()
        4194304
    """
    return _ALLOCATOR.memory_allocated()


def max_memory_allocated(device=None):
    """The peak of `memory_allocated` since start or `reset_peak_memory_stats`."""
    return _ALLOCATOR.max_memory_allocated()


def memory_reserved(device=None):
    """Bytes mapped by the allocator: allocated plus cached free blocks."""
    return _ALLOCATOR.memory_reserved()


def max_memory_reserved(device=None):
    return _ALLOCATOR.max_memory_reserved()


def reset_peak_memory_stats(device=None):
    """Restart the peak counters from the current values."""
    _ALLOCATOR.reset_peak_stats()


reset_max_memory_allocated = reset_peak_memory_stats


def empty_cache():
    """Give the cached free blocks back to the OS (live tensors are untouched)."""
    _ALLOCATOR.empty_cache()


def memory_stats(device=None):
    """A dict of the allocator's counters, named as in ``torch.cuda.memory_stats``."""
    return dict(_ALLOCATOR.memory_stats())


def memory_summary(device=None, abbreviated=False):
    """A printable table of the allocator's statistics."""
    return _ALLOCATOR.memory_summary()


# torch.cpu.amp: the deprecated spellings of nbtorch.amp (also importable by that name).
from .amp import _cpu_aliases as amp  # noqa: E402
import sys as _sys  # noqa: E402
_sys.modules[__name__ + ".amp"] = amp
