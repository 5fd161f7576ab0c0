"""Recurrent layers, attention and transformer layers against NumPy references."""
import math

import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
from nbtorch.autograd import gradcheck, gradgradcheck
from nbtorch.nn.functional import scaled_dot_product_attention


def _t(a, requires_grad=False):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _params(module):
    return {n: p.detach().numpy().astype(np.float64) for n, p in module.named_parameters()}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---------------------------------------------------------------- NumPy references

def _np_step(mode, xt, h, c, p, sfx):
    gi = xt @ p["weight_ih" + sfx].T + p.get("bias_ih" + sfx, 0)
    gh = h @ p["weight_hh" + sfx].T + p.get("bias_hh" + sfx, 0)
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    if mode == "GRU":
        (ir, iz, i_n), (hr, hz, hn) = np.split(gi, 3, axis=-1), np.split(gh, 3, axis=-1)
        r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
        n = np.tanh(i_n + r * hn)
        return (1 - z) * n + z * h, c
    return np.tanh(gi + gh), c


def _np_rnn(mode, x, p, num_layers, bidirectional, h0=None, c0=None):
    """x (T, N, I) -> output (T, N, D*H), h_n, c_n."""
    T, N, _ = x.shape
    D = 2 if bidirectional else 1
    H = p["weight_hh_l0"].shape[1]
    hs, cs, inp = [], [], x
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            h = np.zeros((N, H)) if h0 is None else h0[k]
            c = np.zeros((N, H)) if c0 is None else c0[k]
            out = np.zeros((T, N, H))
            for t in (range(T - 1, -1, -1) if d else range(T)):
                h, c = _np_step(mode, inp[t], h, c, p, sfx)
                out[t] = h
            outs.append(out)
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hs), np.stack(cs)


def _np_mha(q, k, v, p, H, attn_mask=None, kpm=None):
    """Sequence-first MHA with float attn_mask (L, S) and bool key_padding_mask (N, S)."""
    L, N, E = q.shape
    S, hd = k.shape[0], E // H
    W, b = p["in_proj_weight"], p["in_proj_bias"]
    proj = [(a @ W[i * E:(i + 1) * E].T + b[i * E:(i + 1) * E]).reshape(len(a), N, H, hd)
            .transpose(1, 2, 0, 3) for i, a in enumerate((q, k, v))]
    scores = proj[0] @ proj[1].swapaxes(-1, -2) / math.sqrt(hd)
    if attn_mask is not None:
        scores = scores + attn_mask
    if kpm is not None:
        scores = np.where(kpm[:, None, None, :], -np.inf, scores)
    w = _softmax(scores)
    out = (w @ proj[2]).transpose(2, 0, 1, 3).reshape(L, N, E)
    return out @ p["out_proj.weight"].T + p["out_proj.bias"], w


def _np_layer_norm(x, w, b, eps=1e-5):
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


# ---------------------------------------------------------------- scaled dot-product

def test_sdpa_matches_numpy_with_masks():
    q, k, v = _rand(2, 3, 4, 5), _rand(2, 3, 6, 5, seed=1), _rand(2, 3, 6, 7, seed=2)
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(5)
    got = scaled_dot_product_attention(_t(q), _t(k), _t(v))
    np.testing.assert_allclose(got.numpy(), _softmax(scores) @ v, rtol=1e-10)
    allowed = np.random.default_rng(3).random((4, 6)) > 0.3
    allowed[:, 0] = True
    got = scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=_t(allowed))
    want = _softmax(np.where(allowed, scores, -np.inf)) @ v
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    bias = _rand(4, 6, seed=4)
    got = scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=_t(bias), scale=0.3)
    want = _softmax(q @ k.swapaxes(-1, -2) * 0.3 + bias) @ v
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    got = scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=True)
    want = _softmax(np.where(np.tri(4, 6, dtype=bool), scores, -np.inf)) @ v
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


