"""nbtorch.jit.trace: concrete tracing into the fx Graph; traced models match eager."""
import io
import warnings

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.fx as fx
import nbtorch.jit as jit
import nbtorch.nn as nn
import nbtorch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x))) * self.scale


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(x.view(x.size(0), -1))      # the batch size stays traced


def _quiet_trace(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.TracerWarning)    # none expected
        return jit.trace(*args, **kwargs)


def test_mlp_reproduces_eager_and_is_an_fx_graph():
    model = MLP()
    traced = _quiet_trace(model, torch.randn(2, 4))
    assert isinstance(traced, fx.GraphModule) and isinstance(traced, jit.TracedModule)
    assert isinstance(traced.graph, fx.Graph)
    assert [n.op for n in traced.graph.nodes] == ["placeholder", "call_module",
                                                  "call_function", "call_module", "get_attr",
                                                  "call_function", "output"]
    assert "fc1 = self.fc1(x)" in traced.code and "relu = torch.relu(fc1)" in traced.code
    traced.graph.lint()
    for batch in (1, 2, 7):
        x = torch.randn(batch, 4)
        assert torch.allclose(traced(x), model(x), atol=1e-6)
    meta = {n.name: n.meta["tensor_meta"] for n in traced.graph.nodes if "tensor_meta" in n.meta}
    assert tuple(meta["fc1"].shape) == (2, 16) and meta["relu"].dtype is torch.float32
    assert meta["scale"].device == torch.device("cpu")
    assert all("tensor_meta" in n.meta for n in traced.graph.nodes)
    assert tuple(meta["output"].shape) == (2, 3)
    assert traced.original_name == "MLP"


def test_cnn_reproduces_eager_at_other_batch_sizes():
    model = CNN().eval()
    traced = _quiet_trace(model, torch.randn(2, 1, 8, 8))
    ops = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
           for n in traced.graph.nodes]
    assert ops == [("placeholder", "x"), ("call_module", "conv"), ("call_module", "bn"),
                   ("call_function", "relu"), ("call_module", "pool"),
                   ("call_method", "size"), ("call_method", "view"), ("call_module", "fc"),
                   ("output", "output")]
    for batch in (1, 5):
        x = torch.randn(batch, 1, 8, 8)
        assert torch.allclose(traced(x), model(x), atol=1e-5)


def test_state_dict_round_trips_and_parameters_are_shared():
    model = MLP()
    traced = _quiet_trace(model, torch.randn(2, 4))
    assert list(traced.state_dict()) == list(model.state_dict())
    assert traced.fc1.weight is model.fc1.weight
    other = MLP()
    other.scale.fill_(3.0)
    traced.load_state_dict(other.state_dict())
    x = torch.randn(3, 4)
    assert torch.allclose(traced(x), other(x), atol=1e-6)
    buf = io.BytesIO()
    torch.save(traced.state_dict(), buf)
    buf.seek(0)
    fresh = MLP()
    fresh.load_state_dict(torch.load(buf))
    assert torch.allclose(fresh(x), traced(x), atol=1e-6)


def test_traced_module_trains_like_eager():
    model, twin = MLP(), MLP()
    twin.load_state_dict(model.state_dict())
    traced = _quiet_trace(model, torch.randn(2, 4))
    x, y = torch.randn(8, 4), torch.randn(8, 3)
    F.mse_loss(traced(x), y).backward()
    F.mse_loss(twin(x), y).backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6), name


def test_item_bool_tolist_numpy_len_warn_at_the_users_line():
    def fn(x):
        s = x.sum().item()                        # line A
        if x.mean() > 0:                          # line B
            x = x * 2
        n = len(x)
        rows = x.tolist()
        arr = x.numpy()
        return x + s + n + len(rows) + float(arr.sum())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = jit.trace(fn, torch.ones(2, 3), check_trace=False)
    got = [(str(w.message).split(" might")[0], w.filename, w.lineno) for w in caught
           if issubclass(w.category, jit.TracerWarning)]
    first = fn.__code__.co_firstlineno
    assert got == [("Converting a tensor to a Python number", __file__, first + 1),
                   ("Converting a tensor to a Python boolean", __file__, first + 2),
                   ("Using len to get tensor shape", __file__, first + 4),
                   ("Converting a tensor to a Python list", __file__, first + 5),
                   ("Converting a tensor to a NumPy array", __file__, first + 6)]
    # Python values are frozen: the branch taken and the constants stay as traced
    x = -torch.ones(2, 3)
    assert torch.allclose(traced(x), x * 2 + 6 + 2 + 2 + 12)


