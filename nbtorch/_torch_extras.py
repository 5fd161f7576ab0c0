"""The smaller torch-level names: exception classes, device-generic Stream/Event, the
layout object, thread and warning settings, control flow (`cond`, `while_loop`), legacy
entry points (`set_default_tensor_type`, `vander`, the removed `solve`/`matrix_rank`), and
the Tensor methods PyTorch has for storages and autograd metadata.
"""
import numpy as np

from . import _dtype
from ._tensor import Tensor

__all__ = ["AcceleratorError", "OutOfMemoryError", "FatalError", "Stream", "Event", "layout",
           "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
           "jagged", "get_device", "get_device_module", "get_num_interop_threads",
           "set_num_interop_threads", "init_num_threads", "is_warn_always_enabled",
           "set_warn_always", "set_default_tensor_type", "set_flush_denormal",
           "is_distributed", "is_inference", "cond", "while_loop", "vander", "solve",
           "matrix_rank", "to_dlpack", "from_file", "thread_safe_generator",
           "set_anomaly_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "slice_inverse"]


class AcceleratorError(RuntimeError):
    """An error reported by an accelerator (device) runtime."""


from .cuda._allocator import OutOfMemoryError  # noqa: E402  (torch.OutOfMemoryError)
from .autograd.anomaly_mode import (set_anomaly_enabled, is_anomaly_enabled,  # noqa: E402
                                    is_anomaly_check_nan_enabled)


class FatalError(Exception):
    """An unrecoverable error of the runtime."""


# ---- device-generic streams and events -----------------------------------------------

class Stream:
    """``torch.Stream``: an in-order queue on a device. On the CPU work runs eagerly, so
    a stream is always idle; on CUDA it wraps `nbtorch.cuda.Stream`."""

    def __init__(self, device=None, *, priority=0):
        from ._device import device as _dev
        self.device = _dev(device) if device is not None else _dev("cpu")
        self._cuda = None
        if self.device.type == "cuda":
            from .cuda import Stream as CudaStream
            self._cuda = CudaStream(self.device, priority)

    @property
    def device_type(self):
        return self.device.type

    @property
    def device_index(self):
        return self.device.index

    def query(self):
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self):
        if self._cuda is not None:
            self._cuda.synchronize()

    def wait_event(self, event):
        event.synchronize()

    def wait_stream(self, stream):
        stream.synchronize()

    def record_event(self, event=None):
        event = event or Event(self.device)
        event.record(self)
        return event

    def __repr__(self):
        return f"torch.Stream(device={self.device})"


class Event:
    """``torch.Event``: a marker in a stream. On the CPU it is complete once recorded and
    times with the host clock; on CUDA it wraps `nbtorch.cuda.Event`."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False,
                 interprocess=False):
        from ._device import device as _dev
        self.device = _dev(device) if device is not None else _dev("cpu")
        self._cuda = None
        self._time = None
        if self.device.type == "cuda":
            from .cuda import Event as CudaEvent
            self._cuda = CudaEvent(enable_timing, blocking, interprocess)

    def record(self, stream=None):
        if self._cuda is not None:
            self._cuda.record(getattr(stream, "_cuda", stream))
        else:
            import time
            self._time = time.perf_counter()

    def query(self):
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self):
        if self._cuda is not None:
            self._cuda.synchronize()

    def wait(self, stream=None):
        self.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event`."""
        if self._cuda is not None:
            return self._cuda.elapsed_time(end_event._cuda)
        return (end_event._time - self._time) * 1000.0


# ---- layout ---------------------------------------------------------------------------

class layout:
    """A tensor's memory layout: `strided` (dense), or a sparse one (`nbtorch.sparse`)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"

    def __eq__(self, other):               # also equal to the string Tensor.layout gave
        return other is self or other == repr(self) if isinstance(other, str) else \
            other is self

    def __hash__(self):
        return hash(repr(self))

    def __reduce__(self):               # copies and pickles stay the one `strided`
        return self.name


strided = layout("strided")
# sparse tensors (nbtorch/sparse/) have sparse_coo or sparse_csr; csc/bsr/bsc are named only
sparse_coo, sparse_csr = layout("sparse_coo"), layout("sparse_csr")
sparse_csc, sparse_bsr = layout("sparse_csc"), layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")           # nested tensors of one ragged dim (nbtorch/nested/)


# ---- settings -------------------------------------------------------------------------

_SETTINGS = {"interop_threads": 1, "warn_always": False}


def get_device(input):
    """-1 for a CPU tensor, else its device index."""
    return input.get_device()


def get_device_module(device=None):
    """The module of a device type (`nbtorch.cuda`, `nbtorch.cpu`); with no device the
    current accelerator's (cuda when available, else cpu)."""
    import importlib
    from ._device import device as _dev
    if device is None:
        from . import cuda
        kind = "cuda" if cuda.is_available() else "cpu"
    else:
        kind = device if isinstance(device, str) and ":" not in device else _dev(device).type
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           "as 'torch.{kind}'.")
    return importlib.import_module("nbtorch." + kind)


