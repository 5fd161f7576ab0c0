"""The caching allocator's bookkeeping, in pure Python (no numba, unit-testable on a CPU).

Like PyTorch's CUDA caching allocator, freed blocks go back to a cache, not
to the driver, and later requests of the same size class on the same stream
reuse them — a driver allocation (``cuMemAlloc``) synchronises the device and
costs tens of microseconds; a cache hit costs a dict lookup.

- Size classes: requests round up to 512 bytes up to 1 MiB; above, to a
  quarter of the request's power of two (waste <= 25%), so repeated shapes
  map to one class and their blocks are reused exactly (blocks are never split).
- Streams: a block remembers the stream it was allocated on and is only
  reused by requests on that stream. Work on one stream runs in order, so a
  block freed (by the host) while a kernel on its stream still reads it is
  only handed to kernels queued after that one — the stream-ordered safety
  PyTorch relies on. (A tensor used on another stream must stay alive until
  that stream is done, as in PyTorch without ``record_stream``.)
- Out of memory: release every cached block to the driver (after a device
  synchronize) and retry once; then raise `OutOfMemoryError` naming the
  request and what is held. `set_limit` caps the reserved bytes (PyTorch's
  per-process memory fraction): a driver allocation past the cap is an OOM too.

The driver is an object with ``alloc(nbytes) -> ptr`` (raising `DriverOOM`
when memory is exhausted), ``free(ptr)`` and ``synchronize()``; the real one
wraps the CUDA driver (`_emm.py`), the simulator's hands out NumPy buffers.
"""
import collections

from .._allocator_stats import CountedStats, ordered_stats, reset_peaks

__all__ = ["CachingAllocator", "OutOfMemoryError", "DriverOOM", "round_size"]

MIN_BLOCK = 512
SMALL_LIMIT = 1 << 20
_ACCUMULATED = ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
                "num_cache_hits")


class OutOfMemoryError(RuntimeError):
    """CUDA out of memory (``torch.cuda.OutOfMemoryError``)."""


class DriverOOM(Exception):
    """Raised by a driver's `alloc` when the device has no memory left."""


