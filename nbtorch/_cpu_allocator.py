"""The CPU caching allocator: large tensor buffers are reused instead of freshly mapped.

A fresh large NumPy buffer costs page faults on first touch (~80 ms per GB here,
and glibc hands buffers over 32 MiB back to the OS on every free), so `a + b` on
10^7 float32 spent half its time faulting in its output. Like PyTorch's CUDA
caching allocator, buffers of at least `MIN_BYTES` go back to a free list of their
size class when their tensor dies, and the next request of that class reuses them
without a fault. Smaller buffers stay with NumPy (malloc reuses those well).

Ownership, so a buffer is never reused while anything can still see it:

- A block is an anonymous private mapping (``mmap``; private, so a forked child's
  writes never reach the parent). Each allocation makes one `_Lease` over it, a
  tiny ndarray subclass whose base is the mapping, and hands out
  ``lease.view(np.ndarray)``. NumPy's base chains stop at the lease (its base is
  not an array), so every view of the buffer (``t.numpy()``, slices, reshapes,
  memoryviews) keeps the lease alive; only when the last one dies does the
  lease's ``__del__`` give the block back. No reference counting of our own.
- ``__del__`` can run in any thread, or inside a garbage collection that
  interrupts the allocator itself, so it only appends the block to a deque
  (atomic); the allocator moves returned blocks to the free lists under its lock
  at its next call, except that the block returned last, when it is of the size
  asked for (a loop's previous result), is handed out again at once (allocate
  3.7 -> 2.3 us; its counts are three integers, folded into the statistics when they
  are read: -> 1.5 us).
- After ``fork`` (DataLoader workers) the child gets a fresh lock and drops the
  inherited free blocks; buffers still in use return to the child's own pool.

Size classes: requests round up to an eighth of their power of two (waste <= 12.5%;
pages past the request are never touched, so they cost address space, not memory).

Huge pages: a block of `HUGEPAGE_BYTES` (2 MiB) or more is mapped 2 MiB longer and its
buffer starts at the first 2 MiB boundary inside, with transparent huge pages asked for
the whole 2 MiB chunks of its size class (the tail keeps 4 KiB pages). A huge page is
backed whole at its first touch, so a block may now hold up to its class's rounding
(<= 12.5%) more memory than its request; 10^6 float32 (3.8 MiB, class 4 MiB) fill two
huge pages. Streaming kernels then miss the TLB once per 2 MiB instead of once per
4 KiB (on the project machine, a virtual one, a miss walks two page tables): in
alternating processes (NBTORCH_CPU_HUGEPAGES=0 / 1, five each, medians) a 10^7-element
float32 add took 3.52 -> 2.83 ms, its sum 682 -> 522 us, exp 2.27 -> 2.07 ms; a 10^6-element
add, whose arrays stay in L3, 72.0 -> 71.7 us (an in-process measurement that showed 94
-> 73.5 did not hold up this way). Before, blocks of 4 MiB and more asked for huge pages
over a mapping at any page boundary, where only a 2 MiB range that happened to be aligned
got one. ``NBTORCH_CPU_HUGEPAGES=0`` turns this off.

Free blocks are capped (`max_cached`, default `CACHE_LIMIT`): a free that would
exceed it unmaps the least recently freed blocks, so the cache cannot grow without
bound when shapes keep changing. ``NBTORCH_CPU_ALLOCATOR=malloc`` turns the cache
off (every buffer from NumPy, nothing counted); ``NBTORCH_CPU_CACHE_LIMIT_MB`` sets
the cap.
"""
import collections
import mmap
import os
import threading

import numpy as np

from ._allocator_stats import CountedStats, ordered_stats, reset_peaks

__all__ = ["CachingHostAllocator", "CPUOutOfMemoryError", "ALLOCATOR", "allocate",
           "round_size", "owns", "MIN_BYTES", "CACHE_LIMIT"]

MIN_BYTES = 1 << 17          # smaller buffers come from NumPy (malloc); from 128 KiB
                             # malloc maps and unmaps them itself (a LeNet step's 884 KB
                             # max-pool gradient faulted 215 pages per call: 4.75 -> 4.2 ms)
HUGEPAGE_BYTES = 2 << 20     # from here blocks start on a huge-page boundary (see above)
HUGEPAGES = os.environ.get("NBTORCH_CPU_HUGEPAGES", "1").strip() not in ("0", "", "false")
CACHE_LIMIT = int(float(os.environ.get("NBTORCH_CPU_CACHE_LIMIT_MB", "1024")) * (1 << 20))
ENABLED = os.environ.get("NBTORCH_CPU_ALLOCATOR", "caching").strip().lower() == "caching"

_new_array = np.ndarray.__new__
_MMAP = mmap.mmap


class _Block(mmap.mmap):
    """One anonymous private mapping: `size` its size class, `offset` where its buffer
    starts (a 2 MiB boundary for huge-page blocks, else 0)."""

    __slots__ = ("size", "offset")


