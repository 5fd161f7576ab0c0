"""Random sampling on the CPU: NumPy's PCG64 streams behind `nbtorch.Generator`.

The registry's sampler kernels ``fn(out, rng, *params)``, twins of the CUDA
Philox launchers in `kernels/cuda/random.py`: `rng` is the generator's
``numpy.random.Generator`` and `out` a NumPy array of any layout. Values are
drawn in C order of out's shape, in float64 (int64 for integers), and cast on
store::

    uniform:    out[...] = rng.uniform(low, high, out.shape)
    normal:     out[...] = rng.normal(mean, std, out.shape)
    bernoulli:  out[...] = rng.random(out.shape) < p        (p a number or an array)
    integers:   out[...] = rng.integers(low, high, out.shape)
"""
import numpy as np

__all__ = ["uniform", "normal", "bernoulli", "integers"]


def uniform(out, rng, low=0.0, high=1.0):
    """Samples uniform on [low, high) (``low + (high - low) * u``: at 0, 1 the values of
    ``rng.random()``, which skips that arithmetic)."""
    if low == 0 and high == 1:
        _draw(out, rng.random)
    else:
        out[...] = rng.uniform(low, high, out.shape)


def normal(out, rng, mean=0.0, std=1.0):
    """Normal samples N(mean, std**2) (at 0, 1 the values of ``rng.standard_normal()``)."""
    if mean == 0 and std == 1:
        _draw(out, rng.standard_normal)
    else:
        out[...] = rng.normal(mean, std, out.shape)


def _draw(out, method):
    """out[...] = method(out.shape), straight into a C-contiguous float64 `out`."""
    if out.dtype == np.float64 and out.flags.c_contiguous:
        method(out=out)
    else:
        out[...] = method(out.shape)


def bernoulli(out, rng, p):
    """1 with probability p (a number or an array of out's shape), else 0."""
    out[...] = rng.random(out.shape) < p


def integers(out, rng, low, high):
    """Integers uniform on [low, high)."""
    out[...] = rng.integers(low, high, out.shape)
