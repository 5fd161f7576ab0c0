"""The examples of PyTorch's torch.fx documentation, run on nbtorch: PyTorch's code, results
and node counts (checked here as literals, so they hold without PyTorch installed)."""
import nbtorch as torch
import nbtorch.fx as fx
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.fx.passes.shape_prop import ShapeProp


class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.param = nn.Parameter(torch.rand(3, 4))
        self.linear = nn.Linear(4, 5)

    def forward(self, x):
        return self.linear(x + self.param).clamp(min=0.0, max=1.0)


def test_overview_example_prints_pytorchs_graph_and_code():
    traced = fx.symbolic_trace(MyModule())
    assert str(traced.graph) == """graph():
    %x : [num_users=1] = placeholder[target=x]
    %param : [num_users=1] = get_attr[target=param]
    %add : [num_users=1] = call_function[target=operator.add](args = (%x, %param), kwargs = {})
    %linear : [num_users=1] = call_module[target=linear](args = (%add,), kwargs = {})
    %clamp : [num_users=1] = call_method[target=clamp](args = (%linear,), kwargs = {min: 0.0, max: 1.0})
    return clamp"""  # noqa: E501
    assert traced.code == (
        "\n\n\ndef forward(self, x):\n"
        "    param = self.param\n"
        "    add = x + param;  x = param = None\n"
        "    linear = self.linear(add);  add = None\n"
        "    clamp = linear.clamp(min = 0.0, max = 1.0);  linear = None\n"
        "    return clamp\n    ")
    x = torch.randn(2, 3, 4)
    assert torch.equal(traced(x), traced.linear(x + traced.param).clamp(0.0, 1.0))


def test_replace_add_with_mul():
    class M(nn.Module):
        def forward(self, x, y):
            return torch.add(x, y)

    graph = fx.Tracer().trace(M())
    for node in graph.nodes:
        if node.op == "call_function" and node.target == torch.add:
            node.target = torch.mul
    graph.lint()
    gm = fx.GraphModule(M(), graph)
    assert len(gm.graph.nodes) == 4
    assert gm(torch.tensor([2.0]), torch.tensor([3.0])).tolist() == [6.0]
    assert "add = torch.mul(x, y);  x = y = None" in gm.code


def test_insert_relu_after_each_add_with_inserting_after():
    def fn(x, y):
        return torch.add(x, y) * 2
    gm = fx.symbolic_trace(fn)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target == torch.add:
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(torch.relu, (node,))
            node.replace_all_uses_with(new)
    gm.graph.lint()
    gm.recompile()
    assert [n.op for n in gm.graph.nodes].count("call_function") == 3
    assert gm(torch.tensor([-3.0, 1.0]), torch.tensor([1.0, 1.0])).tolist() == [0.0, 4.0]


invert_mapping = {}


def add_inverse(a, b):
    invert_mapping[a] = b
    invert_mapping[b] = a


for _a, _b in [(torch.neg, torch.neg), (torch.exp, torch.log), (torch.tan, torch.arctan)]:
    add_inverse(_a, _b)


def invert(model):
    fx_model = fx.symbolic_trace(model)
    new_graph = fx.Graph()
    env = {}
    for node in reversed(fx_model.graph.nodes):
        if node.op == "call_function":
            new_node = new_graph.call_function(invert_mapping[node.target], (env[node.name],))
            env[node.args[0].name] = new_node
        elif node.op == "output":
            new_node = new_graph.placeholder(node.name)
            env[node.args[0].name] = new_node
        elif node.op == "placeholder":
            new_graph.output(env[node.name])
        else:
            raise RuntimeError("Not implemented")
    new_graph.lint()
    return fx.GraphModule(fx_model, new_graph)


def test_invert_a_module():
    def f(x):
        return torch.exp(torch.tan(x))
    res = invert(f)
    assert len(res.graph.nodes) == 4
    assert res.code.startswith("\n\n\ndef forward(self, output):\n    log = torch.log(output)")
    out = f(res(torch.arange(5) + 1))
    assert torch.allclose(out, torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), atol=1e-5)


def relu_decomposition(x):
    return (x > 0) * x


decomposition_rules = {F.relu: relu_decomposition}


def decompose(model, tracer_class=fx.Tracer):
    graph = tracer_class().trace(model)
    new_graph = fx.Graph()
    env = {}
    tracer = fx.proxy.GraphAppendingTracer(new_graph)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in decomposition_rules:
            proxy_args = [fx.Proxy(env[x.name], tracer) if isinstance(x, fx.Node) else x
                          for x in node.args]
            output_proxy = decomposition_rules[node.target](*proxy_args)
            env[node.name] = output_proxy.node
        else:
            env[node.name] = new_graph.node_copy(node, lambda x: env[x.name])
    return fx.GraphModule(model, new_graph)


def test_decompose_relu_with_proxies():
    class M(nn.Module):
        def forward(self, x):
            return F.relu(x) + 1

    gm = decompose(M())
    assert [n.name for n in gm.graph.nodes] == ["x", "gt", "mul", "add", "output"]
    assert gm(torch.tensor([-1.0, 2.0])).tolist() == [1.0, 3.0]


