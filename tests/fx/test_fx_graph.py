"""nbtorch.fx Graph and Node: building, printing, editing, copying, linting, codegen."""
import copy
import operator

import pytest

import nbtorch as torch
import nbtorch.fx as fx
import nbtorch.nn as nn


def _relu_graph():
    g = fx.Graph()
    x = g.placeholder("x")
    r = g.call_function(torch.relu, (x,))
    g.output(r)
    return g, x, r


def test_graph_prints_like_pytorch():
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=3)
    a = g.call_function(operator.add, (x, y))
    s = g.call_method("sum", (a,), {"dim": 0})
    m = g.call_module("foo.bar", (s,))
    p = g.get_attr("a.b")
    g.output((m, p))
    assert str(g) == """graph():
    %x : [num_users=1] = placeholder[target=x]
    %y : [num_users=1] = placeholder[target=y](default=3)
    %add : [num_users=1] = call_function[target=operator.add](args = (%x, %y), kwargs = {})
    %sum_1 : [num_users=1] = call_method[target=sum](args = (%add,), kwargs = {dim: 0})
    %foo_bar : [num_users=1] = call_module[target=foo.bar](args = (%sum_1,), kwargs = {})
    %a_b : [num_users=1] = get_attr[target=a.b]
    return (foo_bar, a_b)"""
    assert g.python_code("self").src == (
        "\n\n\ndef forward(self, x, y = 3):\n"
        "    add = x + y;  x = y = None\n"
        "    sum_1 = add.sum(dim = 0);  add = None\n"
        "    foo_bar = self.foo.bar(sum_1);  sum_1 = None\n"
        "    a_b = self.a.b\n"
        "    return (foo_bar, a_b)\n    ")


def test_node_names_avoid_builtins_and_follow_fx():
    g = fx.Graph()
    x = g.placeholder("input")
    n1 = g.call_method("sum", (x,))
    n2 = g.call_method("sum", (n1,))
    n3 = g.call_function(getattr, (n2, "shape"))
    n4 = g.create_node("call_function", torch.add, (n3, 1), name="MyName")
    n5 = g.create_node("call_function", torch.add, (n4, 1), name="MyName")
    n6 = g.call_method("reluFooBar", (n5,))
    n7 = g.call_module("0", (n6,))
    g.output(n7)
    assert [n.name for n in g.nodes] == ["input_1", "sum_1", "sum_2", "getattr_1", "MyName",
                                         "MyName_1", "relu_foo_bar", "_0", "output"]
    code = g.python_code("self").src
    assert "getattr_1 = sum_2.shape" in code
    assert '_0 = getattr(self, "0")(relu_foo_bar)' in code
    assert "def forward(self, input):\n    input_1 = input\n" in code


def test_args_users_and_rewiring():
    g, x, r = _relu_graph()
    assert x.users == {r: None} and r.all_input_nodes == [x]
    with g.inserting_after(x):
        n = g.call_function(torch.neg, (x,))
    assert [m.name for m in g.nodes] == ["x", "neg", "relu", "output"]
    r.replace_input_with(x, n)
    assert r.args == (n,) and set(x.users) == {n} and set(n.users) == {r}
    # replace_all_uses_with never makes the replacement its own input
    with g.inserting_after(r):
        e = g.call_function(torch.exp, (r,))
    changed = r.replace_all_uses_with(e)
    out = list(g.nodes)[-1]
    assert changed == [out] and out.args == (e,) and e.args == (r,)
    g.lint()
    r.kwargs = {"inplace": False}
    assert r.kwargs == {"inplace": False}
    with pytest.raises(NotImplementedError):
        r.kwargs["x"] = 1                     # immutable containers
    r.update_arg(0, x)
    assert r.args == (x,) and r in x.users and r not in n.users


def test_inserting_after_places_each_node_right_after_the_anchor_as_pytorch():
    g, x, r = _relu_graph()
    with g.inserting_after(x):
        a = g.call_function(torch.neg, (x,))
        g.call_function(torch.exp, (a,))
    assert [n.name for n in g.nodes] == ["x", "exp", "neg", "relu", "output"]
    with pytest.raises(RuntimeError, match="Argument 'neg' of Node 'exp' was used before it "
                                           "has been defined"):
        g.lint()
    g2, x2, r2 = _relu_graph()
    with g2.inserting_before(r2):             # creation order kept
        a = g2.call_function(torch.neg, (x2,))
        g2.call_function(torch.exp, (a,))
    assert [n.name for n in g2.nodes] == ["x", "neg", "exp", "relu", "output"]
    g2.lint()


