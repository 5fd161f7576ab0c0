"""nbtorch.compile: guards, recompiles, eager fallback, autograd through compiled graphs.

Few distinct fused programs (each a cold compile in CI): the ten-op chain in
float32 (forward and backward), one float64 function for gradcheck, an MLP.
"""
import os

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck
from nbtorch.fx.passes.fused_kernel import FusedKernel
from nbtorch.jit._compile import CompileError, config


def _t(*shape, seed=0, dtype=np.float32, grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return torch.tensor(a, requires_grad=grad)


def ten_ops(x, w, b):
    h = x * w + b
    h = torch.tanh(h) * 0.5 + torch.sigmoid(h)
    h = (h - 0.1).relu() / 1.5
    h = torch.exp(h * 0.1)
    return (h * h).sum()


def _entry(compiled):
    entries = [e for e in compiled._cache.values() if hasattr(e, "cg")]
    return entries[-1]


def _fused(gm):
    return [n.target for n in gm.graph.nodes if isinstance(n.target, FusedKernel)]


def test_ten_ops_forward_backward_match_eager():
    xs = [_t(64, seed=i, grad=True) for i in range(3)]
    ct = torch.compile(ten_ops)
    out = ct(*xs)
    out.backward()
    got = [x.grad for x in xs]
    for x in xs:
        x.grad = None
    ref = ten_ops(*xs)
    ref.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-6)
    for g, x in zip(got, xs):
        np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-7)
    cg = _entry(ct).cg
    assert len(_fused(cg.forward_gm)) == 1 and len(_fused(cg.backward_gm)) == 1
    # the forward returns what the backward reads, no more: x, w and four activations
    assert cg.n_saved == 6
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    # a second call reuses the graph
    ct(*xs).backward()
    assert len(ct._cache) == 1 and ct.recompiles == 0


def f64(x, w):
    y = torch.sigmoid(x * w)
    return torch.softmax(y, -1) * y


def test_gradcheck_float64():
    x = _t(3, 5, dtype=np.float64, grad=True)
    w = _t(5, seed=1, dtype=np.float64, grad=True)
    cf = torch.compile(f64)
    assert gradcheck(cf, (x, w), eps=1e-6, atol=1e-5)
    assert len(cf._cache) == 1
    np.testing.assert_allclose(cf(x, w).detach().numpy(), f64(x, w).detach().numpy(),
                               rtol=1e-12)


def test_backward_with_an_expanded_output_gradient():
    """`.sum()` of a compiled output hands the backward graph an expanded gradient (stride
    0); the graph was traced with contiguous ones and its view ops keep those strides, so
    the gradient is laid out as traced first (it crashed accumulating into x.grad)."""
    x = _t(3, 4, dtype=np.float64, grad=True)
    cf = torch.compile(lambda t: t.sum(0) * 2.0)
    cf(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0))
    g = torch.ones(4, dtype=torch.float64).t()                  # a contiguous gradient too
    gx, = torch.autograd.grad(cf(x), x, g)
    np.testing.assert_array_equal(gx.numpy(), np.full((3, 4), 2.0))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_compiled_module_trains_like_eager():
    torch.manual_seed(0)
    m = MLP()
    ref = MLP()
    ref.load_state_dict(m.state_dict())
    cm = torch.compile(m)
    x, y = _t(32, 8, seed=3), torch.tensor(np.random.default_rng(4).integers(0, 4, 32))
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=1e-2)
    losses = []
    for step in range(30):
        for model, o in ((cm, opt), (ref, opt_ref)):
            o.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            o.step()
            if model is cm:
                losses.append(loss.item())
                grads = [p.grad.clone() for p in m.parameters()]
        if step == 0:
            for g, p in zip(grads, ref.parameters()):
                np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert losses[-1] < 0.7 * losses[0]
    for p, q in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-3,
                                   atol=1e-4)
    assert cm.recompiles == 0 and not cm.fallback_reasons
    assert list(cm.state_dict()) == ["_orig_mod.fc1.weight", "_orig_mod.fc1.bias",
                                     "_orig_mod.fc2.weight", "_orig_mod.fc2.bias"]


