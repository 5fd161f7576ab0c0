"""`nbtorch.device`: a device type ('cpu', 'cuda' or 'meta') and an optional index; the default
device factories use (``set_default_device``, ``with nbtorch.device(...)``).
"""
import threading

__all__ = ["device", "set_default_device", "get_default_device"]

_TYPES = ("cpu", "cuda", "meta")   # meta: shape-only tensors (nbtorch/_meta.py)


class device:
    """Where a tensor's storage lives, e.g. ``device('cuda:0')``."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        elif isinstance(type, str) and ":" in type:
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            if index is not None:
                raise RuntimeError("device string already has an index")
            index = int(idx)
        if type not in _TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}")
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return (isinstance(other, device) and self.type == other.type
                and self.index == other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        """``with nbtorch.device('cuda'):`` makes factories without a device use this one."""
        _DEFAULT.stack.append(_DEFAULT.device)
        _DEFAULT.device = _interned(self)
        return self

    def __exit__(self, *exc):
        _DEFAULT.device = _DEFAULT.stack.pop()
        return False


CPU = device("cpu")
_CACHE = {"cpu": CPU, None: CPU}


def to_device(d):
    """Normalise a device spec (str, int, device, None) to a cached `device`."""
    try:
        return _CACHE[d]
    except (KeyError, TypeError):
        pass
    dev = device(d)
    if dev.type == "cuda" and dev.index is None:
        dev = device("cuda", 0)
    if isinstance(d, (str, int)):
        _CACHE[d] = dev
    return dev


class _DefaultDevice(threading.local):
    """Per thread, as PyTorch's: the default device (None: the CPU) and the devices that
    enclosing ``with device(...)`` blocks will restore."""

    def __init__(self):
        self.device = None
        self.stack = []


_DEFAULT = _DefaultDevice()


def set_default_device(device):
    """Make factories (zeros, rand, tensor, nn layers' parameters...) called without a
    device allocate on `device` in this thread; None restores the CPU.

    Example:
        >>> nbtorch.set_default_device("cuda")
    """
    _DEFAULT.device = None if device is None else _interned(device)


def get_default_device():
    """The device factories use when given none (``device(type='cpu')`` by default)."""
    return _DEFAULT.device or CPU


def factory_device(d):
    """The device a factory given `d` allocates on: `d`, else the default device."""
    if d is None:
        return _DEFAULT.device or CPU
    return _interned(d)


def _interned(d):
    """`to_device(d)`, one shared object per device (hot paths compare by identity)."""
    return to_device(str(d) if d.__class__ is device else d)
