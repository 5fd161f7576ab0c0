"""jit.script / ignore / unused / is_scripting / freeze / optimize_for_inference, and
jit.save / jit.load (safe format, no model class needed to load).

The models here run single elementwise ops between matmuls: no fused kernel is
compiled (the fusion tests cover those).
"""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.jit as jit
import nbtorch.nn as nn


def _t(*shape, seed=0):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


seen_scripting = []


def by_shape(x):
    seen_scripting.append(jit.is_scripting())
    if x.shape[0] > 3:                 # control flow on a shape: fine per guard set
        return x * 2
    return x - 1


def test_script_specialises_on_shapes():
    s = jit.script(by_shape)
    np.testing.assert_allclose(s(torch.ones(5)).numpy(), np.full(5, 2.0))
    np.testing.assert_allclose(s(torch.ones(2)).numpy(), np.zeros(2))
    assert "sub" in s.code and True in seen_scripting
    assert not jit.is_scripting()
    np.testing.assert_allclose(s(torch.ones(4)).numpy(), np.full(4, 2.0))


def by_value(x):
    if x.sum() > 0:                    # control flow on data: cannot be scripted
        return x
    return -x


def test_script_refuses_data_dependent_control_flow():
    with pytest.raises(jit.ScriptError, match=r"test_script_save.py:\d+.*jit.trace"):
        jit.script(by_value)(torch.ones(3))
    with pytest.raises(RuntimeError, match="expected a function or an nn.Module"):
        jit.script(3)


@jit.ignore
def python_only(x):
    return x + float(x.sum().item() > 0)     # data-dependent, but kept out of the graph


class WithIgnored(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return python_only(torch.relu(self.fc(x)))

    @jit.unused
    def debug(self, x):
        return x.sum().item()


def test_script_module_ignore_unused():
    m = WithIgnored()
    s = jit.script(m)
    x = _t(2, 3)
    with torch.no_grad():
        np.testing.assert_allclose(s(x).numpy(), m(x).numpy(), rtol=1e-6)
        with torch.no_grad():
            m.fc.bias.fill_(-100.0)           # the ignored Python runs at every call
        np.testing.assert_allclose(s(x).numpy(), m(x).numpy(), rtol=1e-6)
    assert python_only.__wrapped__ in [n.target for n in s.graph.nodes]
    assert list(s.state_dict()) == list(m.state_dict())
    assert s.fc is m.fc
    assert m.debug(x) == x.sum().item()           # eager: runs

    class CallsUnused(WithIgnored):
        def forward(self, x):
            return self.debug(x)
    with pytest.raises(jit.ScriptError, match="unused"):
        jit.script(CallsUnused())(x)


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 2)
        self.register_buffer("scale", torch.full((2,), 0.5))

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x)))) * (self.scale * 2)


def test_freeze_and_optimize_for_inference():
    m = Small()
    x = _t(5, 4)
    traced = jit.trace(m, x)
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        jit.freeze(traced)
    m.eval()
    traced = jit.trace(m, x)
    ref = m(x).detach().numpy()
    frozen = jit.freeze(traced)
    assert not list(frozen.parameters())
    np.testing.assert_allclose(frozen(x).numpy(), ref, rtol=1e-5)
    assert any(n.target.startswith("_folded_constant") for n in frozen.graph.nodes
               if n.op == "get_attr")                  # scale * 2 computed ahead
    with torch.no_grad():
        m.fc2.weight.fill_(0.0)                        # the frozen copy does not follow
    np.testing.assert_allclose(frozen(x).numpy(), ref, rtol=1e-5)
    fast = jit.optimize_for_inference(frozen)
    out = fast(x)
    assert not out.requires_grad
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)


