"""Lazy CUDA initialisation, device selection and the per-thread current stream.

Nothing here imports ``numba.cuda`` at module import: `import nbtorch` must
work (and stay fast) on machines without a GPU. The first CUDA use calls
`lazy_init()`, which installs nbtorch's caching allocator as Numba's external
memory manager (it must happen before Numba creates a context) and raises a
clear error when there is neither a GPU nor the simulator.
"""
import os
import threading

__all__ = ["lazy_init", "is_available", "simulator", "cuda_module", "current_device",
           "set_device", "device_count", "raw_stream", "stream_key", "allocator"]

NO_CUDA = ("CUDA is not available: no NVIDIA GPU and driver were found (numba.cuda."
           "is_available() is False). Use device='cpu', or set NUMBA_ENABLE_CUDASIM=1 "
           "before importing nbtorch to run CUDA code on Numba's (slow) CUDA simulator.")

_LOCK = threading.RLock()
_TLS = threading.local()          # .device (int), .stream (nbtorch.cuda.Stream or None)
_STATE = {"initialized": False, "available": None, "allocators": {}}


def simulator():
    """True when Numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1)."""
    from numba.cuda.core import config
    return bool(config.ENABLE_CUDASIM)


def cuda_module():
    """``numba.cuda`` (imported on first use)."""
    from numba import cuda
    return cuda


def is_available():
    """True if a GPU (or the simulator) can run kernels; never raises."""
    avail = _STATE["available"]
    if avail is None:
        try:
            avail = bool(cuda_module().is_available())
        except Exception:          # no driver, broken install...: simply unavailable
            avail = False
        _STATE["available"] = avail
    return avail


def lazy_init():
    """Initialise CUDA once: install the allocator, check a device exists."""
    if _STATE["initialized"]:
        return
    with _LOCK:
        if _STATE["initialized"]:
            return
        if not simulator() and os.environ.get("NBTORCH_CUDA_ALLOCATOR", "caching") == \
                "caching":
            from ._emm import install
            install()
        if not is_available():
            raise RuntimeError(NO_CUDA)
        if "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS" not in os.environ:
            # Small tensors launch small grids by design; Numba would warn on every one.
            from numba.cuda.core import config
            config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
        _STATE["initialized"] = True


def device_count():
    if not is_available():
        return 0
    return len(cuda_module().gpus)


def _index(device):
    """An int device index from None / int / str / nbtorch.device."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from .._device import to_device
    d = to_device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index if d.index is not None else current_device()


def device_index(device, optional=False):
    """PyTorch's ``_get_device_index`` for CUDA: an int as it is, a cuda device (str,
    nbtorch.device, nbtorch.cuda.device) by its index; None or an index-less 'cuda' is
    the current device when `optional`, else a ValueError, as PyTorch's."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if hasattr(device, "idx") and not isinstance(device, str):      # nbtorch.cuda.device
        return device.idx
    if device is not None:
        from .._device import device as device_type
        d = device if isinstance(device, device_type) else device_type(device)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        if d.index is not None:
            return d.index
    if not optional:
        raise ValueError("Expected a torch.device with a specified index or an integer, "
                         f"but got:{device}")
    return current_device()


def check_index(idx):
    n = device_count()
    if not 0 <= idx < n:
        raise RuntimeError(f"CUDA error: invalid device ordinal (device {idx} requested, "
                           f"{n} device(s) available)")
    return idx


def current_device():
    lazy_init()
    return getattr(_TLS, "device", 0)


def set_device(device):
    lazy_init()
    idx = check_index(_index(device))
    if idx != getattr(_TLS, "device", 0) and not simulator():
        cuda_module().select_device(idx)
    _TLS.device = idx


def raw_stream():
    """The Numba stream kernels launch on now (0: the default stream)."""
    s = getattr(_TLS, "stream", None)
    return 0 if s is None else s._numba


def stream_key():
    """An int naming the current stream (the caching allocator's per-stream key)."""
    s = getattr(_TLS, "stream", None)
    return 0 if s is None else s._key


def set_current_stream(stream):
    """Make `stream` (an nbtorch.cuda.Stream, or None for the default) current; return the old."""
    old = getattr(_TLS, "stream", None)
    _TLS.stream = stream
    return old


def allocator(device_index=None):
    """The caching allocator of a device (created on first use)."""
    idx = current_device() if device_index is None else device_index
    a = _STATE["allocators"].get(idx)
    if a is None:
        with _LOCK:
            a = _STATE["allocators"].get(idx)
            if a is None:
                from ._allocator import CachingAllocator
                if simulator():
                    from ._sim_driver import SimDriver
                    driver = SimDriver()
                else:
                    from ._emm import CudaDriver
                    driver = CudaDriver()
                a = _STATE["allocators"][idx] = CachingAllocator(driver, idx)
    return a
