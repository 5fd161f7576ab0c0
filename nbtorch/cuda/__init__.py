"""nbtorch.cuda: the CUDA device (``torch.cuda``): availability, devices, streams, memory.

Importing this module is cheap and never touches the GPU stack: ``numba.cuda``
is imported the first time a function here (or a CUDA tensor) needs it. Without
a GPU, `is_available()` is False and asking for a CUDA tensor raises a clear
RuntimeError. With ``NUMBA_ENABLE_CUDASIM=1`` set before import, everything
runs on Numba's CUDA simulator (slowly, for tests).

Example:
    >>> if nbtorch.cuda.is_available():
    ...     x = nbtorch.ones(3, device='cuda')
    ...     print(nbtorch.cuda.memory_allocated())
"""
from typing import Optional, Union

from .. import _registry, _tensor
from .._device import device as _device_type
from . import _runtime, _tensors
from ._allocator import OutOfMemoryError
from .memory import (memory_allocated, max_memory_allocated, memory_reserved,  # noqa: F401
                     max_memory_reserved, reset_peak_memory_stats, empty_cache, memory_stats,
                     memory_summary, mem_get_info)
from ._deprecated import (memory_cached, max_memory_cached,  # noqa: F401
                          reset_max_memory_cached, reset_max_memory_allocated)
from .memory_tools import (set_per_process_memory_fraction,  # noqa: F401
                           get_per_process_memory_fraction, caching_allocator_alloc,
                           caching_allocator_delete, caching_allocator_enable,
                           caching_allocator_disabled,
                           memory_stats_as_nested_dict, reset_accumulated_memory_stats,
                           memory_snapshot, host_memory_stats, host_memory_stats_as_nested_dict,
                           reset_accumulated_host_memory_stats, reset_peak_host_memory_stats)
from .random import (manual_seed, manual_seed_all, seed, seed_all, initial_seed,  # noqa: F401
                     get_rng_state, get_rng_state_all, set_rng_state, set_rng_state_all)
from .streams import (Stream, ExternalStream, Event, StreamContext, stream,  # noqa: F401
                      current_stream, default_stream, set_stream, synchronize,
                      get_stream_from_external)
from .properties import (get_device_properties, is_bf16_supported,  # noqa: F401
                         is_tf32_supported, can_device_access_peer, get_arch_list,
                         get_gencode_flags)
from .monitoring import (utilization, temperature, power_draw, clock_rate,  # noqa: F401
                         memory_usage, device_memory_used, list_gpu_processes)
from .graphs import (CUDAGraph, graph, make_graphed_callables,  # noqa: F401
                     is_current_stream_capturing, graph_pool_handle)
from .errors import CudaError, DeferredCudaCallError, check_error  # noqa: F401
from .sync_debug import set_sync_debug_mode, get_sync_debug_mode  # noqa: F401
from . import nvtx, graphs, profiler  # noqa: F401
from .profiler import cudart  # noqa: F401
from . import amp  # noqa: F401  (PyTorch's deprecated torch.cuda.amp spellings)
from .._tensor_types import CUDA_TYPES as _CUDA_TYPES

globals().update(_CUDA_TYPES)       # torch.cuda.FloatTensor, ...: legacy constructors

__all__ = ["is_available", "device_count", "current_device", "set_device", "device",
           "get_device_name", "get_device_capability", "is_initialized", "init",
           "synchronize", "Stream", "Event", "StreamContext", "stream", "current_stream",
           "default_stream", "set_stream", "manual_seed", "manual_seed_all", "seed",
           "seed_all", "initial_seed", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "empty_cache", "memory_stats", "memory_summary",
           "mem_get_info", "OutOfMemoryError",
           # less common torch.cuda API (properties, RNG state, memory tools, graphs...)
           "get_device_properties", "is_bf16_supported", "is_tf32_supported",
           "can_device_access_peer", "get_arch_list", "get_gencode_flags", "device_of",
           "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
           "memory_cached", "max_memory_cached", "reset_max_memory_cached",
           "reset_max_memory_allocated", "reset_accumulated_memory_stats",
           "memory_stats_as_nested_dict", "memory_snapshot", "set_per_process_memory_fraction",
           "get_per_process_memory_fraction", "caching_allocator_alloc",
           "caching_allocator_delete", "host_memory_stats", "list_gpu_processes",
           "utilization", "temperature", "power_draw", "clock_rate", "memory_usage",
           "device_memory_used", "ExternalStream", "get_stream_from_external", "ipc_collect",
           "is_current_stream_capturing", "CUDAGraph", "graph", "make_graphed_callables",
           "graph_pool_handle", "CudaError", "check_error", "nvtx", "Device", "profiler",
           "set_sync_debug_mode", "get_sync_debug_mode", "has_half", "has_magma",
           "get_allocator_backend", "cudart"]

