"""Ops on quantized tensors (``torch.ao.nn.quantized.functional``): each takes QTensors,
calls an int8 kernel (`kernels/cpu/quantized.py`, `qgemm.py`) on their integers and
wraps the result with its qparams. Outputs of linear/conv/add/cat are quint8 with the given (scale,
zero_point); relu and pooling keep their input's qparams (they commute with the affine
map)."""
import numpy as np

from nbtorch._qtensor import QTensor, qint8, quint8, check_qparams

__all__ = ["linear", "conv1d", "conv2d", "linear_packed", "conv2d_packed", "relu",
           "max_pool1d", "max_pool2d", "adaptive_avg_pool2d", "avg_pool2d", "interpolate",
           "upsample", "upsample_nearest", "threshold", "celu",
           "add", "add_relu", "mul", "mul_scalar", "add_scalar", "matmul", "cat", "packed_of",
           "hardswish", "elu", "leaky_relu", "hardtanh", "hardsigmoid", "sigmoid", "tanh",
           "clamp", "PackedWeight"]


def _k():
    from nbtorch.kernels.cpu import quantized
    return quantized


def _kernel(op):
    """The registry's kernel of `op` on the CPU (replaceable with nbtorch.library.override)."""
    from nbtorch._registry import get_kernel
    return get_kernel(op, "cpu")


def _from_numpy(a):
    from nbtorch import from_numpy
    return from_numpy(a)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _check_q(x, fn):
    """A per-tensor quantized input, else PyTorch's errors (NotImplementedError for a float
    tensor: the quantized op has no CPU kernel)."""
    if not isinstance(x, QTensor):
        raise NotImplementedError(f"Could not run '{fn}' with arguments from the 'CPU' "
                                  "backend: expected a quantized tensor (run it after a "
                                  "QuantStub / nbtorch.quantize_per_tensor), got a float one")
    if len(x._qparams) != 2:
        raise RuntimeError(f"Expected quantizer->qscheme() == kPerTensorAffine to be true, "
                           f"but got false.  ({fn}: per-tensor quantized activations only)")
    return x


