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
__all__ = ["uniform", "normal", "bernoulli", "integers"]


def uniform(out, rng, low=0.0, high=1.0):
    """Samples uniform on [low, high) (``low + (high - low) * u``: ``rng.random()`` at 0, 1)."""
    out[...] = rng.uniform(low, high, out.shape)


def normal(out, rng, mean=0.0, std=1.0):
    """Normal samples N(mean, std**2) (``rng.standard_normal()``'s values at 0, 1)."""
    out[...] = rng.normal(mean, std, out.shape)


def bernoulli(out, rng, p):
    """1 with probability p (a number or an array of out's shape), else 0."""
    out[...] = rng.random(out.shape) < p


def integers(out, rng, low, high):
    """Integers uniform on [low, high)."""
    out[...] = rng.integers(low, high, out.shape)
