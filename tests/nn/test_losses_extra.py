"""MultiLabelMarginLoss, TripletMarginWithDistanceLoss, AdaptiveLogSoftmaxWithLoss: NumPy
references, gradcheck, PyTorch's values, gradients and errors."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck


def _t(a, requires_grad=False, device="cpu"):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad, device=device)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _mlm_ref(x, y):
    out = []
    for xr, yr in zip(np.atleast_2d(x), np.atleast_2d(y)):
        js = list(yr[:list(yr).index(-1)] if -1 in yr else yr)
        others = [i for i in range(len(xr)) if i not in js]
        out.append(sum(max(0, 1 - (xr[j] - xr[i])) for j in js for i in others) / len(xr))
    return np.array(out)


MLM_TARGET = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [2, 2, 0, 1]])   # row 2: a duplicate


def test_multilabel_margin_loss_matches_numpy(device):
    x = _rand(3, 4)
    xo, yo = _t(x, device=device), _t(MLM_TARGET, device=device)
    np.testing.assert_allclose(F.multilabel_margin_loss(xo, yo, reduction="none").cpu().numpy(),
                               _mlm_ref(x, MLM_TARGET), rtol=1e-12)
    np.testing.assert_allclose(nn.MultiLabelMarginLoss()(xo, yo).item(),
                               _mlm_ref(x, MLM_TARGET).mean(), rtol=1e-12)
    np.testing.assert_allclose(F.multilabel_margin_loss(xo[0], yo[0]).item(),
                               _mlm_ref(x[0], MLM_TARGET[0])[0], rtol=1e-12)
    assert F.multilabel_margin_loss(xo[0, 0], yo[0, 1]).item() == 0


def test_multilabel_margin_loss_gradcheck_torch_and_errors():
    xt = _t(_rand(3, 4), True)
    assert gradcheck(lambda x: F.multilabel_margin_loss(x, _t(MLM_TARGET)), (xt,))
    torch = pytest.importorskip("torch")
    x = _rand(3, 4)
    xo, xp = _t(x, True), torch.tensor(x, requires_grad=True)
    for red in ("none", "sum"):
        lo = F.multilabel_margin_loss(xo, _t(MLM_TARGET), reduction=red)
        lp = torch.nn.functional.multilabel_margin_loss(xp, torch.tensor(MLM_TARGET),
                                                        reduction=red)
        np.testing.assert_allclose(lo.detach().numpy(), lp.detach().numpy(), rtol=1e-12)
    lo.backward()
    lp.backward()
    np.testing.assert_allclose(xo.grad.numpy(), xp.grad.numpy(), rtol=1e-12)
    x = nbtorch.randn(2, 4)
    cases = [
        (lambda: F.multilabel_margin_loss(x, _t([[4, 0, -1, 1], [1, 2, 3, -1]])), RuntimeError,
         "argument #2 'target' is out of range"),
        (lambda: F.multilabel_margin_loss(x, _t([[3, 0, -1], [1, 2, 3]])), RuntimeError,
         r"inconsistent target size: \[2, 3\] for input of size: \[2, 4\]"),
        (lambda: F.multilabel_margin_loss(x, nbtorch.tensor([[3.0, 0, -1, 1]] * 2)), RuntimeError,
         "expected scalar type Long but found Float"),
        (lambda: F.multilabel_margin_loss(x.reshape(1, 2, 4),
                                          _t(MLM_TARGET[:2]).reshape(1, 2, 4)),
         RuntimeError, r"Expected non-empty vector or matrix with optional 0-dim batch size, "
                       r"but got: \[1, 2, 4\]"),
        (lambda: F.multilabel_margin_loss(x.long(), _t(MLM_TARGET[:2])), NotImplementedError,
         "not implemented for 'Long'"),
        (lambda: F.multilabel_margin_loss(x, _t(MLM_TARGET[:2]), reduction="bad"), ValueError,
         "bad is not a valid value for reduction"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


def test_triplet_margin_with_distance_loss():
    a, p, n = _rand(4, 3), _rand(4, 3, seed=1), _rand(4, 3, seed=2)
    d = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=1)              # noqa: E731
    ref = np.maximum(d(a, p) - np.minimum(d(a, n), d(p, n)) + 0.7, 0)
    got = F.triplet_margin_with_distance_loss(_t(a), _t(p), _t(n), margin=0.7, swap=True,
                                              reduction="none")
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    cos = nn.CosineSimilarity()
    m = nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: 1 - cos(u, v))
    args = [_t(v, True) for v in (a, p, n)]
    assert gradcheck(lambda *v: m(*v), args)
    assert F.triplet_margin_with_distance_loss(_t(a), _t(p), _t(n)).shape == ()
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(_t(a), _t(p), _t(n), margin=0)
    with pytest.raises(ValueError, match="TripletMarginWithDistanceLoss: expected margin to be "
                                         "greater than 0, got -1 instead"):
        nn.TripletMarginWithDistanceLoss(margin=-1)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 2D, and negative 1D inputs"):
        F.triplet_margin_with_distance_loss(_t(a), _t(p), _t(n[0]))
    torch = pytest.importorskip("torch")
    assert repr(nn.TripletMarginWithDistanceLoss()) == \
        repr(torch.nn.TripletMarginWithDistanceLoss())
    want = torch.nn.TripletMarginWithDistanceLoss(swap=True)(
        *(torch.tensor(v) for v in (a, p, n)))
    got = nn.TripletMarginWithDistanceLoss(swap=True)(_t(a), _t(p), _t(n))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)


def _copy_params(ours, theirs):
    import torch
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            dict(ours.named_parameters())[name].data = _t(p.detach().numpy().copy())


def test_adaptive_log_softmax_against_torch():
    torch = pytest.importorskip("torch")
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=[5, 12], div_value=2.0, head_bias=True)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=[5, 12], div_value=2.0,
                                                 head_bias=True)
    assert repr(ours) == repr(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _copy_params(ours, theirs)
    x = _rand(6, 8).astype(np.float32)
    target = np.array([0, 4, 5, 11, 12, 19])
    xo, xt = _t(x, True), torch.tensor(x, requires_grad=True)
    oo, ot = ours(xo, _t(target)), theirs(xt, torch.tensor(target))
    np.testing.assert_allclose(oo.output.detach().numpy(), ot.output.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(oo.loss.item(), ot.loss.item(), rtol=1e-5)
    oo.loss.backward()
    ot.loss.backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(dict(ours.named_parameters())[name].grad.numpy(),
                                   p.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours.log_prob(_t(x)).detach().numpy(),
                               theirs.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-5)
    np.testing.assert_array_equal(ours.predict(_t(x)).numpy(),
                                  theirs.predict(torch.tensor(x)).numpy())
    one = ours(_t(x[3]), _t(target[3]))
    assert one.output.shape == () and np.isclose(one.output.item(), oo.output[3].item())


def test_adaptive_log_softmax_gradcheck_and_errors():
    m = nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[2, 4], div_value=1.0).double()
    target = _t([0, 3, 5, 2])
    assert gradcheck(lambda x: m(x, target).loss, (_t(_rand(4, 4), True),))
    np.testing.assert_allclose(m.log_prob(_t(_rand(3, 4))).exp().sum(1).detach().numpy(), 1,
                               rtol=1e-12)
    with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[])
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[4, 2])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 5\], but values in "
                                           r"range \[0, 6\] were found."):
        m(_t(_rand(2, 4)), _t([0, 6]))
    with pytest.raises(RuntimeError, match="Input and target should have the same size in the "
                                           "batch dimension."):
        m(_t(_rand(3, 4)), _t([0, 1]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not "
                                           "supported"):
        m(_t(_rand(3, 4)), _t([[0, 1]]))