def test_save_load_roundtrip(tmp_path):
    m = Small().eval()
    x = _t(5, 4)
    traced = jit.trace(m, x)
    path = tmp_path / "small.nbj"
    jit.save(traced, path)
    loaded = jit.load(path)
    np.testing.assert_allclose(loaded(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    assert list(loaded.state_dict()) == list(m.state_dict())
    assert "bn.running_mean" in dict(loaded.named_buffers())
    assert type(loaded).__name__ == "Small"
    assert "torch.nn.functional.batch_norm" in loaded.code
    loaded.load_state_dict(m.state_dict())            # a state_dict still fits
    again = jit.trace(loaded, x)                      # and it traces again
    jit.save(again, tmp_path / "again.nbj")
    np.testing.assert_allclose(jit.load(tmp_path / "again.nbj", map_location="cpu")(x)
                               .detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    # a function
    tf = jit.trace(lambda a, b: torch.tanh(a) @ b, (x, _t(4, 2)))
    jit.save(tf, tmp_path / "fn.nbj")
    np.testing.assert_allclose(jit.load(tmp_path / "fn.nbj")(x, _t(4, 2)).numpy(),
                               (torch.tanh(x) @ _t(4, 2)).numpy(), rtol=1e-6)


class _ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)
        self.l = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        return self.l(self.drop(self.bn(self.c(x)).relu()).flatten(1)).softmax(-1)


def test_save_scripted_traced_and_loaded_with_their_save_method(tmp_path):
    """PyTorch's deployment idioms: ``torch.jit.script(model).save(f)``, ``traced.save(f)``
    and saving a loaded module again. A scripted module is saved as the trace of its
    last call's input signature (said in a warning); before any call there is none."""
    torch.manual_seed(0)
    model = _ConvNet().eval()
    scripted = jit.script(model)
    with pytest.raises(RuntimeError, match="has not been called yet.*example_inputs"):
        scripted.save(tmp_path / "s.nbj")
    scripted(_t(3, 1, 8, 8))
    with pytest.warns(UserWarning, match=r"trace of its last call \(inputs \[3, 1, 8, 8\] "
                                         r"float32\)"):
        scripted.save(tmp_path / "s.nbj")
    x = _t(5, 1, 8, 8, seed=1)                      # another batch size
    loaded = jit.load(tmp_path / "s.nbj")
    np.testing.assert_allclose(loaded(x).detach().numpy(), model(x).detach().numpy(),
                               rtol=1e-6)
    assert list(loaded.state_dict()) == list(model.state_dict())
    loaded.save(tmp_path / "again.nbj")
    np.testing.assert_allclose(jit.load(tmp_path / "again.nbj")(x).detach().numpy(),
                               model(x).detach().numpy(), rtol=1e-6)
    traced = jit.trace(model, x)
    traced.save(tmp_path / "t.nbj")
    np.testing.assert_allclose(jit.load(tmp_path / "t.nbj")(x).detach().numpy(),
                               model(x).detach().numpy(), rtol=1e-6)
    fn = jit.script(lambda a, b: (a * b).sum(-1) + 1, example_inputs=[(_t(2, 3), _t(2, 3))])
    with pytest.warns(UserWarning, match=r"inputs \[2, 3\] float32, \[2, 3\] float32"):
        jit.save(fn, tmp_path / "f.nbj")
    a, b = _t(4, 3, seed=2), _t(4, 3, seed=3)
    np.testing.assert_allclose(jit.load(tmp_path / "f.nbj")(a, b).numpy(),
                               ((a * b).sum(-1) + 1).numpy(), rtol=1e-6)
    tf = jit.trace(lambda a: a.exp(), _t(2))
    tf.save(tmp_path / "g.nbj")
    assert jit.load(tmp_path / "g.nbj")(torch.zeros(3)).tolist() == [1.0, 1.0, 1.0]


def test_saving_a_scripted_module_changes_neither_the_model_nor_the_random_stream(tmp_path):
    """The save traces a copy on zeros with the random streams put back: BatchNorm's
    statistics in training mode and the next random numbers are as without the save
    (which then refuses a training-mode BatchNorm, as saving a trace does)."""
    torch.manual_seed(0)
    model = _ConvNet().train()
    scripted = jit.script(model)
    scripted(_t(3, 1, 8, 8))
    stats = {k: v.clone() for k, v in model.state_dict().items()}
    state = torch.get_rng_state()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="module 'bn' .* call .eval()"):
            scripted.save(tmp_path / "s.nbj")
    assert torch.equal(torch.get_rng_state(), state)
    for k, v in model.state_dict().items():
        assert torch.equal(v, stats[k]), k


def test_load_refuses_bad_files(tmp_path):
    m = Small().eval()
    x = _t(5, 4)
    path = tmp_path / "m.nbj"
    jit.save(jit.trace(m, x), path)
    data = path.read_bytes()
    cut = tmp_path / "cut.nbj"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="truncated or corrupted|not a valid"):
        jit.load(cut)
    junk = tmp_path / "junk.nbj"
    junk.write_bytes(b"not a zip at all")
    with pytest.raises(RuntimeError, match="not a valid"):
        jit.load(junk)
    torch.save({"a": torch.ones(2)}, tmp_path / "ckpt.pt")
    with pytest.raises(RuntimeError, match="no nbtorch.jit graph"):
        jit.load(tmp_path / "ckpt.pt")
    # a crafted archive naming another callable is refused, not called
    archive = torch.load(path)
    for node in archive["graph"]:
        if node["target"] == "torch.relu":
            node["target"] = "os.system"
    evil = tmp_path / "evil.nbj"
    torch.save(archive, evil)
    with pytest.raises(RuntimeError, match="refused call target 'os.system'"):
        jit.load(evil)
    with pytest.raises(TypeError, match="traced module"):
        jit.save(m, tmp_path / "x.nbj")


