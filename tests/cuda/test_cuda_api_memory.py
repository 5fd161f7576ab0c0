"""torch.cuda's allocator controls on a CUDA device (simulator or GPU): the per-process memory
fraction (enforced), raw caching_allocator_alloc/delete, memory_snapshot, nested stats,
reset_accumulated_memory_stats and the deprecated *_cached spellings."""
import collections

import pytest

import nbtorch
from nbtorch import cuda

pytestmark = pytest.mark.cuda


@pytest.fixture
def fraction_restored():
    yield
    cuda.set_per_process_memory_fraction(1.0)


def test_memory_fraction_is_enforced_as_an_oom(fraction_restored):
    assert cuda.get_per_process_memory_fraction() == 1.0
    cuda.empty_cache()
    total = cuda.get_device_properties().total_memory
    held = cuda.memory_reserved()
    frac = (held + (1 << 20)) / total                 # 1 MiB above what is held now
    cuda.set_per_process_memory_fraction(frac)
    assert cuda.get_per_process_memory_fraction(0) == pytest.approx(frac)
    small = nbtorch.empty(1 << 16, device="cuda")     # 256 KiB: fits
    with pytest.raises(cuda.OutOfMemoryError, match=r"CUDA out of memory\. Tried to allocate "
                                                    r"2\.00 MiB.*allowed \(per-process memory"
                                                    r" fraction"):
        nbtorch.empty(1 << 19, device="cuda")         # 2 MiB: past the cap
    assert cuda.memory_stats()["num_ooms"] >= 1
    cuda.set_per_process_memory_fraction(1.0)
    big = nbtorch.empty(1 << 19, device="cuda")       # the cap lifted
    del small, big


def test_memory_fraction_checks_arguments(fraction_restored):
    with pytest.raises(TypeError, match="Invalid type for fraction argument, must be `float`"):
        cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match=r"Invalid fraction value: 1\.5\. Allowed range: 0~1"):
        cuda.set_per_process_memory_fraction(1.5)
    with pytest.raises(ValueError, match="Expected a torch.device with a specified index"):
        cuda.set_per_process_memory_fraction(0.5, "cuda")
    cuda.set_per_process_memory_fraction(0.9, "cuda:0")
    assert cuda.get_per_process_memory_fraction(nbtorch.device("cuda", 0)) == 0.9


def test_caching_allocator_alloc_delete_and_snapshot():
    before = cuda.memory_allocated()
    ptr = cuda.caching_allocator_alloc(1000)
    assert isinstance(ptr, int) and cuda.memory_allocated() == before + 1024
    seg = [s for s in cuda.memory_snapshot() if s["address"] == ptr]
    assert len(seg) == 1
    s = seg[0]
    assert s["total_size"] == 1024 and s["allocated_size"] == 1024 and s["device"] == 0
    assert s["segment_type"] == "small" and s["requested_size"] == 1000
    assert s["blocks"][0]["state"] == "active_allocated"
    cuda.caching_allocator_delete(ptr)
    assert cuda.memory_allocated() == before
    s = [s for s in cuda.memory_snapshot() if s["address"] == ptr][0]
    assert s["blocks"][0]["state"] == "inactive" and s["allocated_size"] == 0
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        cuda.caching_allocator_delete(ptr)
    p2 = cuda.caching_allocator_alloc(10, device=0, stream=cuda.Stream())
    cuda.caching_allocator_delete(p2)
    p3 = cuda.caching_allocator_alloc(10, stream=0)
    cuda.caching_allocator_delete(p3)
    with pytest.raises(TypeError, match="Invalid type for stream argument"):
        cuda.caching_allocator_alloc(10, stream="s")


def test_nested_stats_accumulated_reset_and_deprecated_names():
    x = nbtorch.empty(300, device="cuda")
    flat = cuda.memory_stats()
    assert isinstance(flat, collections.OrderedDict) and list(flat) == sorted(flat)
    nested = cuda.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == flat["allocated_bytes.all.current"]
    assert nested["num_ooms"] == flat["num_ooms"]
    assert cuda.memory_stats()["allocated_bytes.all.allocated"] > 0
    cuda.reset_accumulated_memory_stats()
    s = cuda.memory_stats()
    assert s["allocated_bytes.all.allocated"] == 0 and s["allocated_bytes.all.freed"] == 0
    assert s["num_ooms"] == 0 and s["allocated_bytes.all.current"] == cuda.memory_allocated()
    with pytest.warns(FutureWarning, match="renamed to `torch.cuda.memory_reserved`"):
        assert cuda.memory_cached() == cuda.memory_reserved()
    with pytest.warns(FutureWarning, match="max_memory_reserved"):
        assert cuda.max_memory_cached() == cuda.max_memory_reserved()
    with pytest.warns(FutureWarning, match="resets /all/ peak memory stats"):
        cuda.reset_max_memory_cached()
    with pytest.warns(FutureWarning, match="resets /all/ peak memory stats"):
        cuda.reset_max_memory_allocated()
    assert cuda.max_memory_allocated() == cuda.memory_allocated()
    hs = cuda.host_memory_stats()
    assert isinstance(hs, collections.OrderedDict)
    assert cuda.host_memory_stats_as_nested_dict() == {
        k.split(".")[0]: {"current": v} for k, v in hs.items()}
    del x


def test_memory_history_snapshot_for_the_visualizer(tmp_path):
    import pickle
    mem = cuda.memory
    mem._record_memory_history(max_entries=1000)
    try:
        x = nbtorch.empty(333, device="cuda")
        y = nbtorch.empty(77, device="cuda")
        del y
        snap = mem._snapshot()
        events = snap["device_traces"][0]
        actions = [e["action"] for e in events]
        assert "alloc" in actions and "free_requested" in actions and "free_completed" in actions
        alloc = [e for e in events if e["action"] == "alloc"][0]
        assert any(f["filename"] == __file__ for f in alloc["frames"])
        seg = [s for s in snap["segments"] if s["blocks"][0]["state"] == "active_allocated"
               and s["blocks"][0]["requested_size"] == 333 * 4]
        assert seg and any(f["filename"] == __file__ for f in seg[0]["blocks"][0]["frames"])
        path = tmp_path / "snap.pickle"
        mem._dump_snapshot(str(path))
        with open(path, "rb") as f:
            assert set(pickle.load(f)) == {"segments", "device_traces", "allocator_settings"}
        with pytest.raises(RuntimeError, match="expected enabled"):
            mem._record_memory_history(enabled="some")
    finally:
        mem._record_memory_history(enabled=None)
    assert cuda._runtime.allocator(0).history is None
    assert mem._snapshot()["device_traces"] == [[]]
    del x