def test_sdpa_gradcheck_and_errors():
    q, k, v = (_t(_rand(1, 3, 2, seed=s), True) for s in range(3))
    assert gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, is_causal=True),
                     (q, k, v))
    assert gradgradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v), (q, k, v))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        scaled_dot_product_attention(q, k, v, attn_mask=nbtorch.ones(3, 3), is_causal=True)
    with pytest.raises(RuntimeError, match="expected query"):
        scaled_dot_product_attention(q, nbtorch.randn(1, 3, 4), v)


def test_sdpa_dropout_zeroes_some_weights_only_when_p_positive():
    q = k = v = nbtorch.randn(1, 8, 4)
    a = scaled_dot_product_attention(q, k, v)
    b = scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    c = scaled_dot_product_attention(q, k, nbtorch.ones(1, 8, 4), dropout_p=0.5)
    assert not np.allclose(c.numpy(), 1.0)          # rows no longer sum to one


# ---------------------------------------------------------------- multi-head attention

@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_matches_numpy(batch_first):
    E, H, L, S, N = 8, 2, 4, 5, 3
    mha = nn.MultiheadAttention(E, H, batch_first=batch_first).double()
    p = _params(mha)
    p["in_proj_bias"] = _rand(3 * E, seed=9)
    mha.in_proj_bias.data = _t(p["in_proj_bias"])
    q, k = _rand(L, N, E, seed=1), _rand(S, N, E, seed=2)
    attn_mask = _rand(L, S, seed=3)
    kpm = np.zeros((N, S), bool)
    kpm[1, 3:] = True
    tr = (lambda a: a.swapaxes(0, 1)) if batch_first else (lambda a: a)
    out, w = mha(_t(tr(q)), _t(tr(k)), _t(tr(k)), attn_mask=_t(attn_mask),
                 key_padding_mask=_t(kpm))
    want, want_w = _np_mha(q, k, k, p, H, attn_mask, kpm)
    np.testing.assert_allclose(out.detach().numpy(), tr(want), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), want_w.mean(1), rtol=1e-9, atol=1e-12)
    out, w = mha(_t(tr(q)), _t(tr(q)), _t(tr(q)), need_weights=True,
                 average_attn_weights=False)
    want, want_w = _np_mha(q, q, q, p, H)
    np.testing.assert_allclose(out.detach().numpy(), tr(want), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=1e-9, atol=1e-12)
    out, w = mha(_t(tr(q)), _t(tr(q)), _t(tr(q)), need_weights=False)
    assert w is None


def test_mha_bool_attn_mask_means_blocked_and_unbatched():
    mha = nn.MultiheadAttention(4, 2).double()
    p = _params(mha)
    x = _rand(3, 4)
    blocked = np.triu(np.ones((3, 3), bool), 1)
    out, w = mha(_t(x), _t(x), _t(x), attn_mask=_t(blocked))
    want, want_w = _np_mha(x[:, None], x[:, None], x[:, None], p, 2,
                           np.where(blocked, -np.inf, 0.0))
    np.testing.assert_allclose(out.detach().numpy(), want[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), want_w.mean(1)[0], rtol=1e-9, atol=1e-12)


def test_mha_parameters_and_gradcheck():
    mha = nn.MultiheadAttention(4, 2)
    assert [n for n, _ in mha.named_parameters()] == [
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    sep = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True)
    names = [n for n, _ in sep.named_parameters()]
    assert names[:3] == ["q_proj_weight", "k_proj_weight", "v_proj_weight"]
    assert "bias_k" in names and "in_proj_weight" not in names
    out, _ = sep(nbtorch.randn(2, 1, 4), nbtorch.randn(6, 1, 3), nbtorch.randn(6, 1, 5))
    assert out.shape == (2, 1, 4)
    mha = nn.MultiheadAttention(4, 2, add_zero_attn=True).double()
    x = _t(_rand(2, 1, 4), True)
    assert gradcheck(lambda x: mha(x, x, x)[0], (x,))


