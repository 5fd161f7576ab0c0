"""CPU kernels (numba.njit). Imported lazily, one family module at a time."""
