"""Symbolic tracing: what becomes a node, errors on control flow, patches undone, no kernels."""
import math
import operator

import pytest

import nbtorch as torch
import nbtorch.fx as fx
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch import relu as imported_relu
from nbtorch import _registry


def free_helper(x, n):
    """Python control flow on a traced value: only traceable when wrapped."""
    for _ in range(n):
        x = x + 1
    return x


fx.wrap("free_helper")


@fx.wrap
def decorated_helper(x):
    return x * 2 if isinstance(x, torch.Tensor) else x


def _ops(gm):
    return [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
            for n in gm.graph.nodes]


def test_functions_methods_operators_and_modules():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x):
            y = F.gelu(self.lin(x)) * self.w + self.w
            return torch.cat([y.relu(), imported_relu(x)], dim=1).sum(dim=0)

    gm = fx.symbolic_trace(M())
    assert _ops(gm) == [("placeholder", "x"), ("call_module", "lin"),
                        ("call_function", "gelu"), ("get_attr", "w"),
                        ("call_function", "mul"), ("call_function", "add"),
                        ("call_method", "relu"), ("call_function", "relu"),
                        ("call_function", "cat"), ("call_method", "sum"), ("output", "output")]
    assert sum(1 for n in gm.graph.nodes if n.op == "get_attr") == 1   # cached proxy
    x = torch.randn(2, 3)
    m = gm.lin
    y = F.gelu(m(x)) * gm.w + gm.w
    assert torch.allclose(gm(x), torch.cat([y.relu(), torch.relu(x)], 1).sum(0))


def test_tracing_runs_no_kernel(monkeypatch):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(),
                                      nn.Linear(8, 2))

        def forward(self, x, w):              # no shapes are known: nothing could run
            return torch.matmul(self.body(x), w).softmax(-1) + torch.exp(w).sum()
    net = Net()

    def refuse(*args, **kwargs):
        raise AssertionError("a kernel ran during symbolic tracing")
    for key in list(_registry._KERNELS):
        monkeypatch.setitem(_registry._KERNELS, key, refuse)
    gm = fx.symbolic_trace(net)
    assert sum(1 for n in gm.graph.nodes if n.op.startswith("call")) == 9
    with pytest.raises(NameError, match="module is not installed as a submodule"):
        fx.symbolic_trace(lambda x: net.body(x))


def test_control_flow_raises_trace_error_naming_the_line():
    def branchy(x):
        if x.sum() > 0:          # the offending line
            return x
        return -x
    with pytest.raises(fx.TraceError, match="symbolically traced variables cannot be used "
                                            "as inputs to control flow") as e:
        fx.symbolic_trace(branchy)
    assert "test_fx_trace.py" in str(e.value) and "if x.sum() > 0:" in str(e.value)

    def loop(x):
        return [t for t in x]
    with pytest.raises(fx.TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)
    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing"):
        fx.symbolic_trace(lambda x: len(x))
    assert isinstance(fx.TraceError("m"), ValueError)


def test_patches_are_undone_even_after_an_error():
    before = (torch.relu, F.relu, torch.add, math.sqrt, nn.Module.__call__,
              nn.Module.__getattr__)
    with pytest.raises(fx.TraceError):
        fx.symbolic_trace(lambda x: x if x else x)
    fx.symbolic_trace(lambda x: torch.add(F.relu(x), math.sqrt(2)))
    assert (torch.relu, F.relu, torch.add, math.sqrt, nn.Module.__call__,
            nn.Module.__getattr__) == before
    assert type(torch.relu).__name__ == "function" and not fx.is_fx_tracing()


def test_unpacking_wrap_and_math_autowrap():
    def fn(x):
        a, b = x.chunk(2)
        return free_helper(a, 3) + decorated_helper(b) + math.sqrt(x.sum())
    gm = fx.symbolic_trace(fn)
    kinds = _ops(gm)
    assert ("call_function", "free_helper") in kinds
    assert ("call_function", "decorated_helper") in kinds
    assert ("call_function", "sqrt") in kinds
    assert [k for k in kinds if k[1] == "getitem"] == [("call_function", "getitem")] * 2
    # the generated code re-wraps them, so tracing the GraphModule again keeps the nodes
    assert 'wrap("free_helper' in gm.code and 'wrap("decorated_helper' in gm.code
    assert _ops(fx.symbolic_trace(gm)) == kinds
    x = torch.arange(4.0)
    want = free_helper(x[:2], 3) + decorated_helper(x[2:]) + math.sqrt(x.sum())
    assert torch.allclose(gm(x), want)
    with pytest.raises(NotImplementedError, match="top level of a module"):
        fx.wrap("free_helper")


