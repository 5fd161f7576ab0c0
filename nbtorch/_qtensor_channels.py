"""Per-channel qparams of quantized tensors: which channels a view's elements come from,
and the float zero points of ``per_channel_affine_float_qparams`` (embedding tables)."""
import numpy as np

__all__ = ["channel_qparams", "float_zero_points", "quantize_float_qparams",
           "dequantize_float_qparams"]


def channel_qparams(q, shape, strides, offset):
    """The per-channel qparams of a view (shape, strides, offset) of per-channel `q`: the
    channels its elements come from, read through the same strides from a map of q's
    storage; they must vary along one dim of the view (the new axis; a view of a single
    channel has that channel's per-tensor qparams), else the view mixes channels, which
    PyTorch refuses too (views kept q's scales before: dequantize was wrong)."""
    scales, zps, axis = q._qparams
    size = q._storage.data.size
    chan = np.full(size, -1, np.int64)
    idx = np.lib.stride_tricks.as_strided(
        chan[q._offset:], q._shape, [s * chan.itemsize for s in q._strides], writeable=True)
    shape_c = [1] * len(q._shape)
    shape_c[axis] = q._shape[axis]
    idx[...] = np.arange(q._shape[axis]).reshape(shape_c)
    if not shape:
        c = int(chan[offset])
        if c >= 0 and float_zero_points(zps):
            raise NotImplementedError("a single element of a tensor with float zero "
                                      "points (per_channel_affine_float_qparams)")
        return (float(scales[c]), int(zps[c])) if c >= 0 else q._qparams
    view = np.lib.stride_tricks.as_strided(chan[offset:], shape,
                                           [s * chan.itemsize for s in strides])
    if view.size == 0:
        return q._qparams
    varying = [d for d in range(len(shape)) if shape[d] > 1 and
               not (view == view.take([0], axis=d)).all()]
    if not varying:                     # one channel left: its scale for every element
        c = int(view.reshape(-1)[0])
        if float_zero_points(zps):
            raise NotImplementedError("a single-channel view of a tensor with float "
                                      "zero points (per_channel_affine_float_qparams)")
        return (float(scales[c]), int(zps[c]))
    d = varying[0]
    lines = np.moveaxis(view, d, 0).reshape(shape[d], -1)
    if len(varying) > 1 or not (lines == lines[:, :1]).all() or (lines < 0).any():
        raise RuntimeError("this view of a per-channel quantized tensor mixes its channels "
                           "(PyTorch refuses it too); call .dequantize() first")
    channels = lines[:, 0]
    return (scales[channels], zps[channels], d)


def float_zero_points(zps):
    """Whether per-channel zero points are floats (per_channel_affine_float_qparams)."""
    return np.asarray(zps).dtype.kind == "f"


def quantize_float_qparams(x, s, z, axis, qmin, qmax):
    """PyTorch's float-qparams quantize: rint(x * float32(1 / scale) + zero_point) in
    float32 (a zero scale counts as 1), clamped; float32 integers out."""
    shape = [1] * x.ndim
    shape[axis] = -1
    inv = np.where(s == 0, np.float32(1), np.float32(1) / np.where(s == 0, 1, s))
    q = np.rint(x * inv.astype(np.float32).reshape(shape) + z.reshape(shape))
    return np.clip(q, qmin, qmax)


def dequantize_float_qparams(q, scales, zps, axis):
    """float32 (q - zero_point) * scale along `axis`, as PyTorch's."""
    shape = [1] * q.ndim
    shape[axis] = -1
    return (q.astype(np.float32) - zps.reshape(shape)) * scales.reshape(shape)
