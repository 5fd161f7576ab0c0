"""The core layers through the one harness, on every device: values against NumPy over
dtypes and layouts (contiguous, strided, empty batch), gradients of inputs and parameters
(gradcheck on the CPU, the CPU's gradients elsewhere). Layer-specific behaviour (options,
errors, running statistics) stays in the family files beside this one."""
import numpy as np
import pytest

import nbtorch.nn as nn
from harness import check_layer, numpy_params
from test_conv_pool import conv2d_ref, max_pool_ref


def _linear(m, x):
    p = numpy_params(m)
    return x @ p["weight"].T + p["bias"]


def _conv(m, x):
    p = numpy_params(m)
    (ph, pw), (sh, sw), (dh, dw) = m.padding, m.stride, m.dilation
    return conv2d_ref(x.astype(np.float64), p["weight"], p["bias"], (sh, sw),
                      (ph, ph, pw, pw), (dh, dw), m.groups)


def _max_pool(x, k, s):
    out_hw = ((x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1)
    return max_pool_ref(x.astype(np.float64), (k, k), (s, s), (0, 0), (1, 1), out_hw)[0]


def _avg_pool(x, k):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // k, k, w // k, k).mean((3, 5))


def _norm(x, axes, eps):
    mean = x.mean(axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axes, keepdims=True) + eps)


def _batch_norm(m, x):
    p = numpy_params(m)
    y = _norm(x.astype(np.float64), (0, 2, 3), m.eps) if x.shape[0] else x
    return y * p["weight"][:, None, None] + p["bias"][:, None, None]


def _layer_norm(m, x):
    p = numpy_params(m)
    return _norm(x.astype(np.float64), (-1,), m.eps) * p["weight"] + p["bias"]


def _group_norm(m, x):
    n, c, h, w = x.shape
    g = x.astype(np.float64).reshape(n, m.num_groups, c // m.num_groups * h * w)
    y = _norm(g, (2,), m.eps).reshape(n, c, h, w)
    p = numpy_params(m)
    return y * p["weight"][:, None, None] + p["bias"][:, None, None]


def _embedding(m, idx):
    return numpy_params(m)["weight"][idx]


LAYERS = [
    ("linear", lambda: nn.Linear(4, 3), _linear, [(2, 4)]),
    ("conv2d", lambda: nn.Conv2d(2, 3, 3, padding=1), _conv, [(2, 2, 5, 4)]),
    ("conv2d_strided_groups", lambda: nn.Conv2d(4, 2, 2, stride=2, groups=2, dilation=1),
     _conv, [(1, 4, 5, 5)]),
    ("max_pool2d", lambda: nn.MaxPool2d(2), lambda m, x: _max_pool(x, 2, 2), [(2, 2, 4, 6)]),
    ("avg_pool2d", lambda: nn.AvgPool2d(2), lambda m, x: _avg_pool(x.astype(np.float64), 2),
     [(2, 2, 4, 6)]),
    ("batch_norm", lambda: nn.BatchNorm2d(3), _batch_norm, [(4, 3, 2, 2)]),
    ("layer_norm", lambda: nn.LayerNorm(5), _layer_norm, [(2, 3, 5)]),
    ("group_norm", lambda: nn.GroupNorm(2, 4), _group_norm, [(2, 4, 3, 2)]),
]


@pytest.mark.parametrize("name,make,ref,shapes", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_values_and_gradients(name, make, ref, shapes, device):
    layouts = ("contiguous", "noncontig") if name == "batch_norm" else \
        ("contiguous", "noncontig", "empty")            # BatchNorm refuses an empty batch
    check_layer(make, ref, *shapes, layouts=layouts, device=device)


def test_embedding_values_and_gradients(device):
    import nbtorch
    from harness import assert_close
    table = nn.Embedding(6, 3).to(device)
    idx = np.array([[1, 5, 1], [0, 2, 4]])
    out = table(nbtorch.tensor(idx, device=device))
    assert_close(out, _embedding(table, idx), nbtorch.float32)
    out.sum().backward()
    counts = np.bincount(idx.ravel(), minlength=6)[:, None] * np.ones((1, 3))
    assert_close(table.weight.grad, counts, nbtorch.float32)
