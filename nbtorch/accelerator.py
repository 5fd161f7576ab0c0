"""`torch.accelerator`: the device-generic face of the current accelerator, which for
nbtorch is CUDA when a GPU (or the simulator) is there, and nothing otherwise.

Example:
    >>> device = (nbtorch.accelerator.current_accelerator().type
    ...           if nbtorch.accelerator.is_available() else "cpu")
"""
from . import cuda as _cuda
from ._device import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "device_index",
           "current_stream", "set_stream", "synchronize", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
           "reset_peak_memory_stats"]

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """``device('cuda')`` when CUDA is available, else None (or a RuntimeError with
    `check_available`)."""
    if is_available():
        return _device("cuda")
    if check_available:
        raise RuntimeError(_NONE)
    return None


def device_count():
    return _cuda.device_count() if is_available() else 0


def _need():
    if not is_available():
        raise RuntimeError(_NONE)


def current_device_index():
    _need()
    return _cuda.current_device()


def set_device_index(device):
    _need()
    _cuda.set_device(device)


current_device_idx = current_device_index
set_device_idx = set_device_index


class device_index:
    """``with device_index(i):`` makes accelerator device `i` current for the block."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        if self.device is not None:
            _need()
            self._ctx = _cuda.device(self.device)
            self._ctx.__enter__()

    def __exit__(self, *exc):
        if self.device is not None:
            self._ctx.__exit__(*exc)
        return False


def current_stream(device=None):
    _need()
    return _cuda.current_stream(device)


def set_stream(stream):
    _need()
    _cuda.set_stream(stream)


def synchronize(device=None):
    _need()
    _cuda.synchronize(device)


def empty_cache():
    if is_available():
        _cuda.empty_cache()


def memory_allocated(device=None):
    _need()
    return _cuda.memory_allocated(device)


def max_memory_allocated(device=None):
    _need()
    return _cuda.max_memory_allocated(device)


def memory_reserved(device=None):
    _need()
    return _cuda.memory_reserved(device)


def max_memory_reserved(device=None):
    _need()
    return _cuda.max_memory_reserved(device)


def memory_stats(device=None):
    _need()
    return _cuda.memory_stats(device)


def reset_peak_memory_stats(device=None):
    _need()
    _cuda.reset_peak_memory_stats(device)
