"""nbtorch.kernels: the Numba kernels behind every op.

`cpu/` holds `numba.njit` kernels, `cuda/` holds `numba.cuda.jit` kernels.
Kernels take raw arrays (NumPy arrays, numba device arrays), never Tensors,
and outputs are allocated by the caller. Set ``NUMBA_DISABLE_JIT=1`` to step
through a CPU kernel in a debugger as plain Python.
"""
if __name__ != "nbtorch.kernels":
    # Imported as a top-level `kernels` (from the repository root): Numba's on-disk cache
    # would record the wrong module name and break every later process. Refuse early.
    raise ImportError("import the kernels as `nbtorch.kernels`, not as top-level `kernels`")

# `nbtorch.kernels.inspect(op, device, dtype)` is installed here by `nbtorch._inspect`.

from ._numba_cache import install as _install_cache_lock

_install_cache_lock()        # several processes may compile into one on-disk cache
