"""nbtorch.kernels: the Numba kernels behind every op.

`cpu/` holds `numba.njit` kernels, `cuda/` holds `numba.cuda.jit` kernels, each
with the Python launchers beside them and one `table.py` naming every op's
launcher (read by `nbtorch._registry`). Kernels take raw arrays (NumPy arrays,
numba device arrays) and Python numbers, never Tensors, and outputs are
allocated by the caller. Set ``NUMBA_DISABLE_JIT=1`` to step through a CPU
kernel in a debugger as plain Python.

Serial and parallel variants of a loop are two module-level functions sharing
a row or element body: one function compiled twice, with and without
``parallel=True``, would collide in Numba's disk cache, whose index key holds
the signature and bytecode but not the compile flags.
"""
if __name__ != "nbtorch.kernels":
    # Imported as a top-level `kernels` (from the repository root): Numba's on-disk cache
    # would record the wrong module name and break every later process. Refuse early.
    raise ImportError("import the kernels as `nbtorch.kernels`, not as top-level `kernels`")

# `nbtorch.kernels.inspect(op, device, dtype)` is installed here by `nbtorch._inspect`.

from ._numba_cache import install as _install_cache_lock

_install_cache_lock()        # several processes may compile into one on-disk cache
