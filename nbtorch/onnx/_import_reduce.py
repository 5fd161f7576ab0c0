"""ONNX reductions, ArgMax/ArgMin, Softmax/LogSoftmax and Gemm run with nbtorch;
registered into `_import_ops.OPS`."""
import nbtorch
from nbtorch.nn import functional as F

from ._import_ops import OPS, _axes, op


def _reduce_axes(m, x, a, t):
    axes = _axes(x, a) if (m._op == "ReduceSum" or m.opset >= 18) else a.get("axes")
    if not axes:
        if a.get("noop_with_empty_axes", 0):
            return None
        axes = list(range(t.ndim))
    return [d + t.ndim if d < 0 else d for d in axes]


def _reducer(fn):
    def run(m, x, a):
        t = x[0]
        axes = _reduce_axes(m, x, a, t)
        if axes is None:
            return t
        keep = bool(a.get("keepdims", 1))
        if t.ndim == 0:
            return fn(t, [], keep)
        return fn(t, axes, keep)
    return run


def _amax(t, axes, keep):
    return nbtorch.amax(t, axes, keep) if axes else t


def _amin(t, axes, keep):
    return nbtorch.amin(t, axes, keep) if axes else t


def _prod(t, axes, keep):
    for d in sorted(axes, reverse=True):
        t = nbtorch.prod(t, d, keepdim=keep)
    return t


OPS.update({
    "ReduceSum": _reducer(lambda t, ax, k: nbtorch.sum(t, ax, keepdim=k) if ax else t),
    "ReduceMean": _reducer(lambda t, ax, k: nbtorch.mean(t, ax, keepdim=k) if ax else t),
    "ReduceMax": _reducer(_amax), "ReduceMin": _reducer(_amin), "ReduceProd": _reducer(_prod),
    "ReduceL2": _reducer(lambda t, ax, k: nbtorch.sqrt(nbtorch.sum(t * t, ax, keepdim=k))),
    "ReduceL1": _reducer(lambda t, ax, k: nbtorch.sum(t.abs(), ax, keepdim=k)),
    "ReduceLogSumExp": _reducer(lambda t, ax, k: nbtorch.logsumexp(t, ax, keepdim=k)),
    "ReduceSumSquare": _reducer(lambda t, ax, k: nbtorch.sum(t * t, ax, keepdim=k)),
})


@op("ArgMax", "ArgMin")
def _argmax(m, x, a):
    fn = nbtorch.argmax if m._op == "ArgMax" else nbtorch.argmin
    return fn(x[0], a.get("axis", 0), bool(a.get("keepdims", 1)))


@op("Softmax", "LogSoftmax")
def _softmax(m, x, a):
    fn = F.softmax if m._op == "Softmax" else F.log_softmax
    return fn(x[0], a.get("axis", -1))


@op("Gemm")
def _gemm(m, x, a):
    A = x[0].t() if a.get("transA", 0) else x[0]
    B = x[1].t() if a.get("transB", 0) else x[1]
    y = nbtorch.matmul(A, B)
    if a.get("alpha", 1.0) != 1.0:
        y = y * a["alpha"]
    if len(x) > 2 and x[2] is not None:
        y = y + (x[2] * a["beta"] if a.get("beta", 1.0) != 1.0 else x[2])
    return y
