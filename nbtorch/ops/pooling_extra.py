"""Pooling written with other ops: max_unpool1d/2d/3d, lp_pool1d/2d/3d, fractional max pooling.

* max_unpool puts each value at its flat index in a zero output (a `scatter`:
  duplicated indices keep one value, as PyTorch's assignment does; the gradient
  is the gather at the indices, PyTorch's formula).
* lp_pool is PyTorch's own composition: (sum over the window of x^p)^(1/p),
  through avg_pool times the window size.
* fractional max pooling draws one pseudo-random window sequence per (sample,
  channel) and axis (PyTorch's `generate_intervals`, computed in the input's
  dtype on its device), gathers every window and takes its max; the flat
  indices are PyTorch's.
"""
from .. import _dtype
from .conv import _ntuple, _size
from .pooling import (avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d,
                      max_pool3d)

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d",
           "lp_pool3d", "fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]


# ---------------------------------------------------------------- max_unpool

def _unpool_output_size(input, kernel, stride, padding, output_size):
    """PyTorch's default (in - 1) * stride + kernel - 2 * padding, or a checked output_size."""
    n = len(kernel)
    default = [(input.shape[input.dim() - n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d]
               for d in range(n)]
    if output_size is None:
        return default
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, "
                         f"but it has a length of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f'{lo} and {hi})')
    return [int(s) for s in output_size]


def _unpool(dims, input, indices, kernel_size, stride, padding, output_size):
    nd = max(dims, 2)
    kernel = _ntuple(kernel_size, dims, "kernel_size")
    stride = kernel if stride is None else _ntuple(stride, dims, "stride")
    size = _unpool_output_size(input, kernel, stride, _ntuple(padding, dims, "padding"),
                               output_size)
    if dims == 1:
        input, indices, size = input.unsqueeze(-1), indices.unsqueeze(-1), size + [1]
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d "
                           f"Tensor, but got a tensor with {input.dim()} dimensions.")
    if indices.dtype is not _dtype.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{_dtype.type_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({_size(input)}) but got indices tensor with shape: "
                           f"{_size(indices)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"max_unpool{nd}d\" not implemented for "
                                  f"'{_dtype.type_name(input.dtype)}'")
    batched = input.dim() == nd + 2
    x, idx = (input, indices) if batched else (input.unsqueeze(0), indices.unsqueeze(0))
    n, c = x.shape[:2]
    volume = 1
    for s in size:
        volume *= s
    idx = idx.reshape(n, c, -1)
    bad = (idx < 0) | (idx >= volume)
    if bad.any():                     # PyTorch's CPU loop reports the last one it meets
        last = int(idx[bad].flatten()[-1])
        raise RuntimeError(f"Found an invalid max index: {last} (output volumes are of size "
                           f"{'x'.join(map(str, size))})")
    from .creation import zeros
    out = zeros((n, c, volume), dtype=x.dtype, device=x.device)
    out = out.scatter(2, idx, x.reshape(n, c, -1)).reshape([n, c] + size)
    if dims == 1:
        out = out.squeeze(-1)
    return out if batched else out.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of `max_pool1d`: values back at their indices, zeros elsewhere.

    Example:
        >>> out, idx = F.max_pool1d(nbtorch.tensor([[[1., 3., 2., 0.]]]), 2, return_indices=True)
        >>> F.max_unpool1d(out, idx, 2)
        tensor([[[0., 3., 2., 0.]]])
    """
    return _unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of `max_pool2d` (N, C, H, W) or (C, H, W); `output_size` picks
    among the sizes a pooling could have come from."""
    return _unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of `max_pool3d` (N, C, D, H, W) or (C, D, H, W)."""
    return _unpool(3, input, indices, kernel_size, stride, padding, output_size)


# ---------------------------------------------------------------- lp_pool

def _lp(out, norm_type, window):
    """(sign(s) * relu(|s|) * window) ** (1/p): PyTorch's finish of the averaged powers."""
    return (out.sign() * out.abs().relu()).mul(window).pow(1.0 / norm_type)


