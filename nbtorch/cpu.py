"""``torch.cpu``: the CPU as a device module, with torch.cuda's shape, for device-generic
code. Work on the CPU runs eagerly on the calling thread, so streams are always idle and
synchronisation has nothing to wait for.
"""
from ._torch_extras import Event, Stream

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "amp",
           "current_stream", "stream", "StreamContext", "Stream", "Event"]

_DEFAULT = Stream("cpu")


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def set_device(device):
    """Nothing to choose: there is one CPU device."""


def synchronize(device=None):
    """Nothing to wait for (CPU work is eager)."""


def current_stream(device=None):
    return _DEFAULT


class StreamContext:
    """``with torch.cpu.stream(s):``: a no-op context on the CPU."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)


# torch.cpu.amp: the deprecated spellings of nbtorch.amp (also importable by that name).
from .amp import _cpu_aliases as amp  # noqa: E402
import sys as _sys  # noqa: E402
_sys.modules[__name__ + ".amp"] = amp
