"""Sampling ops: rand, randn, randint, randperm, normal, the *_like variants, bernoulli,
multinomial and the in-place samplers of Tensor (uniform_, normal_, random_,
bernoulli_, exponential_, ...).

`rand`, `randn`, `randint`, `normal`, `bernoulli` and the in-place `uniform_`,
`normal_`, `bernoulli_`, `random_` dispatch through the registry to the sampler
kernel of the tensor's device, ``kernel(out, rng, *params)``: on the CPU they
draw PyTorch's numbers from the generator's MT19937 stream (or NumPy's PCG64
when selected; `kernels/cpu/random.py`), filling a tensor in storage order as
PyTorch does; on CUDA the Philox kernels draw on the device, keyed by one 64-bit
draw from that stream (`kernels/cuda/random.py`). `randperm`, `multinomial` and
the other in-place samplers (`exponential_`, `geometric_`, `log_normal_`,
`cauchy_`) always draw with their CPU kernels and copy to the tensor's device.
The sequences of ops PyTorch builds on them (``normal`` with tensor arguments,
dropout's masks, ``nn.init``) are written the same way, so they match too.
"""
import numpy as np

from .. import _dtype
from .._device import factory_device
from .._generator import rng_of as _rng
from .._registry import _KERNELS, get_kernel
from .._overlap import check_no_partial_overlap
from .._tensor import CPU, Tensor, empty, wrap
from .._limited import no_kernel
from .creation import _plain_like as _plain_like_dtype, _plain_shape, _shape_arg

__all__ = ["rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like",
           "randint_like", "bernoulli", "multinomial"]


def _shape(size):
    """A factory's size (ints, or one tuple/list/Size of them), checked as torch.empty's:
    Python ints >= 0 need no check."""
    shape = _plain_shape(size)
    return shape if shape is not None else _shape_arg(size)


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
    """Fill contiguous `t` with sampler kernel `op` of its device; return it. A complex
    tensor is filled as its (real, imag) pairs, from one stream of twice the values, as
    PyTorch's (normal samples scaled by 1/sqrt(2): unit variance in total)."""
    if t.dtype.is_complex and 0 not in t._shape and op in ("uniform_", "normal_"):
        from .._complex_views import as_real
        pairs = as_real(t)
        if op == "normal_":
            mean, std = params
            _sample_(op, pairs, generator, mean, std / 2 ** 0.5)
        else:
            _sample_(op, pairs, generator, *params)
        return t
    if 0 not in t._shape:
        kind = t.device.type
        (_KERNELS.get((op, kind)) or get_kernel(op, kind))(t._array, _rng(generator),
                                                           *params)
    return t


def _sample_inplace(op, t, generator, *params):
    """The in-place samplers' body: PyTorch's leaf checks, the fill (CPU kernels take any
    layout; elsewhere through a contiguous buffer when `t` is not contiguous), a
    version bump."""
    from ._inplace import check_inplace
    from .copy import raw_copy_
    check_inplace(t)
    if t.is_contiguous() or t.device.type == "cpu":
        _sample_(op, t, generator, *params)._bump()
    else:
        raw_copy_(t, _sample_(op, empty(t._shape, t.dtype, t.device), generator, *params))
    return t


def _host_sample_inplace(op, t, generator, *params):
    """An in-place sampler that draws with its CPU kernel on every device."""
    if t.device.type == "cpu":
        return _sample_inplace(op, t, generator, *params)
    from ._inplace import check_inplace
    from .copy import raw_copy_
    check_inplace(t)
    host = empty(t._shape, t.dtype, "cpu")
    if 0 not in t._shape:
        get_kernel(op, "cpu")(host._array, _rng(generator), *params)
    raw_copy_(t, host.to(t.device))
    return t