def test_guards_recompile_and_never_run_stale_graphs():
    m = MLP()
    cm = torch.compile(m)
    x = _t(4, 8)
    with torch.no_grad():
        np.testing.assert_allclose(cm(x).numpy(), m(x).numpy(), rtol=1e-6)
        x2 = _t(6, 8, seed=1)                         # another shape: a new entry
        np.testing.assert_allclose(cm(x2).numpy(), m(x2).numpy(), rtol=1e-6)
        assert cm.recompiles == 1
        xd = x.double()                               # another dtype: refused by the
        m64 = MLP().double()                          # eager code too, so use a model
        cm64 = torch.compile(m64)
        np.testing.assert_allclose(cm64(xd).numpy(), m64(xd).numpy(), rtol=1e-12)
    out = cm(x)                                       # grad mode on: a training graph
    assert out.requires_grad and cm.recompiles == 2
    m.eval()
    with torch.no_grad():
        cm(x)
    assert cm.recompiles == 3                         # training flag is guarded
    # weights replaced (same kind): read at every call, no recompile
    with torch.no_grad():
        m.fc1.weight.copy_(torch.zeros(16, 8))
        np.testing.assert_allclose(cm(x).numpy(), m(x).numpy(), rtol=1e-6)
    m.fc2 = nn.Linear(16, 4)                          # a new submodule: its weights
    with torch.no_grad():
        np.testing.assert_allclose(cm(x).numpy(), m(x).numpy(), rtol=1e-6)
    m.fc2.weight.requires_grad_(False)                # a weight's kind changed: again
    with torch.no_grad():
        np.testing.assert_allclose(cm(x).numpy(), m(x).numpy(), rtol=1e-6)


def test_cache_size_limit_warns_then_runs_eagerly(monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 2)
    cf = torch.compile(lambda x: torch.relu(x) * 2)
    with torch.no_grad():
        for n in (2, 3):
            cf(_t(n))
        with pytest.warns(UserWarning, match="cache_size_limit"):
            out = cf(_t(4))
        np.testing.assert_allclose(out.numpy(), torch.relu(_t(4)).numpy() * 2)
    assert cf.recompiles == 1


def branchy(x):
    if x.sum() > 0:                     # data-dependent control flow
        return x * 2
    return x - 1


def test_data_dependent_control_flow_falls_back_or_raises():
    cf = torch.compile(branchy)
    x = _t(5)
    with pytest.warns(UserWarning, match="running branchy eagerly"):
        out = cf(x)
    np.testing.assert_allclose(out.numpy(), branchy(x).numpy())
    np.testing.assert_allclose(cf(-x.abs()).numpy(), branchy(-x.abs()).numpy())
    assert "Python boolean" in cf.fallback_reasons[0]
    assert "test_compile.py" in cf.fallback_reasons[0]
    with pytest.raises(CompileError, match="fullgraph=True"):
        torch.compile(branchy, fullgraph=True)(x)


def test_create_graph_is_a_clear_error():
    x = _t(64, grad=True)
    w, b = _t(64, seed=1, grad=True), _t(64, seed=2, grad=True)
    out = torch.compile(ten_ops)(x, w, b)
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(out, x, create_graph=True)


def test_dynamic_batch_reuses_kernels():
    from nbtorch.kernels import _generated
    cf = torch.compile(ten_ops, dynamic=True)
    with torch.no_grad():
        for n in (64, 32, 48):
            xs = [_t(n, seed=i) for i in range(3)]
            np.testing.assert_allclose(cf(*xs).item(), ten_ops(*xs).item(), rtol=1e-6)
    assert cf.recompiles == 0 and len(cf._cache) == 1
    kernels = {id(k) for e in next(iter(cf._cache.values())).values()
               for k in _fused(e.cg.forward_gm)}
    sources = {next(iter(fk.sources().values())) for e in next(iter(cf._cache.values())).values()
               for fk in _fused(e.cg.forward_gm)}
    assert len(kernels) == 3 and len(sources) == 1    # one generated kernel for all sizes
    assert _generated.directory()


