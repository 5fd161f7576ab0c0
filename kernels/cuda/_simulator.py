"""Two fixes to Numba's CUDA simulator, installed when it is on (`_launch` imports this).

1. Speed. The simulator starts one Python thread per GPU thread and busy-polls
   them until they finish; at Python's default 5 ms switch interval every
   hand-off of the GIL waits that long, so a block cost ~5 ms per thread
   whatever its work. Blocks now run with a 50 us interval (restored after),
   several times faster (figures in the commit that made the change).
2. A race that the faster switching exposed. `cuda.shared.array` looks its
   array up by the calling line and creates it on a miss, unlocked: two
   threads of a block that both miss get two arrays, and a block reduction
   then reads the other thread's garbage (seen: an int32 amax giving 32667).
   The lookup-or-create now holds a lock.
"""
import functools
import sys
import threading
import traceback

import numpy as np
from numba.core import types
from numba.np import numpy_support
from numba.cuda.simulator.kernel import BlockManager
from numba.cuda.simulator.kernelapi import FakeCUDAShared

__all__ = ["install"]

SWITCH_INTERVAL_S = 5e-5
_SHARED_LOCK = threading.Lock()


def _switch_often(run):
    @functools.wraps(run)
    def run_switching_often(self, *args):
        previous = sys.getswitchinterval()
        sys.setswitchinterval(min(previous, SWITCH_INTERVAL_S))
        try:
            return run(self, *args)
        finally:
            sys.setswitchinterval(previous)
    return run_switching_often


def _shared_array(self, shape, dtype, alignment=None):
    """FakeCUDAShared.array with its lookup-or-create under a lock (same keys: the
    caller's file and line)."""
    if alignment is not None:
        raise RuntimeError("Array alignment is not supported in cudasim")
    if isinstance(dtype, types.Type):
        dtype = numpy_support.as_dtype(dtype)
    if shape == 0:                       # dynamic shared memory: one buffer for all
        count = self._dynshared_size // dtype.itemsize
        return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
    caller = traceback.extract_stack(sys._getframe())[-2][0:2]
    with _SHARED_LOCK:
        res = self._allocations.get(caller)
        if res is None:
            res = self._allocations[caller] = np.empty(shape, dtype)
    return res


def install():
    """Patch the simulator once (idempotent)."""
    if getattr(BlockManager.run, "_nbtorch_patched", False):
        return
    BlockManager.run = _switch_often(BlockManager.run)
    BlockManager.run._nbtorch_patched = True
    FakeCUDAShared.array = _shared_array
