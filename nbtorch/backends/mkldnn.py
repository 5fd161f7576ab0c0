"""`torch.backends.mkldnn`: nbtorch does not use oneDNN; `is_available()` is False."""
enabled = True
deterministic = False

__all__ = ["enabled", "deterministic", "is_available", "flags"]


def is_available():
    return False


def flags(enabled=False, deterministic=False):
    import sys
    from . import _flags
    return _flags(sys.modules[__name__], enabled=enabled, deterministic=deterministic)
