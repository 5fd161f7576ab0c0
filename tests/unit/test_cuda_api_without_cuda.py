"""torch.cuda's API where CUDA is unavailable (the main suite's process: no GPU, no simulator):
PyTorch's defaults where PyTorch returns them, a RuntimeError where it needs a device; the
caching allocator's new bookkeeping (memory cap, snapshot, accumulated reset) in pure Python;
nvtx's no-op path; NVML's missing-module errors. Compared with an installed (CPU) torch."""
import collections
import warnings

import pytest

import nbtorch
from nbtorch import cuda
from nbtorch.cuda import nvtx
from nbtorch.cuda._allocator import CachingAllocator, DriverOOM, OutOfMemoryError

pytestmark = pytest.mark.skipif(cuda.is_available(), reason="CUDA is available here")
NO_CUDA = "CUDA is not available"


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name, call", [
    ("is_bf16_supported", lambda m: m.cuda.is_bf16_supported()),
    ("is_tf32_supported", lambda m: m.cuda.is_tf32_supported()),
    ("get_rng_state_all", lambda m: m.cuda.get_rng_state_all()),
    ("set_rng_state", lambda m: m.cuda.set_rng_state(m.zeros(16, dtype=m.uint8))),
    ("set_rng_state_all", lambda m: m.cuda.set_rng_state_all([])),
    ("default_generators", lambda m: m.cuda.default_generators),
    ("memory_stats", lambda m: m.cuda.memory_stats()),
    ("memory_stats_as_nested_dict", lambda m: m.cuda.memory_stats_as_nested_dict()),
    ("memory_allocated", lambda m: m.cuda.memory_allocated()),
    ("max_memory_reserved", lambda m: m.cuda.max_memory_reserved()),
    ("host_memory_stats", lambda m: m.cuda.host_memory_stats()),
    ("get_arch_list", lambda m: m.cuda.get_arch_list()),
    ("get_gencode_flags", lambda m: m.cuda.get_gencode_flags()),
    ("empty_cache", lambda m: m.cuda.empty_cache()),
    ("device_count", lambda m: m.cuda.device_count()),
])
def test_defaults_without_cuda_match_pytorch(name, call):
    torch = _torch()
    assert call(nbtorch) == call(torch)


def test_deprecated_names_warn_as_pytorch():
    torch = _torch()
    for name in ("memory_cached", "max_memory_cached"):
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            assert getattr(cuda, name)() == 0
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            getattr(torch.cuda, name)()
        assert [(w.category, str(w.message)) for w in ours] == \
            [(w.category, str(w.message)) for w in theirs]


@pytest.mark.parametrize("call", [
    lambda: cuda.get_device_properties(), lambda: cuda.get_device_properties(0),
    lambda: cuda.get_rng_state(), lambda: cuda.set_per_process_memory_fraction(0.5),
    lambda: cuda.get_per_process_memory_fraction(), lambda: cuda.can_device_access_peer(0, 1),
    lambda: cuda.ipc_collect(), lambda: cuda.caching_allocator_alloc(16),
    lambda: cuda.reset_accumulated_memory_stats(), lambda: cuda.CUDAGraph(),
    lambda: cuda.ExternalStream(0), lambda: cuda.mem_get_info(),
])
def test_calls_that_need_a_device_raise(call):
    with pytest.raises(RuntimeError, match=NO_CUDA):
        call()


def test_harmless_calls_without_cuda():
    assert cuda.memory_snapshot() == []
    assert cuda.is_current_stream_capturing() is False
    with cuda.device_of(nbtorch.ones(2)):              # a CPU tensor: no-op
        pass
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        cuda.caching_allocator_delete(0)
    assert cuda.Device is not None and "default_generators" not in cuda.__all__


def test_cuda_error_and_check_error():
    e = cuda.CudaError(2)
    assert isinstance(e, RuntimeError) and str(e) == "out of memory (2)" and e.code == 2
    assert str(cuda.CudaError(12345)) == "unknown error (12345)"
    cuda.check_error(0)
    with pytest.raises(cuda.CudaError, match=r"invalid device ordinal \(101\)"):
        cuda.check_error(101)
    assert issubclass(cuda.OutOfMemoryError, RuntimeError)


