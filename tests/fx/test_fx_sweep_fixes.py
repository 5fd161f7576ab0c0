"""fx behaviour a sweep against PyTorch found different: pickling GraphModules,
Graph.graph_copy's return value, replace_pattern over chained matches and literals."""
import pickle

import nbtorch as torch
from nbtorch import fx


def test_graph_modules_pickle():
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    gm = fx.symbolic_trace(m)
    back = pickle.loads(pickle.dumps(gm))              # PicklingError before
    x = torch.randn(5, 3)
    assert torch.equal(back(x), gm(x)) and list(back.state_dict()) == list(gm.state_dict())
    f = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    assert pickle.loads(pickle.dumps(f))(torch.tensor([-1.0, 2.0])).tolist() == [1.0, 3.0]


def test_graph_copy_returns_the_output_value():
    gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    new = fx.Graph()
    out = new.graph_copy(gm.graph, {})                 # None before
    new.output(out)
    assert fx.GraphModule(torch.nn.Module(), new)(torch.tensor([-1.0, 2.0])).tolist() == \
        [1.0, 3.0]
    value, node = fx.Graph().graph_copy(gm.graph, {}, return_output_node=True)
    assert node.op == "output" and value is not None


def test_replace_pattern_over_chained_matches_and_literal_arguments():
    def chained(x):
        z = torch.sigmoid(torch.relu(x))
        w = torch.sigmoid(torch.relu(z))
        return w + z
    gm = fx.symbolic_trace(chained)
    got = fx.replace_pattern(gm, lambda x: torch.sigmoid(torch.relu(x)), lambda x: torch.tanh(x))
    x = torch.tensor([0.5, -1.0])
    assert len(got) == 2                                 # the second raised before
    assert torch.allclose(gm(x), torch.tanh(torch.tanh(x)) + torch.tanh(x))

    def literal(x, y):
        return torch.relu(torch.add(torch.add(x, y), 1))
    gm = fx.symbolic_trace(literal)
    got = fx.replace_pattern(gm, lambda x, y: torch.add(x, y), lambda x, y: torch.mul(x, y))
    assert len(got) == 2                                 # the literal 1 did not match before
    assert gm(torch.tensor([2.0]), torch.tensor([3.0])).tolist() == [6.0]


def test_concrete_args_are_guarded():
    def f(x, flag):
        return x + 1 if flag else x - 1
    gm = fx.symbolic_trace(f, concrete_args={"flag": False})
    assert gm(torch.ones(2), False).tolist() == [0.0, 0.0]
    try:
        gm(torch.ones(2), True)             # took the False branch silently before
    except AssertionError as e:
        assert "specialized to have value False" in str(e)
    else:
        raise AssertionError("a different concrete value was accepted")


def test_filters_side_effects_boxed_run_and_complex_make_tensor():
    def f(x, y):
        return torch.relu(torch.add(torch.add(x, y), 1))
    gm = fx.symbolic_trace(f)
    only_nodes = [lambda m, g, p: all(isinstance(a, fx.Node) for a in m.placeholder_nodes)]
    got = fx.subgraph_rewriter.replace_pattern_with_filters(
        gm, lambda x, y: torch.add(x, y), lambda x, y: torch.mul(x, y), only_nodes)
    assert len(got) == 1 and gm(torch.tensor([2.0]), torch.tensor([3.0])).tolist() == [7.0]
    marked = fx.node.has_side_effect(lambda x: None)
    assert marked._fx_impure
    args = [torch.tensor([1.0, -2.0])]
    assert fx.Interpreter(fx.symbolic_trace(lambda x: x.relu())).boxed_run(args).tolist() \
        == [1.0, 0.0] and args == []
    from nbtorch.testing import make_tensor
    z = make_tensor(3, dtype=torch.complex64, device="cpu", low=-1, high=1)
    assert z.dtype is torch.complex64 and bool((z.real.abs() <= 1).all())
