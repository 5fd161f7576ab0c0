"""ONNX neural-network ops run with nbtorch.nn.functional (convolution, pooling,
normalisation, resize, pad, recurrent layers); registered into `_import_ops.OPS`."""
import numpy as np

import nbtorch
from nbtorch.nn import functional as F

from ._import_ops import _ints, op

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAXPOOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVGPOOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _pads(x, a, n):
    """(symmetric padding for the op, explicit pads for F.pad or None)."""
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise NotImplementedError(f"auto_pad={a['auto_pad']}")
    pads = list(a.get("pads", [0] * (2 * n)))
    begin, end = pads[:n], pads[n:]
    if begin == end:
        return begin, None
    torch_pad = []
    for d in reversed(range(n)):
        torch_pad += [begin[d], end[d]]
    return [0] * n, torch_pad


@op("Conv")
def _conv(m, x, a):
    n = x[1].ndim - 2
    pad, extra = _pads(x, a, n)
    inp = x[0] if extra is None else F.pad(x[0], extra)
    return _CONV[n](inp, x[1], x[2] if len(x) > 2 else None, a.get("strides", [1] * n), pad,
                    a.get("dilations", [1] * n), a.get("group", 1))


@op("ConvTranspose")
def _conv_transpose(m, x, a):
    n = x[1].ndim - 2
    pad, extra = _pads(x, a, n)
    if extra is not None or "output_shape" in a:
        raise NotImplementedError("ConvTranspose with asymmetric pads or output_shape")
    return _CONVT[n](x[0], x[1], x[2] if len(x) > 2 else None, a.get("strides", [1] * n), pad,
                     a.get("output_padding", [0] * n), a.get("group", 1),
                     a.get("dilations", [1] * n))


@op("MaxPool")
def _maxpool(m, x, a):
    k = a["kernel_shape"]
    n = len(k)
    pad, extra = _pads(x, a, n)
    inp = x[0] if extra is None else F.pad(x[0], extra, value=float("-inf"))
    return _MAXPOOL[n](inp, k, a.get("strides", [1] * n), pad, a.get("dilations", [1] * n),
                       bool(a.get("ceil_mode", 0)))


@op("AveragePool")
def _avgpool(m, x, a):
    k = a["kernel_shape"]
    n = len(k)
    pad, extra = _pads(x, a, n)
    if extra is not None:
        raise NotImplementedError("AveragePool with asymmetric pads")
    return _AVGPOOL[n](x[0], k, a.get("strides", [1] * n), pad, bool(a.get("ceil_mode", 0)),
                       bool(a.get("count_include_pad", 0)))


@op("LpPool")
def _lppool(m, x, a):
    k = a["kernel_shape"]
    n = len(k)
    if any(a.get("pads", [0])) or n not in (1, 2):
        raise NotImplementedError("LpPool with pads or over 3-D")
    fn = F.lp_pool1d if n == 1 else F.lp_pool2d
    return fn(x[0], float(a.get("p", 2)), k, a.get("strides", [1] * n),
              bool(a.get("ceil_mode", 0)))


@op("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(m, x, a):
    dims = list(range(2, x[0].ndim))
    if m._op == "GlobalAveragePool":
        return x[0].mean(dims, keepdim=True)
    return nbtorch.amax(x[0], dims, keepdim=True)


@op("BatchNormalization")
def _batchnorm(m, x, a):
    if a.get("training_mode", 0):
        raise NotImplementedError("BatchNormalization in training mode")
    return F.batch_norm(x[0], x[3], x[4], x[1], x[2], False, 0.0, a.get("epsilon", 1e-5))


@op("LayerNormalization")
def _layernorm(m, x, a):
    axis = a.get("axis", -1)
    axis = axis + x[0].ndim if axis < 0 else axis
    shape = list(x[0].shape[axis:])
    return F.layer_norm(x[0], shape, x[1].reshape(shape),
                        x[2].reshape(shape) if len(x) > 2 and x[2] is not None else None,
                        a.get("epsilon", 1e-5))


@op("InstanceNormalization")
def _instancenorm(m, x, a):
    return F.instance_norm(x[0], None, None, x[1], x[2], True, 0.0, a.get("epsilon", 1e-5))


@op("LRN")
def _lrn(m, x, a):
    return F.local_response_norm(x[0], a["size"], a.get("alpha", 1e-4), a.get("beta", 0.75),
                                 a.get("bias", 1.0))


@op("Pad")
def _pad(m, x, a):
    pads = _ints(x[1]) if len(x) > 1 and x[1] is not None else list(a.get("pads"))
    nd = x[0].ndim
    axes = _ints(x[3]) if len(x) > 3 and x[3] is not None else list(range(nd))
    k = len(axes)
    begin, end = pads[:k], pads[k:]
    full_b, full_e = [0] * nd, [0] * nd
    for ax, b, e in zip(axes, begin, end):
        full_b[ax % nd], full_e[ax % nd] = b, e
    torch_pad = []
    for d in reversed(range(nd)):
        torch_pad += [full_b[d], full_e[d]]
    while len(torch_pad) > 2 and torch_pad[-2:] == [0, 0]:
        torch_pad = torch_pad[:-2]
    mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
            "wrap": "circular"}[a.get("mode", "constant")]
    value = None
    if mode == "constant":
        value = x[2].item() if len(x) > 2 and x[2] is not None else 0.0
    return F.pad(x[0], torch_pad, mode, value)