def test_backends_and_bad_input():
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, [t.shape for t in example_inputs]))
        return gm.forward
    cf = torch.compile(lambda x: torch.relu(x) + 1, backend=backend)
    x = _t(3)
    np.testing.assert_allclose(cf(x).numpy(), torch.relu(x).numpy() + 1)
    assert seen and "relu" in seen[0][0].code and seen[0][1] == [(3,)]
    ce = torch.compile(ten_ops, backend="eager")
    xs = [_t(64, seed=i) for i in range(3)]
    with torch.no_grad():
        np.testing.assert_allclose(ce(*xs).item(), ten_ops(*xs).item(), rtol=1e-6)
    assert not _fused(_entry(ce).cg.forward_gm)
    with pytest.raises(RuntimeError, match="expected a function or an nn.Module"):
        torch.compile(123)
    with pytest.raises(ValueError, match="unknown backend"):
        torch.compile(ten_ops, backend="tvm")
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        torch.compile(ten_ops, mode="fastest")
    assert torch.compile(ten_ops, disable=True) is ten_ops

    @torch.compile
    def deco(x):
        return x * 3
    np.testing.assert_allclose(deco(x).numpy(), x.numpy() * 3)
    assert deco.__wrapped__.__name__ == "deco"
    torch._dynamo.reset()
    assert not deco._cache


def test_saved_input_modified_in_place_is_detected():
    xs = [_t(64, seed=i, grad=True) for i in range(3)]
    a = xs[0] * 1.0                        # a non-leaf input we may change in place
    ct = torch.compile(ten_ops)
    out = ct(a, xs[1], xs[2])
    with torch.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_jit_inspect_shows_generated_kernels():
    xs = [_t(64, seed=i, grad=True) for i in range(3)]
    ct = torch.compile(ten_ops)
    ct(*xs).backward()
    r = torch.jit.inspect(ct, code=False)
    assert [k.graph.split(":")[1] for k in r.kernels] == ["forward", "backward"]
    fwd = r.kernels[0]
    assert "def fused_serial" in fwd.source and "cache=True" in fwd.source
    assert "sum(" in fwd.steps and "tanh(" in fwd.steps
    assert fwd.path and fwd.path.endswith(".py") and os.path.exists(fwd.path)
    assert fwd.variants and fwd.asm is None
    one = torch.jit.inspect(fwd.kernel).kernels[0]     # IR and assembly: a fresh compile
    assert one.asm and "define" in one.llvm and one.compile_time > 0
    text = str(r)
    assert "graph 0:forward" in text and "kernel fused_0" in text
    assert "<h4>" in r._repr_html_()
    with pytest.raises(TypeError, match="expected a compiled model"):
        torch.jit.inspect(42)


def test_batchnorm_and_dropout_compile_in_training_and_eval():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5),
                      nn.Linear(8, 2))
    ref = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5),
                        nn.Linear(8, 2))
    ref.load_state_dict(m.state_dict())
    cm = torch.compile(m)
    x = _t(16, 4)
    for _ in range(2):
        cm(x).sum().backward()
        ref(x).sum().backward()
    assert not cm.fallback_reasons
    bn, bn_ref = m[1], ref[1]
    assert bn.num_batches_tracked.item() == bn_ref.num_batches_tracked.item() == 2
    np.testing.assert_allclose(bn.running_mean.numpy(), bn_ref.running_mean.numpy(),
                               rtol=1e-5, atol=1e-7)
    masks = [(cm(x) == cm(x)).all().item() for _ in range(2)]
    assert masks == [False, False]                 # dropout draws a new mask every call
    ref.load_state_dict(m.state_dict())            # (those calls updated the statistics)
    m.eval()
    ref.eval()
    x.requires_grad_(True)
    out = cm(x)                                     # eval with gradients: BatchNorm's
    out.sum().backward()                            # backward reads its forward's stats
    g = x.grad.clone()
    x.grad = None
    ref(x).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert not cm.fallback_reasons


def test_aliased_arguments_are_guarded():
    cf = torch.compile(lambda a, b: torch.tanh(a) * 2 + b)
    x, y = _t(4), _t(4, seed=1)
    with torch.no_grad():
        np.testing.assert_allclose(cf(x, x).numpy(), (torch.tanh(x) * 2 + x).numpy(),
                                   rtol=1e-6)
        np.testing.assert_allclose(cf(x, y).numpy(), (torch.tanh(x) * 2 + y).numpy(),
                                   rtol=1e-6)
    assert len(cf._cache) == 2


def test_embedding_backward_reads_each_calls_indices():
    """The compiled backward of an embedding replays the indices it is given, not the first
    call's (they reached the backward as a raw array, which the capture kept as a constant)."""
    w = torch.randn(6, 2, requires_grad=True)

    def fn(i, w):
        return F.embedding(i, w).sum(1)
    compiled = torch.compile(fn)
    for idx in ([[0, 1, 2]], [[5, 5, 5]], [[3, 3, 0]]):
        i = torch.tensor(idx)
        w.grad = None
        compiled(i, w).sum().backward()
        got = w.grad.clone()
        w.grad = None
        fn(i, w).sum().backward()
        assert np.array_equal(got.numpy(), w.grad.numpy()), idx