_MODEL = textwrap.dedent("""
    import nbtorch as torch, nbtorch.nn as nn

    class SecretNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 4)
            self.ln = nn.LayerNorm(4)

        def forward(self, x):
            return torch.sigmoid(self.ln(self.fc(x))) * 3
""")

_SAVE = textwrap.dedent("""
    import sys, numpy as np, nbtorch as torch
    sys.path.insert(0, sys.argv[1])
    from secret_model import SecretNet
    torch.manual_seed(0)
    m = SecretNet().eval()
    x = torch.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    torch.jit.save(torch.jit.trace(m, x), sys.argv[2])
    torch.save({"x": x, "y": m(x).detach()}, sys.argv[3])
""")

_LOAD = textwrap.dedent("""
    import sys, numpy as np, nbtorch as torch
    ref = torch.load(sys.argv[2])
    m = torch.jit.load(sys.argv[1])
    out = m(ref["x"]).detach()
    assert "secret_model" not in sys.modules
    np.testing.assert_allclose(out.numpy(), ref["y"].numpy(), rtol=1e-6)
    print("OK", type(m).__name__)
""")


def test_loaded_module_runs_without_its_class(tmp_path):
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "secret_model.py").write_text(_MODEL)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    archive, ref = str(tmp_path / "net.nbj"), str(tmp_path / "ref.pt")
    r = subprocess.run([sys.executable, "-c", _SAVE, str(tmp_path / "secret"), archive, ref],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run([sys.executable, "-c", _LOAD, archive, ref], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "OK SecretNet"


def test_save_inlines_layers_without_a_functional_table_entry(tmp_path):
    # MaxPool2d, padding, upsampling, attention: their forward is traced through into the
    # saved graph (it used to refuse them); Sequential's numbered children load back
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.ReflectionPad2d(1),
                        nn.Upsample(scale_factor=2), nn.Flatten(), nn.Linear(4 * 10 * 10, 3))
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
    for i, (m, x, other) in enumerate([(cnn, torch.randn(2, 1, 8, 8), torch.randn(5, 1, 8, 8)),
                                       (encoder, torch.randn(2, 3, 8), torch.randn(4, 6, 8))]):
        m.eval()
        path = tmp_path / f"m{i}.nbj"
        torch.jit.save(torch.jit.trace(m, x), str(path))
        loaded = torch.jit.load(str(path))
        assert not any(n.op == "call_module" for n in loaded.graph.nodes)
        np.testing.assert_allclose(loaded(other).detach().numpy(),
                                   m(other).detach().numpy(), rtol=1e-5, atol=1e-6)
        assert set(loaded.state_dict()) >= set(m.state_dict())


class _Tagger(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn
        width = rnn.proj_size or rnn.hidden_size
        self.out = nn.Linear(width * (2 if rnn.bidirectional else 1), 2)

    def forward(self, x):
        y, state = self.rnn(x)
        return self.out(y), state


@pytest.mark.parametrize("rnn", [
    lambda: nn.GRU(4, 5, batch_first=True), lambda: nn.RNN(4, 5, nonlinearity="relu"),
    lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True),
    lambda: nn.LSTM(4, 5, batch_first=True, bias=False)])
def test_save_recurrent_layers_as_functional_ops_for_any_length(tmp_path, rnn):
    """nn.LSTM/GRU/RNN are saved as torch.lstm/gru/rnn_* (ATen's functional forms, one op
    over any sequence length; they were refused), the zero initial state made from the
    input's batch size."""
    torch.manual_seed(0)
    m = _Tagger(rnn()).eval()
    first = m.rnn.batch_first
    path = str(tmp_path / "tagger.nbj")
    torch.jit.save(torch.jit.trace(m, torch.randn(2, 3, 4)), path)
    loaded = torch.jit.load(path)
    assert not any(n.op == "call_module" for n in loaded.graph.nodes)
    x = torch.randn(5, 7, 4) if first else torch.randn(7, 5, 4)

    def flat(o):
        return [o] if isinstance(o, torch.Tensor) else [t for e in o for t in flat(e)]
    got, want = flat(loaded(x)), flat(m(x))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)