def test_concrete_args_and_defaults():
    def fn(x, flag, scale=2.0):
        return x * scale if flag else x
    gm = fx.symbolic_trace(fn, concrete_args={"flag": True})
    assert "def forward(self, x, flag = True, scale = 2.0):" in gm.code
    assert gm(torch.ones(2)).tolist() == [2.0, 2.0]
    assert gm(torch.ones(2), True, 3.0).tolist() == [3.0, 3.0]


def test_constants_params_and_custom_leaves():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.const = torch.tensor([1.0, -1.0])          # plain tensor attribute

        def forward(self, x):
            return self.lin(x) * self.const + torch.tensor([0.5, 0.5])

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x).relu()

    net = Net()
    gm = fx.symbolic_trace(net)
    assert _ops(gm)[1:4] == [("call_module", "block.lin"), ("get_attr", "block.const"),
                             ("call_function", "mul")]
    assert ("get_attr", "_tensor_constant0") in _ops(gm)
    x = torch.randn(3, 2)
    assert torch.allclose(gm(x), net(x))

    class LeafBlocks(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Block) or super().is_leaf_module(m, qualname)
    graph = LeafBlocks().trace(net)
    assert [n.op for n in graph.nodes] == ["placeholder", "call_module", "call_method",
                                           "output"]
    assert torch.allclose(fx.GraphModule(net, graph)(x), net(x))


def test_patched_functions_compare_equal_to_the_originals():
    seen = []

    class Check(fx.Transformer):
        def call_function(self, target, args, kwargs):
            seen.append((target == torch.sigmoid, torch.sigmoid == target,
                         target in {torch.sigmoid: 1}))
            return super().call_function(target, args, kwargs)
    Check(fx.symbolic_trace(lambda x: torch.sigmoid(x))).transform()
    assert seen == [(True, True, True)]


def test_graph_built_from_proxies():
    g = fx.Graph()
    x = fx.Proxy(g.placeholder("x"))
    y = fx.Proxy(g.placeholder("y"))
    with fx.proxy_functions():                 # torch.* functions record nodes here
        z = torch.relu(x * 2) + torch.exp(y)
    w = z.sum(dim=0)
    w[0] = 1.0                                 # setitem is recorded
    g.output(w.node)
    gm = fx.GraphModule(nn.Module(), g)
    assert [n.target if isinstance(n.target, str) else n.target.__name__
            for n in g.nodes] == ["x", "y", "mul", "relu", "exp", "add", "sum", "setitem",
                                  "output"]
    a, b = torch.tensor([[1.0, -2.0]]), torch.tensor([[0.0, 1.0]])
    want = (torch.relu(a * 2) + torch.exp(b)).sum(dim=0)
    want[0] = 1.0
    assert torch.allclose(gm(a, b), want)
    assert "setitem = None" in gm.code or "sum_1[0] = 1.0" in gm.code


def test_bad_roots():
    with pytest.raises(TypeError, match="expects an nn.Module or a function"):
        fx.symbolic_trace(3)
    with pytest.raises(RuntimeError, match=r"\*args in the traced function's signature"):
        fx.symbolic_trace(lambda *args: args[0])

    class NoForward(nn.Module):
        pass
    with pytest.raises(NotImplementedError, match="missing the required"):
        fx.symbolic_trace(NoForward())


def test_operators_cover_reflected_and_unary():
    def fn(x):
        return (-x, 2 - x, 2 / x, x ** 2, abs(x), x @ x, x // 2, x % 3, ~(x > 0), x[0])
    gm = fx.symbolic_trace(fn)
    names = [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    assert names == ["neg", "sub", "truediv", "pow", "abs", "matmul", "floordiv", "mod", "gt",
                     "invert", "getitem"]
    assert "sub = 2 - x" in gm.code and "abs_1 = abs(x)" in gm.code
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    for got, want in zip(gm(t), fn(t)):
        assert torch.equal(got, want)
    assert operator.truediv in [n.target for n in gm.graph.nodes]