DATA_DEPENDENT = {
    "unique": lambda x, y: y.sum() * torch.unique(x.round()).numel(),
    "bincount": lambda x, y: y * torch.bincount((x.abs() * 2).long().flatten(), minlength=9)[:1],
    "nonzero": lambda x, y: y.sum() + (x > 0).nonzero().shape[0],
    "masked_select": lambda x, y: (y.masked_select(x > 0) * 2).sum(),
    "boolean mask": lambda x, y: y[x > 0].exp().sum(),
    "histc": lambda x, y: y * torch.histc(x, 4, -2, 2)[0],
    "repeat_interleave": lambda x, y: y.repeat_interleave((x[:, 0] > 0).long() + 1, 0).sum(),
}


@pytest.mark.parametrize("name", list(DATA_DEPENDENT))
def test_data_dependent_ops_run_eagerly_with_a_reason(name):
    """Ops whose result the host computes from the data (output shapes, counts) are not
    captured: the function runs eagerly (its values are eager's on every call, where a
    capture replayed the first call's), the reason names the op; fullgraph=True refuses."""
    fn = DATA_DEPENDENT[name]
    compiled = torch.compile(fn)
    g = torch.Generator().manual_seed(5)
    with pytest.warns(UserWarning, match="eagerly"):
        compiled(torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g))
    for _ in range(3):
        x = torch.randn(3, 4, generator=g)
        y = torch.randn(3, 4, generator=g, requires_grad=True)
        got, want = compiled(x, y), fn(x, y)
        assert np.allclose(got.detach().numpy(), want.detach().numpy())
        got.sum().backward()
    assert any("data" in r or "host" in r for r in compiled.fallback_reasons)
    with pytest.raises(CompileError, match="fullgraph=True"):
        torch.compile(fn, fullgraph=True)(x, y)


def test_attention_masks_are_graph_values():
    """A compiled attention reads each call's mask: the fused kernels took the mask as a
    raw array, which the capture kept as a constant (scaled_dot_product_attention with
    attn_mask, MultiheadAttention's fused self-attention with key_padding_mask/attn_mask,
    inference: silently the first call's mask)."""
    def sdpa(q, k, m):
        return F.scaled_dot_product_attention(q, k, k, attn_mask=m)
    mha = nn.MultiheadAttention(6, 2, batch_first=True).eval()
    c_sdpa, c_mha = torch.compile(sdpa), torch.compile(mha)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _ in range(3):
            q, k = torch.randn(2, 4, 3, generator=g), torch.randn(2, 4, 3, generator=g)
            m = torch.rand(4, 4, generator=g) > 0.3
            np.testing.assert_allclose(c_sdpa(q, k, m).numpy(), sdpa(q, k, m).numpy(),
                                       atol=1e-6)
            x = torch.randn(2, 4, 6, generator=g)
            pad = torch.rand(2, 4, generator=g) > 0.6
            pad[:, 0] = False
            am = torch.rand(4, 4, generator=g) > 0.7
            am.fill_diagonal_(False)
            kw = dict(key_padding_mask=pad, attn_mask=am, need_weights=False)
            np.testing.assert_allclose(c_mha(x, x, x, **kw)[0].numpy(),
                                       mha(x, x, x, **kw)[0].numpy(), atol=1e-5)
    assert not c_sdpa.fallback_reasons


def test_triangular_and_causal_masks_are_captured():
    """tril/triu and the causal attention bias are made on the host from sizes alone: the
    capture records them as calls (it fell back to eager on them before)."""
    def fn(x, q):
        return x.triu(1) + x.tril(), F.scaled_dot_product_attention(q, q, q, is_causal=True)
    compiled = torch.compile(fn)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(2):
            x, q = torch.randn(4, 4, generator=g), torch.randn(2, 4, 3, generator=g)
            for a, b in zip(compiled(x, q), fn(x, q)):
                np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)
    assert not compiled.fallback_reasons


