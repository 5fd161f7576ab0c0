"""nbtorch.kernels: the Numba kernels behind every op.

`cpu/` holds `numba.njit` kernels, `cuda/` holds `numba.cuda.jit` kernels.
Kernels take raw arrays (NumPy arrays, numba device arrays), never Tensors,
and outputs are allocated by the caller. Set ``NUMBA_DISABLE_JIT=1`` to step
through a CPU kernel in a debugger as plain Python.
"""
from .inspect import inspect  # noqa: F401
