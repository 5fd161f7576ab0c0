"""Launch helpers every CUDA kernel family shares: the simulator flag, grid sizes, views.

Kernels in this package are grid-stride loops (``for i in range(cuda.grid(1), n,
cuda.gridsize(1))``), so any grid covers any size; `grid(n)` picks one that fills
the GPU without launching more blocks than there is work. On Numba's CUDA
simulator every simulated thread is a Python thread, so the grid shrinks to a
couple of small blocks (still more than one, so the stride paths run); see
`_simulator` for the simulator's speed and a race it needed fixed.

`strided_view(base, shape, byte_strides)` is the one way a strided device
array is built over existing device memory (tensor views, broadcast operands):
a ``DeviceNDArray`` on a GPU, a NumPy view wrapped as the simulator's array.
"""
import numpy as np
from numba import cuda
from numba.cuda.core import config as _config

__all__ = ["SIMULATOR", "THREADS", "grid", "strided_view", "is_device_array"]

SIMULATOR = bool(_config.ENABLE_CUDASIM)
THREADS = 4 if SIMULATOR else 256        # threads per block
_MAX_BLOCKS = 2 if SIMULATOR else 65535


def grid(n, threads=THREADS):
    """(blocks, threads) for a grid-stride loop over `n` items (n >= 1)."""
    blocks = (n + threads - 1) // threads
    return min(max(blocks, 1), _MAX_BLOCKS), threads


def is_device_array(a):
    """True for numba device arrays (real or simulated), False for host arrays/scalars."""
    if isinstance(a, np.ndarray):
        return False
    check = getattr(cuda, "is_cuda_array", None)       # absent on the simulator
    if check is None:
        return getattr(a, "__cuda_ndarray__", False)    # the simulator's FakeCUDAArray
    return check(a)


if SIMULATOR:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _Fake
    from . import _simulator
    _simulator.install()           # faster thread switching, race-free shared arrays

    def strided_view(base, shape, byte_strides, byte_offset=0):
        """A simulated device array over `base`'s memory with the given layout."""
        host = base._ary
        flat = np.lib.stride_tricks.as_strided(host, (host.nbytes // host.itemsize,),
                                               (host.itemsize,))
        start = flat[byte_offset // host.itemsize:]
        return _Fake(np.lib.stride_tricks.as_strided(start, tuple(shape),
                                                     tuple(byte_strides)))
else:
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as _DeviceNDArray

    def strided_view(base, shape, byte_strides, byte_offset=0):
        """A DeviceNDArray over `base`'s memory (no copy) with the given layout."""
        data = base.gpu_data if not byte_offset else base.gpu_data.view(byte_offset)
        return _DeviceNDArray(tuple(shape), tuple(byte_strides), base.dtype,
                              gpu_data=data)