def test_nvml_counters_need_pynvml(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "pynvml", None)     # import pynvml -> ImportError
    torch = _torch()
    for name in ("utilization", "temperature", "power_draw", "clock_rate", "memory_usage",
                 "device_memory_used"):
        with pytest.raises(ModuleNotFoundError) as ours:
            getattr(cuda, name)()
        with pytest.raises(ModuleNotFoundError) as theirs:
            getattr(torch.cuda, name)()
        assert str(ours.value) == str(theirs.value)
    assert cuda.list_gpu_processes() == "pynvml module not found, please install nvidia-ml-py"


def test_nvtx_without_the_library_tracks_depth_and_checks_arguments(monkeypatch):
    monkeypatch.setitem(nvtx._STATE, "looked", True)
    monkeypatch.setitem(nvtx._STATE, "lib", None)
    assert nvtx.backend() == "no-op"
    assert nvtx.range_push("a") == 0 and nvtx.range_push("b") == 1
    assert nvtx.range_pop() == 1 and nvtx.range_pop() == 0 and nvtx.range_pop() == -1
    nvtx.mark("m")
    rid = nvtx.range_start("r")
    assert isinstance(rid, int)
    nvtx.range_end(rid)

    @nvtx.range("fn {}", 1)
    def f():
        return nvtx.range_push("inner")
    assert f() == 1 and nvtx.range_pop() == 0
    for bad in (lambda: nvtx.range_push(1), lambda: nvtx.mark(b"x"),
                lambda: nvtx.range_start(None), lambda: nvtx.range_end("1")):
        with pytest.raises(TypeError):
            bad()


def test_nvtx_with_the_library_returns_its_values():
    if nvtx.backend() != "nvtx":
        pytest.skip("no NVTX library on this machine")
    assert nvtx.range_push("a") in (0, -2)       # -2: no profiler attached (NVTX's answer)
    assert nvtx.range_pop() in (0, -2)
    with nvtx.range("x"):
        nvtx.mark("m")


class _Driver:
    def __init__(self):
        self.next, self.live = 1 << 20, {}

    def alloc(self, n):
        self.next += 1 << 30
        self.live[self.next] = n
        return self.next

    def free(self, p):
        del self.live[p]

    def synchronize(self):
        pass


def test_allocator_limit_empties_cache_then_raises():
    a = CachingAllocator(_Driver())
    a.set_limit(0.5, 8192)                              # 4096 bytes allowed
    p = a.malloc(2048)
    a.free(a.malloc(1536))                              # cached: reserved 3584
    q = a.malloc(1024)                                  # over the cap: cache emptied, fits
    assert a.memory_stats()["num_alloc_retries"] == 1 and a.memory_reserved() == 3072
    with pytest.raises(OutOfMemoryError, match=r"allowed \(per-process memory fraction 0\.5"):
        a.malloc(4096)
    assert a.memory_stats()["num_ooms"] == 1 and a.fraction == 0.5
    a.free(p), a.free(q)
    assert issubclass(DriverOOM, Exception)


def test_allocator_snapshot_and_accumulated_reset():
    a = CachingAllocator(_Driver(), device_index=0)
    p = a.malloc(700, stream=5)
    big = a.malloc(3 << 20)
    a.free(big)
    segs = {s["address"]: s for s in a.snapshot()}
    assert segs[p]["requested_size"] == 700 and segs[p]["stream"] == 5
    assert segs[p]["blocks"][0]["state"] == "active_allocated"
    assert segs[big]["segment_type"] == "large" and segs[big]["allocated_size"] == 0
    assert segs[big]["blocks"][0]["state"] == "inactive"
    a.reset_accumulated_stats()
    s = a.memory_stats()
    assert s["allocated_bytes.all.allocated"] == 0 and s["allocated_bytes.all.freed"] == 0
    assert s["num_device_alloc"] == 0 and s["allocated_bytes.all.current"] == 1024
    assert s["allocated_bytes.all.peak"] > 0                # peaks are not accumulated stats
    assert isinstance(cuda.memory_stats(), collections.OrderedDict)


@pytest.mark.parametrize("call", [
    lambda: cuda.set_sync_debug_mode("warn"), lambda: cuda.get_sync_debug_mode(),
    lambda: cuda.profiler.start(), lambda: cuda.profiler.stop(), lambda: cuda.cudart(),
])
def test_sync_debug_and_profiler_need_a_device(call):
    with pytest.raises(RuntimeError, match=NO_CUDA):
        call()
