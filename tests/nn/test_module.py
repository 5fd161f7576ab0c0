"""nn.Module: registration, traversal, state_dict, hooks, repr, modes, conversions."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.linear = nn.Linear(2, 2)
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("cache", torch.zeros(3), persistent=False)
        self.block = nn.Sequential(nn.Linear(2, 3), nn.ReLU())

    def forward(self, x):
        return self.block(self.linear(x))


# ---- registration ----------------------------------------------------------------

def test_parameter_is_a_leaf_tensor_that_shares_memory():
    data = torch.zeros(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, torch.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    data[0, 0] = 5.0
    assert p[0, 0].item() == 5.0
    assert not nn.Parameter(torch.zeros(1), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert nn.Parameter().shape == (0,)


def test_parameter_deepcopy_and_pickle_keep_the_type():
    p = nn.Parameter(torch.ones(2))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad
    assert q.data_ptr() != p.data_ptr()
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.tolist() == [1.0, 1.0]


def test_attribute_assignment_registers_parameters_modules_and_buffers():
    net = Net()
    assert list(net._parameters) == []
    assert list(net._modules) == ["linear", "block"]
    assert list(net._buffers) == ["steps", "cache"]
    names = [n for n, _ in net.named_parameters()]
    assert names == ["linear.weight", "linear.bias", "block.0.weight", "block.0.bias"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "cache"]
    assert [n for n, _ in net.named_modules()] == ["", "linear", "block", "block.0",
                                                   "block.1"]
    assert [n for n, _ in net.named_children()] == ["linear", "block"]
    assert len(list(net.parameters(recurse=False))) == 0
    assert len(list(net.modules())) == 5
    assert [n for n, _ in net.named_parameters(prefix="model")][0] == "model.linear.weight"


def test_setattr_replaces_and_deletes():
    m = nn.Module()
    m.w = nn.Parameter(torch.zeros(1))
    m.w = None                      # allowed: parameter slot set to None
    assert "w" in m._parameters and m.w is None
    m.sub = nn.Linear(1, 1)
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'sub'"):
        m.sub
    m.x = 3
    assert m.x == 3 and "x" in m.__dict__


def test_registration_errors_match_pytorch():
    m = nn.Module()
    m.w = nn.Parameter(torch.zeros(1))
    with pytest.raises(TypeError, match=r"cannot assign '.*' as parameter 'w' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        m.w = torch.zeros(1)
    m.sub = nn.Linear(1, 1)
    with pytest.raises(TypeError, match=r"as child module 'sub'"):
        m.sub = 3
    m.register_buffer("b", torch.zeros(1))
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'b'"):
        m.b = 3
    with pytest.raises(KeyError, match="attribute 'training' already exists"):
        m.register_buffer("training", torch.zeros(1))
    with pytest.raises(KeyError, match="name can"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="empty string"):
        m.add_module("", nn.ReLU())
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(TypeError, match="object to parameter 'p'"):
        m.register_parameter("p", torch.zeros(1))
    with pytest.raises(TypeError, match="object to buffer 'q'"):
        m.register_buffer("q", 3)


def test_assigning_before_super_init_is_an_error():
    class Bad(nn.Module):
        def __init__(self):
            self.linear = nn.Linear(1, 1)
            super().__init__()

    with pytest.raises(AttributeError, match=r"cannot assign module before "
                                             r"Module.__init__\(\) call"):
        Bad()

    class BadParam(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(torch.zeros(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before"):
        BadParam()


def test_non_leaf_parameter_is_refused():
    m = nn.Module()
    p = nn.Parameter(torch.ones(1))
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        nonleaf = p * 2
        nonleaf.__class__ = nn.Parameter
        m.register_parameter("w", nonleaf)


def test_shared_parameters_and_modules_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_modules())) == 2
    assert len(list(seq.named_modules(remove_duplicate=False))) == 3
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("block.0") is net.block[0]
    assert net.get_submodule("") is net
    assert net.get_parameter("block.0.bias") is net.block[0].bias
    assert net.get_buffer("steps") is net.steps
    with pytest.raises(AttributeError, match="Sequential has no attribute `7`"):
        net.get_submodule("block.7")
    with pytest.raises(AttributeError, match="`steps` is not an nn.Parameter"):
        net.get_parameter("steps")


def test_forward_missing_is_reported():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def test_unexpected_init_arguments():
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        nn.Module(foo=1)


def test_dir_lists_children_and_parameters():
    d = dir(Net())
    assert "linear" in d and "steps" in d and "forward" in d


# ---- modes, apply, grads ----------------------------------------------------------

def test_train_eval_propagate():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")


def test_apply_visits_children_first():
    seen = []
    Net().apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Linear", "ReLU", "Sequential", "Net"]


def test_requires_grad_and_zero_grad():
    net = Net()
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    for p in net.parameters():
        p.grad = torch.ones(p.shape)
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


# ---- conversions --------------------------------------------------------------------

def test_to_dtype_keeps_parameter_identity():
    net = Net()
    w = net.linear.weight
    net.linear.weight.grad = torch.ones(2, 2)
    assert net.to(torch.float64) is net
    assert net.linear.weight is w and w.dtype == torch.float64
    assert w.grad.dtype == torch.float64
    assert net.steps.dtype == torch.float64
    net.float()
    assert w.dtype == torch.float32
    net.half()
    assert w.dtype == torch.float16
    net.double()
    assert w.dtype == torch.float64
    net.to(device="cpu", dtype=torch.float32)
    assert w.dtype == torch.float32 and w.device.type == "cpu"
    net.to(torch.zeros(1, dtype=torch.float64))
    assert w.dtype == torch.float64
    assert net.cpu() is net


def test_to_keeps_integer_buffers_and_refuses_integer_dtype():
    m = nn.Module()
    m.register_buffer("count", torch.zeros(2, dtype=torch.int64))
    m.to(torch.float64)
    assert m.count.dtype == torch.int64
    with pytest.raises(TypeError, match="only accepts floating point"):
        m.to(torch.int32)


# ---- state dict ---------------------------------------------------------------------

def test_state_dict_names_order_and_detached_values():
    net = Net()
    sd = net.state_dict()
    assert list(sd) == ["steps", "linear.weight", "linear.bias", "block.0.weight",
                        "block.0.bias"]
    assert "cache" not in sd          # non-persistent
    assert not sd["linear.weight"].requires_grad
    assert sd["linear.weight"].data_ptr() == net.linear.weight.data_ptr()
    assert isinstance(net.state_dict(keep_vars=True)["linear.weight"], nn.Parameter)
    assert sd._metadata[""]["version"] == 1


def test_state_dict_round_trip():
    a, b = Net(), Net()
    a.steps.fill_(7.0)
    result = b.load_state_dict(a.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())
    # values are copied, not aliased
    assert b.linear.weight.data_ptr() != a.linear.weight.data_ptr()


def test_load_state_dict_strict_errors():
    net = Net()
    sd = net.state_dict()
    del sd["linear.bias"]
    sd["extra.weight"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == (
        'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: '
        '"linear.bias". \n\tUnexpected key(s) in state_dict: "extra.weight". ')
    res = net.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["linear.bias"]
    assert res.unexpected_keys == ["extra.weight"]


def test_load_state_dict_size_mismatch():
    net = Net()
    sd = net.state_dict()
    sd["linear.weight"] = torch.zeros(1, 2)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == (
        "Error(s) in loading state_dict for Net:\n\tsize mismatch for linear.weight: "
        "copying a param with shape torch.Size([1, 2]) from checkpoint, the shape in "
        "current model is torch.Size([2, 2]).")
    with pytest.raises(RuntimeError, match="size mismatch"):
        net.load_state_dict(sd, strict=False)   # shape errors are never ignored
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([1, 2])


def test_load_state_dict_non_tensor_value():
    net = nn.Linear(1, 1)
    with pytest.raises(RuntimeError, match='While copying the parameter named "bias"'):
        net.load_state_dict({"weight": torch.zeros(1, 1), "bias": 3})


def test_load_state_dict_assign_takes_the_tensors():
    net = nn.Linear(2, 1)
    sd = {"weight": torch.ones(1, 2), "bias": torch.zeros(1)}
    net.load_state_dict(sd, assign=True)
    assert isinstance(net.weight, nn.Parameter)
    assert net.weight.data_ptr() == sd["weight"].data_ptr()


def test_extra_state_round_trip():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.note = "a"

        def get_extra_state(self):
            return {"note": self.note}

        def set_extra_state(self, state):
            self.note = state["note"]

    a, b = WithExtra(), WithExtra()
    a.note = "z"
    sd = a.state_dict()
    assert sd["_extra_state"] == {"note": "z"}
    b.load_state_dict(sd)
    assert b.note == "z"


def test_state_dict_hooks():
    net = nn.Linear(1, 1)
    net.register_state_dict_post_hook(lambda m, sd, prefix, meta: sd.update(hello=1))
    assert net.state_dict()["hello"] == 1
    calls = []
    net.register_load_state_dict_post_hook(lambda m, keys: calls.append(keys))
    net.load_state_dict({"weight": torch.zeros(1, 1), "bias": torch.zeros(1)})
    assert len(calls) == 1


# ---- hooks --------------------------------------------------------------------------

class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([2.0, 3.0]))

    def forward(self, x):
        return x * self.w


def test_forward_pre_hook_and_forward_hook_modify_and_remove():
    m = Scale()
    x = torch.tensor([1.0, 1.0])
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 10,))
    assert m(x).tolist() == [20.0, 30.0]
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
    assert m(x).tolist() == [21.0, 31.0]
    h1.remove()
    assert m(x).tolist() == [3.0, 4.0]
    h2.remove()
    h2.remove()                      # removing twice is harmless
    assert m(x).tolist() == [2.0, 3.0]
    assert not m._forward_hooks and not m._forward_pre_hooks


def test_hooks_with_kwargs_and_context_manager():
    m = Scale()
    seen = []

    def pre(mod, args, kwargs):
        seen.append(sorted(kwargs))
        return args, kwargs

    with m.register_forward_pre_hook(pre, with_kwargs=True):
        with m.register_forward_hook(lambda mod, a, kw, out: out * 0, with_kwargs=True):
            assert m(torch.ones(2)).tolist() == [0.0, 0.0]
    assert seen == [[]]
    assert not m._forward_hooks and not m._forward_pre_hooks_with_kwargs
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m.register_forward_pre_hook(lambda mod, a, kw: 3, with_kwargs=True)
        m(torch.ones(2))


def test_hook_order_and_prepend():
    m = Scale()
    order = []
    m.register_forward_hook(lambda *a: order.append(1))
    m.register_forward_hook(lambda *a: order.append(0), prepend=True)
    m(torch.ones(2))
    assert order == [0, 1]


def test_full_backward_hook_sees_and_replaces_grads():
    m = Scale()
    x = torch.tensor([1.0, 1.0], requires_grad=True)
    record = {}

    def hook(mod, grad_input, grad_output):
        record["in"] = [g.tolist() for g in grad_input]
        record["out"] = [g.tolist() for g in grad_output]
        return (grad_input[0] * 100,)

    h = m.register_full_backward_hook(hook)
    m(x).sum().backward()
    assert record["out"] == [[1.0, 1.0]]
    assert record["in"] == [[2.0, 3.0]]
    assert x.grad.tolist() == [200.0, 300.0]
    assert m.w.grad.tolist() == [1.0, 1.0]
    h.remove()
    x.grad = None
    m(x).sum().backward()
    assert x.grad.tolist() == [2.0, 3.0]


def test_full_backward_hook_without_input_grad():
    m = Scale()
    calls = []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, len(go))))
    with pytest.warns(UserWarning, match="Full backward hook is firing"):
        m(torch.ones(2)).sum().backward()
    assert calls == [((None,), 1)]


def test_full_backward_pre_hook_replaces_grad_output():
    m = Scale()
    x = torch.ones(2, requires_grad=True)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    m(x).sum().backward()
    assert x.grad.tolist() == [4.0, 6.0]
    assert m.w.grad.tolist() == [2.0, 2.0]   # the new grad_output flows into the module


# ---- repr ---------------------------------------------------------------------------

def test_repr_matches_pytorch_format():
    assert repr(Net()) == (
        "Net(\n"
        "  (linear): Linear(in_features=2, out_features=2, bias=True)\n"
        "  (block): Sequential(\n"
        "    (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "    (1): ReLU()\n"
        "  )\n"
        ")")
    assert repr(nn.Module()) == "Module()"
    assert repr(nn.Linear(3, 4, bias=False)) == \
        "Linear(in_features=3, out_features=4, bias=False)"


def test_repr_multiline_extra_repr_and_modulelist_runs():
    class Multi(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Multi()) == "Multi(\n  a=1\n  b=2\n)"
    ml = nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.ReLU(), nn.Tanh()])
    assert repr(ml) == "ModuleList(\n  (0-2): 3 x ReLU()\n  (3): Tanh()\n)"
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_repr_equals_pytorch_when_available():
    real = pytest.importorskip("torch")

    def build(lib):
        return lib.nn.Sequential(
            lib.nn.Conv2d(1, 4, 3, padding=1, bias=False), lib.nn.ReLU(inplace=True),
            lib.nn.MaxPool2d(2), lib.nn.Flatten(), lib.nn.Dropout(0.25),
            lib.nn.Linear(16, 10), lib.nn.LeakyReLU(0.2), lib.nn.GELU(approximate="tanh"),
            lib.nn.Softmax(dim=1), lib.nn.ModuleList([lib.nn.Tanh(), lib.nn.Tanh()]),
            lib.nn.CrossEntropyLoss(), lib.nn.Softplus(), lib.nn.AvgPool2d(2))

    assert repr(build(torch)) == repr(build(real))


# ---- pickling -----------------------------------------------------------------------

def test_module_pickles_and_deepcopies():
    net = Net()
    clone = pickle.loads(pickle.dumps(net))
    assert isinstance(clone.linear.weight, nn.Parameter)
    np.testing.assert_array_equal(clone.linear.weight.detach().numpy(),
                                  net.linear.weight.detach().numpy())
    deep = copy.deepcopy(net)
    assert deep.linear.weight is not net.linear.weight
    assert [n for n, _ in deep.named_parameters()] == \
        [n for n, _ in net.named_parameters()]


# ---- containers ---------------------------------------------------------------------

def test_sequential_indexing_slicing_and_editing():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c
    assert isinstance(s[1:], nn.Sequential) and list(s[1:]) == [b, c]
    assert list(s[1:]._modules) == ["1", "2"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    s.append(nn.Identity())
    s.insert(0, nn.ELU())
    assert [type(m).__name__ for m in s] == ["ELU", "ReLU", "Tanh", "Sigmoid", "Identity"]
    del s[0]
    assert list(s._modules) == ["0", "1", "2", "3"]
    s.extend([nn.ReLU()])
    assert len(s) == 5
    s[0] = nn.GELU()
    assert isinstance(s[0], nn.GELU)
    named = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert list(named._modules) == ["first", "second"] and named.first is a
    assert len(nn.Sequential(a) + nn.Sequential(b)) == 2


def test_sequential_forward_chains():
    s = nn.Sequential(nn.ReLU(), nn.Identity())
    assert s(torch.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml.append(nn.Sigmoid())
    ml.extend([nn.ELU()])
    ml.insert(1, nn.GELU())
    assert [type(m).__name__ for m in ml] == ["ReLU", "GELU", "Tanh", "Sigmoid", "ELU"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert type(ml[0]).__name__ == "GELU" and len(ml) == 4
    with pytest.raises(NotImplementedError):
        ml(1)
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    md["c"] = nn.Tanh()
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    assert type(md.pop("b")).__name__ == "ReLU"
    md.update([("d", nn.ELU())])
    assert list(md) == ["a", "c", "d"]


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(torch.zeros(2)), torch.ones(3)])
    assert isinstance(pl[1], nn.Parameter)       # tensors are wrapped
    pl.append(torch.zeros(1, 2))
    assert len(pl) == 3 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    r = repr(pl)
    assert r.startswith("ParameterList(\n    (0): Parameter containing: "
                        "[torch.float32 of size 2]")
    pd = nn.ParameterDict({"b": torch.zeros(1), "a": nn.Parameter(torch.ones(2))})
    assert list(pd.keys()) == ["a", "b"]            # plain dicts are sorted (PyTorch)
    pd["c"] = torch.zeros(3)
    assert isinstance(pd["c"], nn.Parameter) and "c" in pd
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c"]
    with pytest.raises(TypeError, match="not a string"):
        pd[1] = torch.zeros(1)
    holder = nn.Module()
    holder.ps = pl
    assert len(list(holder.parameters())) == 3


def test_always_call_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    calls = []
    m.register_forward_hook(lambda mod, args, out: calls.append(out), always_call=True)
    m.register_forward_hook(lambda mod, args, out: calls.append("never"))
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert calls == [None]


# ---- comparison with PyTorch (skipped where it is not installed) ----------------------

def _build_net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(1, 2, 3)
            self.register_buffer("steps", lib.zeros(1))
            self.heads = lib.nn.ModuleDict({"a": lib.nn.Linear(2, 2),
                                            "b": lib.nn.Linear(2, 1, bias=False)})
            self.layers = lib.nn.ModuleList([lib.nn.Linear(2, 2), lib.nn.ReLU()])
            self.scales = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2))])

    return Net()


MODULE_ERRORS = [
    lambda L: L.nn.Module().register_buffer("a.b", None),
    lambda L: L.nn.Module().add_module("x", 3),
    lambda L: L.nn.Module()(1),
    lambda L: L.nn.Module(foo=1),
    lambda L: L.nn.Module().train("yes"),
    lambda L: L.nn.Linear(1, 1).to(L.int32),
    lambda L: L.nn.Linear(1, 1).get_submodule("a.b"),
    lambda L: L.nn.Linear(1, 1).get_parameter("in_features"),
    lambda L: L.nn.Linear(1, 1).load_state_dict([1, 2]),
    lambda L: L.nn.Linear(1, 1).load_state_dict({"weight": L.zeros(1, 1), "bias": 3}),
    lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": L.zeros(1, 2)}),
    lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": L.zeros(2, 2), "bias": L.zeros(2),
                                                 "foo.x": L.zeros(1), "y": L.zeros(1)}),
    lambda L: setattr(L.nn.Linear(1, 1), "weight", L.zeros(1, 1)),
    lambda L: L.nn.Sequential(L.nn.ReLU())[3],
    lambda L: L.nn.ModuleList([L.nn.ReLU()])[-2],
    lambda L: L.nn.ParameterDict()[1],
    lambda L: _build_net(L).load_state_dict({}),
]


def _error_of(fn, lib):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 - comparing whatever is raised
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", range(len(MODULE_ERRORS)))
def test_module_errors_equal_pytorch(case):
    real = pytest.importorskip("torch")
    assert _error_of(MODULE_ERRORS[case], torch) == _error_of(MODULE_ERRORS[case], real)


def test_traversal_and_state_dict_equal_pytorch():
    real = pytest.importorskip("torch")
    ours, theirs = _build_net(torch), _build_net(real)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == \
        [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert sorted(ours.state_dict()._metadata) == sorted(theirs.state_dict()._metadata)
    # a PyTorch state dict (as NumPy) loads into the nbtorch model and back
    sd = {k: torch.tensor(v.numpy()) for k, v in theirs.state_dict().items()}
    assert repr(ours.load_state_dict(sd)) == "<All keys matched successfully>"
    res_ours = ours.load_state_dict({"conv.weight": sd["conv.weight"], "zz": sd["steps"]},
                                    strict=False)
    res_theirs = theirs.load_state_dict(
        {"conv.weight": real.tensor(sd["conv.weight"].numpy()),
         "zz": real.tensor(sd["steps"].numpy())}, strict=False)
    assert repr(res_ours) == repr(res_theirs)


def test_full_backward_hook_arguments_equal_pytorch():
    real = pytest.importorskip("torch")

    def run(lib):
        res = []

        def fmt(gs):
            return [None if g is None else g.tolist() for g in gs]

        class Two(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.tensor([2.0, 3.0]))

            def forward(self, x, y, z=None):
                return x * self.w, y * 3, x * 2

        t = Two()
        t.register_full_backward_hook(lambda m, gi, go: res.append(("full", fmt(gi), fmt(go))))
        t.register_full_backward_pre_hook(lambda m, go: res.append(("pre", fmt(go))))
        x = lib.ones(2, requires_grad=True)
        u, v, w = t(x, lib.ones(2))
        u.sum().backward()                       # y needs no grad, v and w unused
        u, v, w = t(x, lib.ones(2, requires_grad=True))
        (u.sum() + v.sum()).backward()
        u, v, w = t(x, lib.ones(2, dtype=lib.int64))
        u.sum().backward()
        with pytest.warns(UserWarning, match="Full backward hook is firing"):
            u, v, w = t(lib.ones(2), lib.ones(2))
            u.sum().backward()                   # no input requires grad

        class Three(lib.nn.Module):
            def forward(self, a, k, b):
                return a * k * b

        m = Three()
        m.register_full_backward_hook(lambda m_, gi, go: (gi[0] * 10, None, None))
        a = lib.ones(2, requires_grad=True)
        m(a, 3, lib.ones(2)).sum().backward()
        res.append(a.grad.tolist())
        return res

    assert run(torch) == run(real)


def test_parameter_containers_repr_equal_pytorch():
    real = pytest.importorskip("torch")

    def build(lib):
        return (lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 3)), lib.ones(1)]),
                lib.nn.ParameterDict({"b": lib.nn.Parameter(lib.ones(2)),
                                      "a": lib.zeros(3, dtype=lib.float64)}))

    assert [repr(c) for c in build(torch)] == [repr(c) for c in build(real)]


def test_missing_super_init_is_an_attribute_error_on_call():
    class NoInit(nn.Module):
        def __init__(self):
            pass

        def forward(self, x):
            return x

    with pytest.raises(AttributeError, match="object has no attribute '_forward_pre_hooks'"):
        NoInit()(1)


def test_buffer_marker_assignment():
    m = nn.Module()
    m.x = 3
    m.x = nn.Buffer(torch.zeros(2))
    m.y = nn.Buffer(torch.ones(1), persistent=False)
    assert list(m._buffers) == ["x", "y"] and "x" not in m.__dict__
    assert list(m.state_dict()) == ["x"]
    assert type(m.x) is torch.Tensor


def test_full_backward_hook_returning_a_bare_tensor_is_refused():
    """PyTorch unpacks the returned value: a (5, 8) tensor is 5 grad_inputs for 1 input (an
    accidental return, e.g. from dict.setdefault, silently replaced the gradient before)."""
    m = torch.nn.Linear(8, 8)
    m.register_full_backward_hook(lambda mod, gi, go: go[0].clone())
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 5, but expected 1"):
        m(torch.randn(5, 8, requires_grad=True)).sum().backward()
