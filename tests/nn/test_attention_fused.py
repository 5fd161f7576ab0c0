"""The fused CPU attention node (nbtorch/ops/attention.py) behind scaled_dot_product_attention
and self-attention in nn.MultiheadAttention: values against NumPy and PyTorch, masks,
fully masked rows (PyTorch's zeros), dropout's draws, gradcheck and gradgradcheck."""
import math

import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck, gradgradcheck


def _t(a, requires_grad=False):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _np_attention(q, k, v, mask=None, scale=None, drop=None):
    """softmax(q k^T * scale + mask) (zero rows where all -inf) [* drop] @ v in float64."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = s + mask
    dead = np.all(s == -np.inf, -1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - np.where(dead, 0, s.max(-1, keepdims=True)))
        p = np.where(dead, 0, e / e.sum(-1, keepdims=True))
    return (p if drop is None else p * drop) @ v


def _node_names(out):
    seen, todo = {}, [out.grad_fn]
    while todo:
        f = todo.pop()
        if f is not None and id(f) not in seen:
            seen[id(f)] = f.name()
            todo.extend(n for n, _ in f.next_functions)
    return set(seen.values())


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (3, 5, 4)])
def test_sdpa_values_and_one_node(shape):
    q, k, v = (_rand(*shape, seed=s).astype(np.float32) for s in range(3))
    out = F.scaled_dot_product_attention(_t(q, True), _t(k), _t(v))
    assert "ScaledDotProductAttentionBackward0" in _node_names(out)
    np.testing.assert_allclose(out.detach().numpy(), _np_attention(q, k, v), atol=1e-5)


@pytest.mark.parametrize("kind", ["bool", "float", "causal", "broadcast", "dead row"])
def test_sdpa_masks(kind):
    q = _rand(2, 2, 4, 3, seed=1)
    k, v = _rand(2, 2, 6, 3, seed=2), _rand(2, 2, 6, 5, seed=3)
    rng = np.random.default_rng(4)
    allowed = rng.random((2, 2, 4, 6)) > 0.3
    kw, mask = {}, None
    if kind == "bool":
        kw["attn_mask"] = _t(allowed)
        mask = np.where(allowed, 0.0, -np.inf)
    elif kind == "float":
        mask = rng.standard_normal((4, 6))
        kw["attn_mask"] = _t(mask)
    elif kind == "causal":
        kw["is_causal"] = True
        mask = np.where(np.tri(4, 6, dtype=bool), 0.0, -np.inf)
    elif kind == "broadcast":
        allowed = allowed[:, :1, :1]                  # (2, 1, 1, 6): a key padding mask
        kw["attn_mask"] = _t(allowed)
        mask = np.where(allowed, 0.0, -np.inf)
    else:
        allowed[0, 1, 2] = False                      # one query row sees no key
        kw["attn_mask"] = _t(allowed)
        mask = np.where(allowed, 0.0, -np.inf)
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), scale=0.7, **kw)
    np.testing.assert_allclose(out.numpy(), _np_attention(q, k, v, mask, 0.7), atol=1e-12)
    if kind == "dead row":
        assert np.all(out.numpy()[0, 1, 2] == 0)


def test_sdpa_dropout_draws_the_stream_of_F_dropout():
    q, k, v = (_rand(2, 3, 5, 4, seed=s) for s in range(3))
    nbtorch.manual_seed(7)
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), dropout_p=0.4)
    nbtorch.manual_seed(7)
    keep = nbtorch.empty((2, 3, 5, 5), dtype=nbtorch.float64).bernoulli_(0.6).numpy()
    np.testing.assert_allclose(out.numpy(), _np_attention(q, k, v, drop=keep / 0.6),
                               atol=1e-12)


def test_sdpa_gradcheck_and_gradgradcheck():
    q, k = _t(_rand(1, 2, 3, 4, seed=1), True), _t(_rand(1, 2, 5, 4, seed=2), True)
    v = _t(_rand(1, 2, 5, 2, seed=3), True)
    mask = _t(np.random.default_rng(0).random((3, 5)) > 0.3)
    mask[:, 0] = True

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert gradcheck(f, (q, k, v))
    assert gradgradcheck(f, (q, k, v))

    def g(q, k, v):                                   # dropout: one fixed draw
        nbtorch.manual_seed(3)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert gradcheck(g, (q, k, v))


@pytest.mark.parametrize("batch_first", [True, False])
def test_mha_self_attention_gradcheck(batch_first):
    nbtorch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, batch_first=batch_first).double()
    x = _t(_rand(*((2, 3, 4) if batch_first else (3, 2, 4))), True)     # N 2, L 3
    kpm = _t(np.array([[False, False, True], [False, False, False]]))
    causal = nn.Transformer.generate_square_subsequent_mask(3, dtype=nbtorch.float64)

    def f(x, w):
        mha.in_proj_weight.data = w.detach()
        return F.multi_head_attention_forward(
            *((x.transpose(0, 1),) * 3 if batch_first else (x,) * 3), 4, 2, w,
            mha.in_proj_bias, None, None, False, 0.0, mha.out_proj.weight,
            mha.out_proj.bias, key_padding_mask=kpm, attn_mask=causal, need_weights=False)[0]
    w = mha.in_proj_weight.detach().clone().requires_grad_(True)
    assert "PackedSelfAttentionBackward0" in _node_names(f(x, w))
    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


def test_mha_fused_matches_the_weights_path():
    """need_weights=True runs the composite path: same output, same dropout draws."""
    nbtorch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, dropout=0.25, batch_first=True)
    x = nbtorch.randn(3, 5, 8)
    nbtorch.manual_seed(1)
    fused = mha(x, x, x, need_weights=False)[0]
    nbtorch.manual_seed(1)
    composite = mha(x, x, x, need_weights=True)[0]
    np.testing.assert_allclose(fused.detach().numpy(), composite.detach().numpy(), atol=1e-6)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    nl = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    nl.load_state_dict({k: _t(v.detach().numpy()) for k, v in tl.state_dict().items()})
    x = rng.standard_normal((3, 5, 16)).astype(np.float32)
    kpm = np.zeros((3, 5), bool)
    kpm[0, 3:] = True
    kpm[2, :] = True                                  # a sample with no key: zeros
    tx, nx = torch.tensor(x, requires_grad=True), _t(x, True)
    to = tl.self_attn(tx, tx, tx, key_padding_mask=torch.tensor(kpm), need_weights=False)[0]
    no = nl.self_attn(nx, nx, nx, key_padding_mask=_t(kpm), need_weights=False)[0]
    np.testing.assert_allclose(no.detach().numpy(), to.detach().numpy(), atol=1e-5)
    g = rng.standard_normal(to.shape).astype(np.float32)
    to.backward(torch.tensor(g))
    no.backward(_t(g))
    np.testing.assert_allclose(nx.grad.numpy(), tx.grad.numpy(), atol=1e-5)
    for (name, tp), (_, np_) in zip(tl.self_attn.named_parameters(),
                                    nl.self_attn.named_parameters()):
        np.testing.assert_allclose(np_.grad.numpy(), tp.grad.numpy(), atol=1e-4, err_msg=name)
    out = tl(tx.detach())
    np.testing.assert_allclose(nl(_t(x)).detach().numpy(), out.detach().numpy(), atol=1e-5)


# ---------------------------------------------------------------- relu + dropout (feed-forward)

def test_relu_dropout_node_is_the_composite_bit_for_bit():
    from nbtorch.ops.dropout_fused import relu_dropout
    for n in (10, 140000):                            # serial, and split over threads
        h = nbtorch.randn(n)
        h[:4] = nbtorch.tensor([float("nan"), float("-inf"), -0.0, float("inf")])
        h.requires_grad_(True)
        g = nbtorch.randn(n)
        nbtorch.manual_seed(3)
        a = F.dropout(F.relu(h), 0.2)
        ga, = nbtorch.autograd.grad(a, h, g)
        nbtorch.manual_seed(3)
        b = relu_dropout(h, 0.2)
        gb, = nbtorch.autograd.grad(b, h, g)
        assert b.grad_fn.name() == "ReluDropoutBackward0"
        np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy())
        np.testing.assert_array_equal(gb.numpy(), ga.numpy())

    def f(h):
        nbtorch.manual_seed(1)
        return relu_dropout(h, 0.4) ** 2              # ** 2: a second derivative to check
    h = _t(_rand(3, 5) + 0.05, True)
    assert gradcheck(f, (h,))
    assert gradgradcheck(f, (h,))


def test_transformer_feed_forward_uses_it_unless_hooked():
    nbtorch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    x = nbtorch.randn(2, 3, 8)
    assert "ReluDropoutBackward0" in _node_names(layer(x.requires_grad_(True)))
    seen = []
    layer.dropout.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    assert "ReluDropoutBackward0" not in _node_names(layer(x))
    assert seen == [(2, 3, 16)]
    layer.dropout._forward_hooks.clear()
    nbtorch.manual_seed(4)
    fused = layer(x)
    layer.activation = nn.ReLU()                      # a module: the plain path
    nbtorch.manual_seed(4)
    np.testing.assert_array_equal(layer(x).detach().numpy(), fused.detach().numpy())


def test_dropout_add_layer_norm_node_is_the_composite_bit_for_bit():
    from nbtorch.ops.dropout_fused import dropout_add_layer_norm
    x, s = nbtorch.randn(4, 70, 16, requires_grad=True), nbtorch.randn(4, 70, 16,
                                                                          requires_grad=True)
    w, b = nbtorch.randn(16, requires_grad=True), nbtorch.randn(16, requires_grad=True)
    g = nbtorch.randn(4, 70, 16)
    nbtorch.manual_seed(2)
    a = F.layer_norm(x + F.dropout(s, 0.3), (16,), w, b)
    ga = nbtorch.autograd.grad(a, (x, s, w, b), g)
    nbtorch.manual_seed(2)
    c = dropout_add_layer_norm(x, s, 0.3, (16,), w, b, 1e-5)
    gc = nbtorch.autograd.grad(c, (x, s, w, b), g)
    np.testing.assert_array_equal(c.detach().numpy(), a.detach().numpy())
    for u, v in zip(gc, ga):
        np.testing.assert_array_equal(u.numpy(), v.numpy())

    def f(x, s, w):
        nbtorch.manual_seed(1)
        return dropout_add_layer_norm(x, s, 0.4, (4,), w, None, 1e-5)
    args = (_t(_rand(2, 4), True), _t(_rand(2, 4, seed=1), True), _t(_rand(4, seed=2), True))
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_layers_train_as_the_composite(norm_first):
    """The fused nodes change no value: the layers against their own blocks run apart."""
    nbtorch.manual_seed(0)
    enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, norm_first=norm_first)
    dec = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.3, norm_first=norm_first)

    class Plain(nn.TransformerEncoderLayer):              # own blocks: the composite path
        def _sa_block(self, *a):
            return super()._sa_block(*a)

        def _ff_block(self, x):
            return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))
    plain = Plain(8, 2, 16, dropout=0.3, norm_first=norm_first)
    plain.load_state_dict(enc.state_dict())
    x = nbtorch.randn(5, 3, 8)
    for layer in (enc, plain):
        names = _node_names(layer(x.requires_grad_(True)))
        assert ("ReluDropoutBackward0" in names) == (layer is enc)
    outs = []
    for layer in (enc, plain):
        nbtorch.manual_seed(9)
        out = layer(x)
        gx, = nbtorch.autograd.grad(out, x, nbtorch.ones_like(out))
        outs.append((out.detach().numpy(), gx.numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], atol=1e-6)
    np.testing.assert_allclose(outs[0][1], outs[1][1], atol=1e-5)
    y = dec(x, nbtorch.randn(4, 3, 8))
    assert y.shape == (5, 3, 8)


def test_a_fully_masked_row_gives_zeros_and_finite_gradients_on_every_path():
    """A row the mask hides entirely: zeros (PyTorch's _safe_softmax) from the fused node,
    the composite path (5-D input, float16) and create_graph's ops; gradgradcheck."""
    g = nbtorch.Generator().manual_seed(0)
    q, k, v = (nbtorch.randn(1, 1, 3, 4, generator=g, dtype=nbtorch.float64, requires_grad=True)
               for _ in range(3))
    mask = nbtorch.ones(3, 3, dtype=nbtorch.bool)
    mask[0] = False
    sdpa = F.scaled_dot_product_attention
    assert (sdpa(q, k, v, attn_mask=mask)[0, 0, 0] == 0).all()
    assert (sdpa(q[None], k[None], v[None], attn_mask=mask)[0, 0, 0, 0] == 0).all()
    half = sdpa(q.detach().half(), k.detach().half(), v.detach().half(), attn_mask=mask)
    assert (half[0, 0, 0] == 0).all()
    for f in (lambda q, k, v: sdpa(q, k, v, attn_mask=mask),
              lambda q, k, v: sdpa(q[None], k[None], v[None], attn_mask=mask)):
        assert gradcheck(f, (q, k, v))
        assert gradgradcheck(f, (q, k, v))


def test_unbatched_self_attention_takes_the_fused_node(monkeypatch):
    from nbtorch.ops import attention
    calls = []
    fused = attention.packed_self_attention
    monkeypatch.setattr(attention, "packed_self_attention",
                        lambda *a, **k: calls.append(1) or fused(*a, **k))
    nbtorch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2)
    x = nbtorch.randn(5, 8)
    y = mha(x, x, x, need_weights=False)[0]
    assert calls
    xb = x[:, None]
    np.testing.assert_allclose(y.detach().numpy(),
                               mha(xb, xb, xb, need_weights=False)[0][:, 0].detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_dropout_add_layer_norm_create_graph_counts_each_path_once():
    """With create_graph=True the fused residual's backward recomputed the layer norm and
    differentiated it with respect to x and s together, so where s depends on x (every
    Transformer sublayer) the path from x through s counted twice: dx was wrong. The
    formula is an explicit expression now: the same first derivative in both modes, and
    second derivatives pass gradgradcheck."""
    from nbtorch.ops.dropout_fused import dropout_add_layer_norm
    x = _t(_rand(4, 6), True)
    w, b = _t(_rand(6), True), _t(_rand(6), True)

    def f(x, w, b):
        s = (x * 2.0).sin()                   # the sublayer: s depends on x
        nbtorch.manual_seed(3)
        return dropout_add_layer_norm(x, s, 0.3, (6,), w, b, 1e-5)
    g = _t(_rand(4, 6))
    plain = nbtorch.autograd.grad(f(x, w, b), (x, w, b), g)
    graphed = nbtorch.autograd.grad(f(x, w, b), (x, w, b), g, create_graph=True)
    for a, c in zip(plain, graphed):
        np.testing.assert_allclose(c.detach().numpy(), a.numpy(), rtol=1e-12, atol=1e-12)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))