_tensor.VIEW_MAKERS["cuda"] = _tensors.view_cuda
_tensor._ALLOCATORS["cuda"] = _tensors.alloc_cuda
_registry.register_device_loader("cuda", "nbtorch.cuda._register")


Device = Optional[Union[_device_type, str, int]]     # torch.cuda.Device: a device argument


def __dir__():
    return sorted(list(globals()) + ["default_generators", "AcceleratorError"])


def __getattr__(name):
    if name == "default_generators":          # one per device, known once CUDA is probed
        from .random import default_generators
        return default_generators()
    if name == "AcceleratorError":             # torch.AcceleratorError (imported late: cycle)
        from .._torch_extras import AcceleratorError
        return AcceleratorError
    raise AttributeError(f"module 'nbtorch.cuda' has no attribute '{name}'")


def is_available():
    """True if CUDA kernels can run here (a GPU with its driver, or the simulator)."""
    return _runtime.is_available()


def is_initialized():
    return _runtime._STATE["initialized"]


def init():
    """Initialise CUDA now (otherwise done on first use); RuntimeError if unavailable."""
    _runtime.lazy_init()


def device_count():
    """Number of CUDA devices (0 without a GPU or simulator)."""
    return _runtime.device_count()


def current_device():
    """Index of the current CUDA device."""
    return _runtime.current_device()


def set_device(device):
    """Make `device` (int, 'cuda:N' or nbtorch.device) current for this thread."""
    _runtime.set_device(device)


class device:
    """Context manager selecting the current CUDA device (``torch.cuda.device``)."""

    def __init__(self, device):
        self.idx = -1 if device is None else _runtime._index(device)
        self.prev = None

    def __enter__(self):
        if self.idx >= 0:
            self.prev = current_device()
            set_device(self.idx)

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device(self.prev)
        return False


class device_of(device):
    """Context manager making the device of tensor `obj` current (a no-op for a CPU tensor)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else None)


has_half = True          # float16 tensors work on CUDA
has_magma = False        # no MAGMA: linear algebra runs in nbtorch's own kernels


def get_allocator_backend():
    """The CUDA allocator in use: "native" (nbtorch's caching allocator) unless
    ``NBTORCH_CUDA_ALLOCATOR`` chose Numba's own ("numba")."""
    import os
    return "native" if os.environ.get("NBTORCH_CUDA_ALLOCATOR", "caching") == "caching" \
        else "numba"


def ipc_collect():
    """Release memory of CUDA tensors shared with other processes once they are done with
    it: nbtorch shares CUDA tensors by IPC handles that Numba closes with the array, so
    there is nothing left to collect; it initialises CUDA, as PyTorch's does."""
    _runtime.lazy_init()


def get_device_name(device=None):
    """The GPU's name (e.g. 'NVIDIA H200'); 'CUDA simulator' on the simulator."""
    _runtime.lazy_init()
    if _runtime.simulator():
        return "CUDA simulator"
    idx = _runtime.check_index(_runtime._index(device))
    name = _runtime.cuda_module().gpus[idx].name
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None):
    """(major, minor) compute capability of the device."""
    _runtime.lazy_init()
    if _runtime.simulator():
        return tuple(_runtime.cuda_module().get_current_device().compute_capability)
    idx = _runtime.check_index(_runtime._index(device))
    return tuple(_runtime.cuda_module().gpus[idx].compute_capability)
