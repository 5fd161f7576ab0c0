"""The nn.functional ops PyTorch also exposes at torch level, with ATen's signatures.

``torch.conv2d``, ``torch.layer_norm``, ``torch.dropout(input, p, train)``,
``torch.embedding(weight, indices)``, the losses with an integer `reduction` (0 none,
1 mean, 2 sum), ...: thin wrappers over `nbtorch.nn.functional` (imported on first
call: ops sit below nn). The in-place function forms (``torch.abs_(x)``) are in
`torch_inplace.py`, the RNN functions in `torch_rnn.py`, the batch-norm statistics
primitives in `torch_batch_norm.py`.
"""
from .._tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "conv_tbc", "convolution", "max_pool1d", "max_pool2d",
           "max_pool3d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d",
           "adaptive_max_pool1d", "batch_norm", "instance_norm", "layer_norm",
           "group_norm", "rms_norm", "embedding", "embedding_bag", "embedding_renorm_",
           "bilinear", "cosine_similarity", "pairwise_distance", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "prelu",
           "rrelu", "rrelu_", "threshold", "threshold_", "hardshrink", "constant_pad_nd",
           "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator"]

def _F():
    from ..nn import functional
    return functional


def _stride(stride):
    return None if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else stride


# ---- convolution ----------------------------------------------------------------------

def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``torch.conv1d``: `nn.functional.conv1d`."""
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``torch.conv2d``: `nn.functional.conv2d`."""
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``torch.conv3d``: `nn.functional.conv3d`."""
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """``torch.conv_transpose1d``: `nn.functional.conv_transpose1d`."""
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding,
                                 groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """``torch.conv_transpose2d``: `nn.functional.conv_transpose2d`."""
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding,
                                 groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """``torch.conv_transpose3d``: `nn.functional.conv_transpose3d`."""
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding,
                                 groups, dilation)


def conv_tbc(input, weight, bias, pad=0):
    """``torch.conv_tbc``: 1-D convolution of (time, batch, channel) input."""
    return _F().conv_tbc(input, weight, bias, pad)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """ATen's generic convolution: 1-, 2- or 3-D by the weight's rank, plain or
    transposed."""
    n = weight.dim() - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"Expected 3D, 4D or 5D weight for convolution, but got "
                           f"{weight.dim()}D weight")
    F = _F()
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


# ---- pooling --------------------------------------------------------------------------

def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``torch.max_pool1d`` (an empty `stride` is the kernel size)."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``torch.max_pool2d`` (an empty `stride` is the kernel size)."""
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``torch.max_pool3d`` (an empty `stride` is the kernel size)."""
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """``torch.max_pool1d_with_indices``: (values, indices)."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                           return_indices=True)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    """``torch.avg_pool1d`` (an empty `stride` is the kernel size)."""
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    """``torch.adaptive_avg_pool1d``."""
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """``torch.adaptive_max_pool1d``: (values, indices), always both."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


# ---- normalization ----------------------------------------------------------------------