def test_mha_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    mha = nn.MultiheadAttention(4, 2)
    x = nbtorch.randn(3, 2, 4)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(2, 2\), but "
                                           r"should be \(3, 3\)"):
        mha(x, x, x, attn_mask=nbtorch.zeros(2, 2))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 4, but got 3"):
        mha(nbtorch.randn(3, 2, 3), x, x)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)


# ---------------------------------------------------------------- recurrent layers

@pytest.mark.parametrize("cls,mode", [(nn.RNN, "RNN"), (nn.LSTM, "LSTM"), (nn.GRU, "GRU")])
@pytest.mark.parametrize("bidirectional,batch_first", [(False, False), (True, True)])
def test_rnn_layers_match_numpy(cls, mode, bidirectional, batch_first):
    m = cls(3, 4, num_layers=2, bidirectional=bidirectional, batch_first=batch_first).double()
    x = _rand(5, 2, 3)
    inp = x.swapaxes(0, 1) if batch_first else x
    out, state = m(_t(inp))
    want, h_n, c_n = _np_rnn(mode, x, _params(m), 2, bidirectional)
    got = out.detach().numpy()
    np.testing.assert_allclose(got.swapaxes(0, 1) if batch_first else got, want, rtol=1e-9,
                               atol=1e-12)
    h = state[0] if mode == "LSTM" else state
    np.testing.assert_allclose(h.detach().numpy(), h_n, rtol=1e-9, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(state[1].detach().numpy(), c_n, rtol=1e-9, atol=1e-12)


def test_lstm_initial_state_and_unbatched():
    m = nn.LSTM(3, 4).double()
    x, h0, c0 = _rand(5, 2, 3), _rand(1, 2, 4, seed=1), _rand(1, 2, 4, seed=2)
    out, (h, c) = m(_t(x), (_t(h0), _t(c0)))
    want, h_n, c_n = _np_rnn("LSTM", x, _params(m), 1, False, h0, c0)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(c.detach().numpy(), c_n, rtol=1e-9, atol=1e-12)
    out1, (h1, c1) = m(_t(x[:, 0]), (_t(h0[:, 0]), _t(c0[:, 0])))
    assert out1.shape == (5, 4) and h1.shape == (1, 4)
    np.testing.assert_allclose(out1.detach().numpy(), want[:, 0], rtol=1e-9, atol=1e-12)


def test_rnn_parameter_names_shapes_and_init():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert list(shapes)[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                "weight_ih_l0_reverse"]
    assert shapes["weight_ih_l1"] == (16, 8) and shapes["weight_hh_l1_reverse"] == (16, 4)
    bound = 1 / math.sqrt(4)
    assert all(np.abs(p.detach().numpy()).max() <= bound for p in m.parameters())
    assert len(m.all_weights) == 4
    assert repr(m) == "LSTM(3, 4, num_layers=2, bidirectional=True)"
    g = nn.GRU(2, 3, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (9, 2)


def test_rnn_gradcheck_lstm_gru():
    for cls in (nn.LSTM, nn.GRU, nn.RNN):
        m = cls(2, 2, bidirectional=cls is nn.GRU).double()
        x = _t(_rand(3, 1, 2), True)
        assert gradcheck(lambda x: m(x)[0], (x,))
        w = m.weight_hh_l0
        assert gradcheck(lambda w: m(_t(_rand(3, 1, 2)))[0], (w,))


def test_rnn_errors_and_dropout():
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 4"):
        nn.LSTM(3, 4)(nbtorch.randn(5, 2, 4))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 2, 4\), got \[1, 2, 4\]"):
        nn.GRU(3, 4, num_layers=2)(nbtorch.randn(5, 2, 3), nbtorch.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)
    m = nn.LSTM(3, 8, num_layers=2, dropout=0.5)
    x = nbtorch.randn(4, 2, 3)
    assert not np.allclose(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())


def test_cells_match_numpy():
    x, h = _rand(2, 3), _rand(2, 4, seed=1)
    for cls, mode in [(nn.RNNCell, "RNN"), (nn.LSTMCell, "LSTM"), (nn.GRUCell, "GRU")]:
        cell = cls(3, 4).double()
        p = _params(cell)
        want = _np_step(mode, x, h, h, p, "")
        got = cell(_t(x), (_t(h), _t(h)) if mode == "LSTM" else _t(h))
        if mode == "LSTM":
            np.testing.assert_allclose(got[1].detach().numpy(), want[1], rtol=1e-9)
            got = got[0]
        np.testing.assert_allclose(got.detach().numpy(), want[0], rtol=1e-9)
        single = cell(_t(x[0]))
        assert (single[0] if mode == "LSTM" else single).shape == (4,)


# ---------------------------------------------------------------- transformer

@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_matches_numpy(norm_first):
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, norm_first=norm_first,
                                       batch_first=True).double().eval()
    p = _params(layer)
    x = _rand(2, 5, 8)
    sa = {k[len("self_attn."):]: v for k, v in p.items() if k.startswith("self_attn.")}
    ln1 = lambda a: _np_layer_norm(a, p["norm1.weight"], p["norm1.bias"])  # noqa: E731
    ln2 = lambda a: _np_layer_norm(a, p["norm2.weight"], p["norm2.bias"])  # noqa: E731

    def attn(a):
        return _np_mha(a.swapaxes(0, 1), a.swapaxes(0, 1), a.swapaxes(0, 1), sa, 2)[0] \
            .swapaxes(0, 1)

    def ff(a):
        hidden = np.maximum(a @ p["linear1.weight"].T + p["linear1.bias"], 0)
        return hidden @ p["linear2.weight"].T + p["linear2.bias"]
    if norm_first:
        want = x + attn(ln1(x))
        want = want + ff(ln2(want))
    else:
        want = ln1(x + attn(x))
        want = ln2(want + ff(want))
    np.testing.assert_allclose(layer(_t(x)).detach().numpy(), want, rtol=1e-9, atol=1e-12)