def _lp_extreme(max_pool, input, norm_type, kernel_size, stride, ceil_mode):
    """p = +-inf: the window's largest (smallest) magnitude, as max pooling of |x|; else
    None (x^inf would overflow the power average)."""
    if norm_type == float("inf"):
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    return None


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, L): (sum over the window of x^p)^(1/p).

    Example:
        >>> F.lp_pool1d(nbtorch.tensor([[[3., 4., 1., 1.]]]), 2, 2)
        tensor([[[5.0000, 1.4142]]])
    """
    extreme = _lp_extreme(max_pool1d, input, norm_type, kernel_size, stride, ceil_mode)
    if extreme is not None:
        return extreme
    k = _ntuple(kernel_size, 1, "kernel_size")[0]
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp(out, norm_type, k)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, H, W); p = inf is max pooling, p = 1 sum pooling."""
    extreme = _lp_extreme(max_pool2d, input, norm_type, kernel_size, stride, ceil_mode)
    if extreme is not None:
        return extreme
    kh, kw = _ntuple(kernel_size, 2, "kernel_size")
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, D, H, W)."""
    extreme = _lp_extreme(max_pool3d, input, norm_type, kernel_size, stride, ceil_mode)
    if extreme is not None:
        return extreme
    kd, kh, kw = _ntuple(kernel_size, 3, "kernel_size")
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp(out, norm_type, kd * kh * kw)


# ---------------------------------------------------------------- fractional max pooling

def _intervals(sample, in_size, out_size, pool):
    """Window starts (N, C, out_size) int64 from samples u (N, C) in [0, 1):
    int((i + u) * alpha) - int(u * alpha), the last one in_size - pool (alpha in u's dtype)."""
    import numpy as np
    from .creation import arange, full
    from .joining import cat
    n, c = sample.shape
    last = full((n, c, 1), in_size - pool, dtype=_dtype.int64, device=sample.device)
    if out_size == 1:
        return last
    ftype = np.float64 if sample.dtype is _dtype.float64 else np.float32
    alpha = float(ftype(in_size - pool) / ftype(out_size - 1))
    i = arange(out_size - 1, dtype=sample.dtype, device=sample.device)
    u = sample.unsqueeze(-1)
    starts = ((i + u) * alpha).to(_dtype.int64) - (u * alpha).to(_dtype.int64)
    return cat([starts, last], -1)


def _fractional(op, dims, input, kernel_size, output_size, output_ratio, samples):
    from .creation import arange
    from .random import rand
    if input.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: "
                           f"{_size(input)}")
    kernel = _ntuple(kernel_size, dims, "kernel_size")
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an "
                             "output_ratio")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else \
            (output_ratio,) * dims
        size = tuple(int(s * r) for s, r in zip(input.shape[-dims:], ratio))
    else:
        size = _ntuple(output_size, dims, "output_size")
    batched = input.dim() == dims + 2
    x = input if batched else input.unsqueeze(0)
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    names = ("time", "height", "width")[3 - dims:]
    for name, s, k, o in zip(names, spatial, kernel, size):
        if o + k - 1 > s:
            raise RuntimeError(f"{op}(): pool {name} {k} too large relative to input {name} {s}")
    if samples is None:
        samples = rand(n, c, dims, dtype=x.dtype, device=x.device)
    elif samples.dim() != 3 or samples.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    elif samples.shape[2] != dims:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {dims}; got "
                           f"{samples.shape[2]}.")
    elif samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    # PyTorch's order of the samples per plane: (W, H) in 2-D, (T, H, W) in 3-D
    axis_sample = (1, 0) if dims == 2 else (0, 1, 2)
    flat = None                       # (N, C, *out, *kernel) flat offsets into a plane
    stride = 1
    for d in reversed(range(dims)):
        starts = _intervals(samples[:n, :, axis_sample[d]], spatial[d], size[d], kernel[d])
        taps = starts.unsqueeze(-1) + arange(kernel[d], device=x.device)   # (N, C, o, k)
        shape = [n, c] + [1] * (2 * dims)
        shape[2 + d], shape[2 + dims + d] = size[d], kernel[d]
        term = taps.reshape(shape) * stride
        flat = term if flat is None else flat + term
        stride *= spatial[d]
    k_all = 1
    for k in kernel:
        k_all *= k
    flat = flat.expand([n, c, *size, *kernel]).reshape(n, c, -1, k_all)
    vals = x.reshape(n, c, -1).gather(2, flat.reshape(n, c, -1)).reshape(n, c, -1, k_all)
    out, arg = vals.max(-1)
    idx = flat.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    out, idx = out.reshape((n, c) + size), idx.reshape((n, c) + size)
    return (out, idx) if batched else (out.squeeze(0), idx.squeeze(0))


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=True, _random_samples=None):
    """`fractional_max_pool2d` returning (values, flat indices h * W + w)."""
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size,
                       output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling (Graham, 2014) over (N, C, H, W) or (C, H, W).

    Args:
        kernel_size: window size (int or pair).
        output_size / output_ratio: the output's (H, W), or its fraction of the input's.
        _random_samples: (N, C, 2) uniforms in [0, 1) fixing the windows (drawn when None).

    Example:
        >>> F.fractional_max_pool2d(nbtorch.randn(1, 1, 7, 7), 2, output_size=4).shape
        torch.Size([1, 1, 4, 4])
    """
    out, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                  True, _random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=True, _random_samples=None):
    """`fractional_max_pool3d` returning (values, flat indices (t * H + h) * W + w)."""
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size,
                       output_ratio, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W); samples (N, C, 3)."""
    out, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                  True, _random_samples)
    return (out, idx) if return_indices else out
