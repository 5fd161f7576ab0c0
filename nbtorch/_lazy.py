"""Kernel modules imported on first use, then found by one dict lookup.

Kernel modules load lazily (so `import nbtorch` stays fast and compiles
nothing), but an `import` statement inside a launcher costs about 0.6 us per
call, which small tensors feel; `kernel_module` costs a tenth of that.
"""
import importlib
import sys

__all__ = ["kernel_module"]


def kernel_module(name):
    """The module `nbtorch.kernels.<name>` (e.g. 'cpu.copy'), imported if needed."""
    full = "nbtorch.kernels." + name
    mod = sys.modules.get(full)
    return mod if mod is not None else importlib.import_module(full)
