"""The caching allocator's bookkeeping (pure Python: runs anywhere); on a GPU, its EMM plugin."""
import pytest

from nbtorch.cuda._allocator import (CachingAllocator, DriverOOM, OutOfMemoryError,
                                     round_size)


class FakeDriver:
    """Counts driver calls; `capacity` bytes before DriverOOM."""

    def __init__(self, capacity=None):
        self.capacity = capacity
        self.live = {}
        self.next = 4096
        self.allocs = self.frees = self.syncs = 0

    def alloc(self, n):
        if self.capacity is not None and sum(self.live.values()) + n > self.capacity:
            raise DriverOOM(n)
        self.allocs += 1
        self.next += 1 << 30
        self.live[self.next] = n
        return self.next

    def free(self, ptr):
        self.frees += 1
        del self.live[ptr]

    def synchronize(self):
        self.syncs += 1


def test_round_size_classes():
    assert round_size(1) == 512
    assert round_size(512) == 512
    assert round_size(513) == 1024
    assert round_size(1 << 20) == 1 << 20
    big = (1 << 20) + 1
    assert round_size(big) == (1 << 20) + (1 << 18)          # quarter-power-of-two step
    for n in (3 << 20, 10**8 + 7, 5 << 30):
        r = round_size(n)
        assert n <= r <= n * 1.25


def test_freed_block_is_cached_and_reused_without_driver_call():
    d = FakeDriver()
    a = CachingAllocator(d)
    p = a.malloc(1000)
    assert d.allocs == 1 and a.memory_allocated() == 1024 and a.memory_reserved() == 1024
    a.free(p)
    assert d.frees == 0                                   # back to the cache, not the driver
    assert a.memory_allocated() == 0 and a.memory_reserved() == 1024
    q = a.malloc(900)                                     # same size class
    assert q == p and d.allocs == 1
    assert a.memory_stats()["num_cache_hits"] == 1


def test_blocks_are_reused_only_on_their_stream():
    d = FakeDriver()
    a = CachingAllocator(d)
    p = a.malloc(4096, stream=0)
    a.free(p)
    q = a.malloc(4096, stream=7)                          # another stream: no reuse
    assert q != p and d.allocs == 2
    a.free(q)
    assert a.malloc(4096, stream=7) == q
    assert a.malloc(4096, stream=0) == p


def test_peak_stats_and_reset():
    a = CachingAllocator(FakeDriver())
    ps = [a.malloc(512) for _ in range(4)]
    for p in ps:
        a.free(p)
    assert a.max_memory_allocated() == 2048 and a.memory_allocated() == 0
    a.reset_peak_stats()
    assert a.max_memory_allocated() == 0
    assert a.max_memory_reserved() == 2048
    s = a.memory_stats()
    assert s["allocation.all.current"] == 0 and s["allocation.all.peak"] == 0
    assert s["segment.all.current"] == 4
    assert "Allocated memory" in a.memory_summary()


def test_empty_cache_returns_free_blocks_only():
    d = FakeDriver()
    a = CachingAllocator(d)
    keep = a.malloc(2048)
    a.free(a.malloc(4096))
    a.empty_cache()
    assert d.frees == 1 and d.syncs == 1
    assert a.memory_reserved() == 2048 and a.memory_allocated() == 2048
    assert keep in d.live


def test_oom_empties_cache_and_retries_once():
    d = FakeDriver(capacity=8192)
    a = CachingAllocator(d)
    a.free(a.malloc(4096))                                # cached, holds 4096 of 8192
    p = a.malloc(6000)                                    # needs the cache emptied first
    assert d.frees == 1 and a.memory_stats()["num_alloc_retries"] == 1
    assert a.memory_allocated() == round_size(6000)
    with pytest.raises(OutOfMemoryError, match=r"Tried to allocate 0\.01 MiB.*allocated by "
                                               r"tensors"):
        a.malloc(8000)
    assert a.memory_stats()["num_ooms"] == 1
    assert issubclass(OutOfMemoryError, RuntimeError)
    a.free(p)


def test_double_free_is_an_error():
    a = CachingAllocator(FakeDriver())
    p = a.malloc(10)
    a.free(p)
    with pytest.raises(RuntimeError, match="not allocated by this allocator"):
        a.free(p)


@pytest.mark.gpu
def test_emm_plugin_routes_numba_allocations_through_the_cache():
    import numpy as np
    from numba import cuda
    import nbtorch
    nbtorch.cuda.init()
    from numba.cuda.cudadrv import driver
    assert type(cuda.current_context().memory_manager).__name__ == "CachingMemoryManager"
    before = nbtorch.cuda.memory_allocated()
    x = cuda.device_array(1000, np.float32)
    assert nbtorch.cuda.memory_allocated() == before + 4096
    del x
    assert nbtorch.cuda.memory_allocated() == before
    reserved = nbtorch.cuda.memory_reserved()
    y = cuda.device_array(1000, np.float32)              # served from the cache
    assert nbtorch.cuda.memory_reserved() == reserved
    del y, driver
