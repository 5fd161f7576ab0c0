"""nbtorch.cuda: availability, devices, streams, events, memory statistics, errors."""
import os
import subprocess
import sys

import pytest

import nbtorch
from nbtorch import cuda

pytestmark = pytest.mark.cuda
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def test_available_and_devices():
    assert cuda.is_available()
    assert cuda.device_count() >= 1
    assert cuda.current_device() == 0
    assert isinstance(cuda.get_device_name(), str)
    cc = cuda.get_device_capability()
    assert len(cc) == 2 and all(isinstance(v, int) for v in cc)
    cuda.set_device(0)
    cuda.set_device("cuda:0")
    with cuda.device(0):
        assert cuda.current_device() == 0
    cuda.synchronize()


def test_bad_device_ordinal_is_a_clear_error():
    n = cuda.device_count()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        cuda.set_device(n)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        nbtorch.zeros(2, device=f"cuda:{n}")


def test_import_without_gpu_is_fine_and_cuda_use_is_a_clear_error():
    if not SIM:
        pytest.skip("a real GPU is present")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = ("import sys, nbtorch\n"
            "assert 'numba.cuda' not in sys.modules\n"
            "assert nbtorch.cuda.is_available() is False\n"
            "assert nbtorch.cuda.device_count() == 0\n"
            "try:\n    nbtorch.ones(2, device='cuda')\nexcept RuntimeError as e:\n"
            "    print('ERR', e)\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ERR CUDA is not available" in r.stdout and "NUMBA_ENABLE_CUDASIM" in r.stdout


def test_streams_run_kernels_and_restore():
    s = cuda.Stream()
    assert cuda.current_stream() == cuda.default_stream()
    x = nbtorch.arange(6.0, device="cuda")
    with cuda.stream(s):
        assert cuda.current_stream() == s
        y = x * 2
    assert cuda.current_stream() == cuda.default_stream()
    s.synchronize()
    assert s.query()
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    s2 = cuda.Stream()
    s2.wait_stream(s)
    with cuda.stream(None):                  # no-op context
        pass
    assert "cuda_stream" in repr(s)


def test_events_record_sync_and_time():
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    start.record()
    nbtorch.ones(8, device="cuda").add_(1)
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        cuda.Event().elapsed_time(end)
    with pytest.raises(RuntimeError, match="recorded"):
        cuda.Event(enable_timing=True).elapsed_time(end)


def test_manual_seed_is_shared_with_the_cpu_generator():
    cuda.manual_seed(3)
    a = nbtorch.rand(4, device="cuda").tolist()
    cuda.manual_seed_all(3)
    b = nbtorch.rand(4, device="cuda").tolist()
    assert a == b
    assert cuda.initial_seed() == 3


def test_memory_statistics_follow_tensors():
    cuda.empty_cache()
    cuda.reset_peak_memory_stats()
    base = cuda.memory_allocated()
    x = nbtorch.empty(1000, device="cuda")          # 4000 bytes -> one 4096-byte block
    assert cuda.memory_allocated() == base + 4096
    assert cuda.max_memory_allocated() >= base + 4096
    reserved = cuda.memory_reserved()
    assert reserved >= cuda.memory_allocated()
    del x
    assert cuda.memory_allocated() == base
    assert cuda.memory_reserved() == reserved         # cached, not returned to the driver
    y = nbtorch.empty(1000, device="cuda")            # served from the cache
    assert cuda.memory_reserved() == reserved
    stats = cuda.memory_stats()
    assert stats["num_cache_hits"] >= 1
    assert stats["allocated_bytes.all.current"] == cuda.memory_allocated()
    del y
    cuda.empty_cache()
    assert cuda.memory_reserved() == cuda.memory_allocated()
    assert "Reserved memory" in cuda.memory_summary()
    assert cuda.max_memory_reserved() >= reserved


def test_views_do_not_allocate():
    x = nbtorch.zeros(4, 4, device="cuda")
    before = cuda.memory_allocated()
    v = x[1:, ::2].t()
    assert cuda.memory_allocated() == before
    del v


@pytest.mark.skipif(not SIM, reason="capacity-limited driver exists only on the simulator")
def test_out_of_memory_is_a_clear_error(monkeypatch):
    a = nbtorch.cuda._runtime.allocator(0)
    monkeypatch.setattr(a.driver, "capacity", a.driver.used + (1 << 20))
    with pytest.raises(cuda.OutOfMemoryError, match="Tried to allocate 2.00 MiB"):
        nbtorch.empty(1 << 19, device="cuda")     # 2 MiB
    monkeypatch.setattr(a.driver, "capacity", None)


@pytest.mark.gpu
def test_stream_allocation_uses_stream_key():
    s = cuda.Stream()
    with cuda.stream(s):
        x = nbtorch.empty(1 << 20, device="cuda")
    alloc = nbtorch.cuda._runtime.allocator(0)
    assert any(stream == s._key for size, stream in alloc.blocks.values())
    del x


def test_allocations_remember_their_stream():
    alloc = nbtorch.cuda._runtime.allocator(0)
    s = cuda.Stream()
    with cuda.stream(s):
        x = nbtorch.empty(3000, device="cuda")      # a size class no other test uses
    assert any(stream == s._key for size, stream in alloc.blocks.values())
    del x
    y = nbtorch.empty(3000, device="cuda")          # default stream: not s's cached block
    assert alloc.free_blocks.get((s._key, 12288))
    del y
