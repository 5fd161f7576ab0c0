"""grad_fn._saved_<name>: PyTorch's names for what built-in nodes saved."""
import numpy as np
import pytest

import nbtorch


def _summary(torch):
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = torch.ones(3, 4, requires_grad=True)
    r = {}
    n = (a * a).grad_fn
    r["mul"] = (n._saved_self is a, n._saved_other is a)
    n = (a * 2).grad_fn
    r["mul_scalar"] = (n._saved_self, n._saved_other.item())
    n = (a / 3.0).grad_fn
    r["div_scalar"] = (n._saved_self, n._saved_other.item())
    n = (a / (b[:, 0] + 1)).grad_fn
    r["div"] = (n._saved_self is a, n._saved_other.shape == (3,))
    n = (a ** 2).grad_fn
    r["pow"] = (n.name(), n._saved_self is a, n._saved_exponent)
    n = (a @ b).grad_fn
    r["mm"] = (n.name(), n._saved_self is a, n._saved_mat2 is b, n._saved_self_sym_sizes,
               n._saved_mat2_sym_sizes)
    n = a.matmul(b).grad_fn
    r["matmul"] = (n.name(), n._saved_self is a, n._saved_mat2 is b)
    bias = torch.zeros(2, requires_grad=True)
    n = torch.nn.functional.linear(b.t(), a, bias).grad_fn
    r["addmm"] = (n.name(), tuple(n._saved_mat1.shape), tuple(n._saved_mat2.shape),
                  n._saved_alpha, n._saved_beta)
    for f in ("exp", "tanh", "sigmoid", "relu"):
        o = getattr(a, f)()
        r[f] = np.allclose(o.grad_fn._saved_result.detach().numpy(), o.detach().numpy())
    x = torch.ones(1, 1, 5, 5, requires_grad=True)
    w = torch.ones(2, 1, 3, 3, requires_grad=True)
    n = torch.nn.functional.conv2d(x, w, stride=2, padding=1).grad_fn
    r["conv"] = (n.name(), n._saved_input is x, n._saved_weight is w,
                 tuple(n._saved_stride), tuple(n._saved_padding),
                 tuple(n._saved_dilation), n._saved_groups, n._saved_transposed)
    return r


def test_saved_names_match_torch():
    torch = pytest.importorskip("torch")
    assert _summary(nbtorch) == _summary(torch)


def test_saved_names_nbtorch():
    r = _summary(nbtorch)
    assert r["mul"] == (True, True) and r["pow"][1:] == (True, 2)
    assert r["exp"] and r["relu"]


def test_unknown_name_is_attribute_error():
    a = nbtorch.ones(2, requires_grad=True)
    n = (a * a).grad_fn
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute "
                                             "'_saved_foo'"):
        n._saved_foo
    assert not hasattr(n, "_saved_exponent")
    assert not hasattr(n, "foo")


def test_freed_after_backward():
    a = nbtorch.ones(2, requires_grad=True)
    y = a * a
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a "
                                           "second time"):
        y.grad_fn._saved_self
    z = a * a
    z.sum().backward(retain_graph=True)
    assert z.grad_fn._saved_self is a


_UNARY = ("abs", "neg", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos",
          "tan", "tanh", "asin", "atan", "sigmoid", "relu", "reciprocal", "erf", "sign")


def _unary_summary(lib):
    out = {}
    for op in _UNARY:
        x = lib.tensor([0.3, 0.5, 0.7], requires_grad=True)
        y = getattr(x, op)()
        n = y.grad_fn
        names = [k for k in ("self", "result", "other") if hasattr(n, "_saved_" + k)]
        vals = [getattr(n, "_saved_" + k).detach().numpy().round(5).tolist() for k in names]
        out[op] = (n.name(), names, vals)
    return out


def test_unary_saved_names_match_torch():
    torch = pytest.importorskip("torch")
    assert _unary_summary(nbtorch) == _unary_summary(torch)


def test_unary_saved_names():
    got = _unary_summary(nbtorch)
    assert got["sin"][1] == ["self"] and got["sqrt"][1] == ["result"]
    assert got["neg"][1] == [] and got["log1p"][0] == "Log1PBackward0"


def _raw_hooks(lib):
    out = []
    a = lib.ones(2, requires_grad=True)
    y = a * a
    calls = []
    y.grad_fn._raw_saved_self.register_hooks(
        lambda t: (calls.append("pack"), t * 0 + 3)[1],
        lambda p: (calls.append("unpack"), p)[1])
    out.append(list(calls))
    y.sum().backward()
    out += [list(calls), a.grad.numpy().tolist()]
    for make in (lambda: y, lambda: a * 2):       # freed; a slot holding nothing
        node = make().grad_fn
        with pytest.raises(RuntimeError) as e:
            node._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
        out.append(str(e.value))
    z = a * a
    z.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError) as e:
        z.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    out.append(str(e.value))
    with pytest.raises(AttributeError) as e:
        z.grad_fn._raw_saved_foo
    out.append(str(e.value))
    return out


def test_raw_saved_hooks_match_torch():
    torch = pytest.importorskip("torch")
    assert _raw_hooks(nbtorch) == _raw_hooks(torch)


def test_raw_saved_hooks():
    got = _raw_hooks(nbtorch)
    assert got[:3] == [["pack"], ["pack", "unpack"], [4.0, 4.0]]
    assert "with value None is forbidden" in got[4]
