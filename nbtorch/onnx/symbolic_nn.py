"""Symbolics of nn.functional: embedding, dropout, convolutions, pooling, normalisation,
interpolate, pad, pixel shuffle, scaled dot-product attention."""
import math

import numpy as np

from ._graph import UnsupportedOperatorError, Value
from ._helpers import INT_MAX, operand, out_dtype, reduce, unsqueeze
from ._registry import register


def _tuple(v, n):
    if isinstance(v, (tuple, list)):
        return [int(x) for x in v] if len(v) == n else [int(v[0])] * n
    return [int(v)] * n


@register("embedding")
def _embedding(e, out, input, weight, padding_idx=None, max_norm=None, *args, **kwargs):
    if max_norm is not None:
        raise UnsupportedOperatorError("ONNX export: embedding with max_norm (it rewrites "
                                       "the weight in place)")
    import nbtorch
    return e.g.op("Gather", e.name(weight), e.g.cast(e.name(input), nbtorch.int64), axis=0)


@register("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
          "feature_alpha_dropout", "dropout_")
def _dropout(e, out, x, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return e.g.op("Identity", e.name(x))
    if e.current != "dropout":
        raise UnsupportedOperatorError(f"ONNX export: {e.current} in training mode")
    ratio = e.name(float(p), dtype=x.dtype)
    return e.g.op("Dropout", e.name(x), ratio, e.g.const(np.asarray(True)))


def _conv_pads(padding, n, weight_shape, dilation):
    if padding == "valid":
        return [0] * (2 * n)
    if padding == "same":
        k = weight_shape[2:]
        total = [d * (kk - 1) for d, kk in zip(dilation, k)]
        return [t // 2 for t in total] + [t - t // 2 for t in total]
    p = _tuple(padding, n)
    return p + p


@register("conv1d", "conv2d", "conv3d")
def _conv(e, out, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    n = weight.ndim - 2
    dt = out_dtype(out)
    dil = _tuple(dilation, n)
    xs = operand(e, x, dt)
    unbatched = x.ndim == n + 1
    if unbatched:
        xs = unsqueeze(e, xs, [0])
    y = e.g.op("Conv", xs, operand(e, weight, dt),
               None if bias is None else operand(e, bias, dt),
               kernel_shape=list(weight.shape[2:]), strides=_tuple(stride, n),
               pads=_conv_pads(padding, n, weight.shape, dil), dilations=dil, group=int(groups))
    return e.g.op("Squeeze", y, e.g.ints([0])) if unbatched else y


@register("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose(e, out, x, weight, bias=None, stride=1, padding=0, output_padding=0,
                    groups=1, dilation=1):
    n = weight.ndim - 2
    dt = out_dtype(out)
    p = _tuple(padding, n)
    xs = operand(e, x, dt)
    unbatched = x.ndim == n + 1
    if unbatched:
        xs = unsqueeze(e, xs, [0])
    y = e.g.op("ConvTranspose", xs, operand(e, weight, dt),
               None if bias is None else operand(e, bias, dt),
               kernel_shape=list(weight.shape[2:]), strides=_tuple(stride, n), pads=p + p,
               output_padding=_tuple(output_padding, n), dilations=_tuple(dilation, n),
               group=int(groups))
    return e.g.op("Squeeze", y, e.g.ints([0])) if unbatched else y


def _pool_dims(name):
    return int(name.rstrip("d")[-1])


def _batched(e, x, n, build):
    """Run `build(name)` on a batched input; unbatched (C, *spatial) inputs get N=1."""
    xs = e.name(x)
    if x.ndim == n + 1:
        return e.g.op("Squeeze", build(unsqueeze(e, xs, [0])), e.g.ints([0]))
    return build(xs)


@register("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
          "max_pool2d_with_indices", "max_pool3d_with_indices")
def _max_pool(e, out, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
              return_indices=False):
    if return_indices or isinstance(out, tuple):
        raise UnsupportedOperatorError(f"ONNX export: {e.current} with return_indices (ONNX "
                                       "MaxPool numbers indices differently)")
    n = _pool_dims(e.current.replace("_with_indices", ""))
    k = _tuple(kernel_size, n)
    s = k if stride is None or stride == [] or stride == () else _tuple(stride, n)
    p = _tuple(padding, n)
    return _batched(e, x, n, lambda xs: e.g.op(
        "MaxPool", xs, kernel_shape=k, strides=s, pads=p + p, dilations=_tuple(dilation, n),
        ceil_mode=int(ceil_mode)))


@register("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(e, out, x, kernel_size, stride=None, padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise UnsupportedOperatorError(f"ONNX export: {e.current} with divisor_override")
    n = _pool_dims(e.current)
    k = _tuple(kernel_size, n)
    s = k if stride is None or stride == [] or stride == () else _tuple(stride, n)
    p = _tuple(padding, n)
    return _batched(e, x, n, lambda xs: e.g.op(
        "AveragePool", xs, kernel_shape=k, strides=s, pads=p + p, ceil_mode=int(ceil_mode),
        count_include_pad=int(count_include_pad)))


@register("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
          "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive_pool(e, out, x, output_size, return_indices=False):
    if isinstance(out, tuple):
        raise UnsupportedOperatorError(f"ONNX export: {e.current} with return_indices")
    n = _pool_dims(e.current)
    is_max = "max" in e.current
    spatial_in = list(x.shape[-n:])
    sizes = _tuple(output_size, n)
    sizes = [i if o is None else o for o, i in zip(
        output_size if isinstance(output_size, (tuple, list)) else sizes, spatial_in)]
    if all(o == 1 for o in sizes):
        return _batched(e, x, n, lambda xs: e.g.op(
            "GlobalMaxPool" if is_max else "GlobalAveragePool", xs))
    if any(i % o for i, o in zip(spatial_in, sizes)):
        raise UnsupportedOperatorError(
            f"ONNX export: {e.current} from {spatial_in} to {sizes} (ONNX pools need an "
            "output size that divides the input size)")
    k = [i // o for i, o in zip(spatial_in, sizes)]
    return _batched(e, x, n, lambda xs: e.g.op(
        "MaxPool" if is_max else "AveragePool", xs, kernel_shape=k, strides=k))


@register("lp_pool1d", "lp_pool2d")
def _lp_pool(e, out, x, norm_type, kernel_size, stride=None, ceil_mode=False):
    n = _pool_dims(e.current)
    k = _tuple(kernel_size, n)
    s = k if stride is None else _tuple(stride, n)
    if ceil_mode and e.g.opset < 18:
        raise UnsupportedOperatorError(f"ONNX export: {e.current} with ceil_mode=True needs "
                                       "opset_version 18 or later")
    extra = {"ceil_mode": int(ceil_mode)} if e.g.opset >= 18 else {}
    return _batched(e, x, n, lambda xs: e.g.op(
        "LpPool", xs, kernel_shape=k, strides=s, p=int(norm_type), **extra))


# ---- normalisation ----------------------------------------------------------------------

def _ones(e, n, dt, value=1.0):
    from ._graph import np_dtype
    return e.g.const(np.full((n,), value, dtype=np_dtype(dt)))


def _channel_view(e, name, ndim):
    """A per-channel (C,) tensor viewed as (C, 1, ...) against an (N, C, ...) input."""
    return e.g.op("Reshape", name, e.g.ints([-1] + [1] * (ndim - 2)))


def _batch_stats_norm(e, xs, x, dt, eps, axes):
    mean = reduce(e, "ReduceMean", xs, axes, True)
    d = e.g.op("Sub", xs, mean)
    var = reduce(e, "ReduceMean", e.g.op("Mul", d, d), axes, True)
    return e.g.op("Div", d, e.g.op("Sqrt", e.g.op("Add", var, e.name(float(eps), dtype=dt))))


def _affine(e, y, weight, bias, dt, ndim):
    if weight is not None:
        y = e.g.op("Mul", y, _channel_view(e, operand(e, weight, dt), ndim))
    if bias is not None:
        y = e.g.op("Add", y, _channel_view(e, operand(e, bias, dt), ndim))
    return y


@register("batch_norm")
def _batch_norm(e, out, x, running_mean, running_var, weight=None, bias=None, training=False,
                momentum=0.1, eps=1e-5):
    dt = out_dtype(out)
    xs = operand(e, x, dt)
    c = x.shape[1]
    if training or running_mean is None:
        axes = [0] + list(range(2, x.ndim))
        return _affine(e, _batch_stats_norm(e, xs, x, dt, eps, axes), weight, bias, dt, x.ndim)
    w = operand(e, weight, dt) if weight is not None else _ones(e, c, dt)
    b = operand(e, bias, dt) if bias is not None else _ones(e, c, dt, 0.0)
    return e.g.op("BatchNormalization", xs, w, b, operand(e, running_mean, dt),
                  operand(e, running_var, dt), epsilon=float(eps))


@register("layer_norm")
def _layer_norm(e, out, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    dt = out_dtype(out)
    shape = [int(s) for s in normalized_shape]
    n = int(np.prod(shape))
    w = operand(e, weight, dt) if weight is not None else e.g.op(
        "Reshape", _ones(e, n, dt), e.g.ints(shape))
    b = operand(e, bias, dt) if bias is not None else None
    return e.g.op("LayerNormalization", operand(e, x, dt), w, b, axis=-len(shape),
                  epsilon=float(eps))


@register("rms_norm")
def _rms_norm(e, out, x, normalized_shape, weight=None, eps=None):
    dt = out_dtype(out)
    xs = operand(e, x, dt)
    axes = list(range(x.ndim - len(normalized_shape), x.ndim))
    eps = float(np.finfo(np.float32).eps) if eps is None else float(eps)
    ms = reduce(e, "ReduceMean", e.g.op("Mul", xs, xs), axes, True)
    y = e.g.op("Div", xs, e.g.op("Sqrt", e.g.op("Add", ms, e.name(eps, dtype=dt))))
    return y if weight is None else e.g.op("Mul", y, operand(e, weight, dt))


@register("group_norm")
def _group_norm(e, out, x, num_groups, weight=None, bias=None, eps=1e-5):
    dt = out_dtype(out)
    xs = operand(e, x, dt)
    grouped = e.g.op("Reshape", xs, e.g.ints([0, int(num_groups), -1]))
    y = _batch_stats_norm(e, grouped, x, dt, eps, [2])
    y = e.g.op("Reshape", y, e.g.op("Shape", xs))
    return _affine(e, y, weight, bias, dt, x.ndim)


@register("instance_norm")
def _instance_norm(e, out, x, running_mean=None, running_var=None, weight=None, bias=None,
                   use_input_stats=True, momentum=0.1, eps=1e-5):
    dt = out_dtype(out)
    c = x.shape[1]
    if not use_input_stats:
        return _batch_norm(e, out, x, running_mean, running_var, weight, bias, False,
                           momentum, eps)
    w = operand(e, weight, dt) if weight is not None else _ones(e, c, dt)
    b = operand(e, bias, dt) if bias is not None else _ones(e, c, dt, 0.0)
    return e.g.op("InstanceNormalization", operand(e, x, dt), w, b, epsilon=float(eps))


@register("local_response_norm")
def _lrn(e, out, x, size, alpha=1e-4, beta=0.75, k=1.0):
    if x.ndim != 4 or int(size) % 2 == 0:
        raise UnsupportedOperatorError("ONNX export: local_response_norm needs 4-D input and "
                                       "an odd size (ONNX LRN centres its window otherwise)")
    return e.g.op("LRN", e.name(x), size=int(size), alpha=float(alpha), beta=float(beta),
                  bias=float(k))


# ---- resampling and padding ----------------------------------------------------------------

@register("interpolate", "upsample", "upsample_nearest", "upsample_bilinear")
def _interpolate(e, out, x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
    if antialias:
        raise UnsupportedOperatorError("ONNX export: interpolate with antialias=True")
    if e.current == "upsample_bilinear":
        mode, align_corners = "bilinear", True
    n = x.ndim - 2
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
             "nearest_mode": "floor"}
    if mode == "nearest-exact":
        attrs.update(coordinate_transformation_mode="half_pixel",
                     nearest_mode="round_prefer_ceil")
    elif mode in ("linear", "bilinear", "trilinear", "bicubic"):
        attrs = {"mode": "cubic" if mode == "bicubic" else "linear",
                 "coordinate_transformation_mode":
                     "align_corners" if align_corners else "pytorch_half_pixel"}
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.75
    elif mode == "area":
        return e.call(_adaptive_avg_fn(n), x, list(out.shape[2:]))
    elif mode != "nearest":
        raise UnsupportedOperatorError(f"ONNX export: interpolate mode '{mode}'")
    if size is not None or recompute_scale_factor:
        sizes = list(out.shape[2:]) if size is None else (
            list(size) if isinstance(size, (tuple, list)) else [size] * n)
        full = e.g.op("Concat", e.g.op("Shape", e.name(x), start=0, end=2),
                      e.int_vector(sizes), axis=0)
        return e.g.op("Resize", e.name(x), "", "", full, **attrs)
    sf = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * n
    scales = e.g.const(np.asarray([1.0, 1.0] + [float(s) for s in sf], dtype=np.float32))
    return e.g.op("Resize", e.name(x), "", scales, **attrs)


@register("grid_sample")
def _grid_sample(e, out, x, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """ONNX GridSample: 4-D inputs (opset 16-19 names its modes bilinear/bicubic, 20 on
    linear/cubic; 5-D inputs need opset 20)."""
    dt = out_dtype(out)
    if x.ndim != 4 and e.g.opset < 20:
        raise UnsupportedOperatorError("ONNX export: grid_sample of a 5-D input needs "
                                       "opset_version >= 20")
    names = ({"bilinear": "linear", "bicubic": "cubic"} if e.g.opset >= 20 else {})
    return e.g.op("GridSample", operand(e, x, dt), operand(e, grid, dt),
                  mode=names.get(mode, mode), padding_mode=padding_mode,
                  align_corners=int(bool(align_corners)))


def _adaptive_avg_fn(n):
    from ..nn import functional as F
    return {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[n]


@register("pad")
def _pad(e, out, x, pad, mode="constant", value=None):
    nd = x.ndim
    pad = list(pad)
    begins, ends = [0] * nd, [0] * nd
    for i in range(len(pad) // 2):
        d = nd - 1 - i
        begins[d], ends[d] = pad[2 * i], pad[2 * i + 1]
    if mode == "circular" and e.g.opset < 19:
        return _circular(e, x, begins, ends)
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
                 "circular": "wrap"}.get(mode)
    if onnx_mode is None:
        raise UnsupportedOperatorError(f"ONNX export: pad mode '{mode}'")
    pads = e.int_vector(begins + ends)
    if mode == "constant":
        v = e.name(0.0 if value is None else value, dtype=x.dtype)
        return e.g.op("Pad", e.name(x), pads, v, mode="constant")
    return e.g.op("Pad", e.name(x), pads, mode=onnx_mode)


def _circular(e, x, begins, ends):
    name = e.name(x)
    for d in range(x.ndim):
        b, a = int(begins[d]), int(ends[d])
        if not b and not a:
            continue
        parts = []
        if b:
            parts.append(e.g.op("Slice", name, e.g.ints([-b]), e.g.ints([INT_MAX]),
                                e.g.ints([d])))
        parts.append(name)
        if a:
            parts.append(e.g.op("Slice", name, e.g.ints([0]), e.g.ints([a]), e.g.ints([d])))
        name = e.g.op("Concat", *parts, axis=d)
    return name


@register("pixel_shuffle")
def _pixel_shuffle(e, out, x, upscale_factor):
    return e.g.op("DepthToSpace", e.name(x), blocksize=int(upscale_factor), mode="CRD")


@register("pixel_unshuffle")
def _pixel_unshuffle(e, out, x, downscale_factor):
    r = int(downscale_factor)
    c, h, w = x.shape[-3:]
    y = e.g.op("Reshape", e.name(x), e.g.ints([-1, c, h // r, r, w // r, r]))
    y = e.g.op("Transpose", y, perm=[0, 1, 3, 5, 2, 4])
    return e.g.op("Reshape", y, e.int_vector(list(out.shape[:-3]) + [c * r * r, h // r,
                                                                      w // r])) \
        if x.ndim != 4 else e.g.op("Reshape", y, e.g.ints([-1, c * r * r, h // r, w // r]))


def _bool_tensor(v):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray([v]))



def _identity_kernels(c, kh, kw, dtype):
    """(C*kh*kw, 1, kh, kw) one-hot kernels: a grouped conv with them copies each window."""
    from ._graph import np_dtype
    k = kh * kw
    w = np.zeros((c * k, 1, kh, kw), dtype=np_dtype(dtype))
    for ch in range(c):
        for i in range(kh):
            for j in range(kw):
                w[ch * k + i * kw + j, 0, i, j] = 1
    return w


@register("unfold")
def _unfold(e, out, x, kernel_size, dilation=1, padding=0, stride=1):
    if not isinstance(x, Value) or x.ndim != 4:
        raise UnsupportedOperatorError("ONNX export: unfold (im2col) of a 4-D input only")
    c = x.shape[1]
    kh, kw = _tuple(kernel_size, 2)
    p = _tuple(padding, 2)
    y = e.g.op("Conv", e.name(x), e.g.const(_identity_kernels(c, kh, kw, x.dtype)),
               kernel_shape=[kh, kw], strides=_tuple(stride, 2), pads=p + p,
               dilations=_tuple(dilation, 2), group=c)
    return e.g.op("Reshape", y, e.g.ints([0, c * kh * kw, -1]))


@register("fold")
def _fold(e, out, x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    kh, kw = _tuple(kernel_size, 2)
    H, W = _tuple(output_size, 2)
    d, p, s = _tuple(dilation, 2), _tuple(padding, 2), _tuple(stride, 2)
    c = out.shape[-3]
    grid = [(n + 2 * pp - dd * (k - 1) - 1) // ss + 1
            for n, pp, dd, k, ss in zip((H, W), p, d, (kh, kw), s)]
    natural = [(g - 1) * ss - 2 * pp + dd * (k - 1) + 1
               for g, ss, pp, dd, k in zip(grid, s, p, d, (kh, kw))]
    cols = e.g.op("Reshape", e.name(x), e.g.ints([-1, c * kh * kw] + grid))
    y = e.g.op("ConvTranspose", cols, e.g.const(_identity_kernels(c, kh, kw, x.dtype)),
               kernel_shape=[kh, kw], strides=s, pads=p + p, dilations=d, group=c,
               output_padding=[n - m for n, m in zip((H, W), natural)])
    return y if x.ndim == 3 else e.g.op("Squeeze", y, e.g.ints([0]))
