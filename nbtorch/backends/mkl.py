"""`torch.backends.mkl`: nbtorch's kernels do not call MKL; `is_available()` is False."""

__all__ = ["is_available"]


def is_available():
    return False
