"""Shape ops on quantized tensors (cat, stack, flip, indexing, views) against PyTorch:
same integers, same qparams, same errors."""
import warnings

import numpy as np
import pytest

import nbtorch

CASES = {
    "cat_same": lambda t, a, b, c: t.cat([a, a], 1),
    "cat_diff": lambda t, a, b, c: t.cat([a, b, a], 1),
    "cat_diff_neg": lambda t, a, b, c: t.cat([b, a], -1),
    "stack": lambda t, a, b, c: t.stack([a, a]),
    "stack_diff": lambda t, a, b, c: t.stack([a, b], 1),
    "flip": lambda t, a, b, c: t.flip(a, [1]),
    "flip_method": lambda t, a, b, c: a.flip(0, 2),
    "int": lambda t, a, b, c: a[0],
    "slice": lambda t, a, b, c: a[:, 1:],
    "step": lambda t, a, b, c: a[..., ::2],
    "tensor_index": lambda t, a, b, c: a[t.tensor([1, 0])],
    "index_select": lambda t, a, b, c: t.index_select(a, 1, t.tensor([2, 0])),
    "mask": lambda t, a, b, c: a[a.int_repr() > 20],
    "reshape": lambda t, a, b, c: a.reshape(6, 4),
    "view": lambda t, a, b, c: a.view(-1),
    "permute": lambda t, a, b, c: a.permute(2, 0, 1),
    "transpose_contiguous": lambda t, a, b, c: a.transpose(0, 1).contiguous(),
    "transpose_reshape": lambda t, a, b, c: a.transpose(0, 1).reshape(-1),
    "channel_row": lambda t, a, b, c: c[0],
    "channel_slice": lambda t, a, b, c: c[:, 1:],
    "channel_reshape": lambda t, a, b, c: c.reshape(2, 12),
}
ERRORS = {
    "cat_per_channel": (lambda t, a, b, c: t.cat([c, c], 1), "Only per-tensor"),
    "flip_per_channel": (lambda t, a, b, c: c.flip(1), "uniformly quantized"),
    "cat_dtypes": (lambda t, a, b, c: t.cat([a, t.quantize_per_tensor(
        a.dequantize(), 0.1, 0, t.qint8)]), "All dtypes must be the same"),
}


def _inputs(t):
    x = t.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32))
    a = t.quantize_per_tensor(x, 0.1, 10, t.quint8)
    b = t.quantize_per_tensor(x * 2, 0.23, 5, t.quint8)
    c = t.quantize_per_channel(x, t.tensor([0.1, 0.2], dtype=t.float64), t.tensor([1, 2]),
                               0, t.qint8)
    return t, a, b, c


def _desc(r, t):
    if r.qscheme() == t.per_tensor_affine:
        qp = (r.q_scale(), r.q_zero_point())
    else:
        qp = (r.q_per_channel_scales().tolist(), r.q_per_channel_zero_points().tolist(),
              r.q_per_channel_axis())
    return str(r.dtype), tuple(r.shape), r.int_repr().tolist(), qp


@pytest.mark.parametrize("name", sorted(CASES))
def test_shape_ops_match_pytorch(name):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _desc(CASES[name](*_inputs(torch)), torch)
    got = _desc(CASES[name](*_inputs(nbtorch)), nbtorch)
    assert got == want


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_shape_op_errors(name):
    fn, msg = ERRORS[name]
    with pytest.raises(RuntimeError, match=msg):
        fn(*_inputs(nbtorch))


def test_views_share_storage():
    _, a, _, _ = _inputs(nbtorch)
    v = a[:, 1:]
    assert v._storage is a._storage and v.is_quantized
    assert a[nbtorch.tensor([0])]._storage is not a._storage