def _sampled(op, shape, dtype, device, requires_grad, generator, *params):
    """A new tensor filled by sampler kernel `op` (dtype default: the default dtype)."""
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    t = _sample_(op, empty(shape, d, CPU if device is CPU else factory_device(device)),
                 generator, *params)
    if requires_grad:
        t.requires_grad = True
    return t


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None,
         **kwargs):
    """Uniform samples on [0, 1) (the shape as arguments or ``size=``)."""
    if dtype is not None and _dtype.to_dtype(dtype).limited:
        no_kernel("check_uniform_bounds", _dtype.to_dtype(dtype))
    if kwargs:
        size = _size_keyword("rand", size, kwargs)
    return _sampled("uniform_", _shape(size), dtype, device, requires_grad, generator,
                    0.0, 1.0)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None,
          **kwargs):
    """Standard normal samples (the shape as arguments or ``size=``)."""
    if dtype is not None and _dtype.to_dtype(dtype).limited:
        no_kernel("normal_kernel_cpu", _dtype.to_dtype(dtype))
    if kwargs:
        size = _size_keyword("randn", size, kwargs)
    return _sampled("normal_", _shape(size), dtype, device, requires_grad, generator,
                    0.0, 1.0)


def _size_keyword(op, size, kwargs):
    """`size` from the positional shape or the ``size=`` keyword (PyTorch takes either)."""
    if kwargs:
        extra = [k for k in kwargs if k not in ("size", "layout", "pin_memory", "names")]
        if extra:
            raise TypeError(f"{op}() got an unexpected keyword argument '{extra[0]}'")
        if "size" in kwargs:
            if size:
                raise TypeError(f"{op}() got multiple values for argument 'size'")
            return (tuple(kwargs["size"]),)
    return size


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers uniform on [low, high)."""
    if dtype is not None and _dtype.to_dtype(dtype).limited:
        no_kernel("random_update_from_to", _dtype.to_dtype(dtype), _dtype.FLOAT8)
    if size is None and isinstance(high, (tuple, list)):    # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    if dtype is not None and _dtype.to_dtype(dtype).limited:   # uint16-64: int64 draws
        return _sampled("random_", _shape((size,)), _dtype.int64, device, False, generator,
                        low, high).to(dtype)     # (PyTorch's stream for a range < 2**32)
    return _sampled("random_", _shape((size,)), dtype or _dtype.int64, device,
                    requires_grad, generator, low, high)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1 (PyTorch's CPU algorithm on every device)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    perm = np.empty(n, np.int64)
    get_kernel("randperm", "cpu")(perm, _rng(generator))
    return _finish(perm, dtype or _dtype.int64, device, requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, out=None):
    """Normal samples with the given mean and std (floats or tensors, broadcast).

    With tensor arguments, as PyTorch: z ~ N(0, 1) (N(0, std) for a float std) over the
    broadcast shape, then ``z.mul_(std).add_(mean)``."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        if isinstance(std, Tensor):
            if (std < 0).any():
                raise RuntimeError("normal expects all elements of std >= 0.0")
        elif std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        shape = _bshape(mean, std)
        z = _sampled("normal_", shape, ref.dtype, ref.device, False, generator, 0.0,
                     std if not isinstance(std, Tensor) else 1.0)
        if isinstance(std, Tensor):
            z.mul_(std.detach())
        return z.add_(mean.detach() if isinstance(mean, Tensor) else mean)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _sampled("normal_", _shape((size or (),)), dtype, device, requires_grad,
                    generator, mean, std)


def _bshape(a, b):
    from ._common import broadcast_shapes
    return broadcast_shapes(getattr(a, "shape", ()), getattr(b, "shape", ()))