def test_control_flow_is_frozen_and_is_tracing():
    seen = []

    def fn(x):
        seen.append(jit.is_tracing())
        for i in range(3):
            x = x + i
        return x * 2 if x.dim() == 1 else x
    traced = _quiet_trace(fn, torch.zeros(2))
    # traced, re-traced by the check, then run eagerly by the check
    assert seen == [True, True, False] and not jit.is_tracing()
    ops = [n.target.__name__ for n in traced.graph.nodes if n.op == "call_function"]
    assert ops == ["add", "add", "add", "mul"]
    assert traced(torch.ones(2)).tolist() == [8.0, 8.0]
    assert isinstance(traced, jit.TracedFunction) and traced.__name__ == "fn"


def test_inplace_ops_setitem_and_constants():
    w = torch.tensor([2.0, 3.0])                 # made outside: a constant of the trace

    def fn(x):
        y = x.clone()
        y += 1
        y[0] = 0.0
        y.mul_(w)
        return y + torch.tensor(0.0)             # made inside: recorded, as in PyTorch
    traced = _quiet_trace(fn, torch.ones(2))
    names = [n.target if isinstance(n.target, str) else n.target.__name__
             for n in traced.graph.nodes]
    assert names == ["x", "clone", "iadd", "setitem", "_tensor_constant0", "mul_", "tensor",
                     "add", "output"]
    x = torch.tensor([5.0, 6.0])
    assert traced(x).tolist() == [0.0, 21.0] and x.tolist() == [5.0, 6.0]
    assert "y += 1" not in traced.code and "clone += 1" in traced.code


def test_nested_inputs_kwargs_and_user_submodules():
    class Gate(nn.Module):                       # a user module: traced through
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x, bias=None):
            return torch.sigmoid(self.lin(x)) + (0 if bias is None else bias)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = Gate()

        def forward(self, pair, *, scale):
            a, b = pair
            return self.gate(a) * b * scale

    net = Net()
    pair = (torch.randn(2, 3), torch.randn(2, 3))
    traced = _quiet_trace(net, (pair,), example_kwarg_inputs={"scale": torch.tensor(2.0)})
    assert ("call_module", "gate.lin") in [(n.op, n.target) for n in traced.graph.nodes]
    other = (torch.randn(4, 3), torch.randn(4, 3))
    s = torch.tensor(3.0)
    assert torch.allclose(traced(other, scale=s), net(other, scale=s), atol=1e-6)


def test_function_calling_a_module_and_outputs():
    model = MLP()
    traced = _quiet_trace(lambda x: (model(x), x.shape[0]), torch.randn(2, 4))
    x = torch.randn(5, 4)
    out, n = traced(x)
    assert torch.allclose(out, model(x), atol=1e-6) and n == 5
    assert traced.graph_module._module_0.fc1 is model.fc1
    assert [n.target for n in traced.graph.nodes if n.op in ("call_module", "get_attr")] == \
        ["_module_0.fc1", "_module_0.fc2", "_module_0.scale"]


