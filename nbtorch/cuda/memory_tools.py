"""The caching allocator's less common controls: a memory cap per process, raw blocks,
snapshots, nested and host statistics (``torch.cuda.memory`` beyond the counters).

- `set_per_process_memory_fraction(f)` caps the bytes the allocator may reserve
  on a device at ``f * total_memory``; an allocation past it empties the cache,
  retries, then raises `OutOfMemoryError` (the allocator enforces it for every
  nbtorch tensor and every Numba device array, as PyTorch's does).
- `caching_allocator_alloc/delete` hand out raw device blocks from the same
  cache, for interoperability with other libraries.
- `memory_snapshot()` lists the allocator's segments in PyTorch's format (one
  block per segment: nbtorch's blocks are never split; no stack traces).
"""
import collections
import contextlib

from . import _runtime

__all__ = ["set_per_process_memory_fraction", "get_per_process_memory_fraction",
           "caching_allocator_alloc", "caching_allocator_delete", "caching_allocator_enable",
           "caching_allocator_disabled",
           "memory_stats_as_nested_dict", "reset_accumulated_memory_stats", "memory_snapshot",
           "host_memory_stats", "host_memory_stats_as_nested_dict",
           "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats"]


def _allocator(device):
    """The caching allocator of `device` (None: current), initialising CUDA."""
    _runtime.lazy_init()
    return _runtime.allocator(_runtime.check_index(_runtime.device_index(device, True)))


def set_per_process_memory_fraction(fraction, device=None):
    """Let this process reserve at most ``fraction * total_memory`` bytes of the device.

    Example:
        >>> nbtorch.cuda.set_per_process_memory_fraction(0.5)
        >>> nbtorch.empty(big, device='cuda')    # OutOfMemoryError past half the GPU
    """
    _runtime.lazy_init()
    idx = _runtime.device_index(_runtime.current_device() if device is None else device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    from .properties import get_device_properties
    total = get_device_properties(idx).total_memory
    _allocator(idx).set_limit(fraction, total)


def get_per_process_memory_fraction(device=None):
    """The fraction `set_per_process_memory_fraction` set (1.0 by default)."""
    _runtime.lazy_init()
    idx = _runtime.device_index(_runtime.current_device() if device is None else device)
    return _allocator(idx).fraction


def caching_allocator_alloc(size, device=None, stream=None):
    """A raw device pointer (int) to `size` bytes from the caching allocator, for use on
    `stream` (a Stream or a raw stream int; None: the current stream). Free it with
    `caching_allocator_delete`."""
    _runtime.lazy_init()
    idx = _runtime.device_index(_runtime.current_device() if device is None else device)
    if stream is None:
        from .streams import current_stream
        stream = current_stream(idx)
    key = getattr(stream, "cuda_stream", stream)
    if isinstance(key, bool) or not isinstance(key, int):
        raise TypeError("Invalid type for stream argument, must be `torch.cuda.Stream` or "
                        "`int` representing a pointer to an existing stream")
    return _allocator(idx).malloc(int(size), key)


def caching_allocator_delete(mem_ptr):
    """Return a block from `caching_allocator_alloc` to the cache."""
    for alloc in list(_runtime._STATE["allocators"].values()):
        if mem_ptr in alloc.active:
            alloc.free(mem_ptr)
            return
    raise RuntimeError(f"invalid device pointer: {mem_ptr:#x}" if isinstance(mem_ptr, int)
                       else f"invalid device pointer: {mem_ptr!r}")


def caching_allocator_enable(value=True):
    """Accepted for compatibility; nbtorch's caching allocator cannot be switched off
    while running (set ``NBTORCH_CUDA_ALLOCATOR=numba`` before the first CUDA use)."""
    if not value and _runtime._STATE["initialized"]:
        import warnings
        warnings.warn("nbtorch's CUDA caching allocator cannot be disabled at run time; "
                      "set NBTORCH_CUDA_ALLOCATOR=numba before CUDA is first used",
                      UserWarning, stacklevel=2)


@contextlib.contextmanager
def caching_allocator_disabled():
    """PyTorch's context manager around ``caching_allocator_enable(False)`` (which nbtorch
    accepts but cannot honour at run time: see there)."""
    caching_allocator_enable(False)
    try:
        yield
    finally:
        caching_allocator_enable(True)


def _nest(flat):
    """{'a.b.c': v} -> {'a': {'b': {'c': v}}}: `memory_stats`' keys as PyTorch nests them."""
    out = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def memory_stats_as_nested_dict(device=None):
    """`memory_stats` as nested dicts ({} before CUDA is initialised, as PyTorch's)."""
    from .memory import memory_stats
    return _nest(memory_stats(device))


def reset_accumulated_memory_stats(device=None):
    """Zero the historical ("allocated", "freed", retry and OOM) counters of the device."""
    _allocator(device).reset_accumulated_stats()


def memory_snapshot(mempool_id=None, include_traces=True):
    """The segments of every device's caching allocator, as PyTorch's snapshot lists them
    (dicts with address, total_size, stream, segment_type, allocated_size, blocks...);
    [] before CUDA is initialised. Frames are empty: nbtorch records no stack traces."""
    if not _runtime._STATE["initialized"]:
        return []
    segments = []
    for idx in sorted(_runtime._STATE["allocators"]):
        segments.extend(_runtime._STATE["allocators"][idx].snapshot())
    return segments


def _pinned():
    from ..ops.transfer import _PINNED
    return list(_PINNED.values())


def host_memory_stats():
    """Pinned host memory now held ("allocations.current", "allocated_bytes.current", and
    the same as active): nbtorch pins each buffer directly (no pinned pool), so it keeps
    no history; an empty dict before CUDA is initialised, as PyTorch's."""
    if not _runtime._STATE["initialized"]:
        return collections.OrderedDict()
    bufs = _pinned()
    n, nbytes = len(bufs), sum(int(b.nbytes) for b in bufs)
    return collections.OrderedDict(sorted({
        "active_bytes.current": nbytes, "active_requests.current": n,
        "allocated_bytes.current": nbytes, "allocations.current": n}.items()))


def host_memory_stats_as_nested_dict():
    return _nest(host_memory_stats())


def reset_accumulated_host_memory_stats():
    """Nothing to reset: no historical host counters are kept (see `host_memory_stats`)."""


def reset_peak_host_memory_stats():
    """Nothing to reset: no host peaks are kept (see `host_memory_stats`)."""
