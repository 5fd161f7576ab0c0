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
from .. import _registry, _tensor
from . import _runtime, _tensors
from ._allocator import OutOfMemoryError
from .memory import (memory_allocated, max_memory_allocated, memory_reserved,  # noqa: F401
                     max_memory_reserved, reset_peak_memory_stats,
                     reset_max_memory_allocated, empty_cache, memory_stats, memory_summary,
                     mem_get_info)
from .random import manual_seed, manual_seed_all, seed, seed_all, initial_seed  # noqa: F401
from .streams import (Stream, Event, StreamContext, stream, current_stream,  # noqa: F401
                      default_stream, set_stream, synchronize)
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
           "mem_get_info",
           "OutOfMemoryError"]

_tensor.VIEW_MAKERS["cuda"] = _tensors.view_cuda
_tensor._ALLOCATORS["cuda"] = _tensors.alloc_cuda
_registry.register_device_loader("cuda", "nbtorch.cuda._register")


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
