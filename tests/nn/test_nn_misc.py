"""The smaller torch.nn names: FeatureAlphaDropout, rrelu_, the deprecated Container/
NLLLoss2d and init spellings, linear_cross_entropy/LinearCrossEntropyLoss, nn.grad,
nn.attention, nn.factory_kwargs. Against PyTorch where it is installed."""
import warnings

import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F


def _t(a, requires_grad=False):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_feature_alpha_dropout():
    x = _t(_rand(4, 5, 3))
    p, alpha = 0.4, 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    y = F.feature_alpha_dropout(x, p, training=True).numpy()
    kept = np.isclose(y, a * x.numpy() + alpha * a * p).all(-1)          # whole channels
    dropped = np.isclose(y, alpha * a * p - alpha * a).all(-1)
    assert (kept ^ dropped).all() and kept.any() and dropped.any()
    assert F.feature_alpha_dropout(x, 0.4, training=False) is x
    np.testing.assert_array_equal(F.feature_alpha_dropout(x, 1.0, training=True).numpy(), 0)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(nbtorch.randn(3), 0.5, training=True)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.FeatureAlphaDropout(1.5)
    torch = pytest.importorskip("torch")
    xs = _rand(4, 5, 3, 3).astype(np.float32)
    nbtorch.manual_seed(1)
    torch.manual_seed(1)
    ours = nn.FeatureAlphaDropout(0.3)(_t(xs))
    theirs = torch.nn.FeatureAlphaDropout(0.3)(torch.tensor(xs))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)
    assert repr(nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))


def test_rrelu_inplace_and_deprecated_names():
    x = _t(np.array([-2.0, 3.0]))
    out = F.rrelu_(x)
    assert out is x
    np.testing.assert_allclose(x.numpy(), [-2.0 * (1 / 8 + 1 / 3) / 2, 3.0])
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(a=nn.ReLU())
    assert list(dict(c.named_children())) == ["a"]
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d()
    lp = F.log_softmax(nbtorch.randn(2, 3, 4, 4), 1)
    tgt = nbtorch.randint(0, 3, (2, 4, 4))
    np.testing.assert_allclose(loss(lp, tgt).item(), F.nll_loss(lp, tgt).item())
    w = nbtorch.empty(3, 3)
    nn.init.eye(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(3))
    assert nn.init.dirac is nn.init.dirac_ and nn.init.sparse is nn.init.sparse_


