"""nn.utils.parametrize (register/remove, chains, right_inverse, cached, state dicts),
nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal) and the legacy hook
versions (utils.weight_norm/spectral_norm and remove_*): against PyTorch and by hand."""
import warnings

import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
from nbtorch.autograd import gradcheck
from nbtorch.nn.utils import parametrizations as PZ
from nbtorch.nn.utils import parametrize as P

W = np.random.default_rng(0).standard_normal((5, 4))
X = np.random.default_rng(1).standard_normal((3, 4))


def _t(a, requires_grad=False):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad)


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, a):
        return a / 2


def test_register_chain_assign_cache_and_remove():
    m = nn.Linear(3, 3).double()
    w0 = m.weight.detach().numpy().copy()
    P.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and P.is_parametrized(m, "weight")
    assert P.type_before_parametrizations(m) is nn.Linear
    np.testing.assert_allclose(m.weight.detach().numpy(), np.triu(w0) + np.triu(w0, 1).T)
    P.register_parametrization(m, "weight", Scale())
    assert len(m.parametrizations.weight) == 2
    target = np.array([[1.0, 2, 3], [2, 4, 5], [3, 5, 6]])
    m.weight = _t(target)                          # through both right inverses
    np.testing.assert_allclose(m.weight.detach().numpy(), target)
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    with P.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    import copy
    twin = copy.deepcopy(m)
    np.testing.assert_allclose(twin.weight.detach().numpy(), target)
    assert twin.parametrizations.weight.original is not m.parametrizations.weight.original
    y = m(_t(np.ones((2, 3))))
    y.sum().backward()
    assert m.parametrizations.weight.original.grad.shape == (3, 3)
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), target)
    assert not hasattr(m, "parametrizations") and sorted(m.state_dict()) == ["bias", "weight"]


def test_parametrize_errors_and_buffers():
    m = nn.Linear(3, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'foo'"):
        P.register_parametrization(m, "foo", Scale())

    class Cut(nn.Module):
        def forward(self, x):
            return x[:2]
    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        P.register_parametrization(m, "weight", Cut())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(m, "weight")
    bn = nn.BatchNorm1d(3)
    P.register_parametrization(bn, "running_var", Scale())
    assert "parametrizations.running_var.original" in bn.state_dict()
    np.testing.assert_allclose(bn.running_var.numpy(), 1.0)     # right_inverse kept the value
    np.testing.assert_allclose(bn.parametrizations.running_var.original.numpy(), 0.5)


def test_parametrizations_against_torch():
    torch = pytest.importorskip("torch")
    for make, kw in ((PZ.weight_norm, {}), (PZ.weight_norm, {"dim": None}),
                     (PZ.spectral_norm, {}), (PZ.orthogonal, {}),
                     (PZ.orthogonal, {"orthogonal_map": "cayley"}),
                     (PZ.orthogonal, {"orthogonal_map": "householder"}),
                     (PZ.orthogonal, {"orthogonal_map": "householder",
                                      "use_trivialization": False})):
        ours, theirs = nn.Linear(4, 5).double(), torch.nn.Linear(4, 5).double()
        ours.weight.data = _t(W)
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(W))
            theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
        nbtorch.manual_seed(0)
        torch.manual_seed(0)
        make(ours, **kw)
        getattr(torch.nn.utils.parametrizations, make.__name__)(theirs, **kw)
        assert repr(ours) == repr(theirs)
        assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
        for _ in range(2):                               # spectral_norm iterates per call
            yo, yt = ours(_t(X)), theirs(torch.tensor(X))
            np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), atol=1e-12)
        yo.sum().backward()
        yt.sum().backward()
        for name, p in theirs.named_parameters():
            np.testing.assert_allclose(dict(ours.named_parameters())[name].grad.numpy(),
                                       p.grad.numpy(), atol=1e-10)
    q = PZ.orthogonal(nn.Linear(3, 6).double()).weight.detach().numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-12)


def test_weight_norm_gradcheck_and_old_checkpoint_keys():
    m = PZ.weight_norm(nn.Linear(4, 5).double())
    g = m.parametrizations.weight.original0
    v = m.parametrizations.weight.original1
    x = _t(X)

    def f(g_, v_):
        return nbtorch.nn.functional.linear(x, v_ * (g_ / v_.norm(dim=1, keepdim=True)))
    assert gradcheck(f, (_t(g.detach().numpy(), True), _t(v.detach().numpy(), True)))
    old = {"weight_g": _t(np.ones((5, 1))), "weight_v": _t(W), "bias": _t(np.zeros(5))}
    m.load_state_dict(old)
    np.testing.assert_allclose(m.weight.detach().numpy(),
                               W / np.linalg.norm(W, axis=1, keepdims=True), atol=1e-12)


def test_legacy_hook_norms_against_torch():
    torch = pytest.importorskip("torch")
    for kind, grad_name in (("weight_norm", "weight_g"), ("spectral_norm", "weight_orig")):
        ours, theirs = nn.Linear(4, 5).double(), torch.nn.Linear(4, 5).double()
        ours.weight.data = _t(W)
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(W))
            theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
        nbtorch.manual_seed(0)
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            getattr(nn.utils, kind)(ours)
            getattr(torch.nn.utils, kind)(theirs)
        assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
        for _ in range(2):
            yo, yt = ours(_t(X)), theirs(torch.tensor(X))
            np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), atol=1e-12)
        yo.sum().backward()
        yt.sum().backward()
        np.testing.assert_allclose(getattr(ours, grad_name).grad.numpy(),
                                   getattr(theirs, grad_name).grad.numpy(), atol=1e-12)
        getattr(nn.utils, "remove_" + kind)(ours)
        getattr(torch.nn.utils, "remove_" + kind)(theirs)
        assert sorted(ours.state_dict()) == ["bias", "weight"]
        np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                                   atol=1e-12)
        with pytest.raises(ValueError, match=f"{kind} of 'weight' not found in"):
            getattr(nn.utils, "remove_" + kind)(ours)
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        nn.utils.weight_norm(nn.Linear(2, 2))


def test_a_convolutions_parametrized_weight_is_computed_once_per_forward():
    """spectral_norm's power iteration ran twice per Conv forward (the channel check read
    the weight), drifting from PyTorch."""
    class Count(nn.Module):
        calls = 0

        def forward(self, w):
            Count.calls += 1
            return w

    for layer, x in ((nn.Conv2d(2, 3, 3), nbtorch.randn(1, 2, 5, 5)),
                     (nn.ConvTranspose1d(2, 3, 3), nbtorch.randn(1, 2, 5))):
        nn.utils.parametrize.register_parametrization(layer, "weight", Count())
        Count.calls = 0
        layer(x)
        assert Count.calls == 1