def test_save_refuses_recurrent_layers_it_cannot_write_with_the_reason(tmp_path):
    traced = torch.jit.trace(_Tagger(nn.LSTM(4, 5, proj_size=3)).eval(), torch.randn(3, 2, 4))
    with pytest.raises(RuntimeError, match="'rnn' .*projections"):
        torch.jit.save(traced, str(tmp_path / "t.nbj"))


class _AttentionBlock(nn.Module):
    """nn.MultiheadAttention as a user's block calls it: both outputs, keyword flags."""

    def __init__(self, batch_first, need_weights, average):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=batch_first)
        self.norm = nn.LayerNorm(8)
        self.need_weights, self.average = need_weights, average

    def forward(self, x, mask):
        y, w = self.attn(x, x, x, key_padding_mask=mask, need_weights=self.need_weights,
                         average_attn_weights=self.average)
        out = self.norm(x + y)
        return (out, w) if w is not None else out


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_save_inlines_multihead_attention_with_its_flags(tmp_path, batch_first, need_weights,
                                                         average):
    """A block calling nn.MultiheadAttention saves and loads: the layer returns a tuple
    (its inlining was refused), its flags are constants of the inlined graph (they were
    graph inputs, whose truth value stopped the inlining), and a None output is None
    in the trace (it was a proxy, so `w is not None` held)."""
    torch.manual_seed(0)
    m = _AttentionBlock(batch_first, need_weights, average).eval()

    def inputs(n, s):
        x = torch.randn(n, s, 8) if batch_first else torch.randn(s, n, 8)
        mask = torch.zeros(n, s, dtype=torch.bool)
        mask[1:, -1] = True
        return x, mask
    path = str(tmp_path / "attn.nbj")
    torch.jit.save(torch.jit.trace(m, inputs(2, 5)), path)
    loaded = torch.jit.load(path)
    assert not any(n.op == "call_module" for n in loaded.graph.nodes)
    x, mask = inputs(3, 4)
    want, got = m(x, mask), loaded(x, mask)
    want, got = (want, got) if need_weights else ((want,), (got,))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("make", [lambda: nn.GRU(4, 6), lambda: nn.RNN(4, 6, batch_first=True),
                                  lambda: nn.LSTM(4, 6, num_layers=2, bidirectional=True)])
