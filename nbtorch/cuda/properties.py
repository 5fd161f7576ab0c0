"""What a CUDA device is and can do (``torch.cuda.get_device_properties`` and friends).

The numbers come from the CUDA driver through Numba (its device attributes and
the context's memory info). On Numba's CUDA simulator the device is described
as the simulator presents itself: compute capability 5.2, one multiprocessor,
and the host's physical memory as its total memory (simulated device memory
is host memory).
"""
import os

from . import _runtime

__all__ = ["get_device_properties", "is_bf16_supported", "is_tf32_supported",
           "can_device_access_peer", "get_arch_list", "get_gencode_flags"]


class _CudaDeviceProperties:
    """The attributes PyTorch's ``_CudaDeviceProperties`` has (read-only by convention)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // 2**20}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
                f"pci_domain_id={self.pci_domain_id}, "
                f"L2_cache_size={self.L2_cache_size // 2**20}MB)")


def _checked_index(device, what="device"):
    """The device index of `device` (None: current), AssertionError if out of range."""
    _runtime.lazy_init()
    idx = _runtime.device_index(device, optional=True)
    if not 0 <= idx < _runtime.device_count():
        raise AssertionError(f"Invalid {what} id")
    return idx


def _host_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):      # not POSIX: a nominal 16 GiB
        return 16 << 30


def _simulator_properties():
    return dict(name="CUDA simulator", major=5, minor=2, multi_processor_count=1,
                total_memory=_host_memory(), is_integrated=1, is_multi_gpu_board=0,
                max_threads_per_multi_processor=2048, warp_size=32,
                uuid="00000000-0000-0000-0000-000000000000", L2_cache_size=0,
                clock_rate=0, memory_clock_rate=0, memory_bus_width=0,
                shared_memory_per_block=48 << 10, shared_memory_per_block_optin=48 << 10,
                shared_memory_per_multiprocessor=64 << 10, regs_per_multiprocessor=65536,
                pci_bus_id=0, pci_device_id=0, pci_domain_id=0, gcnArchName="NVIDIA CUDA")


def _gpu_properties(idx):
    cuda = _runtime.cuda_module()
    gpu = cuda.gpus[idx]

    def attr(name):
        try:
            return int(getattr(gpu, name))
        except Exception:                # an attribute this driver does not report
            return 0

    with gpu:
        total = int(cuda.current_context().get_memory_info().total)
    major, minor = gpu.compute_capability
    name = gpu.name.decode() if isinstance(gpu.name, bytes) else str(gpu.name)
    return dict(name=name, major=int(major), minor=int(minor),
                multi_processor_count=attr("MULTIPROCESSOR_COUNT"), total_memory=total,
                is_integrated=attr("INTEGRATED"), is_multi_gpu_board=attr("MULTI_GPU_BOARD"),
                max_threads_per_multi_processor=attr("MAX_THREADS_PER_MULTIPROCESSOR"),
                warp_size=attr("WARP_SIZE"),
                uuid=str(getattr(gpu, "uuid", "")).replace("GPU-", "", 1),
                L2_cache_size=attr("L2_CACHE_SIZE"), clock_rate=attr("CLOCK_RATE"),
                memory_clock_rate=attr("MEMORY_CLOCK_RATE"),
                memory_bus_width=attr("GLOBAL_MEMORY_BUS_WIDTH"),
                shared_memory_per_block=attr("MAX_SHARED_MEMORY_PER_BLOCK"),
                shared_memory_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
                shared_memory_per_multiprocessor=attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
                regs_per_multiprocessor=attr("MAX_REGISTERS_PER_MULTIPROCESSOR"),
                pci_bus_id=attr("PCI_BUS_ID"), pci_device_id=attr("PCI_DEVICE_ID"),
                pci_domain_id=attr("PCI_DOMAIN_ID"), gcnArchName="NVIDIA CUDA")


_CACHE = {}


def get_device_properties(device=None):
    """The properties of a CUDA device (None: the current one).

    Example:
        >>> p = nbtorch.cuda.get_device_properties(0)
        >>> p.name, p.total_memory, (p.major, p.minor), p.multi_processor_count
    """
    idx = _checked_index(device)
    props = _CACHE.get(idx)
    if props is None:
        fields = _simulator_properties() if _runtime.simulator() else _gpu_properties(idx)
        props = _CACHE[idx] = _CudaDeviceProperties(**fields)
    return props


def is_bf16_supported(including_emulation=True):
    """Always False: nbtorch keeps bfloat16 on the CPU (numba.cuda has no bfloat16 arrays,
    so a bfloat16 CUDA tensor cannot be made, whatever the GPU). PyTorch's own test with
    `including_emulation` tries to make one, and would say False too; code choosing
    ``bfloat16 if is_bf16_supported() else float16`` thus picks float16, which works."""
    return False


def is_tf32_supported():
    """True on a GPU of compute capability 8.0 or more (Ampere on), as PyTorch's (which
    asks whether bfloat16 runs natively there). nbtorch's float32 kernels compute in
    full float32 whatever ``backends.cuda.matmul.allow_tf32`` says; False without CUDA."""
    if not _runtime.is_available():
        return False
    return get_device_properties().major >= 8


def can_device_access_peer(device, peer_device):
    """True if `device` can read `peer_device`'s memory directly (never for one device
    and itself, as CUDA's cudaDeviceCanAccessPeer)."""
    idx = _checked_index(device)
    peer = _runtime.device_index(peer_device)
    if not 0 <= peer < _runtime.device_count():
        raise AssertionError("Invalid peer device id")
    if idx == peer or _runtime.simulator():
        return False
    cuda = _runtime.cuda_module()
    with cuda.gpus[idx]:
        return bool(cuda.current_context().can_access_peer(peer))


def get_arch_list():
    """The compute capabilities nbtorch's kernels compile for: nbtorch compiles each kernel
    at run time for the GPU it runs on (Numba + NVVM), so the list is that GPU's
    (``['sm_90']`` on an H100); empty without CUDA, as PyTorch's CPU build."""
    if not _runtime.is_available() or _runtime.simulator():
        return []
    return sorted({"sm_%d%d" % tuple(_runtime.cuda_module().gpus[i].compute_capability)
                   for i in range(_runtime.device_count())})


def get_gencode_flags():
    """The NVCC ``-gencode`` flags `get_arch_list` amounts to ('' when it is empty)."""
    flags = []
    for arch in get_arch_list():
        kind, num = arch.split("_")
        flags.append(f"-gencode compute=compute_{num},code={kind}_{num}")
    return " ".join(flags)
