"""`torch.backends.cudnn`: nbtorch never calls cuDNN (its convolutions are Numba kernels).

`benchmark`, `deterministic`, `enabled` and `allow_tf32` are settable as programs set
them and change nothing; `is_available()` is False.
"""
enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True

__all__ = ["enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32",
           "is_available", "version", "is_acceptable", "flags"]


def is_available():
    """False: nbtorch does not use cuDNN."""
    return False


def version():
    return None


def is_acceptable(tensor):
    return False


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Set the flags for a ``with`` block (restored after), as PyTorch's."""
    import sys
    from . import _flags
    return _flags(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                  benchmark_limit=benchmark_limit, deterministic=deterministic,
                  allow_tf32=allow_tf32)
