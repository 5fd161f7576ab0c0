"""nbtorch's caching allocator as Numba's External Memory Manager (EMM) plugin.

`install()` runs before Numba creates a CUDA context (from `_runtime.lazy_init`),
so every device allocation — nbtorch tensors and Numba's own temporaries —
goes through `CachingAllocator`: ``memalloc`` takes a cached block of the
current stream when one fits, and the finalizer Numba calls when the device
array dies puts the block back in the cache instead of calling ``cuMemFree``.
Needs a real GPU (the simulator has no EMM); tests are marked ``gpu``.
"""
from numba import cuda
from numba.cuda.cudadrv import driver as _drv

from ._allocator import DriverOOM
from . import _runtime

__all__ = ["install", "CudaDriver", "CachingMemoryManager"]


class CudaDriver:
    """The CUDA driver calls the allocator needs."""

    def alloc(self, nbytes):
        try:
            return int(_drv.driver.cuMemAlloc(nbytes))
        except _drv.CudaAPIError as e:
            if e.code == _drv.binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
                raise DriverOOM(nbytes) from None
            raise

    def free(self, ptr):
        _drv.driver.cuMemFree(_drv.binding.CUdeviceptr(ptr))

    def synchronize(self):
        cuda.synchronize()


class CachingMemoryManager(_drv.GetIpcHandleMixin, _drv.HostOnlyCUDAMemoryManager):
    """EMM plugin: device allocations from nbtorch's per-device caching allocator."""

    def initialize(self):
        self._alloc = _runtime.allocator(self.context.device.id)

    def memalloc(self, size):
        alloc = self._alloc
        ptr = alloc.malloc(size, _runtime.stream_key())
        return _drv.MemoryPointer(self.context, _drv.binding.CUdeviceptr(ptr), size,
                                  finalizer=_freer(alloc, ptr))

    def get_memory_info(self):
        free, total = _drv.driver.cuMemGetInfo()
        return _drv.MemoryInfo(free=free, total=total)

    def reset(self):
        super().reset()
        self._alloc.empty_cache()

    @property
    def interface_version(self):
        return 1


def _freer(alloc, ptr):
    def free():
        alloc.free(ptr)
    return free


_INSTALLED = []


def install():
    """Make `CachingMemoryManager` Numba's memory manager (before any context exists)."""
    if not _INSTALLED:
        cuda.set_memory_manager(CachingMemoryManager)
        _INSTALLED.append(True)