def get_num_interop_threads():
    """Threads for inter-op parallelism: nbtorch runs ops one after another on the calling
    thread (Numba's pool is the intra-op one, `get_num_threads`), so this is a setting
    kept for PyTorch's API."""
    return _SETTINGS["interop_threads"]


def set_num_interop_threads(num):
    if not isinstance(num, int) or num <= 0:
        raise RuntimeError("Expected a positive number of threads")
    _SETTINGS["interop_threads"] = num


def init_num_threads():
    """Initialise the calling thread's intra-op thread count (Numba's pool is global:
    nothing to do)."""


def is_warn_always_enabled():
    return _SETTINGS["warn_always"]


def set_warn_always(b):
    """Ask warnings that PyTorch gives once to be given every time (a flag ops may read)."""
    _SETTINGS["warn_always"] = bool(b)


def set_default_tensor_type(t):
    """Legacy: the default float dtype from a tensor type (``torch.DoubleTensor`` or
    ``'torch.DoubleTensor'``)."""
    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    name = name.rsplit(".", 1)[-1]
    dtypes = {"FloatTensor": _dtype.float32, "DoubleTensor": _dtype.float64,
              "HalfTensor": _dtype.float16, "BFloat16Tensor": _dtype.bfloat16}
    if name not in dtypes:
        raise TypeError(f"invalid type: '{t}'" if isinstance(t, str) else
                        "only floating-point types are supported as the default type")
    _dtype.set_default_dtype(dtypes[name])


def set_flush_denormal(mode):
    """False: nbtorch cannot change the CPU's denormal handling (PyTorch's answer where
    flushing is unsupported)."""
    return False


def is_distributed(input):
    return False


def is_inference(input):
    return input.is_inference()


# ---- control flow ---------------------------------------------------------------------

def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if `pred` else ``false_fn(*operands)``, eagerly (`pred` a
    bool or a one-element tensor)."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        pred = bool(pred.item())
    return (true_fn if pred else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)``; return `carried`."""
    carried = tuple(carried_inputs)
    while bool(cond_fn(*carried)):
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return carried


# ---- legacy and interchange -----------------------------------------------------------

def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D `x`: columns x^(N-1) ... x^0 (or increasing); integer
    inputs stay int64, as PyTorch."""
    from .ops.creation import arange
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    d = x.dtype if x.dtype.is_floating_point or x.dtype.is_complex else _dtype.int64
    powers = arange(n, device=x.device)
    if not increasing:
        powers = powers.flip(0)
    if n == 0:
        from .ops.creation import empty
        return empty((x.shape[0], 0), dtype=d, device=x.device)
    return x.to(d).unsqueeze(1) ** powers.to(d if d.is_floating_point else _dtype.int64)


def solve(input, A, *, out=None):
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.solve` is "
        "deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
        "reversed and does not return the LU factorization.\n\nTo get the LU factorization "
        "see `torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\n"
        "X = torch.solve(B, A).solution should be replaced with:\nX = torch.linalg.solve(A, B)")


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed.\nPlease use the "
        "`torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed "
        "in `torch.linalg.matrix_rank()` to 'hermitian'.")


def to_dlpack(tensor):
    """A DLPack capsule of `tensor` (shares memory): ``tensor.__dlpack__()``."""
    return tensor.__dlpack__()


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False):
    """A 1-D CPU tensor of `size` elements read from `filename`; with `shared` the file is
    memory-mapped and writes reach it."""
    from .ops.creation import from_numpy
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if shared:
        arr = np.memmap(filename, dtype=d.np, mode="r+", shape=(size,))
    else:
        arr = np.fromfile(filename, dtype=d.np, count=size)
        if arr.size < size:
            raise RuntimeError(f"unexpected EOF, expected {size * d.itemsize} more bytes. "
                               "The file might be corrupted.")
    t = from_numpy(arr)
    return t if device is None else t.to(device)


def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """The inverse of ``src.slice(dim, start, end, step)`` for a slice `input`: `input`'s
    memory seen with `src`'s sizes and strides, the offset moved back by `start` along
    `dim` (functionalization's view replay)."""
    d = dim + src.dim() if dim < 0 else dim
    size = src.shape[d]
    s = 0 if start is None else (start + size if start < 0 else start)
    s = min(max(s, 0), size)
    return input.as_strided(tuple(src.shape), src.stride(),
                            input.storage_offset() - s * src.stride(d))


def thread_safe_generator():
    """The DataLoader thread worker's generator; None elsewhere (nbtorch's workers are
    processes, so always None: the default generator serves)."""
    return None


from . import _tensor_methods_extra  # noqa: E402,F401  (Tensor.set_, storage(), grad_dtype...)