@pytest.mark.parametrize("loss", [
    lambda x, t: F.cross_entropy(x, t),
    nn.CrossEntropyLoss(weight=torch.tensor([1., 2., .5, 1.5, 3.]), label_smoothing=0.1,
                        ignore_index=2),
    lambda x, t: F.nll_loss(x.log_softmax(1), t, ignore_index=0, reduction="sum"),
])
def test_class_index_losses_are_captured_and_check_each_calls_targets(loss):
    """cross_entropy / nll_loss with class indices compile (their targets were prepared on
    the host, so the capture fell back to eager): the replayed graph masks ignored targets,
    weighs and counts each call's own targets, and still refuses one out of range."""
    compiled = torch.compile(loss)
    g = torch.Generator().manual_seed(0)
    for k in range(3):
        x = torch.randn(4, 5, generator=g, requires_grad=True)
        t = torch.randint(0, 5, (4,), generator=g) if k < 2 else torch.zeros(4, dtype=torch.int64)
        got = compiled(x, t)
        got.backward()
        g_got, x.grad = x.grad, None
        want = loss(x, t)
        want.backward()
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-6)
        np.testing.assert_allclose(g_got.numpy(), x.grad.numpy(), atol=1e-6)
    assert not compiled.fallback_reasons
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        compiled(x, torch.tensor([0, 1, 7, 2]))


def test_tensors_made_in_the_compiled_code_are_captured():
    """Factories the traced code calls itself (torch.zeros(3), torch.arange, a literal
    torch.tensor([...])) and `x[i] = 0` are graph nodes: they made compile fall back."""
    fns = [lambda x: torch.zeros(3) + x,
           lambda x: x * torch.arange(3) + torch.full((3,), 2.0),
           lambda x: torch.zeros(3).index_add(0, torch.tensor([0, 0]), x[:2]),
           lambda x: x + torch.tensor([1.0, 2.0, 3.0]),
           lambda x: _zero_at(x * 2, torch.tensor([1]))]
    g = torch.Generator().manual_seed(0)
    for fn in fns:
        compiled = torch.compile(fn)
        for _ in range(2):
            x = torch.randn(3, generator=g, requires_grad=True)
            np.testing.assert_allclose(compiled(x).detach().numpy(), fn(x).detach().numpy())
        assert not compiled.fallback_reasons


def _zero_at(t, i):
    t[i] = 0.0
    return t


def test_index_results_without_a_function_are_captured():
    """argmax/argmin/argsort make their indices without an autograd Function: recorded as
    whole calls, so code using them compiles (their raw results made it run eagerly)."""
    fns = [lambda x, y: x.argmax(1).float() + y.sum(1),
           lambda x, y: y.gather(1, x.argsort(1, descending=True)) * 2,
           lambda x, y: y.gather(1, x.argmin(1, keepdim=True)) + 1]
    g = torch.Generator().manual_seed(2)
    for fn in fns:
        compiled = torch.compile(fn)
        for _ in range(3):
            x = torch.randn(3, 4, generator=g)
            y = torch.randn(3, 4, generator=g, requires_grad=True)
            got, want = compiled(x, y), fn(x, y)
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
            (gy,) = torch.autograd.grad(got.sum(), y)
            (wy,) = torch.autograd.grad(want.sum(), y)
            np.testing.assert_allclose(gy.numpy(), wy.numpy())
        assert not compiled.fallback_reasons


def test_transformer_layers_with_masks_compile_and_train():
    """A Transformer encoder layer with a key padding mask and a decoder layer with a
    causal mask are captured whole, forward and backward (all/any, used by the attention's
    safe softmax, are recorded as whole calls; they made both run eagerly)."""
    torch.manual_seed(0)
    enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    dec = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    c_enc, c_dec = torch.compile(enc), torch.compile(dec)
    g = torch.Generator().manual_seed(1)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    for _ in range(2):
        x = torch.randn(2, 5, 8, generator=g)
        pad = torch.rand(2, 5, generator=g) > 0.7
        pad[:, 0] = False
        mem = torch.randn(2, 3, 8, generator=g)
        for model, compiled, args, kw in (
                (enc, c_enc, (x,), dict(src_key_padding_mask=pad)),
                (dec, c_dec, (x, mem), dict(tgt_mask=causal, tgt_is_causal=True))):
            want = model(*args, **kw)
            want.sum().backward()
            want_g = [p.grad.clone() for p in model.parameters()]
            model.zero_grad()
            got = compiled(*args, **kw)
            got.sum().backward()
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                       rtol=1e-4, atol=1e-5)
            for p, w in zip(model.parameters(), want_g):
                np.testing.assert_allclose(p.grad.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)
            model.zero_grad()
    assert not c_enc.fallback_reasons and not c_dec.fallback_reasons


