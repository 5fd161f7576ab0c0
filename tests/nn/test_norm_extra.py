"""LocalResponseNorm, CrossMapLRN2d, SyncBatchNorm, the norm layers' bias= keyword and
InstanceNorm1d/2d/3d with running statistics: NumPy references, gradcheck, PyTorch."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _t(a, requires_grad=False):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad)


def _lrn_ref(x, size, alpha, beta, k):
    """x / (k + alpha/size * sum of squares over channels [c - size//2, c + (size-1)//2])^beta."""
    sq = x * x
    out = np.empty_like(x)
    C = x.shape[1]
    for c in range(C):
        lo, hi = max(c - size // 2, 0), min(c + (size - 1) // 2, C - 1)
        out[:, c] = x[:, c] / (k + alpha / size * sq[:, lo:hi + 1].sum(1)) ** beta
    return out


@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 6, 3, 3), (1, 4, 2, 2, 3)])
@pytest.mark.parametrize("size", [1, 2, 3])
def test_local_response_norm_matches_numpy(shape, size):
    x = _rand(*shape)
    y = nn.LocalResponseNorm(size, alpha=0.3, beta=0.6, k=2.0)(_t(x))
    np.testing.assert_allclose(y.numpy(), _lrn_ref(x, size, 0.3, 0.6, 2.0), rtol=1e-12)


def test_local_response_norm_grad_repr_and_errors():
    xt = _t(_rand(2, 4, 3), True)
    assert gradcheck(lambda x: F.local_response_norm(x, 3, alpha=0.5, k=1.5), (xt,))
    assert repr(nn.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input "
                                         r"\(got 2 dimensions\)"):
        F.local_response_norm(nbtorch.randn(2, 3), 2)
    assert F.local_response_norm(nbtorch.randn(0, 3, 2), 2).shape == (0, 3, 2)


def test_cross_map_lrn2d_against_torch_and_gradcheck():
    torch = pytest.importorskip("torch")
    x = _rand(2, 7, 3, 3)
    for size in (1, 3, 4):
        ours = nn.CrossMapLRN2d(size, alpha=0.2, beta=0.7, k=1.5)(_t(x))
        theirs = torch.nn.CrossMapLRN2d(size, alpha=0.2, beta=0.7, k=1.5)(torch.tensor(x))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    xt = _t(_rand(1, 5, 2, 2), True)
    assert gradcheck(lambda x: nn.CrossMapLRN2d(3, alpha=0.5)(x), (xt,))
    assert repr(nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3))
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D"):
        nn.CrossMapLRN2d(3)(nbtorch.randn(2, 3, 4))


def test_local_response_norm_against_torch():
    torch = pytest.importorskip("torch")
    x = _rand(2, 6, 4, 4).astype(np.float32)
    xo, xt = _t(x, True), torch.tensor(x, requires_grad=True)
    yo, yt = nn.LocalResponseNorm(3, k=0.5)(xo), torch.nn.LocalResponseNorm(3, k=0.5)(xt)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-5)
    (yo * yo).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- SyncBatchNorm

def test_sync_batch_norm_is_batch_norm_in_one_process():
    torch = pytest.importorskip("torch")
    x = _rand(4, 3, 5).astype(np.float32)
    ours, theirs = nn.SyncBatchNorm(3, momentum=0.3), torch.nn.SyncBatchNorm(3, momentum=0.3)
    bn = nn.BatchNorm1d(3, momentum=0.3)
    xo, xt = _t(x, True), torch.tensor(x, requires_grad=True)
    yo = ours(xo)
    np.testing.assert_allclose(yo.detach().numpy(), bn(_t(x)).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(yo.detach().numpy(), theirs(xt).detach().numpy(), atol=1e-5)
    for name, t in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[name].numpy(), t.numpy(), atol=1e-6)
    assert repr(ours) == repr(theirs)
    ours.eval()
    assert ours(_t(x)).shape == (4, 3, 5)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        ours(nbtorch.randn(3))
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be "
                                         "non-zero"):
        nn.SyncBatchNorm(0)(nbtorch.randn(2, 0, 3))


def test_convert_sync_batchnorm_keeps_parameters_and_stats():
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3),
                          nn.Sequential(nn.BatchNorm1d(4, affine=False)))
    model[1](nbtorch.randn(2, 3, 2, 2))
    model.eval()
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(sync[1], nn.SyncBatchNorm) and isinstance(sync[2][0], nn.SyncBatchNorm)
    assert sync[1].weight is model[1].weight and not sync[1].training
    assert sync[1].running_mean is model[1].running_mean
    assert int(sync[1].num_batches_tracked.item()) == 1
    assert sync[2][0].weight is None and sync[0] is model[0]


# ---------------------------------------------------------------- bias=

@pytest.mark.parametrize("make", [
    lambda m, **k: m.BatchNorm2d(3, **k), lambda m, **k: m.InstanceNorm2d(3, affine=True, **k),
    lambda m, **k: m.GroupNorm(1, 3, **k), lambda m, **k: m.LayerNorm(3, **k),
    lambda m, **k: m.SyncBatchNorm(3, **k)])
def test_norm_layers_without_bias_match_torch(make):
    torch = pytest.importorskip("torch")
    ours, theirs = make(nn, bias=False), make(torch.nn, bias=False)
    assert ours.bias is None and ours.weight is not None
    assert repr(ours) == repr(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    x = _rand(2, 3, 3, 3).astype(np.float32)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor([0.5, 2.0, -1.0]))
    ours.weight.data = _t(np.float32([0.5, 2.0, -1.0]))
    np.testing.assert_allclose(ours(_t(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), atol=1e-5)


# ---------------------------------------------------------------- InstanceNorm running stats

@pytest.mark.parametrize("dims", [1, 2, 3])
def test_instance_norm_tracking_against_torch(dims):
    torch = pytest.importorskip("torch")
    name = f"InstanceNorm{dims}d"
    shape = (3, 2) + (4, 3, 2)[:dims]
    for kw in ({"affine": True, "track_running_stats": True},
               {"track_running_stats": True, "momentum": None}):
        ours = getattr(nn, name)(2, **kw).double()
        theirs = getattr(torch.nn, name)(2, **kw).double()
        for step in range(2):
            x = _rand(*shape, seed=step)
            xo, xt = _t(x, True), torch.tensor(x, requires_grad=True)
            yo, yt = ours(xo), theirs(xt)
            np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), atol=1e-10)
            (yo * yo * _t(x)).sum().backward()
            (yt * yt * torch.tensor(x)).sum().backward()
            np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), atol=1e-9)
        for key, t in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[key].numpy(), t.numpy(), atol=1e-12)
        ours.eval(), theirs.eval()
        x = _rand(*shape[1:], seed=5)                        # unbatched, running statistics
        np.testing.assert_allclose(ours(_t(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), atol=1e-10)
        assert repr(ours) == repr(theirs)


def test_instance_norm_eval_gradcheck_and_errors():
    m = nn.InstanceNorm1d(2, affine=True, track_running_stats=True).double()
    m(_t(_rand(2, 2, 5)))
    m.eval()
    assert gradcheck(lambda x: m(x), (_t(_rand(2, 2, 3), True),))
    with pytest.raises(RuntimeError, match="Expected running_mean and running_var to be defined "
                                           "when use_input_stats is false"):
        F.instance_norm(nbtorch.randn(2, 2, 3), use_input_stats=False)
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match "
                                         r"num_features \(2\), but got: 3."):
        m(nbtorch.randn(2, 3, 3).double())
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm1d(2)(nbtorch.randn(2, 3, 3))