class NegSigmSwapXformer(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target == torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "neg":
            call_self, *args_tail = args
            return call_self.sigmoid(*args_tail, **kwargs)
        return super().call_method(target, args, kwargs)


class NegSigmSwapInterpreter(fx.Interpreter):
    def call_function(self, target, args, kwargs):
        if target == torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "neg":
            call_self, *args_tail = args
            return call_self.sigmoid(*args_tail, **kwargs)
        return super().call_method(target, args, kwargs)


def fn_sigmoid_neg(x):
    return torch.sigmoid(x).neg()


def test_interpreter_and_transformer_swap_neg_and_sigmoid():
    gm = fx.symbolic_trace(fn_sigmoid_neg)
    x = torch.randn(3, 4)
    result = NegSigmSwapInterpreter(gm).run(x)
    assert torch.allclose(result, torch.neg(x).sigmoid())
    transformed = NegSigmSwapXformer(gm).transform()
    assert torch.allclose(transformed(x), torch.neg(x).sigmoid())
    assert [n.name for n in transformed.graph.nodes] == ["x", "neg", "sigmoid", "output"]
    assert torch.allclose(fx.Interpreter(gm).run(x), fn_sigmoid_neg(x))


def test_replace_pattern_example():
    class M(nn.Module):
        def forward(self, x, w1, w2):
            m1 = torch.cat([w1, w2]).sum()
            m2 = torch.cat([w1, w2]).sum()
            return x + torch.max(m1) + torch.max(m2)

    def pattern(w1, w2):
        return torch.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return torch.stack([w1, w2])

    traced = fx.symbolic_trace(M())
    matches = fx.subgraph_rewriter.replace_pattern(traced, pattern, replacement)
    assert len(matches) == 2
    assert traced.code == (
        "\n\n\ndef forward(self, x, w1, w2):\n"
        "    stack = torch.stack([w1, w2])\n"
        "    max_1 = torch.max(stack);  stack = None\n"
        "    add = x + max_1;  x = max_1 = None\n"
        "    stack_1 = torch.stack([w1, w2]);  w1 = w2 = None\n"
        "    max_2 = torch.max(stack_1);  stack_1 = None\n"
        "    add_1 = add + max_2;  add = max_2 = None\n"
        "    return add_1\n    ")
    x, w1, w2 = torch.randn(2), torch.randn(2), torch.randn(2)
    want = x + torch.stack([w1, w2]).max() * 2
    assert torch.allclose(traced(x, w1, w2), want)
    assert fx.replace_pattern is fx.subgraph_rewriter.replace_pattern


def test_replace_pattern_keeps_matches_whose_values_escape():
    def fn(x):
        a = torch.relu(x)
        return torch.exp(a), a                # `a` is used outside the pattern

    gm = fx.symbolic_trace(fn)
    n = fx.replace_pattern(gm, lambda y: torch.exp(torch.relu(y)), lambda y: torch.sigmoid(y))
    assert n == [] and "torch.exp" in gm.code


def test_inline_a_submodule():
    class Sub(nn.Module):
        def forward(self, x):
            return torch.sigmoid(x) * 2

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Sub()

        def forward(self, x):
            return self.sub(x) + 1

    class KeepSub(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Sub) or super().is_leaf_module(m, qualname)

    model = M()
    gm = fx.GraphModule(model, KeepSub().trace(model))
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_module", "call_function",
                                              "output"]
    # Inline: copy the submodule's own graph in place of its call_module node.
    for node in list(gm.graph.nodes):
        if node.op == "call_module":
            sub_graph = fx.symbolic_trace(gm.get_submodule(node.target)).graph
            inputs = [n for n in sub_graph.nodes if n.op == "placeholder"]
            with gm.graph.inserting_before(node):
                out = gm.graph.graph_copy(sub_graph, dict(zip(inputs, node.args)),
                                          return_output_values=True)
            node.replace_all_uses_with(out)
            gm.graph.erase_node(node)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    assert [n.op for n in gm.graph.nodes] == ["placeholder"] + ["call_function"] * 3 + \
        ["output"]
    assert not hasattr(gm, "sub")
    x = torch.randn(4)
    assert torch.allclose(gm(x), model(x))
    assert [n.op for n in fx.symbolic_trace(model).graph.nodes] == \
        [n.op for n in gm.graph.nodes]


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv1(x))))
        return self.fc(torch.flatten(x, 1)).log_softmax(dim=-1)


def test_shape_prop_on_a_small_cnn():
    gm = fx.symbolic_trace(SmallCNN())
    ShapeProp(gm).propagate(torch.randn(2, 1, 8, 8))
    shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes}
    assert shapes == {"x": (2, 1, 8, 8), "conv1": (2, 4, 8, 8), "bn": (2, 4, 8, 8),
                      "relu": (2, 4, 8, 8), "pool": (2, 4, 4, 4), "flatten": (2, 64),
                      "fc": (2, 10), "log_softmax": (2, 10), "output": (2, 10)}
    meta = next(iter(gm.graph.nodes)).meta
    assert meta["tensor_meta"].dtype is torch.float32 and meta["type"] is torch.Tensor
    assert meta["tensor_meta"].stride == (64, 64, 8, 1)
    assert meta["tensor_meta"].device == torch.device("cpu")
