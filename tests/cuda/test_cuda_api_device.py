"""torch.cuda's device, RNG-state, stream and profiling API on a CUDA device (simulator or GPU):
get_device_properties, is_bf16/tf32_supported, can_device_access_peer, device_of,
get/set_rng_state (+_all, default_generators), ExternalStream, nvtx, NVML counters."""
import os
import sys
import types

import pytest

import nbtorch
from nbtorch import cuda

pytestmark = pytest.mark.cuda
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def test_device_properties_fields_and_device_arguments():
    p = cuda.get_device_properties()
    assert (p.major, p.minor) == cuda.get_device_capability()
    assert p.name == cuda.get_device_name()
    assert p.total_memory > 0 and p.multi_processor_count >= 1 and p.warp_size == 32
    for field in ("is_integrated", "L2_cache_size", "max_threads_per_multi_processor",
                  "shared_memory_per_block", "uuid", "memory_clock_rate", "gcnArchName"):
        assert hasattr(p, field)
    assert repr(p).startswith(f"_CudaDeviceProperties(name='{p.name}', major={p.major}")
    for d in (0, "cuda", "cuda:0", nbtorch.device("cuda", 0), nbtorch.device("cuda")):
        assert cuda.get_device_properties(d) is p
    n = cuda.device_count()
    with pytest.raises(AssertionError, match="Invalid device id"):
        cuda.get_device_properties(n)
    with pytest.raises(AssertionError, match="Invalid device id"):
        cuda.get_device_properties(-1)
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        cuda.get_device_properties("cpu")


def test_bf16_tf32_and_peer_access():
    assert cuda.is_bf16_supported() is False        # no bfloat16 CUDA tensors in nbtorch
    assert cuda.is_bf16_supported(including_emulation=False) is False
    assert cuda.is_tf32_supported() is (cuda.get_device_properties().major >= 8)
    assert cuda.can_device_access_peer(0, 0) is False
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        cuda.can_device_access_peer(0, cuda.device_count())
    with pytest.raises(AssertionError, match="Invalid device id"):
        cuda.can_device_access_peer(cuda.device_count(), 0)
    if SIM:
        assert cuda.get_arch_list() == [] and cuda.get_gencode_flags() == ""
    else:
        arch = cuda.get_arch_list()
        assert arch and all(a.startswith("sm_") for a in arch)
        assert cuda.get_gencode_flags().startswith("-gencode compute=compute_")
    cuda.ipc_collect()
    assert cuda.is_current_stream_capturing() is False


def test_device_of_and_device_alias():
    x = nbtorch.ones(2, device="cuda")
    with cuda.device_of(x):
        assert cuda.current_device() == 0
    with cuda.device_of(nbtorch.ones(2)):             # a CPU tensor: no-op
        assert cuda.current_device() == 0
    assert cuda.Device is not None


def test_rng_state_restores_cuda_draws():
    state = cuda.get_rng_state()
    assert state.dtype == nbtorch.uint8 and state.device.type == "cpu"
    a = nbtorch.rand(5, device="cuda").cpu().tolist()
    cuda.set_rng_state(state)
    assert nbtorch.rand(5, device="cuda").cpu().tolist() == a
    states = cuda.get_rng_state_all()
    assert len(states) == cuda.device_count()
    b = nbtorch.randn(3, device="cuda").cpu().tolist()
    cuda.set_rng_state_all(states)
    assert nbtorch.randn(3, device="cuda").cpu().tolist() == b
    for d in (0, "cuda", "cuda:0", nbtorch.device("cuda")):
        assert cuda.get_rng_state(d).shape == state.shape
    with pytest.raises(IndexError):
        cuda.get_rng_state(cuda.device_count())
    with pytest.raises(ValueError, match="Expected a cuda device"):
        cuda.get_rng_state("cpu")
    with pytest.raises(TypeError, match="ByteTensor"):
        cuda.set_rng_state(nbtorch.zeros(4))
    with pytest.raises(RuntimeError, match="PyTorch's CUDA Philox state"):
        cuda.set_rng_state(nbtorch.zeros(16, dtype=nbtorch.uint8))