def test_dropout_in_training_is_captured_and_draws_as_eager():
    """A Transformer layer training with dropout compiles whole (its fused backwards record
    their kernels: ops/_fused_grad.py), and with the same seed every compiled call, the
    first included (the capture's own draws are undone), equals eager's."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, batch_first=True)
    compiled = torch.compile(layer)
    g = torch.Generator().manual_seed(4)
    for k in range(3):
        x = torch.randn(2, 5, 8, generator=g, requires_grad=True)
        results = []
        for model in (layer, compiled):
            torch.manual_seed(10 + k)
            out = model(x)
            out.sum().backward()
            results.append([out.detach()] + [p.grad.clone() for p in layer.parameters()]
                           + [x.grad.clone()])
            layer.zero_grad()
            x.grad = None
        for a, b in zip(*results):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-5)
    assert not compiled.fallback_reasons


@pytest.mark.parametrize("fn", [lambda x: (x.add_(1), x * 2)[1],
                                lambda x: (x[0].mul_(3), x.sum())[1],
                                lambda x: x.copy_(x * 2)])
def test_code_that_changes_its_arguments_changes_them_once(fn):
    """The capture runs the code (tracing, then recording): arguments it changed in place
    were changed three times by the first compiled call (x.add_(1): x + 3, result 6 where
    eager gives 2). They are put back after the capture, as buffers are."""
    compiled = torch.compile(fn)
    for k in range(3):
        x1 = torch.randn(3, 3, generator=torch.Generator().manual_seed(k))
        x2 = x1.clone()
        np.testing.assert_allclose(compiled(x1).numpy(), fn(x2).numpy())
        np.testing.assert_allclose(x1.numpy(), x2.numpy())


def test_norm_backwards_are_recorded_as_their_kernels():
    """In a capture (create_graph=True backward), batch/group/layer norm record their
    backward kernels as one node each (ops/_fused_grad.py), not the op formulas that made
    a compiled conv + batch-norm step 1.7x slower than eager; gradients equal eager's."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.GroupNorm(2, 4), nn.Flatten(), nn.LayerNorm(64))
    compiled = torch.compile(model)
    x = torch.randn(3, 2, 4, 4, generator=torch.Generator().manual_seed(1))
    grads = []
    for m in (model, compiled):
        m(x).pow(2).sum().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        model.zero_grad()
    for a, b in zip(*grads):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-5)
    entry = next(iter(compiled._compiled._cache.values()))
    targets = [str(n.target) for n in entry.cg.backward_gm.graph.nodes]
    assert sum("FusedGrad" in t for t in targets) == 3, targets


def test_compiled_calls_chained_through_their_outputs_train():
    """A compiled LSTM cell called in a loop (each call's input the last one's output):
    capturing the second call ran the first call's compiled backward under create_graph
    (an error) and would have counted it in the weights' gradients; the capture takes its
    inputs as leaves now. Gradients equal eager's."""
    torch.manual_seed(0)
    cell = nn.LSTMCell(4, 3)
    compiled = torch.compile(cell)
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(2, 4, generator=g) for _ in range(3)]
    grads = []
    for m in (cell, compiled):
        h, c = torch.zeros(2, 3), torch.zeros(2, 3)
        for x in xs:
            h, c = m(x, (h, c))
        h.sum().backward()
        grads.append([p.grad.clone() for p in cell.parameters()])
        cell.zero_grad()
    for a, b in zip(*grads):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    assert not compiled.fallback_reasons


def test_compiled_module_after_eager_layers_trains():
    """A compiled module whose input comes from eager layers (a compiled head on an eager
    backbone, sharing a weight with it): the capture's backward ran into the eager layers'
    graph and freed it, so the real backward failed ("backward through the graph a second
    time"). Gradients now equal eager's, the shared weight's two paths counted once each."""
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(4, 4))

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = w

        def forward(self, h):
            return (h @ self.w).tanh()
    head = Head()
    compiled = torch.compile(head)
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(1))
    grads = []
    for m in (head, compiled, compiled):
        w.grad = None
        m((x @ w).relu()).sum().backward()
        grads.append(w.grad.clone())
    for g in grads[1:]:
        np.testing.assert_allclose(g.numpy(), grads[0].numpy(), rtol=1e-5, atol=1e-6)