class CPUOutOfMemoryError(RuntimeError, MemoryError):
    """No memory for a CPU buffer (PyTorch raises RuntimeError; NumPy MemoryError)."""


def round_size(nbytes):
    """The size class of a request: an eighth of its power of two, rounded up."""
    step = max((1 << (nbytes.bit_length() - 1)) // 8, mmap.PAGESIZE)
    return (nbytes + step - 1) // step * step


_SIZES = {}      # request bytes -> round_size (a dict lookup: ~50 ns instead of ~250)


def _size_class(nbytes):
    size = _SIZES.get(nbytes)
    if size is None:
        if len(_SIZES) >= 4096:
            _SIZES.clear()
        size = _SIZES[nbytes] = round_size(nbytes)
    return size


class _Lease(np.ndarray):
    """The base of every array over one allocation; its death returns the block to the
    `returned` deque of the allocator that made it (`_home`: a class attribute of each
    allocator's own subclass, so a lease carries no instance dict; ~0.2 us less)."""

    _home = None

    def __del__(self):
        block = self.base
        if block.__class__ is _Block:        # never a view of a lease (we make none)
            try:
                self._home.append(block)
            except Exception:                # interpreter shutdown: the mapping unmaps itself
                pass


_HUGE_PAGES = []


def _huge_pages():
    """Whether blocks should ask for transparent huge pages: this Python can (Linux,
    MADV_HUGEPAGE), the kernel has them on ("always" or "madvise") and
    NBTORCH_CPU_HUGEPAGES is not 0. Read once."""
    if not _HUGE_PAGES:
        ok = HUGEPAGES and hasattr(mmap, "MADV_HUGEPAGE") and hasattr(_MMAP, "madvise")
        if ok:
            try:
                with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
                    ok = "[never]" not in f.read()
            except OSError:
                ok = False
        _HUGE_PAGES.append(ok)
    return _HUGE_PAGES[0]


def _mib(n):
    return f"{n / 2**20:.2f} MiB"


class CachingHostAllocator(CountedStats):
    """Size-class free lists of mapped blocks, with ``torch.cuda``-style statistics."""

    def __init__(self, max_cached=CACHE_LIMIT):
        self.max_cached = max_cached
        self.lock = threading.Lock()
        self.free_blocks = {}                    # size -> [mmap], reused last in, first out
        self.free_order = collections.OrderedDict()   # id(mmap) -> mmap, oldest free first
        self.cached_bytes = 0
        self.stats = collections.Counter()
        self.returned = collections.deque()      # blocks whose lease died, not yet re-filed
        self.reused = [0, 0, 0]                  # blocks reused from `returned` at once
        self._lease = type("_Lease", (_Lease,), {"_home": self.returned, "__slots__": ()})

    # ---- allocation -------------------------------------------------------
    def allocate(self, n, dtype):
        """A 1-D array of `n` elements of NumPy `dtype` over a (possibly reused) block."""
        nbytes = n * dtype.itemsize
        size = _size_class(nbytes)
        with self.lock:
            returned = self.returned
            if returned:
                block = returned.pop()          # the block freed last (a loop's previous
                if block.size == size:          # result): reused without filing it
                    reused = self.reused        # counted here, folded into stats when read
                    reused[0] += 1
                    reused[1] += size
                    reused[2] += nbytes
                    return _new_array(self._lease, (n,), dtype, block,
                                      block.offset).view(np.ndarray)
                returned.append(block)
                self._refile()
            blocks = self.free_blocks.get(size)
            if blocks:
                block = blocks.pop()
                del self.free_order[id(block)]
                self.cached_bytes -= size
                self.stats["num_cache_hits"] += 1
            else:
                block = None
            self._count("allocated_bytes", size)
            self._count("allocation", 1)
            self.stats["requested_bytes.all.allocated"] += nbytes
        if block is None:
            block = self._map(size, nbytes)
        return _new_array(self._lease, (n,), dtype, block, block.offset).view(np.ndarray)

    def _fold_reused(self):
        """Add the blocks freed and allocated again at once (`reused`: count, bytes,
        requested bytes) to the statistics, as `_refile` and `allocate` would have counted
        them (lock held). Three integer adds per such allocation instead of six Counter
        updates (0.85 us), where allocating 10^6 float32 costs ~2.3 us in all."""
        count, size, nbytes = self.reused
        if count:
            s = self.stats
            s["allocated_bytes.all.freed"] += size
            s["allocated_bytes.all.allocated"] += size
            s["allocation.all.freed"] += count
            s["allocation.all.allocated"] += count
            s["num_cache_hits"] += count
            s["requested_bytes.all.allocated"] += nbytes
            self.reused = [0, 0, 0]

    def _map(self, size, nbytes):
        huge = size >= HUGEPAGE_BYTES and _huge_pages()
        length = size + HUGEPAGE_BYTES if huge else size
        try:
            block = _Block(-1, length, flags=mmap.MAP_PRIVATE)
        except OSError:
            self.empty_cache()
            try:
                block = _Block(-1, length, flags=mmap.MAP_PRIVATE)
            except OSError:
                with self.lock:
                    self._uncount("allocated_bytes", size)
                    self._uncount("allocation", 1)
                    self.stats["num_ooms"] += 1
                raise CPUOutOfMemoryError(
                    f"DefaultCPUAllocator: not enough memory: you tried to allocate {nbytes} "
                    f"bytes ({_mib(self.memory_allocated())} held by tensors).") from None
        block.size, block.offset = size, 0
        if huge:
            start = -np.frombuffer(block, np.uint8, 1).ctypes.data % HUGEPAGE_BYTES
            block.offset = start
            try:
                block.madvise(mmap.MADV_HUGEPAGE, start,    # the size class's whole chunks
                              size // HUGEPAGE_BYTES * HUGEPAGE_BYTES)
            except OSError:                         # refused here: small pages then
                pass
        with self.lock:
            self.stats["num_device_alloc"] += 1
            self._count("reserved_bytes", size)
            self._count("segment", 1)
        return block

    def _refile(self):
        """Move blocks whose lease died to the free lists (lock held), then trim to the cap."""
        returned = self.returned
        while returned:
            try:
                block = returned.popleft()
            except IndexError:
                break
            size = block.size
            self.free_blocks.setdefault(size, []).append(block)
            self.free_order[id(block)] = block
            self.cached_bytes += size
            self._uncount("allocated_bytes", size)
            self._uncount("allocation", 1)
        while self.cached_bytes > self.max_cached and self.free_order:
            self._release(self.free_order.popitem(last=False)[1])

    def _release(self, block):
        """Unmap one free block (lock held; it is already out of `free_order`)."""
        size = block.size
        self.free_blocks[size].remove(block)
        self.cached_bytes -= size
        self._uncount("reserved_bytes", size)
        self._uncount("segment", 1)
        self.stats["num_device_free"] += 1
        try:
            block.close()
        except BufferError:                  # a dying lease still exports it: unmaps when freed
            pass

    def empty_cache(self):
        """Unmap every free block (blocks of live tensors are untouched)."""
        with self.lock:
            self._refile()
            while self.free_order:
                self._release(self.free_order.popitem(last=False)[1])

    def after_fork_in_child(self):
        """A fresh lock, and the parent's free blocks dropped (live buffers stay counted)."""
        self.lock = threading.Lock()
        self.empty_cache()

    # ---- statistics -------------------------------------------------------
    def _current(self, key):
        with self.lock:
            if self.returned:
                self._refile()
            self._fold_reused()
            return self.stats[key]

    def memory_allocated(self):
        return self._current("allocated_bytes.all.current")

    def max_memory_allocated(self):
        return self._current("allocated_bytes.all.peak")

    def memory_reserved(self):
        return self._current("reserved_bytes.all.current")

    def max_memory_reserved(self):
        return self._current("reserved_bytes.all.peak")

    def reset_peak_stats(self):
        with self.lock:
            if self.returned:
                self._refile()
            self._fold_reused()
            reset_peaks(self.stats)

    def memory_stats(self):
        """An ordered dict of the counters, named like ``torch.cuda.memory_stats``."""
        with self.lock:
            if self.returned:
                self._refile()
            self._fold_reused()
            return ordered_stats(self.stats, self.cached_bytes)     # free, cached

    def memory_summary(self):
        """A readable table of the statistics (``torch.cuda.memory_summary``'s shape)."""
        s = self.memory_stats()
        lines = [f"nbtorch CPU caching allocator (buffers of {_mib(MIN_BYTES)} and more)",
                 f"{'':28s}{'current':>14s}{'peak':>14s}"]
        for label, key, fmt in (("Allocated memory", "allocated_bytes", _mib),
                                ("Reserved memory", "reserved_bytes", _mib),
                                ("Allocations", "allocation", str),
                                ("Segments (mapped blocks)", "segment", str)):
            lines.append(f"{label:28s}{fmt(s[key + '.all.current']):>14s}"
                         f"{fmt(s[key + '.all.peak']):>14s}")
        lines.append(f"{'Cache hits / blocks mapped':28s}{s['num_cache_hits']:>14d}"
                     f"{s['num_device_alloc']:>14d}")
        return "\n".join(lines)


ALLOCATOR = CachingHostAllocator()


def allocate(n, dtype):
    """A 1-D array of `n` elements of NumPy `dtype` for a tensor's storage: from the cache
    when it is `MIN_BYTES` or more (and the cache is on), else from NumPy."""
    if n * dtype.itemsize < MIN_BYTES or not ENABLED:
        return np.empty(n, dtype)
    return ALLOCATOR.allocate(n, dtype)


def owns(array):
    """True when `array` is a whole allocation of its own (NumPy-owned or a cache block)."""
    base = array.base
    return base is None or isinstance(base, _Lease)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: ALLOCATOR.after_fork_in_child())
