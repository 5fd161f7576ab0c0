"""Random numbers: `Generator`, `manual_seed`, and the sampling ops.

Streams come from NumPy's PCG64 bit generator, seeded like PyTorch's API
(`manual_seed`, `Generator().manual_seed(s)`, `get_state`/`set_state`), so a
seed reproduces a run. Samples are drawn on the host and copied to the
tensor's device. (A counter-based Numba kernel shared with CUDA would make
CPU and GPU streams identical; that is future work.)
"""
import numpy as np

from . import _dtype
from ._device import to_device
from ._tensor import Tensor, wrap

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "default_generator", "rand", "randn", "randint", "randperm",
           "normal", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial",
           "fork_rng"]


class Generator:
    """A random stream; ``Generator().manual_seed(0)`` makes it reproducible."""

    def __init__(self, device="cpu"):
        self.device = to_device(device)
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        self._seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        import json
        state = json.dumps(self._rng.bit_generator.state).encode()
        return wrap(np.frombuffer(state, np.uint8).copy())

    def set_state(self, state):
        import json
        self._rng.bit_generator.state = json.loads(bytes(state.numpy()).decode())
        return self


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (and CUDA's, which shares it)."""
    default_generator.manual_seed(seed)
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


class fork_rng:
    """Restore the default generator's state on exit."""

    def __init__(self, devices=None, enabled=True):
        self.enabled = enabled

    def __enter__(self):
        self._state = get_rng_state() if self.enabled else None

    def __exit__(self, *exc):
        if self._state is not None:
            set_rng_state(self._state)
        return False


def _rng(generator):
    return (generator or default_generator)._rng


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _finish(values, dtype, device, requires_grad):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    t = wrap(np.asarray(values, dtype=d.np, order="C"))
    dev = to_device(device)
    if dev.type != "cpu":
        t = t.to(dev)
    if requires_grad:
        t.requires_grad = True
    return t


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Uniform samples on [0, 1)."""
    return _finish(_rng(generator).random(_shape(size)), dtype, device, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Standard normal samples."""
    return _finish(_rng(generator).standard_normal(_shape(size)), dtype, device,
                   requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers uniform on [low, high)."""
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    vals = _rng(generator).integers(low, high, size=tuple(size))
    return _finish(vals, dtype or _dtype.int64, device, requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1."""
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    return _finish(_rng(generator).permutation(n), dtype or _dtype.int64, device,
                   requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, out=None):
    """Normal samples with the given mean and std (floats or tensors, broadcast)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        from .ops.creation import zeros
        ref = mean if isinstance(mean, Tensor) else std
        if isinstance(std, Tensor) and (std < 0).any() if hasattr(std, "any") else False:
            raise RuntimeError("normal expects all elements of std >= 0.0")
        z = randn(*(size or _bshape(mean, std)), generator=generator, dtype=ref.dtype,
                  device=ref.device)
        return (z * std + mean).detach()
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    vals = _rng(generator).normal(mean, std, size=tuple(size or ()))
    return _finish(vals, dtype, device, requires_grad)


def _bshape(a, b):
    from .ops._common import broadcast_shapes
    return broadcast_shapes(getattr(a, "shape", ()), getattr(b, "shape", ()))


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None):
    return rand(*input.shape, generator=generator, dtype=dtype or input.dtype,
                device=device or input.device, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None):
    return randn(*input.shape, generator=generator, dtype=dtype or input.dtype,
                 device=device or input.device, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, generator=None):
    return randint(low, high, input.shape, generator=generator, dtype=dtype or input.dtype,
                   device=device or input.device)


def bernoulli(input, p=None, *, generator=None):
    """1 with probability `input` (or `p`), else 0, elementwise."""
    probs = input.detach()._host() if p is None else np.full(input.shape, p)
    if np.any((probs < 0) | (probs > 1)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    vals = _rng(generator).random(probs.shape) < probs
    return _finish(vals, input.dtype, input.device, False)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Sample category indices from each row of (unnormalised) probabilities."""
    p = np.atleast_2d(input.detach()._host().astype(np.float64))
    if np.any(p < 0) or np.any(~np.isfinite(p)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not replacement and num_samples > p.shape[1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rng = _rng(generator)
    rows = []
    for row in p:
        s = row.sum()
        if s <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        rows.append(rng.choice(len(row), size=num_samples, replace=replacement, p=row / s))
    out = np.array(rows)
    if input.dim() == 1:
        out = out[0]
    return _finish(out, _dtype.int64, input.device, False)


def _inplace_sampler(draw):
    def method(self, *args, generator=None, **kwargs):
        from .ops.copy import raw_copy_
        from .ops._inplace import check_inplace
        check_inplace(self)
        vals = draw(_rng(generator), self.shape, *args, **kwargs)
        raw_copy_(self, wrap(np.asarray(vals, dtype=self.dtype.np, order="C")))
        return self
    return method


Tensor.uniform_ = _inplace_sampler(lambda r, s, a=0.0, b=1.0: r.uniform(a, b, s))
Tensor.normal_ = _inplace_sampler(lambda r, s, mean=0.0, std=1.0: r.normal(mean, std, s))
Tensor.random_ = _inplace_sampler(
    lambda r, s, a=0, b=None: r.integers(0, 2 ** 24 if a == 0 and b is None else
                                         (a if b is None else b),
                                         size=s) if b is None else r.integers(a, b, s))
Tensor.bernoulli_ = _inplace_sampler(lambda r, s, p=0.5: r.random(s) < p)
Tensor.exponential_ = _inplace_sampler(lambda r, s, lambd=1.0: r.exponential(1 / lambd, s))
Tensor.geometric_ = _inplace_sampler(lambda r, s, p: r.geometric(p, s))
Tensor.log_normal_ = _inplace_sampler(lambda r, s, mean=1.0, std=2.0:
                                      r.lognormal(mean, std, s))
Tensor.cauchy_ = _inplace_sampler(lambda r, s, median=0.0, sigma=1.0:
                                  median + sigma * r.standard_cauchy(s))
Tensor.bernoulli = lambda self, p=None, generator=None: bernoulli(self, p,
                                                                  generator=generator)
Tensor.multinomial = multinomial
