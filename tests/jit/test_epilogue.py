"""Epilogue fusion (fx.passes.epilogue): Linear + ReLU and their gradients in one pass each,
bit for bit what the unfused ops give."""
import pickle

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
from nbtorch.fx.passes.epilogue import AddmmRelu, ReluGradSum
from nbtorch.kernels.cpu import epilogue as kernels


def _mlp(dtype, sizes=(12, 16, 8, 3), seed=0):
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).to(dtype)


def _grads(model, x, y):
    model.zero_grad()
    out = model(x)
    nn.functional.cross_entropy(out, y).backward()
    return out.detach().numpy().copy(), [p.grad.numpy().copy() for p in model.parameters()]


def _compiled_graphs(compiled):
    holder = getattr(compiled, "_compiled", compiled)      # a module's wrapper, or the function's
    cg = next(iter(holder._cache.values())).cg
    return cg.forward_gm, cg.backward_gm


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mlp_step_is_bit_identical_to_eager(dtype):
    model = _mlp(dtype)
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((20, 12)), dtype=dtype)
    x[0, :] = 0.0                          # rows whose pre-activations are the bias alone
    y = torch.tensor(rng.integers(0, 3, 20))
    want_out, want = _grads(model, x, y)
    compiled = torch.compile(model)
    got_out, got = _grads(compiled, x, y)
    fwd, bwd = _compiled_graphs(compiled)
    assert sum(isinstance(t, AddmmRelu) for t in _targets(fwd)) == 2
    assert sum(isinstance(t, ReluGradSum) for t in _targets(bwd)) == 2
    np.testing.assert_array_equal(got_out, want_out)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_dynamic_batch_and_large_shapes_take_the_unfused_path_with_the_same_values():
    model = _mlp(torch.float32, sizes=(8, 1100, 1000, 2))   # 1000 x 1100 > the one-pass limit
    compiled = torch.compile(model, dynamic=True)
    rng = np.random.default_rng(2)
    for batch in (3, 1000):
        x = torch.tensor(rng.standard_normal((batch, 8)).astype(np.float32))
        y = torch.tensor(rng.integers(0, 2, batch))
        want_out, want = _grads(model, x, y)
        got_out, got = _grads(compiled, x, y)
        np.testing.assert_array_equal(got_out, want_out)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_a_product_read_twice_is_not_fused():
    lin = nn.Linear(5, 4)

    def f(x):
        h = lin(x)
        return torch.relu(h) + h

    x = torch.randn(3, 5)
    compiled = torch.compile(f)
    np.testing.assert_array_equal(compiled(x).detach().numpy(), f(x).detach().numpy())
    fwd, _ = _compiled_graphs(compiled)
    assert not any(isinstance(t, AddmmRelu) for t in _targets(fwd))


def test_nan_inf_and_signed_zero_follow_relu():
    out = np.array([[np.nan, -0.0, 1.0, -np.inf], [np.inf, -2.0, 0.5, 3.0]], np.float32)
    bias = np.array([0.0, 0.0, -1.0, 1.0], np.float32)
    want = out + bias
    want = np.where(want <= 0, np.float32(0), want)
    kernels.bias_relu_(out, bias)
    np.testing.assert_array_equal(out, want)
    assert not np.signbit(out[0, 1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad_colsum_matches_the_two_passes(dtype):
    rng = np.random.default_rng(3)
    g = rng.standard_normal((37, 19)).astype(dtype)
    y = np.maximum(rng.standard_normal((37, 19)), 0).astype(dtype)
    y[0, 0], g[1, 1] = np.nan, np.nan
    r, s = np.empty_like(g), np.empty(19, dtype)
    kernels.relu_grad_colsum(g, y, r, s)
    want_r = np.where(y <= 0, dtype(0), g)
    np.testing.assert_array_equal(r, want_r)
    t = torch.tensor(want_r)
    np.testing.assert_array_equal(s, t.sum(0).numpy())


def test_fused_targets_fall_back_off_the_fast_path():
    model = _mlp(torch.float32)
    compiled = torch.compile(model)
    x = torch.randn(4, 12)
    y = torch.tensor([0, 1, 2, 0])
    _grads(compiled, x, y)
    fwd, bwd = _compiled_graphs(compiled)
    fused = next(t for t in _targets(fwd) if isinstance(t, AddmmRelu))
    w, b = model[0].weight.detach(), model[0].bias.detach()
    strided_b = torch.stack([b, b], 1)[:, 0]                 # not unit stride: unfused
    np.testing.assert_array_equal(fused(x, w, strided_b).numpy(), fused(x, w, b).numpy())
    grad_sum = next(t for t in _targets(bwd) if isinstance(t, ReluGradSum))
    g, h = torch.randn(4, 16), torch.relu(torch.randn(4, 16))
    r1, s1 = grad_sum(g, h)
    r2, s2 = grad_sum(g.t().contiguous().t(), h)             # strided: unfused
    np.testing.assert_array_equal(r1.numpy(), r2.numpy())
    np.testing.assert_array_equal(s1.numpy(), s2.numpy())
    back = pickle.loads(pickle.dumps(fused))        # as picklable as the targets it holds
    assert type(back) is AddmmRelu and repr(back) == repr(fused)
