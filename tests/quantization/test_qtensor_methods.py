"""Tensor methods on quantized tensors against PyTorch: comparisons, item, equal, copy_,
fill_, __setitem__, mean, max/min, topk, sort and nearest interpolation."""
import warnings

import numpy as np
import pytest

import nbtorch

CASES = {
    "eq": lambda t, a, b: a == b,
    "ne_scalar": lambda t, a, b: a != 0.3,
    "gt": lambda t, a, b: a > b,
    "le": lambda t, a, b: a.le(b),
    "item": lambda t, a, b: a[1, 2, 3].item(),
    "equal_same": lambda t, a, b: t.equal(a, a.clone()),
    "equal_other": lambda t, a, b: t.equal(a, b),
    "copy_quantized": lambda t, a, b: a.clone().copy_(b),
    "copy_float": lambda t, a, b: a.clone().copy_(b.dequantize() * 0.7),
    "fill_": lambda t, a, b: a.clone().fill_(1.234),
    "setitem_quantized": lambda t, a, b: _set(a.clone(), 0, a[1]),
    "setitem_float": lambda t, a, b: _set(a.clone(), 1, 0.77),
    "mean": lambda t, a, b: a.mean(),
    "mean_dim": lambda t, a, b: a.mean(1),
    "mean_dims_keepdim": lambda t, a, b: a.mean((1, 2), keepdim=True),
    "max": lambda t, a, b: a.max(),
    "max_dim": lambda t, a, b: a.max(2),
    "min_dim_keepdim": lambda t, a, b: a.min(0, keepdim=True),
    "topk": lambda t, a, b: a.topk(2),
    "topk_smallest": lambda t, a, b: a.topk(3, dim=1, largest=False),
    "sort": lambda t, a, b: a.sort(1),
    "sort_descending": lambda t, a, b: a.sort(descending=True),
    "upsample_nearest": lambda t, a, b: t.nn.Upsample(scale_factor=2)(a[None]),
    "interpolate_size": lambda t, a, b: t.nn.functional.interpolate(a[None], size=(5, 7)),
}


def _set(q, index, value):
    q[index] = value
    return q


def _desc(r):
    if isinstance(r, tuple):
        return tuple(_desc(v) for v in r)
    if getattr(r, "is_quantized", False):
        return ("q", str(r.dtype), tuple(r.shape), r.int_repr().tolist(), r.q_scale(),
                r.q_zero_point())
    if hasattr(r, "tolist"):
        return ("t", str(r.dtype), r.tolist())
    return r


@pytest.mark.parametrize("name", sorted(CASES))
def test_method_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    results = []
    for t in (torch, nbtorch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = t.quantize_per_tensor(t.from_numpy(x), 0.05, 70, t.quint8)
            b = t.quantize_per_tensor(t.from_numpy(x[::-1].copy()), 0.1, 30, t.quint8)
            results.append(_desc(CASES[name](t, a, b)))
    assert results[1] == results[0]
