"""Random sampling on the CPU from NumPy's PCG64 streams: nbtorch's first generator,
kept selectable (``nbtorch.random.use_generator("pcg64")``) because it is faster
(NumPy's ziggurat normals) where PyTorch's exact numbers do not matter.

Twins of the MT19937 launchers of `kernels/cpu/random.py`, which call these when a
generator's engine is a ``numpy.random.Generator`` (`rng`). Values are drawn in C
order of out's shape, in float64 (int64 for integers), and cast on store::

    uniform:    out[...] = rng.uniform(low, high, out.shape)
    normal:     out[...] = rng.normal(mean, std, out.shape)
    bernoulli:  out[...] = rng.random(out.shape) < p        (p a number or an array)
    integers:   out[...] = rng.integers(low, high, out.shape)
    exponential, geometric, log_normal, cauchy: NumPy's samplers of the same names
    multinomial: rng.choice per row
"""
import numpy as np

__all__ = ["uniform", "normal", "bernoulli", "integers", "multinomial", "exponential",
           "geometric", "log_normal", "cauchy"]


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
    """1 with probability p (a number or an array broadcastable to out), else 0."""
    out[...] = rng.random(out.shape) < p


def integers(out, rng, low, high):
    """Integers uniform on [low, high)."""
    out[...] = rng.integers(low, high, out.shape)


def multinomial(out, rng, probs, replacement):
    """Per row of (rows, categories) `probs`, out.shape[1] category indices."""
    for r, row in enumerate(np.asarray(probs, np.float64)):
        out[r] = rng.choice(row.size, size=out.shape[1], replace=replacement, p=row / row.sum())


def exponential(out, rng, lambd=1.0):
    out[...] = rng.exponential(1 / lambd, out.shape)


def geometric(out, rng, p):
    out[...] = rng.geometric(p, out.shape)


def log_normal(out, rng, mean=1.0, std=2.0):
    out[...] = rng.lognormal(mean, std, out.shape)


def cauchy(out, rng, median=0.0, sigma=1.0):
    out[...] = median + sigma * rng.standard_cauchy(out.shape)