@op("Resize", "Upsample")
def _resize(m, x, a):
    mode = a.get("mode", "nearest")
    coord = a.get("coordinate_transformation_mode", "half_pixel")
    nd = x[0].ndim - 2
    scales = x[2] if len(x) > 2 and x[2] is not None and x[2].numel() else None
    sizes = x[3] if len(x) > 3 and x[3] is not None else None
    if m._op == "Upsample":
        scales = x[1]
    kw = {}
    if sizes is not None:
        kw["size"] = _ints(sizes)[2:]
    else:
        kw["scale_factor"] = [float(s) for s in scales.tolist()[2:]]
    if mode == "nearest":
        nearest = a.get("nearest_mode", "round_prefer_floor")
        if coord == "asymmetric" and nearest == "floor":
            fmode = "nearest"
        elif coord == "half_pixel" and nearest == "round_prefer_ceil":
            fmode = "nearest-exact"
        else:
            raise NotImplementedError(f"Resize nearest with {coord}/{nearest}")
        return F.interpolate(x[0], mode=fmode, **kw)
    if mode == "linear":
        fmode = {1: "linear", 2: "bilinear", 3: "trilinear"}[nd]
        if coord == "align_corners":
            return F.interpolate(x[0], mode=fmode, align_corners=True, **kw)
        if coord in ("pytorch_half_pixel", "half_pixel"):
            return F.interpolate(x[0], mode=fmode, align_corners=False, **kw)
    raise NotImplementedError(f"Resize mode={mode} coordinate_transformation_mode={coord}")


@op("GridSample")
def _grid_sample(m, x, a):
    mode = {"linear": "bilinear", "cubic": "bicubic"}.get(a.get("mode", "bilinear"),
                                                         a.get("mode", "bilinear"))
    return F.grid_sample(x[0], x[1], mode=mode, padding_mode=a.get("padding_mode", "zeros"),
                         align_corners=bool(a.get("align_corners", 0)))


# ---- recurrent layers -------------------------------------------------------------------

_FROM_ONNX = {"LSTM": [0, 2, 3, 1], "GRU": [1, 0, 2], "RNN": [0]}


@op("LSTM", "GRU", "RNN")
def _recurrent(m, x, a):
    kind = m._op
    if a.get("layout", 0) or (len(x) > 4 and x[4] is not None):
        raise NotImplementedError(f"{kind} with layout=1 or sequence_lens")
    if kind == "GRU" and not a.get("linear_before_reset", 0):
        raise NotImplementedError("GRU with linear_before_reset=0 (PyTorch's GRU resets "
                                  "after the linear map)")
    H = a["hidden_size"]
    direction = a.get("direction", "forward")
    if direction == "reverse":
        raise NotImplementedError(f"{kind} with direction=reverse")
    dirs = 2 if direction == "bidirectional" else 1
    acts = a.get("activations")
    mode = kind
    if kind == "RNN":
        act = (acts or ["Tanh"])[0]
        mode = "RNN_TANH" if act.lower() == "tanh" else "RNN_RELU"
        if act.lower() not in ("tanh", "relu"):
            raise NotImplementedError(f"RNN activation {act}")
    layer = _layer(m, kind, mode, x, H, dirs)
    h0 = x[5] if len(x) > 5 and x[5] is not None else None
    c0 = x[6] if len(x) > 6 and x[6] is not None else None
    X = x[0]
    if kind == "LSTM":
        state = None if h0 is None else (h0, c0 if c0 is not None else nbtorch.zeros_like(h0))
        y, (h, c) = layer(X, state)
        outs = (h, c)
    else:
        y, h = layer(X, h0)
        outs = (h,)
    T, N = y.shape[0], y.shape[1]
    Y = y.reshape(T, N, dirs, H).permute(0, 2, 1, 3)
    return (Y,) + outs


def _layer(m, kind, mode, x, H, dirs):
    """An nbtorch RNN/LSTM/GRU module holding this node's weights (cached per node)."""
    key = (id(x[1]), id(x[2]), kind)
    cache = m.__dict__.setdefault("_rnn_cache", {})
    hit = cache.get(key)
    if hit is not None and hit[0] is x[1]:
        return hit[1]
    from ..nn import GRU, LSTM, RNN
    W, R = x[1].detach().cpu().numpy(), x[2].detach().cpu().numpy()
    B = x[3].detach().cpu().numpy() if len(x) > 3 and x[3] is not None else None
    order = _FROM_ONNX[kind]
    G = len(order)

    def gates(arr):
        return np.concatenate([arr[g * H:(g + 1) * H] for g in order], axis=0)
    input_size = W.shape[-1]
    if kind == "LSTM":
        layer = LSTM(input_size, H, bidirectional=dirs == 2)
    elif kind == "GRU":
        layer = GRU(input_size, H, bidirectional=dirs == 2)
    else:
        layer = RNN(input_size, H, nonlinearity="tanh" if mode == "RNN_TANH" else "relu",
                    bidirectional=dirs == 2)
    with nbtorch.no_grad():
        for d in range(dirs):
            sfx = "_l0" + ("_reverse" if d else "")
            getattr(layer, "weight_ih" + sfx).copy_(nbtorch.tensor(gates(W[d])))
            getattr(layer, "weight_hh" + sfx).copy_(nbtorch.tensor(gates(R[d])))
            b = B[d] if B is not None else np.zeros(2 * G * H, W.dtype)
            getattr(layer, "bias_ih" + sfx).copy_(nbtorch.tensor(gates(b[:G * H])))
            getattr(layer, "bias_hh" + sfx).copy_(nbtorch.tensor(gates(b[G * H:])))
    layer = layer.to(x[0].device).eval().requires_grad_(False)
    cache[key] = (x[1], layer)
    return layer
