"""Declares the CUDA device to the registry (imported on the first CUDA dispatch).

`nbtorch._registry.get_kernel(op, 'cuda')` imports this module the first time
a CUDA kernel is asked for. The kernels themselves are listed in one table,
`nbtorch/kernels/cuda/table.py`; each launcher there takes the CPU kernel's
arguments (device arrays instead of NumPy arrays) plus ``stream=``, and is
bound here to the current stream. To add a CUDA kernel: write it and its
launcher in ``kernels/cuda/<family>.py`` (with ``typecheck_signatures()``), add
one line to the table, and drop the op from ``CPU_ONLY`` in
tests/cuda/test_parity.py.
"""
from .._registry import register_device
from . import _runtime


def on_stream(launcher):
    """Wrap a launcher ``f(*args, stream=)`` into a kernel ``f(*args)`` on the current stream."""
    def run(*args):
        return launcher(*args, stream=_runtime.raw_stream())
    run.__name__ = getattr(launcher, "__name__", "kernel")
    run.__qualname__ = "cuda." + getattr(launcher, "__qualname__", run.__name__)
    run.__doc__ = launcher.__doc__
    run.launcher = launcher
    return run


register_device("cuda", "nbtorch.kernels.cuda", wrap=on_stream)
