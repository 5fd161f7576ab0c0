"""register_multi_grad_hook (modes "all" and "any"), and PyTorch's once-per-process
warnings for backward(create_graph=True) and float() of a tensor requiring grad."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import engine
from nbtorch.autograd.graph import register_multi_grad_hook


def _leaves():
    a = nbtorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = nbtorch.tensor([4.0, 5.0, 6.0], requires_grad=True)
    return a, b


def test_all_mode_unreached_is_none():
    a, b = _leaves()
    got = []
    register_multi_grad_hook((a, b), got.append)
    (a * 2).sum().backward()
    assert len(got) == 1
    np.testing.assert_allclose(got[0][0].numpy(), [2.0, 2.0, 2.0])
    assert got[0][1] is None


def test_all_mode_fires_once_with_every_gradient():
    a, b = _leaves()
    got = []
    register_multi_grad_hook((a, b), got.append)
    (a * 2 + b * b).sum().backward()
    assert len(got) == 1
    np.testing.assert_allclose(got[0][0].numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(got[0][1].numpy(), [8.0, 10.0, 12.0])
    (b * 3).sum().backward()               # a second pass: called again
    assert len(got) == 2 and got[1][0] is None


def test_all_mode_nonleaf_and_grad():
    a, b = _leaves()
    y = a * 3
    got = []
    register_multi_grad_hook((y, b), got.append)
    nbtorch.autograd.grad((y * y).sum() + b.sum(), [a])   # b's leaf is not run
    assert len(got) == 1
    np.testing.assert_allclose(got[0][0].numpy(), 2 * y.detach().numpy())
    assert got[0][1] is None


def test_any_mode_and_remove():
    a, b = _leaves()
    got = []
    h = register_multi_grad_hook((a, b), got.append, mode="any")
    (a * 2 + b).sum().backward()
    assert len(got) == 1 and isinstance(got[0], nbtorch.Tensor)
    h.remove()
    (a * 2 + b).sum().backward()
    assert len(got) == 1


def test_bad_mode():
    a, b = _leaves()
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) "
                                         "but got x"):
        nbtorch.autograd.graph.register_multi_grad_hook((a, b), print, mode="x")


def test_matches_torch():
    torch = pytest.importorskip("torch")
    out = {}
    for lib in (torch, nbtorch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        c = lib.tensor([5.0, 6.0], requires_grad=True)
        got = []
        lib.autograd.graph.register_multi_grad_hook((a, b, c), got.append)
        (a * b).sum().backward()
        out[lib] = [None if g is None else g.detach().numpy().tolist() for g in got[0]]
    assert out[torch] == out[nbtorch]


def test_create_graph_backward_warns_once(monkeypatch):
    monkeypatch.setattr(engine, "_CYCLE_WARNED", [False])
    x = nbtorch.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        (x * x).sum().backward(create_graph=True)
        (x * x).sum().backward(create_graph=True)
        nbtorch.autograd.grad((x * x).sum(), x, create_graph=True)
    msgs = [str(m.message) for m in w if "reference cycle" in str(m.message)]
    assert len(msgs) == 1
    assert msgs[0].startswith("Using backward() with create_graph=True will create a "
                              "reference cycle")


def test_float_of_requires_grad_warns_once(monkeypatch):
    from nbtorch import _tensor
    monkeypatch.setattr(_tensor, "_SCALAR_WARNED", False)
    y = nbtorch.tensor(1.5, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        int(y), y.item(), float(y.detach())
        assert not w                            # PyTorch warns for float() only
        assert float(y) == 1.5
        float(y)
    assert len(w) == 1 and w[0].category is UserWarning
    assert str(w[0].message).startswith("Converting a tensor with requires_grad=True to "
                                        "a scalar may lead to unexpected behavior.")