def test_prepend_append_and_erase():
    g, x, r = _relu_graph()
    n = g.call_function(torch.neg, (r,))
    out = list(g.nodes)[-2]
    out.args = (n,)
    assert [m.name for m in g.nodes][-2:] == ["output", "neg"]
    out.prepend(n)
    assert [m.name for m in g.nodes] == ["x", "relu", "neg", "output"]
    with pytest.raises(RuntimeError, match="Tried to erase Node relu but it still had 1 users"):
        g.erase_node(r)
    out.args = (r,)
    g.erase_node(n)
    assert len(g.nodes) == 3 and [m.name for m in g.nodes] == ["x", "relu", "output"]
    assert r.users == {out: None}
    x.append(r)                               # already there: order unchanged
    g.lint()


def test_erase_while_iterating():
    g = fx.Graph()
    x = g.placeholder("x")
    dead = [g.call_function(torch.neg, (x,)) for _ in range(3)]
    g.output(x)
    for node in g.nodes:
        if node in dead:
            g.erase_node(node)
    assert [n.op for n in g.nodes] == ["placeholder", "output"]


def test_lint_errors_name_the_problem():
    g, x, r = _relu_graph()
    other, ox, _ = _relu_graph()
    r.args = (ox,)
    with pytest.raises(RuntimeError, match="Argument 'x' of Node 'relu' does not belong to "
                                           "this Graph"):
        g.lint()
    g3, x3, r3 = _relu_graph()
    n = g3.call_function(torch.neg, (x3,))
    out = list(g3.nodes)[-2]
    with pytest.raises(RuntimeError, match="comes after the output node"):
        g3.lint()
    g3.erase_node(n)
    g3.lint()
    # a pass that erased a node behind the bookkeeping's back leaves its users dangling
    r3.users.clear()
    out.args = (x3,)
    g3.erase_node(r3)
    out._input_nodes[r3] = None
    with pytest.raises(RuntimeError, match="dangling node"):
        g3.lint()


def test_dead_code_elimination_keeps_inplace_and_random():
    g = fx.Graph()
    x = g.placeholder("x")
    g.call_function(torch.neg, (x,))                  # dead
    g.call_method("add_", (x, 1))                     # in place: kept
    g.call_function(torch.rand, (3,))                 # random: kept
    e = g.call_function(torch.exp, (x,))
    g.call_function(torch.neg, (e,))                  # dead chain ...
    g.output(x)
    assert g.eliminate_dead_code() is True
    assert [n.name for n in g.nodes] == ["x", "add_", "rand", "output"]
    assert g.eliminate_dead_code() is False


def test_copies():
    g, x, r = _relu_graph()
    r.meta["tensor_meta"] = "m"
    g2 = copy.deepcopy(g)
    assert str(g2) == str(g) and all(a is not b for a, b in zip(g.nodes, g2.nodes))
    assert list(g2.nodes)[1].meta == {"tensor_meta": "m"}
    g3 = fx.Graph()
    y = g3.placeholder("y")
    val_map = {x: y}
    out = g3.graph_copy(g, val_map, return_output_values=True)
    g3.output(out)
    assert [n.name for n in g3.nodes] == ["y", "relu", "output"]
    assert list(g3.nodes)[1].args == (y,)
    g4 = fx.Graph()
    z = g4.placeholder("z")
    copied = g4.node_copy(r, lambda n: z)
    assert copied.args == (z,) and copied.target is torch.relu and copied.graph is g4


def test_map_arg_and_find_nodes():
    g, x, r = _relu_graph()
    assert fx.map_arg((x, [r, 1], {"k": x}), lambda n: n.name) == ("x", ["relu", 1],
                                                                    {"k": "x"})
    assert fx.map_aggregate((1, [2]), lambda v: v * 10) == (10, [20])
    assert g.find_nodes(op="call_function", target=torch.relu) == [r]
    assert g.find_nodes(op="placeholder") == [x]


def test_print_tabular(capsys):
    g, _, _ = _relu_graph()
    g.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[3].split() == ["call_function", "relu", "torch.relu", "(x,)", "{}"]


