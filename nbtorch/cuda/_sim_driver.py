"""The caching allocator's driver on Numba's CUDA simulator: device memory is NumPy buffers.

The simulator does not use Numba's external memory manager, so simulated CUDA
tensors get their storage here, through the same `CachingAllocator` the GPU
uses: the cache, the statistics and the out-of-memory path all run in the
simulator test suite. `capacity` (bytes, optional) makes OOM testable.
"""
import itertools
import weakref

import numpy as np

from ._allocator import DriverOOM

__all__ = ["SimDriver", "device_array"]


class SimDriver:
    """alloc/free/synchronize over NumPy byte buffers (pointers are small ints)."""

    def __init__(self, capacity=None):
        self.capacity = capacity
        self.buffers = {}
        self.used = 0
        self._ids = itertools.count(1 << 20, 1 << 12)

    def alloc(self, nbytes):
        if self.capacity is not None and self.used + nbytes > self.capacity:
            raise DriverOOM(nbytes)
        ptr = next(self._ids)
        self.buffers[ptr] = np.empty(nbytes, np.uint8)
        self.used += nbytes
        return ptr

    def free(self, ptr):
        self.used -= self.buffers.pop(ptr).nbytes

    def synchronize(self):
        pass


def device_array(allocator, n, np_dtype, stream_key=0):
    """A simulated 1-D device array of `n` elements whose block returns to `allocator`."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    nbytes = n * np.dtype(np_dtype).itemsize
    ptr = allocator.malloc(nbytes, stream_key)
    host = allocator.driver.buffers[ptr][:nbytes].view(np_dtype)
    weakref.finalize(host, allocator.free, ptr)
    return FakeCUDAArray(host)
