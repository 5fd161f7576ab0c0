"""NVTX annotations for profilers (``torch.cuda.nvtx``): named ranges and marks that Nsight
Systems shows on the timeline beside the kernels.

Real NVTX when the NVTX library is found: ``libnvToolsExt.so.1`` (CUDA <= 12) or
``libnvtx3interop.so.1`` (CUDA 13), on the loader path or under ``CUDA_HOME``/
``CUDA_PATH``/``/usr/local/cuda*``, called through ctypes. Its return values are
then NVTX's own: without a profiler attached, ``range_push``/``range_pop`` return
-2 (NVTX_NO_PUSH_POP_TRACKING), exactly as in a PyTorch CUDA build.

Without the library they are documented no-ops that still check their arguments
and keep the nesting depth per thread (``range_push`` returns the depth of the range
it opened, ``range_pop`` that of the range it closed, -1 with nothing open), and
they never raise for want of CUDA (PyTorch's CPU build raises RuntimeError: a
profiling annotation should not stop a CPU run). `backend()` says which is in use.

Example:
    >>> with nbtorch.cuda.nvtx.range("step {}", 3):
    ...     loss = model(x).sum()
"""
import contextlib
import ctypes
import glob
import itertools
import os
import threading

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range",
           "backend"]

_LIB_NAMES = ("libnvToolsExt.so.1", "libnvtx3interop.so.1")
_STATE = {"lib": None, "looked": False}
_TLS = threading.local()
_IDS = itertools.count(1)


def _candidates():
    yield from _LIB_NAMES
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    roots += sorted(glob.glob("/usr/local/cuda*"), reverse=True)
    for root in filter(None, roots):
        for sub in ("lib64", "lib"):
            for name in _LIB_NAMES:
                yield os.path.join(root, sub, name)


def _load():
    """The NVTX library through ctypes, or None (looked up once)."""
    if not _STATE["looked"]:
        _STATE["looked"] = True
        for name in _candidates():
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            lib.nvtxRangePushA.argtypes = lib.nvtxMarkA.argtypes = [ctypes.c_char_p]
            lib.nvtxRangeStartA.argtypes = [ctypes.c_char_p]
            lib.nvtxRangePushA.restype = lib.nvtxRangePop.restype = ctypes.c_int
            lib.nvtxRangeStartA.restype = ctypes.c_uint64
            lib.nvtxRangeEnd.argtypes = [ctypes.c_uint64]
            lib.nvtxMarkA.restype = lib.nvtxRangeEnd.restype = None
            _STATE["lib"] = lib
            break
    return _STATE["lib"]


def backend():
    """'nvtx' when calls reach the NVTX library, 'no-op' otherwise."""
    return "nvtx" if _load() is not None else "no-op"


def _message(fn, msg):
    if not isinstance(msg, str):
        raise TypeError(f"{fn}(): incompatible function arguments: msg must be a str, got "
                        f"{type(msg).__name__}")
    return msg.encode("utf-8")


def range_push(msg):
    """Open a nested range named `msg`; returns its zero-based depth."""
    raw = _message("range_push", msg)
    lib = _load()
    if lib is not None:
        return lib.nvtxRangePushA(raw)
    depth = getattr(_TLS, "depth", 0)
    _TLS.depth = depth + 1
    return depth


def range_pop():
    """Close the innermost open range; returns its zero-based depth."""
    lib = _load()
    if lib is not None:
        return lib.nvtxRangePop()
    depth = getattr(_TLS, "depth", 0)
    if depth == 0:
        return -1
    _TLS.depth = depth - 1
    return depth - 1


def range_start(msg):
    """Open a range named `msg` that any thread may close; returns its handle for
    `range_end`."""
    raw = _message("range_start", msg)
    lib = _load()
    return lib.nvtxRangeStartA(raw) if lib is not None else next(_IDS)


def range_end(range_id):
    """Close the range `range_start` returned `range_id` for."""
    if isinstance(range_id, bool) or not isinstance(range_id, int):
        raise TypeError("range_end(): incompatible function arguments: range_id must be an "
                        f"int, got {type(range_id).__name__}")
    lib = _load()
    if lib is not None:
        lib.nvtxRangeEnd(range_id)


def mark(msg):
    """An instantaneous event named `msg`."""
    raw = _message("mark", msg)
    lib = _load()
    if lib is not None:
        lib.nvtxMarkA(raw)


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    """A range around a block or a function (context manager or decorator); extra
    arguments fill `msg` with ``msg.format(*args, **kwargs)``."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
