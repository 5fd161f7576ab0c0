"""Ops on meta tensors give PyTorch's output shapes, dtypes and strides without data."""
import pytest

import nbtorch as torch
import nbtorch.nn.functional as F

M = "meta"


def m(*shape, dtype=None):
    return torch.empty(*shape, dtype=dtype, device=M)


def L(*shape):
    return torch.empty(*shape, dtype=torch.long, device=M)


# name -> function(lib, make float tensor, make long tensor) -> tensor or tuple of tensors
CASES = {
    "add_broadcast": lambda t, f, i: f(3, 1, 4) + f(5, 1),
    "mul_promote": lambda t, f, i: f(2, 3) * i(3),
    "int_div": lambda t, f, i: i(2, 3) / i(3),
    "compare": lambda t, f, i: f(2, 3) > f(3),
    "where": lambda t, f, i: t.where(f(2, 3) > 0, f(2, 3), f(1, 3)),
    "matmul_batched": lambda t, f, i: f(5, 2, 3) @ f(3, 4),
    "bmm": lambda t, f, i: t.bmm(f(5, 2, 3), f(5, 3, 4)),
    "linear": lambda t, f, i: t.nn.functional.linear(f(2, 7, 8), f(6, 8), f(6)),
    "conv1d": lambda t, f, i: t.nn.functional.conv1d(f(2, 3, 10), f(4, 3, 3), stride=2),
    "conv2d": lambda t, f, i: t.nn.functional.conv2d(f(2, 3, 9, 9), f(6, 3, 3, 3),
                                                     padding=1, stride=2),
    "conv2d_groups": lambda t, f, i: t.nn.functional.conv2d(f(1, 4, 8, 8), f(4, 1, 3, 3),
                                                            groups=4, dilation=2),
    "conv_transpose2d": lambda t, f, i: t.nn.functional.conv_transpose2d(
        f(2, 4, 5, 5), f(4, 3, 3, 3), stride=2),
    "max_pool2d": lambda t, f, i: t.nn.functional.max_pool2d(f(2, 3, 9, 9), 3, 2),
    "max_pool2d_idx": lambda t, f, i: t.nn.functional.max_pool2d(
        f(2, 3, 8, 8), 2, return_indices=True),
    "avg_pool1d": lambda t, f, i: t.nn.functional.avg_pool1d(f(2, 3, 9), 2),
    "adaptive_avg": lambda t, f, i: t.nn.functional.adaptive_avg_pool2d(f(2, 3, 9, 7), (2, 3)),
    "interpolate": lambda t, f, i: t.nn.functional.interpolate(f(1, 2, 4, 4), scale_factor=2),
    "batch_norm": lambda t, f, i: t.nn.functional.batch_norm(
        f(4, 3, 5), f(3), f(3), f(3), f(3), training=True),
    "layer_norm": lambda t, f, i: t.nn.functional.layer_norm(f(2, 5, 8), (8,), f(8), f(8)),
    "group_norm": lambda t, f, i: t.nn.functional.group_norm(f(2, 4, 5), 2),
    "gelu": lambda t, f, i: t.nn.functional.gelu(f(2, 3)),
    "silu_tanh": lambda t, f, i: t.tanh(t.nn.functional.silu(f(2, 3))),
    "softmax": lambda t, f, i: t.softmax(f(2, 3, 4), dim=1),
    "log_softmax": lambda t, f, i: t.log_softmax(f(2, 3), -1),
    "sdpa": lambda t, f, i: t.nn.functional.scaled_dot_product_attention(
        f(2, 4, 5, 8), f(2, 4, 6, 8), f(2, 4, 6, 8)),
    "cross_entropy": lambda t, f, i: t.nn.functional.cross_entropy(f(4, 10), i(4)),
    "cross_entropy_none": lambda t, f, i: t.nn.functional.cross_entropy(
        f(4, 10, 3), i(4, 3), reduction="none"),
    "nll": lambda t, f, i: t.nn.functional.nll_loss(f(4, 10), i(4)),
    "mse": lambda t, f, i: t.nn.functional.mse_loss(f(4, 3), f(4, 3)),
    "bce_logits": lambda t, f, i: t.nn.functional.binary_cross_entropy_with_logits(
        f(4, 3), f(4, 3)),
    "sum_dim": lambda t, f, i: f(2, 3, 4).sum((0, 2), keepdim=True),
    "mean": lambda t, f, i: f(2, 3).mean(),
    "int_sum": lambda t, f, i: i(2, 3).sum(1),
    "max_dim": lambda t, f, i: tuple(f(2, 3).max(1)),
    "argmax": lambda t, f, i: f(2, 3).argmax(-1),
    "var": lambda t, f, i: f(2, 3).var(0),
    "norm": lambda t, f, i: t.linalg.vector_norm(f(2, 3), dim=1),
    "cumsum": lambda t, f, i: f(2, 3).cumsum(1),
    "cat": lambda t, f, i: t.cat([f(2, 3), f(4, 3)]),
    "stack": lambda t, f, i: t.stack([f(2, 3), f(2, 3)], 1),
    "chunk": lambda t, f, i: f(6, 2).chunk(3),
    "split": lambda t, f, i: t.split(f(5, 2), [2, 3]),
    "view_transpose": lambda t, f, i: f(2, 3, 4).view(6, 4).t(),
    "permute_contig": lambda t, f, i: f(2, 3, 4).permute(2, 0, 1).contiguous(),
    "reshape_noncontig": lambda t, f, i: f(2, 3, 4).transpose(0, 1).reshape(3, 8),
    "expand": lambda t, f, i: f(3, 1).expand(3, 4),
    "slice_step": lambda t, f, i: f(6, 5)[1::2, None, -1],
    "slice_cols": lambda t, f, i: f(6, 5)[1::2, 2:],
    "index_long": lambda t, f, i: f(6, 5)[i(2, 3)],
    "index_select": lambda t, f, i: f(6, 5).index_select(1, i(3)),
    "gather": lambda t, f, i: f(6, 5).gather(1, i(6, 2)),
    "embedding": lambda t, f, i: t.nn.functional.embedding(i(2, 3), f(10, 4)),
    "one_hot_like": lambda t, f, i: t.zeros_like(f(2, 3), dtype=t.int32),
    "flatten": lambda t, f, i: f(2, 3, 4).flatten(1),
    "squeeze": lambda t, f, i: f(2, 1, 3).squeeze(1).unsqueeze(0),
    "to_dtype": lambda t, f, i: f(2, 3).to(t.float16),
    "masked_fill": lambda t, f, i: f(2, 3).masked_fill(f(2, 3) > 0, 0.0),
    "clamp": lambda t, f, i: f(2, 3).clamp(0, 1),
    "pad": lambda t, f, i: t.nn.functional.pad(f(2, 3), (1, 2)),
    "dropout": lambda t, f, i: t.nn.functional.dropout(f(2, 3), 0.5),
    "tril": lambda t, f, i: t.tril(f(4, 4)),
    "outer_einsum": lambda t, f, i: t.einsum("ij,jk->ik", f(2, 3), f(3, 4)),
}


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


@pytest.mark.parametrize("name", sorted(CASES))
def test_meta_op_matches_pytorch(name):
    tt = pytest.importorskip("torch")
    fn = CASES[name]
    mine = _flat(fn(torch, m, L))
    ref = _flat(fn(tt, lambda *s, dtype=None: tt.empty(*s, dtype=dtype, device="meta"),
                   lambda *s: tt.empty(*s, dtype=tt.long, device="meta")))
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        assert a.device.type == "meta" and a.is_meta
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype) == str(b.dtype)


@pytest.mark.parametrize("name", ["view_transpose", "expand", "slice_cols", "add_broadcast",
                                  "permute_contig", "linear", "sum_dim"])
def test_meta_strides_match_pytorch(name):
    tt = pytest.importorskip("torch")
    a = _flat(CASES[name](torch, m, L))[0]
    b = _flat(CASES[name](tt, lambda *s, dtype=None: tt.empty(*s, device="meta"),
                          lambda *s: tt.empty(*s, dtype=tt.long, device="meta")))[0]
    assert a.stride() == b.stride()