def _plain_like(op, input, dtype, device, memory_format, requires_grad, generator,
                *params):
    """rand_like/randn_like of a contiguous CPU tensor `input` into a floating dtype, with
    no device or memory format given: sampler kernel `op` into a new contiguous tensor, as
    the general path's rand/randn call does (the same kernel, generator and values),
    without the layers between; None for anything else."""
    d = _plain_like_dtype(input, dtype, device, memory_format)
    if d is not None and d.is_floating_point and not d.limited:
        return _sampled(op, input._shape, d, CPU, requires_grad, generator, *params)
    return None


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None,
              memory_format=None, layout=None, pin_memory=False):
    t = _plain_like("uniform_", input, dtype, device, memory_format, requires_grad,
                    generator, 0.0, 1.0)
    if t is not None:
        return t
    from .creation import like_format
    return like_format(rand(*input.shape, generator=generator, dtype=dtype or input.dtype,
                            device=device or input.device), input, memory_format,
                       requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None,
               memory_format=None, layout=None, pin_memory=False):
    t = _plain_like("normal_", input, dtype, device, memory_format, requires_grad,
                    generator, 0.0, 1.0)
    if t is not None:
        return t
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
    """Sample category indices from each row of (unnormalised) probabilities, with
    PyTorch's CPU algorithms (on every device): without replacement (or for one
    sample) the top `num_samples` of p / q, q ~ Exponential(1); with replacement a
    binary search of each row's cumulative distribution per sample."""
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, "
                           f"got: {_dtype.type_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    p = input.detach()._host()
    p = p[None] if p.ndim == 1 else p
    if not replacement and num_samples > p.shape[1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    p64 = p.astype(np.float64)
    if np.any(p64 < 0) or np.any(~np.isfinite(p64)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(p64.sum(axis=1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if p.dtype not in (np.float32, np.float64):
        p = p.astype(np.float32)
    out = np.empty((p.shape[0], int(num_samples)), np.int64)
    if out.size:
        get_kernel("multinomial", "cpu")(out, _rng(generator), p, bool(replacement))
    if input.dim() == 1:
        out = out[0]
    return _finish(out, _dtype.int64, input.device, False)


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with samples uniform on [a, b)."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a:g} > to={b:g}")
    return _sample_inplace("uniform_", self, generator, a, b)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples N(mean, std**2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _sample_inplace("normal_", self, generator, mean, std)


def _random_(self, *args, to=None, generator=None):
    """Fill with integers uniform on [from, to) (``random_(from, to)``), on [0, to)
    (``random_(to)``), on [from, the dtype's top] (``random_(from, None)``), or, given
    no bound, on [0, top] (top: 2**mantissa for floats, the largest value for integers)."""
    if to is not None:
        args = (args[0] if args else 0, to)
    low, high = _random_bounds(self.dtype, args)
    return _sample_inplace("random_", self, generator, low, high)


_MANTISSA = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}


def _random_bounds(dtype, args):
    """[low, high) of random_'s call forms, with PyTorch's bound checks."""
    name = dtype.np.name
    if name in _MANTISSA:
        bottom, top = -2 ** _MANTISSA[name], 2 ** _MANTISSA[name]
    elif name == "bool":
        bottom, top = 0, 1
    else:
        bottom, top = int(np.iinfo(dtype.np).min), int(np.iinfo(dtype.np).max)
    if not args:
        return 0, top + 1
    low, high = (0, args[0]) if len(args) == 1 else args
    low, high = int(low), top + 1 if high is None else int(high)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    if not bottom <= low <= top:
        raise RuntimeError(f"from is out of bounds for {_dtype.type_name(dtype)}")
    if not bottom <= high - 1 <= top:
        raise RuntimeError(f"to - 1 is out of bounds for {_dtype.type_name(dtype)}")
    return low, high


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill with Exponential(lambd) samples."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return _host_sample_inplace("exponential_", self, generator, lambd)


def _geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    return _host_sample_inplace("geometric_", self, generator, p)


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp of N(mean, std**2) samples."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _host_sample_inplace("log_normal_", self, generator, mean, std)


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy(median, sigma) samples."""
    return _host_sample_inplace("cauchy_", self, generator, median, sigma)


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability p (a number or a tensor broadcast to self), else 0."""
    if isinstance(p, Tensor):
        check_no_partial_overlap(self, (p,))
        p = p.detach().to(self.device).expand(self._shape).contiguous()._array
    return _sample_inplace("bernoulli_", self, generator, p)


Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_
Tensor.random_ = _random_
Tensor.bernoulli_ = _bernoulli_
Tensor.exponential_ = _exponential_
Tensor.geometric_ = _geometric_
Tensor.log_normal_ = _log_normal_
Tensor.cauchy_ = _cauchy_
Tensor.bernoulli = lambda self, p=None, generator=None: bernoulli(self, p,
                                                                  generator=generator)
Tensor.multinomial = multinomial