class PackedWeight:
    """An int8 weight ready for the GEMM: (N, K) integers, per-row scales and zero
    points, the rows' sums (the zero-point correction), the float bias, and the weight
    packed for the VNNI engine where the CPU has it (`kernels/cpu/qgemm.py`)."""

    def __init__(self, qweight, bias):
        w = np.ascontiguousarray(qweight._ints())
        n = w.shape[0]
        self.shape = w.shape
        self.w = w.reshape(n, -1)
        if len(qweight._qparams) == 2:
            s, z = qweight._qparams
            self.scales = np.full(n, s, np.float64)
            self.zps = np.full(n, z, np.int32)
        else:
            scales, zps, axis = qweight._qparams
            if axis != 0:
                raise RuntimeError("quantized linear/conv: per-channel weights must be "
                                   "quantized along axis 0")
            self.scales, self.zps = scales.astype(np.float64), zps.astype(np.int32)
        self.qweight = qweight
        from nbtorch.kernels.cpu import qgemm
        self.colsum = np.empty(n, np.int32)
        qgemm.row_sums(self.w, self.colsum)         # the GEMM's zero-point correction
        # VNNI panels (None without VNNI); a conv weight's in channels-last order
        self.wp = (qgemm.pack_conv(w) if w.ndim == 4 else qgemm.pack(self.w))
        self.bias = (np.zeros(n, np.float32) if bias is None
                     else np.asarray(bias.detach()._host(), np.float32))
        self.has_bias = bias is not None
        # the bias as the graph ops take it (`ops.py`): a tensor over the packed values
        self.bias_tensor = None if bias is None else _from_numpy(self.bias)
        qweight.__dict__["_packed_weight"] = self   # found again by `packed_of`

    def group(self, groups):
        """One PackedWeight per group (grouped / depthwise conv), built once: the rows of
        each group's output channels with their qparams and bias."""
        cache = getattr(self, "_groups", None)
        if cache is None or len(cache) != groups:
            q, n = self.qweight, self.shape[0]
            per, ints = n // groups, np.ascontiguousarray(q._ints())
            cache = []
            for g in range(groups):
                rows = slice(g * per, (g + 1) * per)
                sub = (QTensor._from_int(ints[rows], qint8, *q._qparams)
                       if len(q._qparams) == 2 else
                       QTensor._from_int(ints[rows], qint8, scales=q._qparams[0][rows],
                                         zero_points=q._qparams[1][rows], axis=0))
                bias = None
                if self.has_bias:
                    import nbtorch
                    bias = nbtorch.from_numpy(self.bias[rows].copy())
                cache.append(PackedWeight(sub, bias))
            self._groups = cache
        return cache

    def buffers(self):
        """The weight as plain tensors for a state dict: int8 values (the layer's shape),
        scales (float64) and zero points (int64), one each for a per-tensor weight."""
        import nbtorch
        q = self.qweight._qparams
        scales, zps = ((np.array([q[0]]), np.array([q[1]])) if len(q) == 2 else q[:2])
        return (nbtorch.from_numpy(self.w.reshape(self.shape)),
                nbtorch.from_numpy(np.asarray(scales, np.float64)),
                nbtorch.from_numpy(np.asarray(zps, np.int64)))

    @classmethod
    def from_buffers(cls, w, scales, zps, bias):
        """Inverse of `buffers` (a one-element scale means a per-tensor weight)."""
        w, s, z = w._host().copy(), scales._host(), zps._host()
        q = (QTensor._from_int(w, qint8, float(s[0]), int(z[0])) if s.size == 1 else
             QTensor._from_int(w, qint8, scales=s, zero_points=z, axis=0))
        return cls(q, bias)

    def requant_factors(self, in_scale, out_scale):
        """float32 (mult, bias_q): fbgemm's act_times_w_scale / out_scale and
        bias / act_times_w_scale."""
        a_w = (np.float32(in_scale) * self.scales.astype(np.float32)).astype(np.float32)
        mult = (a_w / np.float32(out_scale)).astype(np.float32)
        return mult, (self.bias / a_w).astype(np.float32)


def packed_of(weight, bias):
    """The PackedWeight of (weight, bias): the one made last from these very tensors (a
    layer's own), else a new one (a loaded graph's weight: packed on its first call)."""
    packed = weight.__dict__.get("_packed_weight")
    if packed is not None and packed.qweight is weight and packed.bias_tensor is bias:
        return packed
    return PackedWeight(weight, bias)


def linear_packed(x, packed, scale, zero_point, relu=False):
    """Quantized ``x @ W^T + b`` requantized to (scale, zero_point), quint8."""
    x = _check_q(x, "quantized::linear")
    scale, zero_point = check_qparams(scale, zero_point, quint8)
    a = np.ascontiguousarray(x._ints()).reshape(-1, packed.w.shape[1])
    sx, zx = x._qparams
    mult, bias_q = packed.requant_factors(sx, scale)
    out = np.empty((a.shape[0], packed.w.shape[0]), np.uint8)
    _kernel("quantized_linear")(a, zx, packed.w, packed.wp, packed.zps, packed.colsum,
                                bias_q, mult, zero_point, 0, 255, relu, out)
    return QTensor._from_int(out.reshape(tuple(x.shape[:-1]) + (out.shape[1],)), quint8,
                             scale, zero_point)


