"""CUDA streams and events (``torch.cuda.Stream``, ``torch.cuda.Event``, ``torch.cuda.stream``).

Every nbtorch CUDA kernel launches on the *current stream* of the calling
thread: the default stream unless a ``with nbtorch.cuda.stream(s):`` block
selects another. On the simulator everything runs synchronously; events
still measure (host) time so `elapsed_time` stays meaningful.
"""
import time

from . import _runtime

__all__ = ["Stream", "ExternalStream", "get_stream_from_external", "Event", "StreamContext",
           "stream", "current_stream", "default_stream", "set_stream", "synchronize"]


class Stream:
    """A CUDA stream: kernels queued on it run in order, concurrently with other streams.

    Example:
        >>> s = nbtorch.cuda.Stream()
        >>> with nbtorch.cuda.stream(s):
        ...     y = x * 2          # runs on s
        >>> s.synchronize()
    """

    def __init__(self, device=None, priority=0, _numba=None):
        _runtime.lazy_init()
        cuda = _runtime.cuda_module()
        self.device_index = _runtime.current_device() if device is None else \
            _runtime._index(device)
        self.priority = priority
        self._numba = cuda.stream() if _numba is None else _numba
        self._key = 0 if isinstance(self._numba, int) else _handle(self._numba)

    @property
    def device(self):
        from .._device import device
        return device("cuda", self.device_index)

    @property
    def cuda_stream(self):
        """The raw stream handle as an int (0 for the default stream)."""
        return self._key

    def synchronize(self):
        """Wait until every kernel queued on this stream has finished."""
        if isinstance(self._numba, int):
            _runtime.cuda_module().synchronize()
        else:
            self._numba.synchronize()

    def query(self):
        """True if all work queued on this stream has completed."""
        e = Event()
        e.record(self)
        return e.query()

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        """Make future work on this stream wait for `event`."""
        event.wait(self)

    def wait_stream(self, stream):
        """Make future work on this stream wait for all work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def __eq__(self, other):
        return isinstance(other, Stream) and self._key == other._key and \
            self.device_index == other.device_index

    def __hash__(self):
        return hash((self._key, self.device_index))

    def __repr__(self):
        return (f"<nbtorch.cuda.Stream device=cuda:{self.device_index} "
                f"cuda_stream={self._key:#x}>")


class ExternalStream(Stream):
    """A stream created elsewhere (CuPy, a C library...), given as its raw ``cudaStream_t``
    int; nbtorch kernels launched under ``with nbtorch.cuda.stream(ext):`` queue on it.
    The caller keeps the stream alive. On the simulator any pointer is accepted (all work
    runs synchronously there).

    Example:
        >>> ext = nbtorch.cuda.ExternalStream(cupy_stream.ptr)
    """

    def __init__(self, stream_ptr, device=None, **kwargs):
        if isinstance(stream_ptr, bool) or not isinstance(stream_ptr, int):
            raise TypeError(f"ExternalStream: stream_ptr must be an int (a cudaStream_t), "
                            f"got {type(stream_ptr).__name__}")
        _runtime.lazy_init()
        cuda = _runtime.cuda_module()
        idx = _runtime.device_index(device, optional=True)
        if stream_ptr == 0:
            numba_stream = 0
        elif _runtime.simulator():
            numba_stream = cuda.stream()
        else:
            with cuda.gpus[_runtime.check_index(idx)]:
                numba_stream = cuda.external_stream(stream_ptr)
        super().__init__(idx, _numba=numba_stream)
        self._key = stream_ptr


def get_stream_from_external(data_ptr, device=None):
    """An `ExternalStream` over the raw stream `data_ptr` (kept alive by the caller)."""
    return ExternalStream(data_ptr, device)


def _handle(numba_stream):
    """An int identifying a Numba stream (its CUstream handle; id() on the simulator)."""
    h = getattr(numba_stream, "handle", None)
    if h is None:
        return id(numba_stream)
    return int(getattr(h, "value", h) or 0)


def default_stream(device=None):
    """The device's default (legacy, null) stream."""
    return Stream(device, _numba=0)


def current_stream(device=None):
    """The stream this thread launches kernels on now."""
    _runtime.lazy_init()
    s = _runtime._TLS.__dict__.get("stream")
    return default_stream(device) if s is None else s


def set_stream(stream):
    """Make `stream` current for this thread (prefer the `stream(...)` context manager)."""
    _runtime.lazy_init()
    default = stream is None or isinstance(stream._numba, int)
    _runtime.set_current_stream(None if default else stream)


class StreamContext:
    """Context manager selecting a stream (``torch.cuda.StreamContext``); None is a no-op."""

    def __init__(self, stream):
        self.stream = stream
        self._old = None

    def __enter__(self):
        if self.stream is not None:
            _runtime.lazy_init()
            self._old = _runtime.set_current_stream(
                None if isinstance(self.stream._numba, int) else self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            _runtime.set_current_stream(self._old)
        return False


def stream(stream):
    """``with nbtorch.cuda.stream(s):`` runs the block's kernels on `s`."""
    return StreamContext(stream)


def synchronize(device=None):
    """Wait for all kernels on all streams of the device to finish."""
    _runtime.lazy_init()
    _runtime.cuda_module().synchronize()


class Event:
    """A marker in a stream's work, for synchronisation and timing.

    Example:
        >>> start, end = Event(enable_timing=True), Event(enable_timing=True)
        >>> start.record(); y = x * 2; end.record(); end.synchronize()
        >>> ms = start.elapsed_time(end)
    """

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        _runtime.lazy_init()
        self.enable_timing = enable_timing
        self._recorded = False
        self._host_time = None
        cuda = _runtime.cuda_module()
        self._event = cuda.event() if _runtime.simulator() else cuda.event(timing=enable_timing)

    def record(self, stream=None):
        """Record the event on `stream` (default: the current stream)."""
        s = current_stream() if stream is None else stream
        self._event.record(s._numba)
        self._host_time = time.perf_counter()
        self._recorded = True

    def wait(self, stream=None):
        """Make future work on `stream` (default: current) wait for this event."""
        s = current_stream() if stream is None else stream
        self._event.wait(s._numba)

    def query(self):
        """True if the work captured by the last `record` has completed."""
        if not self._recorded or _runtime.simulator():
            return True
        return bool(self._event.query())

    def synchronize(self):
        """Wait for the work captured by the last `record` to complete."""
        if self._recorded:
            self._event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event` (both recorded and completed)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if _runtime.simulator():
            return (end_event._host_time - self._host_time) * 1000.0
        end_event.synchronize()
        from numba import cuda
        return cuda.event_elapsed_time(self._event, end_event._event)

    def __repr__(self):
        return f"<nbtorch.cuda.Event recorded={self._recorded}>"