def test_transformer_encoder_stack_and_decoder_layer():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu")
    enc = nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    assert len(list(enc.parameters())) == 3 * len(list(layer.parameters()))
    x = nbtorch.randn(5, 2, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    out = enc.eval()(x, mask=mask)
    assert out.shape == (5, 2, 8)
    dec = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16).eval()
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    assert dec(nbtorch.randn(4, 2, 8), x, tgt_mask=causal).shape == (4, 2, 8)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


# ---------------------------------------------------------------- against PyTorch

def _copy_to_torch(ours, theirs, torch):
    theirs.load_state_dict({n: torch.tensor(p.detach().numpy())
                            for n, p in ours.state_dict().items()})


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_recurrent_against_torch(name):
    torch = pytest.importorskip("torch")
    ours = getattr(nn, name)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    theirs = getattr(torch.nn, name)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    _copy_to_torch(ours, theirs, torch)
    x = _rand(2, 5, 3).astype(np.float32)
    out, _ = ours(_t(x))
    ref, _ = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-5)


def test_mha_and_encoder_against_torch():
    torch = pytest.importorskip("torch")
    ours = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True).eval()
    theirs = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16,
                                              batch_first=True).eval()
    _copy_to_torch(ours, theirs, torch)
    x = _rand(2, 5, 8).astype(np.float32)
    kpm = np.zeros((2, 5), bool)
    kpm[0, 3:] = True
    out = ours(_t(x), src_key_padding_mask=_t(kpm))
    with torch.no_grad():
        ref = theirs(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm))
    np.testing.assert_allclose(out.detach().numpy()[1], ref.numpy()[1], atol=1e-5)
    np.testing.assert_allclose(out.detach().numpy()[0, :3], ref.numpy()[0, :3], atol=1e-5)


