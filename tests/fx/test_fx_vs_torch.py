"""The same programs traced by torch.fx and nbtorch.fx: same nodes (op, name, target name),
same code for simple programs, same numbers (with PyTorch's weights copied over)."""
import numpy as np
import pytest

import nbtorch
import nbtorch.fx  # noqa: F401

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402


def _programs(T):
    """Modules written once against a torch-like namespace T (torch or nbtorch)."""
    nn, F = T.nn, T.nn.functional

    class Overview(nn.Module):
        def __init__(self):
            super().__init__()
            self.param = nn.Parameter(T.rand(3, 4))
            self.linear = nn.Linear(4, 5)

        def forward(self, x):
            return self.linear(x + self.param).clamp(min=0.0, max=1.0)

    class Ops(nn.Module):
        def forward(self, x, y):
            z = T.relu(x) + F.relu(y) * 2
            w = T.cat([z, x], dim=-1).view(x.size(0), -1)
            a, b = w.chunk(2, dim=1)
            return T.add(a, 1), (b - w.mean()).abs().sum(dim=0), x[:, 1:2] ** 2, -x, 3 / (x + 4)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(4 * 4 * 4, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.bn(self.conv1(x))))
            return self.fc(T.flatten(x, 1)).log_softmax(dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)
            self.norm = nn.LayerNorm(6)

        def forward(self, x):
            return self.norm(x + T.tanh(self.lin(x)))

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(Block(), Block())
            self.head = nn.Sequential(nn.Linear(6, 3), nn.Softmax(dim=-1))

        def forward(self, x):
            return self.head(self.blocks(x) * T.sigmoid(x))

    return {"overview": (Overview, [(2, 3, 4)]), "ops": (Ops, [(2, 3), (2, 3)]),
            "cnn": (CNN, [(2, 1, 8, 8)]), "residual": (Residual, [(5, 6)])}


def _signature(gm):
    out = []
    for n in gm.graph.nodes:
        target = n.target if isinstance(n.target, str) else n.target.__name__
        out.append((n.op, n.name, target))
    return out


def _copy_weights(src, dst):
    state = {k: nbtorch.from_numpy(v.detach().numpy().copy()) for k, v in
             src.state_dict().items()}
    dst.load_state_dict(state)


@pytest.mark.parametrize("name", ["overview", "ops", "cnn", "residual"])
def test_same_graph_and_numbers_as_torch_fx(name):
    torch.manual_seed(0)
    t_cls, shapes = _programs(torch)[name]
    n_cls, _ = _programs(nbtorch)[name]
    t_model, n_model = t_cls(), n_cls()
    _copy_weights(t_model, n_model)
    t_model.eval()
    n_model.eval()
    t_gm, n_gm = torch.fx.symbolic_trace(t_model), nbtorch.fx.symbolic_trace(n_model)
    assert _signature(n_gm) == _signature(t_gm)
    assert len(n_gm.graph.nodes) == len(t_gm.graph.nodes)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    t_out = t_gm(*[torch.from_numpy(a) for a in inputs])
    n_out = n_gm(*[nbtorch.from_numpy(a.copy()) for a in inputs])
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    n_out = n_out if isinstance(n_out, tuple) else (n_out,)
    for t, n in zip(t_out, n_out):
        np.testing.assert_allclose(n.detach().numpy(), t.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
    if name in ("overview", "cnn", "residual"):      # no F.relu kwargs: the code is the same
        t_code = t_gm.code.replace("torch.nn.functional.relu(", "torch.relu(")
        t_code = t_code.replace(", inplace = False", "")
        assert n_gm.code == t_code


def test_replace_pattern_same_as_torch():
    def build(T):
        class M(T.nn.Module):
            def forward(self, x):
                return T.sigmoid(T.relu(x) + 1) * T.sigmoid(T.relu(x * 2) + 1)

        def pattern(a):
            return T.sigmoid(T.relu(a) + 1)

        def replacement(a):
            return T.tanh(a)
        return M(), pattern, replacement
    results = []
    for T in (torch, nbtorch):
        m, p, r = build(T)
        gm = T.fx.symbolic_trace(m)
        matches = T.fx.replace_pattern(gm, p, r)
        results.append((len(matches), _signature(gm), gm.code))
    assert results[0] == results[1]


def test_transformer_and_shape_prop_same_as_torch():
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp
    from nbtorch.fx.passes.shape_prop import ShapeProp as NShapeProp
    t_cls, _ = _programs(torch)["cnn"]
    n_cls, _ = _programs(nbtorch)["cnn"]
    t_gm, n_gm = torch.fx.symbolic_trace(t_cls()), nbtorch.fx.symbolic_trace(n_cls())
    TShapeProp(t_gm).propagate(torch.randn(3, 1, 8, 8))
    NShapeProp(n_gm).propagate(nbtorch.randn(3, 1, 8, 8))
    t_meta = [(n.name, tuple(n.meta["tensor_meta"].shape), tuple(n.meta["tensor_meta"].stride))
              for n in t_gm.graph.nodes]
    n_meta = [(n.name, tuple(n.meta["tensor_meta"].shape), tuple(n.meta["tensor_meta"].stride))
              for n in n_gm.graph.nodes]
    assert n_meta == t_meta
    t_new = torch.fx.Transformer(t_gm).transform()
    n_new = nbtorch.fx.Transformer(n_gm).transform()
    assert _signature(n_new) == _signature(t_new)
