"""Switching the CUDA profiler's collection on and off (``torch.cuda.profiler``): with Nsight
Systems run as ``nsys profile --capture-range=cudaProfilerApi``, only the code between
`start` and `stop` (or inside ``with profile():``) is recorded. Nothing to switch on
Numba's CUDA simulator (no-ops there)."""
import contextlib

from . import _runtime
from .errors import CudaError

__all__ = ["start", "stop", "profile", "cudart"]


def _call(name):
    _runtime.lazy_init()
    if _runtime.simulator():
        return
    try:
        getattr(_runtime.cuda_module(), name)()
    except Exception as e:                     # the driver's error, as PyTorch's CudaError
        code = getattr(e, "code", None)
        if code is None:
            raise
        raise CudaError(int(code)) from e


def start():
    """Start the profiler's data collection (cuProfilerStart)."""
    _call("profile_start")


def stop():
    """Stop the profiler's data collection (cuProfilerStop)."""
    _call("profile_stop")


@contextlib.contextmanager
def profile():
    """Collect profiling data for the block only.

    Example:
        >>> with nbtorch.cuda.profiler.profile():
        ...     model(inputs)
    """
    try:
        start()
        yield
    finally:
        stop()


class _Cudart:
    """The few CUDA runtime calls PyTorch programs make through ``torch.cuda.cudart()``
    (profiler switches, memory info, error strings); they return CUDA's codes (0: success)."""

    def cudaProfilerStart(self):
        start()
        return 0

    def cudaProfilerStop(self):
        stop()
        return 0

    def cudaMemGetInfo(self, device):
        from .memory import mem_get_info
        return mem_get_info(device)

    def cudaGetErrorString(self, code):
        from .errors import _MESSAGES
        return _MESSAGES.get(int(code), "unknown error")


_CUDART = _Cudart()


def cudart():
    """``torch.cuda.cudart()``: e.g. ``cudart().cudaProfilerStart()`` around the steps that
    Nsight Systems should record."""
    _runtime.lazy_init()
    return _CUDART