def test_graph_module_runs_and_recompiles():
    g, x, r = _relu_graph()
    gm = fx.GraphModule(nn.Module(), g)
    t = torch.tensor([-1.0, 2.0])
    assert gm(t).tolist() == [0.0, 2.0]
    r.target = torch.neg
    gm.recompile()
    assert "neg = torch.neg(x)" not in gm.code and "relu = torch.neg(x)" in gm.code
    assert gm(t).tolist() == [1.0, -2.0]
    gm2 = fx.GraphModule(nn.Module(), g)          # another class: gm keeps its forward
    assert type(gm2) is not type(gm)


def test_graph_module_copies_submodules_by_path():
    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Linear(2, 2)
            self.unused = nn.Linear(2, 2)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = Inner()
            self.register_buffer("buf", torch.ones(2))

    root = Outer()
    g = fx.Graph()
    x = g.placeholder("x")
    c = g.call_module("layer1.conv", (x,))
    b = g.get_attr("buf")
    g.output(g.call_function(operator.add, (c, b)))
    gm = fx.GraphModule(root, g)
    assert gm.layer1 is not root.layer1 and gm.layer1.conv is root.layer1.conv
    assert not hasattr(gm.layer1, "unused")
    assert list(gm.state_dict()) == ["buf", "layer1.conv.weight", "layer1.conv.bias"]
    t = torch.randn(3, 2)
    assert torch.allclose(gm(t), root.layer1.conv(t) + root.buf)
    with pytest.raises(RuntimeError, match="referenced target nope but that target was not "
                                           "provided"):
        g2 = fx.Graph()
        g2.output(g2.get_attr("nope"))
        fx.GraphModule({}, g2)
    gd = fx.GraphModule({"w": torch.ones(2)}, _getattr_graph("w"))
    assert gd().tolist() == [1.0, 1.0]
    gm.graph.lint()
    bad = fx.Graph()
    bad.output(bad.call_module("missing", ()))
    bad.owning_module = gm
    with pytest.raises(RuntimeError, match="references nonexistent attribute missing"):
        bad.lint()


def _getattr_graph(name):
    g = fx.Graph()
    g.output(g.get_attr(name))
    return g


def test_graph_module_deepcopy_and_submodule_edits(capsys):
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    gm = fx.symbolic_trace(m)
    gm2 = copy.deepcopy(gm)
    assert gm2.code == gm.code and type(gm2) is not type(gm)
    assert getattr(gm2, "0").weight is not getattr(gm, "0").weight
    t = torch.randn(4, 2)
    assert torch.equal(gm2(t), gm(t))
    assert gm.add_submodule("extra.lin", nn.Linear(1, 1))
    assert isinstance(gm.extra.lin, nn.Linear)
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra") and hasattr(gm, "0")
    text = gm.print_readable(print_output=True)
    assert text.startswith("class Sequential(torch.nn.Module):\n    def forward(self, input):")
    assert "# To see more debug info" in str(gm)


def test_to_folder_writes_importable_code_and_weights(tmp_path):
    import importlib.util
    import math

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3)
            self.w = nn.Parameter(torch.randn(2))
            self.c = torch.tensor([1.0, 2.0])
            self.seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())

        def forward(self, x):
            y = self.conv(x).mean((2, 3)) * self.w + self.c
            return self.seq(y) + math.sqrt(2.0) * torch.sigmoid(y)

    gm = fx.symbolic_trace(M())
    gm.to_folder(tmp_path / "saved", "Saved")
    spec = importlib.util.spec_from_file_location("saved_module", tmp_path / "saved" /
                                                  "module.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    loaded = mod.Saved()
    x = torch.randn(2, 1, 5, 5)
    assert torch.allclose(loaded(x), gm(x))
    assert list(loaded.state_dict()) == list(gm.state_dict())

    class Custom(nn.Module):
        def forward(self, x):
            return x
    bad = fx.GraphModule({"sub": Custom()}, _call_module_graph("sub"))
    with pytest.raises(NotImplementedError, match="submodule 'sub' \\(Custom\\) cannot be "
                                                  "rebuilt"):
        bad.to_folder(tmp_path / "bad")


def _call_module_graph(target):
    g = fx.Graph()
    g.output(g.call_module(target, (g.placeholder("x"),)))
    return g


def test_fx_and_jit_load_lazily():
    import subprocess
    import sys
    code = ("import sys, nbtorch\n"
            "assert 'nbtorch.fx' not in sys.modules and 'nbtorch.jit' not in sys.modules\n"
            "assert nbtorch.fx.Graph and nbtorch.jit.trace\n")
    subprocess.run([sys.executable, "-c", code], check=True)