def round_size(nbytes):
    """The size class of a request: 512 B steps to 1 MiB, then quarter powers of two."""
    if nbytes <= SMALL_LIMIT:
        return max(MIN_BLOCK, (nbytes + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK)
    step = (1 << (nbytes.bit_length() - 1)) // 4
    return (nbytes + step - 1) // step * step


def _mib(n):
    return f"{n / 2**20:.2f} MiB"


class CachingAllocator(CountedStats):
    """Size-class free lists per stream over a driver, with PyTorch-style statistics."""

    def __init__(self, driver, device_index=0):
        self.driver = driver
        self.device_index = device_index
        self.free_blocks = collections.defaultdict(list)   # (stream, size) -> [ptr]
        self.blocks = {}                                     # ptr -> (size, stream)
        self.active = set()                                  # ptrs handed out
        self.stats = collections.Counter()
        self.requested = {}                                  # ptr -> bytes asked for
        self.limit = None                                    # reserved-bytes cap, or None
        self.fraction = 1.0                                  # what set the cap (reported)
        self.total = None                                    # device bytes the cap is of
        self.history = None          # a memory_history.History while recording, else None

    # ---- allocation -------------------------------------------------------
    def malloc(self, nbytes, stream=0):
        """A pointer to at least `nbytes` bytes for use on `stream`."""
        size = round_size(nbytes)
        free = self.free_blocks.get((stream, size))
        if free:
            ptr = free.pop()
            self.stats["num_cache_hits"] += 1
        else:
            ptr = self._driver_alloc(nbytes, size)
            self.blocks[ptr] = (size, stream)
        self.active.add(ptr)
        self.requested[ptr] = nbytes
        self._count("allocated_bytes", size)
        self._count("allocation", 1)
        self.stats["requested_bytes.all.allocated"] += nbytes
        if self.history is not None:
            self.history.record("alloc", ptr, nbytes, stream)
        return ptr

    def free(self, ptr):
        """Return the block at `ptr` to its stream's free list (not to the driver)."""
        if ptr not in self.active:
            raise RuntimeError(f"free of a pointer not allocated by this allocator: {ptr!r}")
        self.active.discard(ptr)
        self.requested.pop(ptr, None)
        size, stream = self.blocks[ptr]
        self.free_blocks[(stream, size)].append(ptr)
        self._uncount("allocated_bytes", size)
        self._uncount("allocation", 1)
        if self.history is not None:
            self.history.record("free", ptr, size, stream)

    def _alloc_within_limit(self, size):
        """The driver's block, or DriverOOM past the cap `set_limit` put on reserved bytes."""
        if self.limit is not None and self.memory_reserved() + size > self.limit:
            raise DriverOOM(size)
        return self.driver.alloc(size)

    def _driver_alloc(self, nbytes, size):
        try:
            ptr = self._alloc_within_limit(size)
        except DriverOOM:
            self.stats["num_alloc_retries"] += 1
            self.empty_cache()
            try:
                ptr = self._alloc_within_limit(size)
            except DriverOOM:
                self.stats["num_ooms"] += 1
                if self.history is not None:
                    self.history.record("oom", 0, nbytes, 0)
                raise OutOfMemoryError(self._oom_message(nbytes)) from None
        self.stats["num_device_alloc"] += 1
        self._count("reserved_bytes", size)
        self._count("segment", 1)
        if self.history is not None:
            self.history.record("segment_alloc", ptr, size, 0)
        return ptr

    def _oom_message(self, nbytes):
        allowed = ""
        if self.limit is not None:
            allowed = (f"{_mib(self.limit)} allowed (per-process memory fraction "
                       f"{self.fraction:g} of {_mib(self.total or 0)}); ")
        return (f"CUDA out of memory. Tried to allocate {_mib(nbytes)} on device "
                f"{self.device_index}. {allowed}{_mib(self.memory_allocated())} is allocated "
                f"by tensors and {_mib(self.memory_reserved())} is reserved by nbtorch's "
                f"caching allocator (the cache was emptied and the allocation retried). "
                f"Free tensors you no longer need, or use smaller batches.")

    def set_limit(self, fraction, total):
        """Cap reserved memory at `fraction` of `total` device bytes (PyTorch's
        ``set_per_process_memory_fraction``); blocks already held stay."""
        self.fraction, self.total = float(fraction), int(total)
        self.limit = int(fraction * total)

    def empty_cache(self):
        """Give every cached (free) block back to the driver, after a device synchronize."""
        if not any(self.free_blocks.values()):
            return
        self.driver.synchronize()
        for (stream, size), ptrs in self.free_blocks.items():
            for ptr in ptrs:
                self.driver.free(ptr)
                del self.blocks[ptr]
                self._uncount("reserved_bytes", size)
                self._uncount("segment", 1)
                self.stats["num_device_free"] += 1
                if self.history is not None:
                    self.history.record("segment_free", ptr, size, stream)
        self.free_blocks.clear()

    # ---- statistics -------------------------------------------------------
    def memory_allocated(self):
        return self.stats["allocated_bytes.all.current"]

    def max_memory_allocated(self):
        return self.stats["allocated_bytes.all.peak"]

    def memory_reserved(self):
        return self.stats["reserved_bytes.all.current"]

    def max_memory_reserved(self):
        return self.stats["reserved_bytes.all.peak"]

    def reset_peak_stats(self):
        reset_peaks(self.stats)

    def reset_accumulated_stats(self):
        """Zero the historical counters: every ``.allocated``/``.freed`` total, the
        driver call counts, retries and OOMs (PyTorch's resetAccumulatedStats)."""
        for key in list(self.stats):
            if key.endswith((".allocated", ".freed")) or key in _ACCUMULATED:
                self.stats[key] = 0

    def snapshot(self):
        """The segments as ``torch.cuda.memory_snapshot`` lists them: one driver block
        each (blocks are never split), active or inactive (cached)."""
        segments = []
        for ptr, (size, stream) in sorted(self.blocks.items()):
            active = ptr in self.active
            req = self.requested.get(ptr, 0) if active else 0
            frames = self.history.frames_of(ptr) if active and self.history is not None else []
            block = {"address": ptr, "size": size, "requested_size": req,
                     "state": "active_allocated" if active else "inactive", "frames": frames}
            segments.append({
                "device": self.device_index, "address": ptr, "total_size": size,
                "stream": stream, "segment_type": "small" if size <= SMALL_LIMIT else "large",
                "segment_pool_id": (0, 0), "allocated_size": size if active else 0,
                "active_size": size if active else 0, "requested_size": req,
                "is_expandable": False, "frames": [], "blocks": [block]})
        return segments

    def memory_stats(self):
        """An ordered dict of every counter, named like ``torch.cuda.memory_stats``."""
        return ordered_stats(self.stats, self.memory_reserved() - self.memory_allocated())

    def memory_summary(self):
        """A readable table of the statistics (``torch.cuda.memory_summary``)."""
        s = self.memory_stats()
        rows = [("Allocated memory", "allocated_bytes", True),
                ("Reserved memory", "reserved_bytes", True),
                ("Allocations", "allocation", False),
                ("Segments (driver blocks)", "segment", False)]
        lines = [f"nbtorch CUDA caching allocator, device {self.device_index}",
                 f"{'':28s}{'current':>14s}{'peak':>14s}"]
        for label, key, is_bytes in rows:
            fmt = _mib if is_bytes else str
            cur = s.get(f"{key}.all.current", 0)
            peak = s.get(f"{key}.all.peak", 0)
            lines.append(f"{label:28s}{fmt(cur):>14s}{fmt(peak):>14s}")
        lines.append(f"{'Cache hits / driver allocs':28s}{s['num_cache_hits']:>14d}"
                     f"{s['num_device_alloc']:>14d}")
        lines.append(f"{'OOM retries / OOMs':28s}{s['num_alloc_retries']:>14d}"
                     f"{s['num_ooms']:>14d}")
        return "\n".join(lines)
