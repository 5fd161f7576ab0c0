"""Ops on jagged nested tensors (nbtorch/nested/): values against PyTorch's NJT on CPU,
gradients of the components against PyTorch where PyTorch has the backward, and gradcheck
(float64) of every op through ``as_nested_tensor`` and ``to_padded_tensor``."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck

RNG = np.random.default_rng(0)
COMPS = [RNG.standard_normal((n, 4)) for n in (2, 3, 1)]
W = RNG.standard_normal((5, 4))
B = RNG.standard_normal(5)
LN_W, LN_B = RNG.standard_normal(4), RNG.standard_normal(4)


def _torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*nested tensors.*")
    return torch


def _F(m):
    return m.nn.functional


def _t(m, a):
    return m.tensor(a)


# name -> (fn(m, nested), PyTorch has its backward; None: PyTorch 2.13 lacks the op)
CASES = {
    "exp": (lambda m, x: x.exp(), True),
    "torch.sigmoid": (lambda m, x: m.sigmoid(x), True),
    "gelu": (lambda m, x: _F(m).gelu(x), True),
    "relu": (lambda m, x: _F(m).relu(x * 1), True),
    "scalar_arith": (lambda m, x: (x * 2 + 1) / 3 - 0.5, True),
    "rsub_pow": (lambda m, x: 2 - x ** 2, True),
    "nested_nested": (lambda m, x: x * x.sin() + x, True),
    "dense_last": (lambda m, x: x + _t(m, np.arange(4.)), True),
    "dense_batch": (lambda m, x: x * _t(m, np.arange(3.).reshape(3, 1, 1) + 1), True),
    "where": (lambda m, x: m.where(x > 0, x, 0.), True),
    "masked_fill": (lambda m, x: x.masked_fill(x < 0, 0.), True),
    "linear": (lambda m, x: _F(m).linear(x, _t(m, W), _t(m, B)), True),
    "matmul": (lambda m, x: x @ _t(m, W).T, True),
    "layer_norm": (lambda m, x: _F(m).layer_norm(x, (4,), _t(m, LN_W), _t(m, LN_B)), True),
    "softmax_last": (lambda m, x: x.softmax(-1), True),
    # PyTorch 2.13's backward of a softmax over the ragged dim is wrong (its gradients do
    # not sum to zero per component); gradcheck vouches for nbtorch's
    "softmax_ragged": (lambda m, x: x.softmax(1), False),
    "log_softmax_last": (lambda m, x: _F(m).log_softmax(x, -1), False),
    "sum_last": (lambda m, x: x.sum(-1), False),
    "mean_last_keep": (lambda m, x: x.mean(-1, keepdim=True), True),
    "amax_last": (lambda m, x: x.amax(-1), True),
    "max_last": (lambda m, x: x.max(-1)[0], True),
    "sum_ragged": (lambda m, x: x.sum(1), False),
    "mean_ragged": (lambda m, x: x.mean(1), False),
    "sum_ragged_keep": (lambda m, x: x.sum(1, keepdim=True), False),
    "sum_batch_ragged": (lambda m, x: x.sum((0, 1)), False),
    "sum_all": (lambda m, x: x.sum(), True),
    "mean_all": (lambda m, x: x.mean(), True),
    "unsqueeze": (lambda m, x: x.unsqueeze(-1) * 2, True),
    "select_last": (lambda m, x: x[..., 1], False),
    "chunk": (lambda m, x: x.chunk(2, -1)[1], True),
    "cat_last": (lambda m, x: m.cat([x, x * 2], -1), True),
    "to_float32": (lambda m, x: x.to(m.float32).double(), True),
    "clone": (lambda m, x: x.clone(), True),
    "transpose": (lambda m, x: x.unflatten(-1, (2, 2)).transpose(1, 2) * 3, False),
    "unbind": (lambda m, x: x.unbind()[1] * 2, True),
    "padded": (lambda m, x: x.to_padded_tensor(0.5), True),
    "normalize": (lambda m, x: _F(m).normalize(x, dim=-1), None),
    "embedding": (lambda m, x: _F(m).embedding((x > 0).long().sum(-1), _t(m, W)), False),
    "ffn_block": (lambda m, x: _F(m).layer_norm(
        x + _F(m).linear(_F(m).relu(_F(m).linear(x, _t(m, W))), _t(m, W).T), (4,)), True),
}


def _run(m, fn, comps=COMPS):
    ts = [m.tensor(c, requires_grad=True) for c in comps]
    nt = m.nested.as_nested_tensor(ts, layout=m.jagged)
    out = fn(m, nt)
    dense = out.to_padded_tensor(0.) if out.is_nested else out
    return ts, out, dense


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_grads_match_pytorch(name):
    torch = _torch()
    fn, has_backward = CASES[name]
    if has_backward is None:
        pytest.skip("PyTorch 2.13 has no nested version of this op: gradcheck below")
    ts, out, dense = _run(nbtorch, fn)
    tts, tout, tdense = _run(torch, fn)
    assert out.is_nested == tout.is_nested
    assert out.dim() == tout.dim()
    if out.is_nested:
        assert out._ragged_idx == tout._ragged_idx
        np.testing.assert_allclose(_np(out.values()), _np(tout.values()), atol=1e-12)
        np.testing.assert_array_equal(out.offsets().numpy(), tout.offsets().numpy())
    np.testing.assert_allclose(_np(dense), _np(tdense), rtol=1e-10, atol=1e-12)
    if not has_backward:
        return
    weight = RNG.standard_normal(tuple(dense.shape))
    (dense * nbtorch.tensor(weight)).sum().backward()
    (tdense * torch.tensor(weight)).sum().backward()
    for a, b in zip(ts, tts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(name):
    fn, _ = CASES[name]
    if name in ("amax_last", "max_last", "to_float32", "embedding"):
        pytest.skip("max (ties) and a float32 round trip: compared with PyTorch above")

    def f(*ts):
        out = fn(nbtorch, nbtorch.nested.as_nested_tensor(list(ts), layout=nbtorch.jagged))
        return out.to_padded_tensor(0.) if out.is_nested else out
    ts = [nbtorch.tensor(c, requires_grad=True) for c in COMPS]
    assert gradcheck(f, ts, eps=1e-6, atol=1e-5)


def test_ragged_reductions_match_a_loop_over_components():
    """PyTorch has no backward for sums over the ragged dim: a per-component loop does."""
    ts, out, _ = _run(nbtorch, lambda m, x: x.mean(1) * 2 + x.sum(1))
    out.pow(2).sum().backward()
    grads = [t.grad.numpy().copy() for t in ts]
    cs = [nbtorch.tensor(c, requires_grad=True) for c in COMPS]
    nbtorch.stack([c.mean(0) * 2 + c.sum(0) for c in cs]).pow(2).sum().backward()
    for g, c in zip(grads, cs):
        np.testing.assert_allclose(g, c.grad.numpy(), rtol=1e-12)


def test_sdpa_matches_pytorch_per_component_values_and_grads():
    torch = _torch()
    comps = [RNG.standard_normal((n, 2, 4)) for n in (3, 5)]

    def run(m):
        ts = [m.tensor(c, requires_grad=True) for c in comps]
        q = m.nested.as_nested_tensor(ts, layout=m.jagged).transpose(1, 2)
        k, v = q * 0.5, q.exp()
        out = _F(m).scaled_dot_product_attention(q, k, v)
        assert tuple(out.values().shape) == (2, 8, 4)
        out.transpose(1, 2).to_padded_tensor(0.).pow(2).sum().backward()
        return out, ts
    out, ts = run(nbtorch)
    tout, tts = run(torch)
    assert repr(out.shape) == repr(tout.shape).replace(repr(tout.shape[2]), "j?") \
        .replace("j?", repr(out.shape[2]))
    np.testing.assert_allclose(out.values().detach().numpy(), tout.values().detach().numpy(),
                               rtol=1e-10)
    for a, b in zip(ts, tts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_sdpa_gradcheck_and_refusals():
    comps = [RNG.standard_normal((n, 1, 2)) for n in (2, 3)]

    def f(*ts):
        q = nbtorch.nested.as_nested_tensor(list(ts), layout=nbtorch.jagged).transpose(1, 2)
        out = _F(nbtorch).scaled_dot_product_attention(q, q * 2, q.sin())
        return out.transpose(1, 2).to_padded_tensor(0.)
    assert gradcheck(f, [nbtorch.tensor(c, requires_grad=True) for c in comps])
    q = nbtorch.nested.nested_tensor([nbtorch.tensor(c) for c in comps],
                                     layout=nbtorch.jagged).transpose(1, 2)
    with pytest.raises(RuntimeError, match="is_causal=True"):
        _F(nbtorch).scaled_dot_product_attention(q, q, q, is_causal=True)
    with pytest.raises(RuntimeError, match=r"\(B, H, j, D\)"):
        _F(nbtorch).scaled_dot_product_attention(q.transpose(1, 2), q, q)


def test_nn_modules_on_a_nested_input():
    torch = _torch()
    nbtorch.manual_seed(0)
    layers = [nbtorch.nn.Linear(4, 6).double(), nbtorch.nn.GELU(), nbtorch.nn.Dropout(0.0),
              nbtorch.nn.Linear(6, 4).double(), nbtorch.nn.LayerNorm(4).double()]
    model = nbtorch.nn.Sequential(*layers)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.GELU(), torch.nn.Dropout(0.0),
                              torch.nn.Linear(6, 4), torch.nn.LayerNorm(4)).double()
    ref.load_state_dict({k: torch.tensor(v.detach().numpy())
                         for k, v in model.state_dict().items()})
    _, out, dense = _run(nbtorch, lambda m, x: model(x))
    _, tout, tdense = _run(torch, lambda m, x: ref(x))
    np.testing.assert_allclose(dense.detach().numpy(), tdense.detach().numpy(), rtol=1e-10)
    dense.sum().backward()
    tdense.sum().backward()
    np.testing.assert_allclose(model[0].weight.grad.numpy(), ref[0].weight.grad.numpy(),
                               rtol=1e-9, atol=1e-12)


def test_attention_model_trains_on_a_nested_batch():
    """Linear -> per-head SDPA -> residual + LayerNorm -> per-sequence score, on sequences
    of lengths 3, 7, 5, 2 in one jagged batch: Adam fits four targets."""
    nn, F = nbtorch.nn, nbtorch.nn.functional

    class Attn(nn.Module):
        def __init__(self, e=16, h=2):
            super().__init__()
            self.qkv, self.out, self.h = nn.Linear(e, 3 * e), nn.Linear(e, e), h
            self.ln, self.head = nn.LayerNorm(e), nn.Linear(e, 1)

        def forward(self, x):
            e = x.size(-1)
            q, k, v = [t.unflatten(-1, (self.h, e // self.h)).transpose(1, 2)
                       for t in self.qkv(x).chunk(3, -1)]
            o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(-2)
            return self.head(self.ln(x + self.out(o))).squeeze(-1).sum(1)
    nbtorch.manual_seed(0)
    model = Attn()
    opt = nbtorch.optim.Adam(model.parameters(), 1e-2)
    x = nbtorch.nested.nested_tensor([nbtorch.randn(n, 16) for n in (3, 7, 5, 2)],
                                     layout=nbtorch.jagged)
    y = nbtorch.tensor([1., -1., 0.5, 2.])
    for _ in range(30):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