def conv2d_packed(x, packed, stride, padding, dilation, groups, scale, zero_point,
                  relu=False):
    """Quantized 2-D convolution (zero padding = the input's zero point; groups run one
    by one)."""
    x = _check_q(x, "quantized::conv2d")
    scale, zero_point = check_qparams(scale, zero_point, quint8)
    xi = np.ascontiguousarray(x._ints())
    n, _, h, w = xi.shape
    o, _, kh, kw = packed.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    sx, zx = x._qparams
    out = np.empty((n, o, oh, ow), np.uint8)
    # grouped / depthwise: each group's channels through the same kernel
    parts = [packed] if groups == 1 else packed.group(groups)
    cin, cout = xi.shape[1] // groups, o // groups
    for g, part in enumerate(parts):
        xg = xi if groups == 1 else np.ascontiguousarray(xi[:, g * cin:(g + 1) * cin])
        og = out if groups == 1 else np.empty((n, cout, oh, ow), np.uint8)
        mult, bias_q = part.requant_factors(sx, scale)
        _kernel("quantized_conv2d")(xg, zx, part.w.reshape(part.shape), part.wp, part.zps,
                                    part.colsum, bias_q, mult, zero_point, relu, og,
                                    (sh, sw), (ph, pw), (dh, dw))
        if groups != 1:
            out[:, g * cout:(g + 1) * cout] = og
    return QTensor._from_int(out, quint8, scale, zero_point)


def linear(input, weight, bias=None, scale=None, zero_point=None):
    """``torch.ao.nn.quantized.functional.linear``: quint8 input, qint8 weight, float bias;
    output (scale, zero_point), the input's when not given."""
    x = _check_q(input, "quantized::linear")
    if scale is None:
        scale, zero_point = x._qparams
    return linear_packed(x, PackedWeight(weight, bias), scale, zero_point)


def conv2d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=quint8):
    """``torch.ao.nn.quantized.functional.conv2d``: quint8 (N, C, H, W) input, qint8
    weight, float bias, output (scale, zero_point)."""
    if padding_mode != "zeros":
        raise NotImplementedError("Only zero-padding is supported!")
    if dtype is not quint8:
        raise NotImplementedError("Only torch.quint8 is supported for activation tensor!")
    if input.dim() != 4:
        raise ValueError("Input shape must be `(N, C, H, W)`!")
    return conv2d_packed(_check_q(input, "quantized::conv2d"), PackedWeight(weight, bias),
                         _pair(stride), _pair(padding), _pair(dilation), groups, scale,
                         zero_point)


def conv1d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=quint8):
    """``torch.ao.nn.quantized.functional.conv1d``: a height-one `conv2d`."""
    if input.dim() != 3:
        raise ValueError("Input shape must be `(N, C, L)`!")
    one = (lambda v: (1, v[0] if isinstance(v, (tuple, list)) else v))
    pad = (0, padding[0] if isinstance(padding, (tuple, list)) else padding)
    return conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias, one(stride), pad,
                  one(dilation), groups, padding_mode, scale, zero_point, dtype).squeeze(2)