@pytest.mark.parametrize("case", ["plain", "kdim_bias", "probs", "unbatched"])
def test_linear_cross_entropy_against_torch(case):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 6)), rng.standard_normal((5, 6))
    kw, tgt, bias = {}, np.array([0, 2, 4, 1]), None
    if case == "kdim_bias":
        w, bias = rng.standard_normal((5, 3, 6)), rng.standard_normal((5, 3))
        tgt = rng.integers(0, 5, (4, 3))
        kw = {"ignore_index": 2, "label_smoothing": 0.1, "reduction": "sum"}
    elif case == "probs":
        tgt = np.abs(rng.standard_normal((4, 5)))
        tgt /= tgt.sum(1, keepdims=True)
        kw = {"weight": np.arange(1.0, 6.0)}
    elif case == "unbatched":
        x, tgt = x[0], np.array(3)
        kw = {"reduction": "none"}

    def run(lib, wrap):
        args = {k: (wrap(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        xs, ws = wrap(x, True), wrap(w, True)
        out = lib.nn.functional.linear_cross_entropy(
            xs, ws, wrap(tgt), linear_bias=None if bias is None else wrap(bias), **args)
        out.sum().backward()
        return out.detach().numpy(), xs.grad.numpy(), ws.grad.numpy()

    ours = run(nbtorch, lambda a, g=False: nbtorch.tensor(a, requires_grad=g))
    theirs = run(torch, lambda a, g=False: torch.tensor(a, requires_grad=g))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_linear_cross_entropy_module_and_errors():
    torch = pytest.importorskip("torch")
    ours = nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True)
    theirs = torch.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True)
    assert repr(ours) == repr(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            dict(ours.named_parameters())[name].data = _t(p.numpy().copy())
    x, tgt = _rand(5, 4).astype(np.float32), np.random.default_rng(1).integers(0, 3, (5, 2))
    np.testing.assert_allclose(ours(_t(x), _t(tgt)).item(),
                               theirs(torch.tensor(x), torch.tensor(tgt)).item(), rtol=1e-5)
    x, w = nbtorch.randn(4, 6), nbtorch.randn(5, 6)
    with pytest.raises(RuntimeError, match="expected equal input and linear_weight last "
                                           "dimensions"):
        F.linear_cross_entropy(x, nbtorch.randn(5, 7), nbtorch.tensor([0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
        F.linear_cross_entropy(x.reshape(1, 4, 6), w, nbtorch.tensor([0]))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target "
                                           "contains probabilities"):
        F.linear_cross_entropy(x, w, nbtorch.rand(4, 5), ignore_index=1)
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(3,\), got \(2,\)"):
        nn.LinearCrossEntropyLoss(4, 3, weight=nbtorch.ones(2))
    with pytest.warns(UserWarning, match="``options`` ignored"):
        F.linear_cross_entropy(x, w, nbtorch.tensor([0, 1, 2, 3]), label_smoothing=0.1,
                               options=nn.LinearCrossEntropyOptions())


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_nn_grad_against_torch(dims):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((2, 4) + (5,) * dims)
    w = rng.standard_normal((6, 2) + (3,) * dims)
    kw = {"stride": 2, "padding": 1, "groups": 2}
    g = getattr(torch.nn.functional, f"conv{dims}d")(torch.tensor(x), torch.tensor(w), **kw)
    go = rng.standard_normal(tuple(g.shape))
    ours_in = getattr(nn.grad, f"conv{dims}d_input")(x.shape, _t(w), _t(go), **kw)
    theirs_in = getattr(torch.nn.grad, f"conv{dims}d_input")(x.shape, torch.tensor(w),
                                                             torch.tensor(go), **kw)
    np.testing.assert_allclose(ours_in.numpy(), theirs_in.numpy(), rtol=1e-10, atol=1e-12)
    ours_w = getattr(nn.grad, f"conv{dims}d_weight")(_t(x), w.shape, _t(go), **kw)
    theirs_w = getattr(torch.nn.grad, f"conv{dims}d_weight")(torch.tensor(x), w.shape,
                                                             torch.tensor(go), **kw)
    np.testing.assert_allclose(ours_w.numpy(), theirs_w.numpy(), rtol=1e-10, atol=1e-12)


def test_attention_backends_and_factory_kwargs():
    from nbtorch.nn.attention import SDPBackend, current_backends, sdpa_kernel
    q = nbtorch.randn(1, 2, 3, 4)
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.MATH]):
        assert current_backends() == [SDPBackend.MATH]
        out = F.scaled_dot_product_attention(q, q, q)
    assert SDPBackend.MATH in current_backends() and len(current_backends()) > 1
    np.testing.assert_allclose(out.numpy(), F.scaled_dot_product_attention(q, q, q).numpy())
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass
    assert nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": nbtorch.float64}}) \
        == {"dtype": nbtorch.float64, "device": "cpu"}
    assert nn.factory_kwargs(None) == {}
    with pytest.raises(TypeError, match="unexpected kwargs"):
        nn.factory_kwargs({"layout": 1})
    with pytest.raises(TypeError, match="dtype specified twice"):
        nn.factory_kwargs({"dtype": nbtorch.float32, "factory_kwargs": {"dtype": nbtorch.float64}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert SDPBackend.FLASH_ATTENTION == 1 and SDPBackend.ERROR == -1


def test_prelu_keeps_a_0d_input_0d_and_rrelu_eval_takes_the_slope_at_zero():
    assert nn.PReLU()(nbtorch.tensor(-2.0)).shape == ()
    assert F.prelu(nbtorch.tensor(-2.0), nbtorch.tensor([0.25])).item() == -0.5
    x = nbtorch.tensor([0.0, -1.0, 1.0], requires_grad=True)
    nn.RReLU(0.1, 0.3).eval()(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.2, 0.2, 1.0])   # 1.0 at 0 before


def test_channel_dropout_ranks_as_pytorchs():
    """dropout2d reads a 3-D input as (N, C, L) and runs other ranks with a warning;
    dropout3d treats a non-5-D input as unbatched (it raised for both before)."""
    nbtorch.manual_seed(0)
    with pytest.warns(UserWarning, match=r"interpreted as\s+shape \(N, C, L\)"):
        y = F.dropout2d(nbtorch.ones(4, 6, 5), 0.5, True)
    assert bool((y.amax(-1) == y.amin(-1)).all())           # one mask value per (n, c) row
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        assert nn.Dropout2d(0.5).eval()(nbtorch.ones(3, 4)).shape == (3, 4)
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        y = F.dropout3d(nbtorch.ones(6, 4, 5), 0.5, True)
    assert bool((y.flatten(1).amax(1) == y.flatten(1).amin(1)).all())   # per channel (dim 0)


def test_loss_and_pooling_edge_cases_as_pytorchs():
    x = nbtorch.tensor([[[0.3, -0.8848, 1.2, -1.466]]])
    np.testing.assert_allclose(F.lp_pool1d(x, float("inf"), 2).flatten().numpy(),
                               [0.8848, 1.466], rtol=1e-6)           # [1, 1] before
    out = F.hinge_embedding_loss(nbtorch.tensor([0.3, 2.0]), nbtorch.tensor([0.0, 0.0]),
                                 reduction="none")
    assert out.tolist() == pytest.approx([1.0, 2.0])   # both terms where y is neither +-1
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(nbtorch.tensor([0.5]), nbtorch.tensor([2.0]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_loss(nbtorch.randn(2, 3), nbtorch.randn(3), nbtorch.randn(2, 3))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes"):
        F.one_hot(nbtorch.zeros(0, dtype=nbtorch.int64))
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4)"
    assert repr(nn.Hardswish(inplace=True)) == "Hardswish()"