def test_lstm_proj_and_gradients_against_torch():
    torch = pytest.importorskip("torch")
    ours = nn.LSTM(3, 6, num_layers=2, proj_size=4, bidirectional=True).double()
    theirs = torch.nn.LSTM(3, 6, num_layers=2, proj_size=4, bidirectional=True).double()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _copy_to_torch(ours, theirs, torch)
    x, h0, c0 = _rand(5, 2, 3), _rand(4, 2, 4, seed=1), _rand(4, 2, 6, seed=2)
    out, (h, c) = ours(_t(x), (_t(h0), _t(c0)))
    ref, (rh, rc) = theirs(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    for a, b in ((out, ref), (h, rh), (c, rc)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
    (out.sum() + c.sum()).backward()
    (ref.sum() + rc.sum()).backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-10, err_msg=name)


def test_mha_variants_against_torch():
    torch = pytest.importorskip("torch")
    for kw in [dict(kdim=3, vdim=5, add_bias_kv=True), dict(add_zero_attn=True),
               dict(bias=False, batch_first=True)]:
        ours = nn.MultiheadAttention(8, 2, **kw).double()
        theirs = torch.nn.MultiheadAttention(8, 2, **kw).double()
        _copy_to_torch(ours, theirs, torch)
        kd, vd = kw.get("kdim", 8), kw.get("vdim", 8)
        bf = kw.get("batch_first", False)
        q, k, v = _rand(4, 3, 8), _rand(6, 3, kd, seed=1), _rand(6, 3, vd, seed=2)
        if bf:
            q, k, v = (a.swapaxes(0, 1).copy() for a in (q, k, v))
        kpm = np.zeros((3, 6), bool)
        kpm[2, 4:] = True
        blocked = np.random.default_rng(5).random((6, 4, 6)) > 0.7
        blocked[..., 0] = False
        args = dict(key_padding_mask=kpm, attn_mask=blocked, average_attn_weights=False)
        qo, qt = _t(q, True), torch.tensor(q, requires_grad=True)
        out, w = ours(qo, _t(k), _t(v), **{n: _t(a) if isinstance(a, np.ndarray) else a
                                          for n, a in args.items()})
        ref, rw = theirs(qt, torch.tensor(k), torch.tensor(v),
                         **{n: torch.tensor(a) if isinstance(a, np.ndarray) else a
                            for n, a in args.items()})
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(w.detach().numpy(), rw.detach().numpy(), atol=1e-12)
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(qo.grad.numpy(), qt.grad.numpy(), atol=1e-10)


def test_sdpa_and_decoder_against_torch():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    q, k, v = _rand(2, 4, 3, 5), _rand(2, 2, 6, 5, seed=1), _rand(2, 2, 6, 5, seed=2)
    allowed = np.random.default_rng(3).random((3, 6)) > 0.3
    allowed[:, 0] = True
    got = scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=_t(allowed),
                                       enable_gqa=True)
    want = tF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                           attn_mask=torch.tensor(allowed), enable_gqa=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
    ours = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, norm_first=True).double().eval()
    theirs = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16,
                                              norm_first=True).double().eval()
    _copy_to_torch(ours, theirs, torch)
    tgt, mem = _rand(4, 2, 8), _rand(6, 2, 8, seed=1)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=nbtorch.float64)
    out = ours(_t(tgt), _t(mem), tgt_mask=mask)
    with torch.no_grad():
        ref = theirs(torch.tensor(tgt), torch.tensor(mem),
                     tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(
                         4, dtype=torch.float64))
    np.testing.assert_allclose(out.detach().numpy(), ref.numpy(), atol=1e-12)


def test_full_transformer_against_torch():
    torch = pytest.importorskip("torch")
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
              dim_feedforward=16, batch_first=True)
    ours, theirs = nn.Transformer(**kw).double().eval(), torch.nn.Transformer(**kw).double().eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_to_torch(ours, theirs, torch)
    src, tgt = _rand(2, 5, 8), _rand(2, 4, 8, seed=1)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=nbtorch.float64)
    out = ours(_t(src), _t(tgt), tgt_mask=mask)
    with torch.no_grad():
        ref = theirs(torch.tensor(src), torch.tensor(tgt), tgt_mask=torch.tensor(mask.numpy()))
    np.testing.assert_allclose(out.detach().numpy(), ref.numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        ours(_t(src), _t(tgt[:1]))