def test_traced_recurrent_layer_is_one_call_for_any_length(make):
    """A recurrent layer traced as the root: one call of the layer (an LSTM's trace
    raised TypeError inside its fused op; a GRU's unrolled the time loop, so a longer
    input gave an output as long as the example, silently). The state_dict keys stay
    the layer's, and loading one changes the layer."""
    torch.manual_seed(0)
    m = make().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # no TracerWarning either
        traced = jit.trace(m, torch.randn(5, 3, 4))
    assert [n.op for n in traced.graph.nodes].count("call_module") == 1
    x = torch.randn(7, 3, 4)

    def flat(o):
        return [o] if isinstance(o, torch.Tensor) else [t for e in o for t in flat(e)]
    for a, b in zip(flat(traced(x)), flat(m(x))):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())
    assert list(traced.state_dict()) == list(m.state_dict())
    traced.load_state_dict({k: v * 0 for k, v in m.state_dict().items()})
    assert all(float(p.abs().sum()) == 0 for p in m.parameters())


@pytest.mark.parametrize("make,x", [
    (lambda: nn.Conv1d(3, 5, 3, padding=1), (2, 3, 10)),
    (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2), (2, 3, 5, 5)),
    (lambda: nn.GRUCell(4, 6), (3, 4)),
    (lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True), (2, 3, 4, 4)),
    (lambda: nn.Unflatten(1, (2, -1)), (2, 12)),
])
def test_layers_traced_as_the_root_warn_nothing(make, x):
    """Their input checks read the example's sizes (Tensor._static_shape) instead of
    traced sizes turned into Python booleans (a TracerWarning at nbtorch's own line);
    Unflatten is one op, so the traced and saved graphs take other batch sizes."""
    m = make().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traced = jit.trace(m, torch.randn(*x))
    other = torch.randn(5, *x[1:])
    np.testing.assert_allclose(traced(other).detach().numpy(), m(other).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


class _Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 3)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = self.lin(x)
        return y.float().relu()


def test_save_load_autocast_regions_and_closure_modules(tmp_path):
    """A traced autocast region is two graph nodes saved as torch.amp._enter_autocast /
    _exit_autocast (the loaded module casts as the code did); a traced function calling a
    module from its closure saves that module as `_module_0` (the loader refused the
    name it was saved under)."""
    torch.manual_seed(0)
    model = _Mixed()
    x, x5 = _t(2, 8), _t(5, 8, seed=1)
    jit.trace(model, x).save(tmp_path / "m.nbj")
    loaded = jit.load(tmp_path / "m.nbj")
    assert "_enter_autocast" in loaded.code
    got, want = loaded(x5), model(x5)
    assert got.dtype is want.dtype is torch.float32 and torch.equal(got, want)
    assert not torch.is_autocast_enabled("cpu")
    lin = model.lin
    jit.trace(lambda a: lin(a).tanh(), x).save(tmp_path / "f.nbj")
    f = jit.load(tmp_path / "f.nbj")
    assert list(f.state_dict()) == ["_module_0.weight", "_module_0.bias"]
    np.testing.assert_allclose(f(x5).detach().numpy(), lin(x5).tanh().detach().numpy(),
                               rtol=1e-6)


def test_freeze_and_optimize_a_scripted_module_before_its_first_call():
    """PyTorch's deployment idiom ``optimize_for_inference(script(model.eval()))`` (and
    ``freeze``) with no call yet: a FrozenModule that freezes each input signature's graph
    on its first call; a frozen copy (later changes to the model do not reach it), no grad."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.Flatten(), nn.Linear(4 * 6 * 6, 2)).eval()
    frozen = jit.freeze(jit.script(model))
    fast = jit.optimize_for_inference(jit.script(model))
    with pytest.raises(RuntimeError, match="has not run yet"):
        frozen.code
    for n in (2, 5, 2):
        x = _t(n, 3, 6, 6, seed=n)
        want = model(x).detach().numpy()
        for m in (frozen, fast):
            y = m(x)
            assert not y.requires_grad
            np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
    assert "conv2d" in frozen.code and isinstance(fast, jit.ScriptModule)
    with torch.no_grad():
        model[0].weight.mul_(2)
    x = _t(2, 3, 6, 6, seed=2)
    assert not np.allclose(frozen(x).numpy(), model(x).detach().numpy())
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        jit.freeze(jit.script(model.train()))