def test_fork_rng_and_default_generators():
    gens = cuda.default_generators
    assert isinstance(gens, tuple) and len(gens) == cuda.device_count()
    g = gens[0]
    assert isinstance(g, nbtorch.Generator) and g.device == nbtorch.device("cuda", 0)
    g.manual_seed(11)
    assert cuda.initial_seed() == 11 and g.initial_seed() == 11
    a = nbtorch.rand(3, device="cuda").cpu().tolist()
    g.manual_seed(11)
    with nbtorch.random.fork_rng(devices=[0]):
        nbtorch.rand(7, device="cuda")
    assert nbtorch.rand(3, device="cuda").cpu().tolist() == a
    g.set_state(g.get_state())


def test_external_stream_runs_kernels():
    ext = cuda.ExternalStream(0)
    assert ext == cuda.default_stream() and ext.cuda_stream == 0
    x = nbtorch.arange(4.0, device="cuda")
    if SIM:
        s = cuda.ExternalStream(0x1234)
        assert s.cuda_stream == 0x1234 and s.device == nbtorch.device("cuda", 0)
    else:
        s = cuda.ExternalStream(cuda.Stream().cuda_stream)
    with cuda.stream(s):
        assert cuda.current_stream() == s
        y = x * 3
    s.synchronize()
    assert y.cpu().tolist() == [0.0, 3.0, 6.0, 9.0]
    assert cuda.get_stream_from_external(s.cuda_stream) == s
    with pytest.raises(TypeError, match="stream_ptr must be an int"):
        cuda.ExternalStream("0x10")


def test_nvtx_ranges_nest_and_check_arguments():
    depth = cuda.nvtx.range_push("outer")
    assert isinstance(depth, int)
    cuda.nvtx.mark("event")
    cuda.nvtx.range_pop()
    with cuda.nvtx.range("step {} of {n}", 1, n=2):
        nbtorch.ones(2, device="cuda").add_(1)
    rid = cuda.nvtx.range_start("async")
    cuda.nvtx.range_end(rid)
    with pytest.raises(TypeError, match="str"):
        cuda.nvtx.range_push(3)


class _FakeNVML(types.ModuleType):
    """pynvml's calls the counters use, with fixed answers (indices are NVML's)."""

    class NVMLError_DriverNotLoaded(Exception):
        pass

    def __init__(self):
        super().__init__("pynvml")
        self.asked = []

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        self.asked.append(i)
        return ("handle", i)

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=42, memory=7)

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 55

    def nvmlDeviceGetPowerUsage(self, h):
        return 123000

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 1410

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=1 << 30)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=77, usedGpuMemory=3 << 20)]


def test_nvml_counters_through_pynvml(monkeypatch):
    fake = _FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert cuda.utilization() == 42 and fake.asked[-1] == 3     # CUDA 0 is NVML 3
    assert cuda.memory_usage("cuda:0") == 7
    assert cuda.temperature(0) == 55 and cuda.power_draw() == 123000
    assert cuda.clock_rate() == 1410 and cuda.device_memory_used() == 1 << 30
    assert cuda.list_gpu_processes() == ("GPU:3\nprocess         77 uses        3.000 MB "
                                         "GPU memory")
    with pytest.raises(RuntimeError, match="device 2 is not visible"):
        cuda.utilization(2)


def test_sync_debug_mode_flags_device_to_host_copies():
    x = nbtorch.ones(3, device="cuda")
    assert cuda.get_sync_debug_mode() == 0
    try:
        cuda.set_sync_debug_mode("warn")
        assert cuda.get_sync_debug_mode() == 1
        with pytest.warns(UserWarning, match="called a synchronizing CUDA operation"):
            x.sum().item()
        cuda.set_sync_debug_mode(2)
        with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
            x.cpu()
        y = nbtorch.ones(2).to("cuda")                # host -> device: not flagged
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            cuda.set_sync_debug_mode("loud")
    finally:
        cuda.set_sync_debug_mode("default")
    assert y.cpu().tolist() == [1.0, 1.0]


def test_profiler_range_and_memory_info():
    with cuda.profiler.profile():
        nbtorch.ones(2, device="cuda").add_(1)
    cuda.profiler.start()
    cuda.profiler.stop()
    rt = cuda.cudart()
    assert rt.cudaProfilerStart() == 0 and rt.cudaProfilerStop() == 0
    assert rt.cudaMemGetInfo(0) == cuda.mem_get_info(0)
    assert rt.cudaGetErrorString(2) == "out of memory"
    free, total = cuda.mem_get_info()
    assert 0 <= free <= total and total == cuda.get_device_properties().total_memory
    assert cuda.get_allocator_backend() in ("native", "numba")
    assert cuda.has_half is True and cuda.has_magma is False
