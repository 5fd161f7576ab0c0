"""Registers every CUDA kernel with the device registry (imported on first CUDA dispatch).

`nbtorch._registry.get_kernel(op, 'cuda')` imports this module the first time
a CUDA kernel is asked for. Each family registers its kernels in one place
below; a kernel registered here is called exactly like its CPU twin (same
arguments, device arrays instead of NumPy arrays) and launches on the current
stream.

To add a family (reductions, matmul, ...): write ``kernels/cuda/<family>.py``
(``numba.cuda.jit`` kernels + Python launchers taking ``stream=``), then add a
``_register_<family>()`` function here, called at the bottom, that wraps each
launcher with ``_on_stream`` and registers it under the CPU op's name. The
parity test (tests/cuda/test_parity.py) then drops the op from its
CPU-only list.
"""
from .._registry import register_kernel
from . import _runtime


def _on_stream(launcher):
    """Wrap a launcher ``f(*args, stream=)`` into a kernel ``f(*args)`` on the current stream."""
    def run(*args):
        return launcher(*args, stream=_runtime.raw_stream())
    run.__name__ = getattr(launcher, "__name__", "kernel")
    run.__qualname__ = "cuda." + getattr(launcher, "__qualname__", run.__name__)
    run.__doc__ = launcher.__doc__
    return run


def _register_pointwise():
    """The elementwise table (`kernels/elementwise.py`, which the CPU registers too): each
    op's scalar body in generated grid-stride kernels."""
    from nbtorch.kernels.cuda import pointwise
    from nbtorch.kernels.elementwise import OPS
    for op in OPS:
        register_kernel(op, "cuda", _on_stream(pointwise.kernel(op)))


def _register_copy():
    """copy_ / fill_ take Tensors (like the CPU kernels) and run on their device arrays."""
    from nbtorch.kernels.cuda import copy as k

    def copy_(dst, src):
        k.copy(dst._array, src._array, stream=_runtime.raw_stream())

    def fill_(dst, value):
        k.fill(dst._array, dst.dtype.np.type(value), stream=_runtime.raw_stream())

    register_kernel("copy_", "cuda", copy_)
    register_kernel("fill_", "cuda", fill_)


def _register_creation():
    from nbtorch.kernels.cuda import creation as k

    def typed(out, *values):
        kind = float if out.dtype.kind == "f" else int
        return tuple(kind(v) for v in values)

    def arange(out, start, step):
        k.arange(out, *typed(out, start, step), stream=_runtime.raw_stream())

    def linspace(out, start, end, step):
        k.linspace(out, float(start), float(end), float(step), stream=_runtime.raw_stream())

    register_kernel("arange", "cuda", arange)
    register_kernel("linspace", "cuda", linspace)


def _register_random():
    """Philox samplers, twins of the CPU's NumPy ones: ``fn(out, rng, *params)``."""
    from nbtorch.kernels.cuda import random as k
    register_kernel("uniform_", "cuda", _on_stream(k.sample_uniform))
    register_kernel("normal_", "cuda", _on_stream(k.sample_normal))
    register_kernel("bernoulli_", "cuda", _on_stream(k.sample_bernoulli))
    register_kernel("random_", "cuda", _on_stream(k.sample_integers))


_register_pointwise()
_register_copy()
_register_creation()
_register_random()
from . import _register_families  # noqa: E402,F401  (reductions, matmul, conv, ...)
