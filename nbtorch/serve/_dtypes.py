"""NumPy dtypes of nbtorch dtypes (for input checks)."""
import numpy as np


def np_of(dtype):
    """The NumPy dtype of an nbtorch dtype."""
    return np.dtype(dtype.np)
