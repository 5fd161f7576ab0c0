"""The CPU caching allocator (nbtorch/_cpu_allocator.py) and nbtorch.cpu's memory stats:
reuse, statistics, empty_cache, buffers that outlive their tensor through NumPy views,
fork and threads."""
import gc
import mmap
import os
import sys
import subprocess
import threading

import numpy as np
import pytest

import nbtorch
from nbtorch import _cpu_allocator as ca

N = 1 << 18                     # float32 elements: 1 MiB (cached: MIN_BYTES is below)
MIB = 1 << 20


def _drained():
    gc.collect()
    return nbtorch.cpu.memory_allocated()


def test_small_buffers_stay_with_numpy():
    t = nbtorch.empty(ca.MIN_BYTES // 4 - 1)
    assert t._storage.data.base is None
    assert ca.owns(t._storage.data)


def test_freed_block_is_reused():
    x = nbtorch.empty(N)
    ptr = x.data_ptr()
    hits = nbtorch.cpu.memory_stats()["num_cache_hits"]
    del x
    y = nbtorch.empty(N // 2, 2)             # same size class, other shape
    assert y.data_ptr() == ptr
    assert nbtorch.cpu.memory_stats()["num_cache_hits"] == hits + 1
    assert ca.owns(y._storage.data)


def test_the_block_freed_last_is_reused_with_the_same_counts():
    """A loop's fresh result reuses the block its previous one freed (no filing in the
    free lists); the counters move as a free then an allocation would move them."""
    x = nbtorch.empty(N)
    ptr = x.data_ptr()
    nbtorch.cpu.memory_stats()                # files whatever was returned before
    before = dict(ca.ALLOCATOR.stats)
    del x                                     # back to the allocator's `returned` deque
    y = nbtorch.empty(N)
    nbtorch.cpu.memory_stats()                # folds the at-once reuses into the counters
    after = ca.ALLOCATOR.stats
    assert y.data_ptr() == ptr
    for key, step in [("allocated_bytes.all.current", 0), ("allocation.all.current", 0),
                      ("allocated_bytes.all.allocated", MIB), ("allocated_bytes.all.freed", MIB),
                      ("allocation.all.allocated", 1), ("allocation.all.freed", 1),
                      ("num_cache_hits", 1), ("requested_bytes.all.allocated", MIB),
                      ("reserved_bytes.all.current", 0)]:
        assert after[key] - before.get(key, 0) == step, key
    del y
    z = nbtorch.empty(2 * N)                  # another size: the freed block is filed...
    assert z.data_ptr() != ptr
    w = nbtorch.empty(N)                      # ...and found in the free lists
    assert w.data_ptr() == ptr
    del z, w


def test_size_classes():
    assert ca.round_size(MIB) == MIB
    assert ca.round_size(MIB + 1) == MIB + MIB // 8
    assert ca.round_size(5 * MIB) == 5 * MIB
    for n in (MIB + 3, 3 * MIB + 12345, 10 ** 8 + 7):
        r = ca.round_size(n)
        assert n <= r <= n * 1.125 + mmap.PAGESIZE and r % mmap.PAGESIZE == 0


def test_statistics_and_peak():
    base = _drained()
    nbtorch.cpu.reset_peak_memory_stats()
    x = nbtorch.ones(N)
    y = nbtorch.ones(3 * N)
    assert nbtorch.cpu.memory_allocated() == base + 4 * MIB
    assert nbtorch.cpu.memory_reserved() >= nbtorch.cpu.memory_allocated()
    del y
    assert nbtorch.cpu.memory_allocated() == base + MIB
    assert nbtorch.cpu.max_memory_allocated() == base + 4 * MIB
    nbtorch.cpu.reset_peak_memory_stats()
    assert nbtorch.cpu.max_memory_allocated() == base + MIB
    s = nbtorch.cpu.memory_stats()
    assert s["allocated_bytes.all.current"] == base + MIB
    assert s["inactive_split_bytes.all.current"] == (s["reserved_bytes.all.current"]
                                                     - s["allocated_bytes.all.current"])
    assert "Allocated memory" in nbtorch.cpu.memory_summary()
    del x


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * mmap.PAGESIZE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_empty_cache_returns_memory():
    x = nbtorch.ones(16 * N)                 # 16 MiB, touched
    del x
    assert nbtorch.cpu.memory_reserved() - nbtorch.cpu.memory_allocated() >= 16 * MIB
    before = _rss()
    nbtorch.cpu.empty_cache()
    assert nbtorch.cpu.memory_reserved() == nbtorch.cpu.memory_allocated()
    assert before - _rss() >= 12 * MIB


def test_numpy_view_keeps_buffer_alive():
    t = nbtorch.arange(N, dtype=nbtorch.float32)
    a = t.numpy()
    a[0] = 7.0
    assert t[0].item() == 7.0                 # numpy() shares memory
    ptr = t.data_ptr()
    v = t[::2]
    del t
    u = nbtorch.full((N,), -1.0)             # must not reuse the block `a` still sees
    assert u.data_ptr() != ptr
    del v
    w = nbtorch.full((N,), -2.0)
    assert w.data_ptr() != ptr
    assert a[1] == 1.0 and a[-1] == N - 1
    b = a.reshape(2, -1)[:, ::4]             # a view of a view
    del a
    gc.collect()
    z = nbtorch.full((N,), -3.0)
    assert z.data_ptr() != ptr and b[0, 1] == 4.0
    del b
    again = nbtorch.empty(N)
    assert again.data_ptr() == ptr           # the last view died: the block is free again


def test_reference_cycle_returns_block_on_collect():
    base = _drained()
    t = nbtorch.ones(N)
    holder = {"t": t}
    holder["self"] = holder
    del t, holder
    assert _drained() == base


def test_gradients_through_cached_buffers():
    x = nbtorch.randn(N, requires_grad=True)
    (x * 3.0).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.full(N, 3.0, np.float32))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_is_private_and_has_a_fresh_lock():
    parent = nbtorch.full((N,), 1.0)
    spare = nbtorch.empty(2 * N)
    del spare                                # a free block the child must drop
    with ca.ALLOCATOR.lock:                  # a fork while another thread holds the lock
        pid = os.fork()
        if pid == 0:                         # pragma: no cover - the child
            ok = False
            try:
                cached = nbtorch.cpu.memory_reserved() - nbtorch.cpu.memory_allocated()
                parent.add_(1.0)             # private: the parent must not see it
                c = nbtorch.full((2 * N,), 5.0)
                ok = cached == 0 and float(parent[0]) == 2.0 and float(c[-1]) == 5.0
            finally:
                os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert float(parent[0]) == 1.0 and float(parent[-1]) == 1.0


def test_threads_allocate_and_free_concurrently():
    base = _drained()
    errors = []

    def work(seed):
        try:
            for i in range(40):
                a = nbtorch.full((N * (1 + (seed + i) % 3),), float(seed))
                b = a + 1.0
                if float(b[-1]) != seed + 1.0:
                    errors.append(seed)
        except Exception as exc:             # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _drained() == base
    s = nbtorch.cpu.memory_stats()
    assert s["reserved_bytes.all.current"] >= s["allocated_bytes.all.current"] >= 0


def test_cache_cap_unmaps_oldest_blocks():
    alloc = ca.CachingHostAllocator(max_cached=3 * MIB)
    a, b, c = (alloc.allocate(N * k, np.dtype(np.float32)) for k in (1, 2, 3))
    assert alloc.memory_reserved() == 6 * MIB
    del a, b
    assert alloc.memory_reserved() == 6 * MIB          # 3 MiB free: at the cap
    del c
    assert alloc.memory_allocated() == 0
    assert alloc.memory_reserved() == 3 * MIB          # the older 1 and 2 MiB unmapped
    assert alloc.memory_stats()["num_device_free"] == 2


def test_out_of_memory(monkeypatch):
    alloc = ca.CachingHostAllocator()

    def no_memory(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")
    monkeypatch.setattr(ca, "_Block", no_memory)
    with pytest.raises(RuntimeError, match="not enough memory") as info:
        alloc.allocate(N, np.dtype(np.float32))
    assert isinstance(info.value, MemoryError)
    assert alloc.memory_allocated() == 0 and alloc.memory_stats()["num_ooms"] == 1


def test_disabled_cache(monkeypatch):
    monkeypatch.setattr(ca, "ENABLED", False)
    t = nbtorch.empty(4 * N)
    assert t._storage.data.base is None


def test_environment_variable_turns_the_cache_off():
    code = ("import nbtorch; t = nbtorch.ones(1 << 20); "
            "assert t._storage.data.base is None; assert nbtorch.cpu.memory_reserved() == 0")
    env = dict(os.environ, NBTORCH_CPU_ALLOCATOR="malloc")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


@pytest.mark.skipif(not ca._huge_pages(), reason="no transparent huge pages here")
def test_large_blocks_start_on_a_huge_page_boundary():
    """Blocks from HUGEPAGE_BYTES start on a 2 MiB boundary (reused ones too) and hold
    their data in the mapping; smaller ones start at the mapping."""
    alloc = ca.CachingHostAllocator()
    for nbytes in (ca.HUGEPAGE_BYTES, 5 * MIB + 12345, 16 * MIB):
        a = alloc.allocate(nbytes // 4, np.dtype(np.float32))
        block = a.base.base
        assert a.ctypes.data % ca.HUGEPAGE_BYTES == 0
        assert block.size == ca.round_size(nbytes // 4 * 4)
        assert len(block) == block.size + ca.HUGEPAGE_BYTES
        a[:] = 1.0                                     # every element inside the mapping
        ptr = a.ctypes.data
        del a
        b = alloc.allocate(nbytes // 4, np.dtype(np.float32))
        assert b.ctypes.data == ptr and (b == 1.0).all()
        del b
    small = alloc.allocate(MIB // 4, np.dtype(np.float32))
    assert small.base.base.offset == 0 and len(small.base.base) == small.base.base.size
    alloc.empty_cache()


def test_huge_pages_can_be_turned_off():
    code = ("import nbtorch, numpy as np; from nbtorch import _cpu_allocator as ca; "
            "t = nbtorch.ones(1 << 22); b = t._storage.data.base.base; "
            "assert b.offset == 0 and len(b) == b.size, (b.offset, len(b))")
    env = dict(os.environ, NBTORCH_CPU_HUGEPAGES="0")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