def relu(x, inplace=False):
    """max(x, zero_point) on the integers."""
    x = _check_q(x, "quantized::relu")
    q = np.ascontiguousarray(x._ints())
    out = np.empty_like(q)
    _k().qrelu(q.reshape(-1), out.reshape(-1), x._qparams[1])
    return QTensor._from_int(out, x.dtype, *x._qparams)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max pooling on the integers (dilation 1, floor mode)."""
    x = _check_q(x, "quantized::max_pool2d")
    if _pair(dilation) != (1, 1) or ceil_mode or return_indices:
        raise NotImplementedError("quantized max_pool2d: dilation, ceil_mode and "
                                  "return_indices are not implemented in nbtorch yet")
    (kh, kw), (ph, pw) = _pair(kernel_size), _pair(padding)
    sh, sw = _pair(kernel_size if stride is None or stride == [] else stride)
    q = np.ascontiguousarray(x._ints())
    lead, (h, w) = q.shape[:-2], q.shape[-2:]
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    out = np.empty(lead + (oh, ow), q.dtype)
    _k().qmax_pool2d(q.reshape(-1, h, w), out.reshape(-1, oh, ow), kh, kw, sh, sw, ph, pw)
    return QTensor._from_int(out, x.dtype, *x._qparams)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max pooling over the last dim (a height-one `max_pool2d`)."""
    one = (lambda v: (1, v[0] if isinstance(v, (tuple, list)) else v))
    out = max_pool2d(input.unsqueeze(-2), one(kernel_size),
                     None if stride is None else one(stride),
                     (0, padding[0] if isinstance(padding, (tuple, list)) else padding),
                     one(dilation), ceil_mode, return_indices)
    return out.squeeze(-2)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Nearest interpolation of a quantized tensor (on its integers)."""
    import nbtorch
    _check_q(input, "quantized::interpolate")
    return nbtorch.nn.functional.interpolate(input, size, scale_factor, mode, align_corners)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, "nearest")


def adaptive_avg_pool2d(x, output_size):
    """Adaptive average pooling; each mean rounded half to even."""
    x = _check_q(x, "quantized::adaptive_avg_pool2d")
    q = np.ascontiguousarray(x._ints())
    lead, (h, w) = q.shape[:-2], q.shape[-2:]
    oh, ow = _pair(output_size)
    oh, ow = oh or h, ow or w
    out = np.empty(lead + (oh, ow), q.dtype)
    _k().qadaptive_avg_pool2d(q.reshape(-1, h, w), out.reshape(-1, oh, ow))
    return QTensor._from_int(out, x.dtype, *x._qparams)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Average pooling for the non-overlapping, unpadded case (kernel == stride)."""
    kh, kw = _pair(kernel_size)
    if _pair(stride or kernel_size) != (kh, kw) or _pair(padding) != (0, 0):
        raise NotImplementedError("quantized avg_pool2d: only stride == kernel_size "
                                  "without padding is implemented in nbtorch yet")
    h, w = x.shape[-2:]
    return adaptive_avg_pool2d(x, (h // kh, w // kw)) if h % kh == 0 == w % kw else \
        _refuse_avg()


def _refuse_avg():
    raise NotImplementedError("quantized avg_pool2d: the input size must be a multiple "
                              "of the kernel in nbtorch")


def _second_like_first(a, b, fn):
    """b's integers broadcast to a's shape (PyTorch's binary quantized ops give an output
    of a's size), C-contiguous."""
    qb = b._ints()
    try:
        shape = np.broadcast_shapes(tuple(a.shape), qb.shape)
    except ValueError:
        shape = None
    if shape != tuple(a.shape):
        raise RuntimeError(f"{fn}: output with shape {list(a.shape)} doesn't match the "
                           f"broadcast shape {list(shape or b.shape)}")
    return np.ascontiguousarray(np.broadcast_to(qb, shape))


def add(a, b, scale, zero_point, relu=False):
    """Quantized a + b (b broadcast to a's shape), requantized to (scale, zero_point)."""
    a, b = _check_q(a, "quantized::add"), _check_q(b, "quantized::add")
    scale, zero_point = check_qparams(scale, zero_point, a.dtype)
    qa, qb = np.ascontiguousarray(a._ints()), _second_like_first(a, b, "quantized::add")
    out = np.empty(qa.shape, a.dtype.underlying.np)
    (sa, za), (sb, zb) = a._qparams, b._qparams
    _k().qadd(qa.reshape(-1), za, sa, qb.reshape(-1), zb, sb, out.reshape(-1), scale,
              zero_point, a.dtype.qmin, a.dtype.qmax, relu)
    return QTensor._from_int(out, a.dtype, scale, zero_point)


def add_relu(a, b, scale, zero_point):
    return add(a, b, scale, zero_point, relu=True)


def mul(a, b, scale, zero_point, relu=False):
    """Quantized a * b (b broadcast to a's shape): the integer product requantized with
    float32(sa * sb / scale), as fbgemm's qmul."""
    a, b = _check_q(a, "quantized::mul"), _check_q(b, "quantized::mul")
    scale, zero_point = check_qparams(scale, zero_point, a.dtype)
    qa, qb = np.ascontiguousarray(a._ints()), _second_like_first(a, b, "quantized::mul")
    out = np.empty(qa.shape, a.dtype.underlying.np)
    (sa, za), (sb, zb) = a._qparams, b._qparams
    mult = np.float32(sa) * np.float32(sb) * (np.float32(1) / np.float32(scale))
    _k().qmul(qa.reshape(-1), za, qb.reshape(-1), zb, out.reshape(-1), np.float32(mult),
              zero_point, a.dtype.qmin, a.dtype.qmax, relu)
    return QTensor._from_int(out, a.dtype, scale, zero_point)


def mul_scalar(a, c, relu=False):
    """``quantized::mul_scalar``: the integers are kept (c > 0: scale * c), zeroed
    (c == 0: scale 1, zero point 0) or mirrored (c < 0: q' = qmax + qmin - q)."""
    a = _check_q(a, "quantized::mul_scalar")
    (s, z), dt, c = a._qparams, a.dtype, float(c)
    q = np.ascontiguousarray(a._ints())
    if c > 0:
        out, s2, z2 = q.copy(), c * s, z
    elif c == 0:
        out, s2, z2 = np.zeros_like(q), 1.0, 0
    else:
        out = (dt.qmax + dt.qmin - q.astype(np.int64)).astype(q.dtype)
        s2, z2 = abs(c) * s, dt.qmax - (z - dt.qmin)
    if relu:
        out = np.maximum(out, z2).astype(q.dtype)
    return QTensor._from_int(out, dt, s2, z2)


def add_scalar(a, c, relu=False):
    """``quantized::add_scalar``: c rounds to c_q = rint(c / scale) steps; the zero point
    moves by -c_q, and where it would leave the dtype's range the scale widens instead
    and the integers are requantized (PyTorch's rule)."""
    a = _check_q(a, "quantized::add_scalar")
    (s, z), dt = a._qparams, a.dtype
    qmin, qmax = dt.qmin, dt.qmax
    cq = int(np.rint(float(c) / s))
    q = np.ascontiguousarray(a._ints())
    if qmin <= z - cq <= qmax:
        out = q.copy()
        if relu:
            out = np.maximum(out, z - cq).astype(q.dtype)
        return QTensor._from_int(out, dt, s, z - cq)
    if qmin > z - cq:
        s2, z2 = (float(qmax) - (z - cq)) / (float(qmax) - qmin) * s, qmin
    else:
        s2, z2 = (float(z - cq) - qmin) / (float(qmax) - qmin) * s, qmax
    mult = np.float32(s) * (np.float32(1) / np.float32(s2))
    out = np.empty_like(q)
    _k().qrequantize_shift(q.reshape(-1), z, cq, out.reshape(-1), np.float32(mult), z2,
                           qmin, qmax, relu)
    return QTensor._from_int(out, dt, s2, z2)


def matmul(a, b, scale, zero_point):
    """``quantized::matmul``: float matmul of the dequantized inputs, quantized to
    (scale, zero_point) (PyTorch's x86 path)."""
    import nbtorch
    a, b = _check_q(a, "quantized::matmul"), _check_q(b, "quantized::matmul")
    if a.dtype is not b.dtype:
        raise RuntimeError("MatMul operands should have same data type.")
    from nbtorch._qtensor import quantize_per_tensor
    return quantize_per_tensor(nbtorch.matmul(a.dequantize(), b.dequantize()), scale,
                               zero_point, a.dtype)


def cat(xs, dim=0, scale=None, zero_point=None):
    """Concatenate quantized tensors, requantized to (scale, zero_point) (default: the
    first input's)."""
    xs = [_check_q(x, "quantized::cat") for x in xs]
    from nbtorch._qtensor import quantize_per_tensor
    import nbtorch
    if scale is None:
        scale, zero_point = xs[0]._qparams
    same = all(x._qparams == (scale, zero_point) and x.dtype is xs[0].dtype for x in xs)
    if same:
        ints = np.concatenate([x._ints() for x in xs], axis=dim)
        return QTensor._from_int(ints, xs[0].dtype, scale, zero_point)
    floats = nbtorch.cat([x.dequantize() for x in xs], dim)
    return quantize_per_tensor(floats, scale, zero_point, xs[0].dtype)


from .activation import (hardswish, elu, leaky_relu, hardtanh, hardsigmoid,  # noqa: E402
                         sigmoid, tanh, clamp, threshold, celu)