def test_fx_passes_run_on_traced_graphs():
    from nbtorch.fx.passes.shape_prop import ShapeProp
    model = CNN().eval()
    traced = _quiet_trace(model, torch.randn(2, 1, 8, 8))
    ShapeProp(traced).propagate(torch.randn(3, 1, 8, 8))
    assert tuple(list(traced.graph.nodes)[-2].meta["tensor_meta"].shape) == (3, 5)
    x = torch.randn(3, 1, 8, 8)
    assert torch.allclose(fx.Interpreter(traced).run(x), model(x), atol=1e-5)
    fx.replace_pattern(traced, lambda a: torch.relu(a), lambda a: torch.sigmoid(a))
    assert "torch.sigmoid(bn)" in traced.code


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="expects a function or an nn.Module to trace, got "
                                        "int"):
        jit.trace(3, torch.ones(1))
    with pytest.raises(RuntimeError, match="Type 'str' cannot be traced"):
        jit.trace(lambda x: x, "abc")
    with pytest.raises(RuntimeError, match=r"Type 'int' cannot be traced \(example input 0\)"):
        jit.trace(lambda x: x, (3,))
    with pytest.raises(TypeError, match=r"<lambda>\(x\) cannot take the 2 example input"):
        jit.trace(lambda x: x, (torch.ones(1), torch.ones(1)))
    with pytest.raises(TypeError, match=r"MLP\(x\) cannot take the 0 example input"):
        jit.trace(MLP(), ())
    with pytest.raises(RuntimeError, match="Only tensors, lists, tuples of tensors"):
        jit.trace(lambda x: (x, 3), torch.ones(1))
    with pytest.raises(RuntimeError, match="didn't return any values"):
        jit.trace(lambda x: None, torch.ones(1))
    with pytest.raises(RuntimeError, match="Encountering a dict at the output"):
        jit.trace(lambda x: {"a": x}, torch.ones(1))
    with pytest.warns(jit.TracerWarning, match="Encountering a list at the output"):
        jit.trace(lambda x: [x, x], torch.ones(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = jit.trace(lambda x: {"a": [x]}, torch.ones(1), strict=False)(torch.ones(1) * 2)
    assert out["a"][0].tolist() == [2.0]
    traced = _quiet_trace(MLP(), torch.randn(2, 4))
    with pytest.raises(TypeError, match="positional argument"):
        traced(torch.randn(2, 4), torch.randn(2, 4))


def test_same_outputs_as_torch_jit_trace():
    real = pytest.importorskip("torch")
    t_model = real.nn.Sequential(real.nn.Linear(4, 8), real.nn.Tanh(), real.nn.Linear(8, 2))
    n_model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    n_model.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                             for k, v in t_model.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        t_traced = real.jit.trace(t_model, real.from_numpy(x))
    n_traced = _quiet_trace(n_model, torch.from_numpy(x))
    np.testing.assert_allclose(n_traced(torch.from_numpy(x)).detach().numpy(),
                               t_traced(real.from_numpy(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    assert list(n_traced.state_dict()) == list(t_traced.state_dict())


def test_tuple_returning_layers_and_dynamic_sequence_length():
    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 8)
            self.lstm = nn.LSTM(8, 8, batch_first=True)

        def forward(self, tok):
            out, (hn, _) = self.lstm(self.emb(tok))
            b, t, d = out.shape
            return out.reshape(b * t, d).mean(0) + hn[0].sum()

    model = Seq().eval()
    traced = _quiet_trace(model, torch.randint(0, 10, (2, 5)))
    tok = torch.randint(0, 10, (3, 7))
    assert torch.allclose(traced(tok), model(tok), atol=1e-6)


def test_other_threads_are_not_traced():
    import threading
    lin = nn.Linear(2, 2)
    seen = {}

    def other():
        seen["zeros"] = torch.zeros(2)
        seen["lin"] = lin(torch.ones(1, 2))

    def fn(x):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        return x + 1
    traced = _quiet_trace(fn, torch.ones(2))
    assert type(seen["zeros"]) is torch.Tensor and type(seen["lin"]) is torch.Tensor
    assert [n.op for n in traced.graph.nodes] == ["placeholder", "call_function", "output"]


class _HeldActivation(nn.Module):
    """An op function held as a module attribute (as TransformerEncoderLayer does)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = F.relu

    def forward(self, x):
        return self.act(self.lin(x)) + self.act(-x)


def test_op_functions_held_by_modules_are_recorded():
    # they used to run their bodies on the proxies: a graph of shape arithmetic whose
    # result was a constant (the example's output)
    m = _HeldActivation()
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # no TracerWarning either
        traced = jit.trace(m, torch.randn(3, 4))
    assert [n.target for n in traced.graph.nodes
            if n.op == "call_function"].count(torch.relu) == 2
    x = torch.randn(5, 4)
    np.testing.assert_allclose(traced(x).detach().numpy(), m(x).detach().numpy())
    assert m.act is F.relu                          # the attribute is given back
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    traced = jit.trace(layer, torch.randn(2, 3, 8))
    x = torch.randn(4, 3, 8)
    np.testing.assert_allclose(traced(x).detach().numpy(), layer(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_example_kwarg_inputs_after_a_defaulted_parameter_bind_by_name():
    """forward(x, scale=1.0, bias=None) traced with x and bias: bias was passed as scale
    (the graph computed x * bias, silently; check_trace only warned)."""
    class M(nn.Module):
        def forward(self, x, scale=1.0, bias=None):
            y = x * scale
            return y if bias is None else y + bias

    m = M()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traced = torch.jit.trace(m, example_kwarg_inputs={"x": torch.randn(3),
                                                          "bias": torch.randn(3)})
    x, b = torch.randn(3), torch.randn(3)
    assert torch.equal(traced(x=x, bias=b), m(x, bias=b))
    assert torch.equal(traced(x, bias=b), x * 1.0 + b)