def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """``torch.batch_norm`` (ATen's argument order: weight and bias first)."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training,
                           momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                  momentum, eps, cudnn_enabled):
    """``torch.instance_norm`` (ATen's argument order)."""
    return _F().instance_norm(input, running_mean, running_var, weight, bias,
                              use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05,
               cudnn_enable=True):
    """``torch.layer_norm``."""
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """``torch.group_norm``."""
    return _F().group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``torch.rms_norm``."""
    return _F().rms_norm(input, normalized_shape, weight, eps)


# ---- embedding ------------------------------------------------------------------------

def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``torch.embedding(weight, indices)``: rows of `weight`; a negative `padding_idx`
    means none, as in ATen."""
    return _F().embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``torch.embedding_bag``: (output, offset2bag, bag_size, max_indices), `mode` 0 sum,
    1 mean, 2 max. The last three are ATen's CPU bookkeeping: each index's bag and each
    bag's size (mean, max), the row each max came from (max); the sum mode's fast path
    leaves offset2bag empty and the others zero, as ATen does."""
    from .creation import zeros
    out = _F().embedding_bag(indices, weight, offsets, mode=("sum", "mean", "max")[mode],
                             scale_grad_by_freq=scale_grad_by_freq, sparse=sparse,
                             per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset,
                             padding_idx=padding_idx)
    kw = dict(dtype=indices.dtype, device=indices.device)
    n = indices.numel()
    if mode == 0:                       # sum: sizes are not kept; offset2bag only off the
        sizes = zeros(offsets.numel(), **kw)    # float32/half fast path
        fast = weight.dtype.itemsize <= 4
        return out, (zeros(0, **kw) if fast else _offset2bag(offsets, n, include_last_offset)
                     ), sizes, sizes.clone()
    starts = offsets[:-1] if include_last_offset else offsets
    bags = starts.numel()
    ends = offsets[1:] if include_last_offset else _cat_end(offsets, n)
    offset2bag = _offset2bag(offsets, n, include_last_offset)
    bag_size = ends - starts
    if mode != 2:
        return out, offset2bag, bag_size, bag_size.clone()
    return out, offset2bag, bag_size, _max_rows(weight, indices, offset2bag, bags, out)


def _offset2bag(offsets, n, include_last_offset):
    """The bag of each of the n indices."""
    from .creation import zeros
    starts = offsets[:-1] if include_last_offset else offsets
    marks = zeros(n + 1, dtype=offsets.dtype, device=offsets.device)
    marks.index_add_(0, starts.clamp(max=n), starts.new_ones(starts.numel()))
    return (marks[:n].cumsum(0) - 1).clamp(min=0)


def _cat_end(offsets, n):
    from .joining import cat
    return cat([offsets[1:], offsets.new_tensor([n])])


def _max_rows(weight, indices, offset2bag, bags, out):
    """Mode max: per bag and column, the first index whose row gave the max (0 for an
    empty bag)."""
    from .creation import full
    from .pointwise_select import where
    rows = weight.detach()[indices]                     # (n, D)
    hit = rows == out.detach()[offset2bag]
    never = indices.numel() + weight.shape[0]
    picked = where(hit, indices.unsqueeze(1).expand_as(rows), never)
    res = full((bags, weight.shape[1]), never, dtype=indices.dtype, device=indices.device)
    res = res.scatter_reduce(0, offset2bag.unsqueeze(1).expand_as(rows), picked, "amin")
    return where(res == never, 0, res)


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, the rows of `weight` that `indices` names to norm <= max_norm."""
    from .embedding import _renorm_
    _renorm_(weight, indices, max_norm, norm_type)
    return weight


# ---- the rest ---------------------------------------------------------------------------

def bilinear(input1, input2, weight, bias=None):
    return _F().bilinear(input1, input2, weight, bias)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def pixel_shuffle(input, upscale_factor):
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    return _F().channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    return _F().native_channel_shuffle(input, groups)


def prelu(input, weight):
    return _F().prelu(input, weight)


def rrelu(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """``torch.rrelu`` (a `generator` other than the default is not supported)."""
    _no_generator(generator)
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    _no_generator(generator)
    return _F().rrelu(input, lower, upper, training, inplace=True)


def _no_generator(generator):
    if generator is not None:
        raise NotImplementedError("rrelu: a generator argument is not supported by nbtorch")


def threshold(input, threshold, value, *, out=None):
    r = _F().threshold(input, threshold, value)
    return r if out is None else out.copy_(r)


def threshold_(input, threshold, value):
    return _F().threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5, *, out=None):
    r = _F().hardshrink(input, lambd)
    return r if out is None else out.copy_(r)


def constant_pad_nd(input, pad, value=0):
    """``torch.constant_pad_nd``: `nn.functional.pad` in constant mode (negative pads
    crop)."""
    return _F().pad(input, list(pad), "constant", value)


_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """ATen's grid sampler: `nn.functional.grid_sample` with integer modes
    (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border,
    2 reflection)."""
    return _F().grid_sample(input, grid, _INTERPOLATION[interpolation_mode],
                            _PADDING[padding_mode], align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} "
                           f"and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} "
                           f"and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners):
    """`nn.functional.affine_grid` with ATen's positional `align_corners`."""
    return _F().affine_grid(theta, list(size), align_corners)


def _tensor_methods():
    """Tensor.hardshrink and Tensor.prelu, as PyTorch has them."""
    Tensor.hardshrink = lambda self, lambd=0.5: hardshrink(self, lambd)
    Tensor.prelu = lambda self, weight: prelu(self, weight)


_tensor_methods()
