"""`torch.backends.openmp`: whether Numba's OpenMP threading layer (behind the parallel
CPU kernels) can load here."""

__all__ = ["is_available"]


def is_available():
    try:
        from numba.np.ufunc import omppool  # noqa: F401
    except ImportError:
        return False
    return True
