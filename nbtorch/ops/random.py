"""Sampling ops: rand, randn, randint, randperm, normal, the *_like variants, bernoulli,
multinomial and the in-place samplers of Tensor (uniform_, normal_, random_,
bernoulli_, exponential_, ...).

`rand`, `randn`, `randint`, `normal`, `bernoulli` and the in-place `uniform_`,
`normal_`, `bernoulli_`, `random_` dispatch through the registry to the sampler
kernel of the tensor's device, ``kernel(out, rng, *params)``: on the CPU NumPy
draws from the generator's PCG64 stream (`kernels/cpu/random.py`); on CUDA the
Philox kernels draw on the device, keyed by one 64-bit draw from that stream
(`kernels/cuda/random.py`). The other in-place samplers (`exponential_`,
`geometric_`, ...) and `randperm`, `multinomial` draw on the host and copy to
the tensor's device.
"""
import numpy as np

from .. import _dtype
from .._device import factory_device
from .._generator import rng_of as _rng
from .._registry import _KERNELS, get_kernel
from .._tensor import Tensor, empty, wrap

__all__ = ["rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like",
           "randint_like", "bernoulli", "multinomial"]


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _finish(values, dtype, device, requires_grad):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    t = wrap(np.asarray(values, dtype=d.np, order="C"))
    dev = factory_device(device)
    if dev.type != "cpu":
        t = t.to(dev)
    if requires_grad:
        t.requires_grad = True
    return t




def _sample_(op, t, generator, *params):
    """Fill contiguous `t` with sampler kernel `op` of its device; return it."""
    if 0 not in t._shape:
        kind = t.device.type
        (_KERNELS.get((op, kind)) or get_kernel(op, kind))(t._array, _rng(generator),
                                                           *params)
    return t


def _sample_inplace(op, t, generator, *params):
    """The in-place samplers' body: PyTorch's leaf checks, the fill (through a contiguous
    buffer when `t` is not contiguous), a version bump."""
    from ._inplace import check_inplace
    from .copy import raw_copy_
    check_inplace(t)
    if t.is_contiguous():
        _sample_(op, t, generator, *params)._bump()
    else:
        raw_copy_(t, _sample_(op, empty(t._shape, t.dtype, t.device), generator, *params))
    return t


def _sampled(op, shape, dtype, device, requires_grad, generator, *params):
    """A new tensor filled by sampler kernel `op` (dtype default: the default dtype)."""
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    t = _sample_(op, empty(shape, d, factory_device(device)), generator, *params)
    if requires_grad:
        t.requires_grad = True
    return t


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Uniform samples on [0, 1)."""
    return _sampled("uniform_", _shape(size), dtype, device, requires_grad, generator,
                    0.0, 1.0)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Standard normal samples."""
    return _sampled("normal_", _shape(size), dtype, device, requires_grad, generator,
                    0.0, 1.0)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers uniform on [low, high)."""
    if size is None and isinstance(high, (tuple, list)):    # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    return _sampled("random_", _shape((size,)), dtype or _dtype.int64, device,
                    requires_grad, generator, low, high)


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
        ref = mean if isinstance(mean, Tensor) else std
        if isinstance(std, Tensor) and (std < 0).any() if hasattr(std, "any") else False:
            raise RuntimeError("normal expects all elements of std >= 0.0")
        z = randn(*(size or _bshape(mean, std)), generator=generator, dtype=ref.dtype,
                  device=ref.device)
        return (z * std + mean).detach()
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _sampled("normal_", _shape((size or (),)), dtype, device, requires_grad,
                    generator, mean, std)


def _bshape(a, b):
    from ._common import broadcast_shapes
    return broadcast_shapes(getattr(a, "shape", ()), getattr(b, "shape", ()))


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None,
              memory_format=None, layout=None, pin_memory=False):
    from .creation import like_format
    return like_format(rand(*input.shape, generator=generator, dtype=dtype or input.dtype,
                            device=device or input.device), input, memory_format,
                       requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None,
               memory_format=None, layout=None, pin_memory=False):
    from .creation import like_format
    return like_format(randn(*input.shape, generator=generator, dtype=dtype or input.dtype,
                             device=device or input.device), input, memory_format,
                       requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, generator=None,
                 requires_grad=False, memory_format=None, layout=None, pin_memory=False):
    from .creation import like_format
    return like_format(randint(low, high, input.shape, generator=generator,
                               dtype=dtype or input.dtype, device=device or input.device),
                       input, memory_format, requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """1 with probability `input` (or `p`), else 0, elementwise."""
    out = empty(input._shape, input.dtype, input.device)
    if not out.numel():
        return out
    if p is None:
        probs = input.detach().contiguous()
        if ((probs < 0) | (probs > 1)).any():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = probs._array
    elif p < 0 or p > 1:
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return _sample_("bernoulli_", out, generator, p)


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
        from .copy import raw_copy_
        from ._inplace import check_inplace
        check_inplace(self)
        vals = draw(_rng(generator), self.shape, *args, **kwargs)
        raw_copy_(self, wrap(np.asarray(vals, dtype=self.dtype.np, order="C")))
        return self
    return method


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with samples uniform on [a, b)."""
    return _sample_inplace("uniform_", self, generator, a, b)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples N(mean, std**2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _sample_inplace("normal_", self, generator, mean, std)


def _random_(self, a=0, b=None, *, generator=None):
    """Fill with integers uniform on [a, b), or on [0, a) given one bound ([0, 2**24)
    given none)."""
    low, high = (0, 2 ** 24 if a == 0 else a) if b is None else (a, b)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    return _sample_inplace("random_", self, generator, low, high)


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability p (a number or a tensor broadcast to self), else 0."""
    if isinstance(p, Tensor):
        p = p.detach().to(self.device).expand(self._shape).contiguous()._array
    return _sample_inplace("bernoulli_", self, generator, p)


Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_
Tensor.random_ = _random_
Tensor.bernoulli_ = _bernoulli_
Tensor.exponential_ = _inplace_sampler(lambda r, s, lambd=1.0: r.exponential(1 / lambd, s))
Tensor.geometric_ = _inplace_sampler(lambda r, s, p: r.geometric(p, s))
Tensor.log_normal_ = _inplace_sampler(lambda r, s, mean=1.0, std=2.0:
                                      r.lognormal(mean, std, s))
Tensor.cauchy_ = _inplace_sampler(lambda r, s, median=0.0, sigma=1.0:
                                  median + sigma * r.standard_cauchy(s))
Tensor.bernoulli = lambda self, p=None, generator=None: bernoulli(self, p,
                                                                  generator=generator)
Tensor.multinomial = multinomial
