"""Losses: values against NumPy for every reduction, gradcheck, stability, target errors."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck

REDUCTIONS = ["mean", "sum", "none"]


def _t(a, requires_grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _reduce(v, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](v)


def _pair(shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(shape)


def _log_softmax(x, axis=1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# ---- regression losses ------------------------------------------------------------

REGRESSION = [
    (nn.MSELoss, {}, lambda d: d * d),
    (nn.L1Loss, {}, np.abs),
    (nn.SmoothL1Loss, {"beta": 0.5},
     lambda d: np.where(np.abs(d) < 0.5, 0.5 * d * d / 0.5, np.abs(d) - 0.25)),
    (nn.HuberLoss, {"delta": 0.7},
     lambda d: np.where(np.abs(d) < 0.7, 0.5 * d * d, 0.7 * (np.abs(d) - 0.35))),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("cls,kw,ref", REGRESSION, ids=lambda v: getattr(v, "__name__", ""))
def test_regression_losses_match_numpy(cls, kw, ref, reduction):
    x, y = _pair()
    loss = cls(reduction=reduction, **kw)(_t(x), _t(y))
    np.testing.assert_allclose(loss.numpy(), _reduce(ref(x - y), reduction), rtol=1e-12)


@pytest.mark.parametrize("cls,kw,ref", REGRESSION, ids=lambda v: getattr(v, "__name__", ""))
def test_regression_losses_gradcheck(cls, kw, ref):
    x, y = _pair((2, 3), seed=1)
    assert gradcheck(cls(**kw), (_t(x, True), _t(y, True)))


def test_mse_warns_on_broadcast_and_checks_reduction():
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(torch.zeros(3, 1), torch.zeros(3))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.mse_loss(torch.zeros(3), torch.zeros(3), reduction="avg")
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(torch.zeros(1), torch.zeros(1), beta=-1.0)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.MSELoss(size_average=False).reduction == "sum"


def test_issue_snippet_mse_value():
    loss = nn.MSELoss()(torch.tensor([[1.0], [2.0]]), torch.tensor([[2.0], [4.0]]))
    assert abs(loss.item() - 2.5) < 1e-7


# ---- cross entropy / nll ------------------------------------------------------------

def _ce_ref(x, t, w=None, ignore=-100, smoothing=0.0, reduction="mean"):
    """Reference for (N, C) inputs with class indices."""
    logp = _log_softmax(x)
    n, c = x.shape
    w = np.ones(c) if w is None else w
    valid = t != ignore
    safe = np.where(valid, t, 0)
    nll = -logp[np.arange(n), safe] * w[safe] * valid
    smooth = -(logp * w).sum(1) * valid
    if reduction == "none":
        return (1 - smoothing) * nll + smoothing / c * smooth
    if reduction == "sum":
        return (1 - smoothing) * nll.sum() + smoothing / c * smooth.sum()
    denom = (w[safe] * valid).sum()
    return (1 - smoothing) * nll.sum() / denom + smoothing / c * smooth.sum() / denom


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_class_indices(reduction, weighted, smoothing):
    x, _ = _pair((5, 4), seed=2)
    t = np.array([0, 3, 1, -100, 2])
    w = np.array([0.5, 1.0, 2.0, 1.5]) if weighted else None
    loss = nn.CrossEntropyLoss(weight=None if w is None else _t(w), ignore_index=-100,
                               reduction=reduction, label_smoothing=smoothing)
    out = loss(_t(x), torch.tensor(t))
    np.testing.assert_allclose(out.numpy(), _ce_ref(x, t, w, -100, smoothing, reduction),
                               rtol=1e-10)


def test_cross_entropy_gradcheck():
    x, _ = _pair((4, 3), seed=3)
    t = torch.tensor([0, 2, 1, 1])
    w = _t([1.0, 2.0, 0.5])
    assert gradcheck(lambda a: F.cross_entropy(a, t, weight=w, label_smoothing=0.1),
                     (_t(x, True),))
    probs = np.random.default_rng(4).dirichlet(np.ones(3), size=4)
    assert gradcheck(lambda a, p: F.cross_entropy(a, p), (_t(x, True), _t(probs, True)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities(reduction):
    x, _ = _pair((4, 3), seed=5)
    p = np.random.default_rng(6).dirichlet(np.ones(3), size=4)
    w = np.array([1.0, 0.5, 2.0])
    out = F.cross_entropy(_t(x), _t(p), weight=_t(w), reduction=reduction,
                          label_smoothing=0.1)
    ps = p * 0.9 + 0.1 / 3
    ref = -(_log_softmax(x) * ps * w).sum(1)
    ref = {"mean": ref.sum() / 4, "sum": ref.sum(), "none": ref}[reduction]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)


def test_cross_entropy_k_dimensional():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4, 5))
    t = rng.integers(0, 3, size=(2, 4, 5))
    out = F.cross_entropy(_t(x), torch.tensor(t), reduction="none")
    flat = np.moveaxis(x, 1, -1).reshape(-1, 3)
    ref = _ce_ref(flat, t.reshape(-1), reduction="none").reshape(2, 4, 5)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    assert abs(F.cross_entropy(_t(x), torch.tensor(t)).item() - ref.mean()) < 1e-10
    xg = _t(x[:1, :, :2, :2], True)
    assert gradcheck(lambda a: F.cross_entropy(a, torch.tensor(t[:1, :2, :2])), (xg,))


def test_cross_entropy_unbatched_and_large_logits():
    out = F.cross_entropy(_t([1.0, 2.0, 3.0]), torch.tensor(2))
    assert abs(out.item() - (-_log_softmax(np.array([[1.0, 2.0, 3.0]]))[0, 2])) < 1e-12
    big = torch.tensor([[1000.0, -1000.0, 0.0], [-5e4, 5e4, 0.0]], requires_grad=True)
    loss = F.cross_entropy(big, torch.tensor([1, 1]))
    assert abs(loss.item() - 1000.0) < 1e-3
    loss.backward()
    assert np.isfinite(big.grad.numpy()).all()


def test_nll_loss_matches_numpy():
    x, _ = _pair((4, 3), seed=8)
    logp = _log_softmax(x)
    t = np.array([2, 0, 1, 2])
    for reduction in REDUCTIONS:
        out = F.nll_loss(_t(logp), torch.tensor(t), reduction=reduction)
        np.testing.assert_allclose(out.numpy(), _reduce(-logp[np.arange(4), t], reduction),
                                   rtol=1e-12)
    assert gradcheck(lambda a: nn.NLLLoss(weight=_t([1.0, 2.0, 3.0]))(a, torch.tensor(t)),
                     (_t(logp, True),))


def test_class_target_errors_match_pytorch():
    x = torch.zeros(3, 5)
    with pytest.raises(RuntimeError, match="Expected floating point type for target with "
                                           "class probabilities, got Long"):
        F.cross_entropy(x, torch.zeros(3, 5, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, torch.zeros(3))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(x, torch.tensor([0, 5, 1]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        F.nll_loss(x, torch.tensor([0, -1, 1]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)."):
        F.cross_entropy(x, torch.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 "
                                           "classes"):
        F.cross_entropy(x, torch.tensor([0, 1, 2]), weight=torch.ones(3))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 3\]"):
        F.cross_entropy(torch.zeros(2, 3, 4), torch.zeros(2, 3, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, torch.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating"):
        F.cross_entropy(x, torch.zeros(3, 5), ignore_index=1)


# ---- binary losses ----------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_matches_numpy(reduction):
    rng = np.random.default_rng(9)
    p = rng.uniform(0.05, 0.95, (3, 4))
    y = rng.integers(0, 2, (3, 4)).astype(np.float64)
    w = rng.uniform(0.5, 2.0, (4,))
    out = nn.BCELoss(weight=_t(w), reduction=reduction)(_t(p), _t(y))
    ref = -(y * np.log(p) + (1 - y) * np.log(1 - p)) * w
    np.testing.assert_allclose(out.numpy(), _reduce(ref, reduction), rtol=1e-12)


def test_bce_clamps_log_and_has_finite_grads_at_0_and_1():
    p = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)
    loss = F.binary_cross_entropy(p, y, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [100.0, 100.0, np.log(2)])
    loss.sum().backward()
    assert np.isfinite(p.grad.numpy()).all()


def test_bce_gradcheck_and_errors():
    rng = np.random.default_rng(10)
    p = _t(rng.uniform(0.1, 0.9, (2, 3)), True)
    y = _t(rng.uniform(0, 1, (2, 3)), True)
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b), (p, y))
    with pytest.raises(ValueError, match="Using a target size"):
        F.binary_cross_entropy(torch.full((2,), 0.5), torch.zeros(2, 1))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_matches_numpy(reduction):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 4)) * 3
    y = rng.integers(0, 2, (3, 4)).astype(np.float64)
    pw = rng.uniform(0.5, 3.0, (4,))
    w = rng.uniform(0.5, 2.0, (3, 4))
    out = nn.BCEWithLogitsLoss(weight=_t(w), pos_weight=_t(pw), reduction=reduction)(
        _t(x), _t(y))
    s = 1 / (1 + np.exp(-x))
    ref = -(pw * y * np.log(s) + (1 - y) * np.log(1 - s)) * w
    np.testing.assert_allclose(out.numpy(), _reduce(ref, reduction), rtol=1e-10)


def test_bce_with_logits_stable_for_large_logits_and_gradcheck():
    x = torch.tensor([100.0, -100.0, 1e4, -1e4, 0.0], requires_grad=True)
    y = torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0])
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [100.0, 100.0, 0.0, 0.0, np.log(2)],
                               rtol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 0.0, 0.0, -0.5], atol=1e-6)
    rng = np.random.default_rng(12)
    a, b = _t(rng.standard_normal((2, 3)), True), _t(rng.uniform(0, 1, (2, 3)), True)
    pw = _t([1.0, 2.0, 0.5], True)
    assert gradcheck(lambda a, b, pw: F.binary_cross_entropy_with_logits(a, b, pos_weight=pw),
                     (a, b, pw))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(torch.zeros(2), torch.zeros(2, 1))


# ---- KL divergence ----------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_numpy(reduction, log_target):
    rng = np.random.default_rng(13)
    logq = _log_softmax(rng.standard_normal((3, 4)))
    p = rng.dirichlet(np.ones(4), size=3)
    p[0, 1] = 0.0                                       # 0 * log 0 counts as 0
    target = np.log(p + 1e-300) if log_target else p
    out = nn.KLDivLoss(reduction=reduction, log_target=log_target)(_t(logq), _t(target))
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.where(p > 0, p * (np.log(p) - logq), 0.0)
    ref = {"sum": ref.sum(), "none": ref, "batchmean": ref.sum() / 3}[reduction]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)


def test_kl_div_mean_warns_and_gradcheck():
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss"):
        F.kl_div(torch.zeros(2, 2), torch.full((2, 2), 0.5), reduction="mean")
    rng = np.random.default_rng(14)
    logq = _t(_log_softmax(rng.standard_normal((2, 3))), True)
    p = _t(rng.dirichlet(np.ones(3), size=2), True)
    assert gradcheck(lambda a, b: F.kl_div(a, b, reduction="batchmean"), (logq, p))


# ---- other losses -------------------------------------------------------------------

def test_margin_and_misc_losses():
    x1, x2 = _pair((4,), seed=15)
    y = np.array([1.0, -1.0, 1.0, -1.0])
    out = nn.MarginRankingLoss(margin=0.1)(_t(x1), _t(x2), _t(y))
    np.testing.assert_allclose(out.numpy(), np.maximum(0, -y * (x1 - x2) + 0.1).mean())
    out = nn.SoftMarginLoss()(_t(x1), _t(y))
    np.testing.assert_allclose(out.numpy(), np.log1p(np.exp(-y * x1)).mean())
    out = nn.HingeEmbeddingLoss()(_t(x1), _t(y))
    np.testing.assert_allclose(out.numpy(), np.where(y == 1, x1, np.maximum(0, 1 - x1)).mean())
    out = nn.PoissonNLLLoss()(_t(x1), _t(np.abs(x2)))
    np.testing.assert_allclose(out.numpy(), (np.exp(x1) - np.abs(x2) * x1).mean())
    var = np.abs(x2) + 0.1
    out = nn.GaussianNLLLoss()(_t(x1), _t(y), _t(var))
    np.testing.assert_allclose(out.numpy(), (0.5 * (np.log(var) + (x1 - y) ** 2 / var)).mean())


def test_loss_reprs():
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert repr(nn.MSELoss(reduction="sum")) == "MSELoss()"
    assert nn.CrossEntropyLoss(weight=torch.ones(3)).weight.shape == (3,)
    assert "weight" in nn.CrossEntropyLoss(weight=torch.ones(3)).state_dict()


# ---- comparison with PyTorch ------------------------------------------------------

def test_losses_match_pytorch():
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(16)
    x = rng.standard_normal((4, 5))
    t = np.array([1, 0, 4, 2])
    p = rng.uniform(0.1, 0.9, (4, 5))
    pairs = [
        (lambda lib, a, b: lib.nn.CrossEntropyLoss(label_smoothing=0.1)(a, b), x, t),
        (lambda lib, a, b: lib.nn.BCEWithLogitsLoss()(a, b), x, p),
        (lambda lib, a, b: lib.nn.BCELoss()(a, b), p, np.round(p)),
        (lambda lib, a, b: lib.nn.SmoothL1Loss(beta=0.3)(a, b), x, p),
        (lambda lib, a, b: lib.nn.KLDivLoss(reduction="batchmean")(a, b),
         _log_softmax(x), p / p.sum(1, keepdims=True)),
    ]
    for fn, a, b in pairs:
        ours = fn(torch, torch.tensor(a), torch.tensor(b)).item()
        theirs = fn(real, real.tensor(a), real.tensor(b)).item()
        assert abs(ours - theirs) < 1e-10


LOSS_ERRORS = [
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.zeros(3, 5, dtype=L.int64)),
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.zeros(3)),
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.tensor([0, 5, 1])),
    lambda L: L.nn.functional.nll_loss(L.zeros(3, 5), L.tensor([0, -1, 1])),
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.tensor([0, 1])),
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.tensor([0, 1, 2]),
                                            weight=L.ones(3)),
    lambda L: L.nn.functional.cross_entropy(L.zeros(2, 3, 4), L.zeros(2, 3, dtype=L.int64)),
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.tensor([0, 1, 2]),
                                            label_smoothing=1.5),
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.zeros(3, 5), ignore_index=1),
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.zeros(3, 1, dtype=L.int64)),
    lambda L: L.nn.functional.cross_entropy(L.zeros(3, 5), L.zeros(3, dtype=L.int32)),
    lambda L: L.nn.functional.cross_entropy(L.zeros(()), L.tensor(1)),
    lambda L: L.nn.functional.binary_cross_entropy(L.full((2,), 0.5), L.zeros(2, 1)),
    lambda L: L.nn.functional.binary_cross_entropy(L.tensor([1.5]), L.tensor([1.0])),
    lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.zeros(2), L.zeros(2, 1)),
    lambda L: L.nn.functional.mse_loss(L.zeros(3), L.zeros(3), reduction="avg"),
    lambda L: L.nn.functional.smooth_l1_loss(L.zeros(1), L.zeros(1), beta=-1.0),
    lambda L: L.nn.functional.huber_loss(L.zeros(1), L.zeros(1), delta=0.0),
    lambda L: L.nn.functional.kl_div(L.zeros(2), L.zeros(2), reduction="bad"),
]


def _error_of(fn, lib):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 - comparing whatever is raised
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", range(len(LOSS_ERRORS)))
def test_loss_errors_equal_pytorch(case):
    real = pytest.importorskip("torch")
    fn = LOSS_ERRORS[case]
    assert _error_of(fn, torch) == _error_of(fn, real)


def _both(fn, real, *arrays, grad=True):
    """Run fn on nbtorch and PyTorch copies of `arrays`; return values and input grads."""
    out = []
    for lib in (torch, real):
        ts = [lib.tensor(a, requires_grad=grad and np.asarray(a).dtype.kind == "f")
              for a in arrays]
        val = fn(lib, *ts)
        if grad:
            val.sum().backward() if val.dim() else val.backward()
        out.append((val.detach().numpy().copy(),
                    [t.grad.numpy().copy() for t in ts if t.grad is not None]))
    return out


LOSS_CASES = [
    ("ce", lambda L, a, b: L.nn.functional.cross_entropy(a, b, reduction="sum")),
    ("ce_w", lambda L, a, b: L.nn.CrossEntropyLoss(weight=L.tensor([1.0, 2.0, 0.5, 1.0, 3.0],
                                                                   dtype=L.float64),
                                                   ignore_index=2, label_smoothing=0.2)(a, b)),
    ("nll_none", lambda L, a, b: L.nn.functional.nll_loss(a, b, reduction="none",
                                                          ignore_index=0)),
]


@pytest.mark.parametrize("name,fn", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_class_losses_and_grads_equal_pytorch(name, fn):
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(20)
    x = rng.standard_normal((6, 5))
    t = np.array([0, 2, 4, 1, 2, 3])
    (v1, g1), (v2, g2) = _both(fn, real, x, t)
    np.testing.assert_allclose(v1, v2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g1[0], g2[0], rtol=1e-12, atol=1e-14)


PAIR_CASES = [
    ("bce", lambda L, a, b: L.nn.BCELoss(reduction="none")(a, b), "prob"),
    ("bce_logits_pw", lambda L, a, b: L.nn.BCEWithLogitsLoss(
        pos_weight=L.tensor([0.5, 1.0, 2.0, 3.0], dtype=L.float64))(a, b), "prob"),
    ("ce_soft", lambda L, a, b: L.nn.CrossEntropyLoss(label_smoothing=0.1)(a, b), "dist"),
    ("kl", lambda L, a, b: L.nn.KLDivLoss(reduction="batchmean")(a.log_softmax(1), b),
     "dist"),
    ("kl_log", lambda L, a, b: L.nn.KLDivLoss(reduction="sum", log_target=True)(
        a.log_softmax(1), b.log()), "dist"),
    ("huber", lambda L, a, b: L.nn.HuberLoss(delta=0.3)(a, b), "normal"),
    ("smooth_l1", lambda L, a, b: L.nn.SmoothL1Loss(beta=0.4, reduction="sum")(a, b),
     "normal"),
    ("l1", lambda L, a, b: L.nn.L1Loss()(a, b), "normal"),
    ("mse", lambda L, a, b: L.nn.MSELoss(reduction="none")(a, b), "normal"),
]


@pytest.mark.parametrize("name,fn,kind", PAIR_CASES, ids=[c[0] for c in PAIR_CASES])
def test_pair_losses_and_grads_equal_pytorch(name, fn, kind):
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(21)
    a = rng.standard_normal((3, 4))
    b = {"prob": rng.uniform(0.05, 0.95, (3, 4)),
         "dist": rng.dirichlet(np.ones(4), size=3),
         "normal": rng.standard_normal((3, 4))}[kind]
    if name == "bce":
        a = rng.uniform(0.05, 0.95, (3, 4))
    (v1, g1), (v2, g2) = _both(fn, real, a, b)
    np.testing.assert_allclose(v1, v2, rtol=1e-10, atol=1e-12)
    for x, y in zip(g1, g2):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def test_triplet_and_multilabel_and_multimargin_match_numpy():
    rng = np.random.default_rng(30)
    a, p, n = (rng.standard_normal((5, 4)) for _ in range(3))
    d = lambda u, v: np.sqrt(((u - v + 1e-6) ** 2).sum(1))  # noqa: E731
    out = nn.TripletMarginLoss(margin=0.5)(_t(a), _t(p), _t(n))
    np.testing.assert_allclose(out.numpy(), np.maximum(d(a, p) - d(a, n) + 0.5, 0).mean())
    y = (rng.uniform(size=(5, 4)) > 0.5).astype(np.float64)
    out = nn.MultiLabelSoftMarginLoss()(_t(a), _t(y))
    s = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(out.numpy(),
                               (-(y * np.log(s) + (1 - y) * np.log(1 - s))).mean(1).mean())
    t = np.array([0, 3, 1, 2, 3])
    out = nn.MultiMarginLoss(reduction="none")(_t(a), torch.tensor(t))
    m = np.maximum(0, 1 - a[np.arange(5), t][:, None] + a)
    m[np.arange(5), t] = 0
    np.testing.assert_allclose(out.numpy(), m.sum(1) / 4)
    assert gradcheck(lambda x: F.multi_margin_loss(x, torch.tensor(t), p=2),
                     (_t(a, True),))
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0.0)


EXTRA_LOSSES = [
    ("triplet_swap", lambda L, a, b, c: L.nn.TripletMarginLoss(margin=0.5, swap=True)(a, b, c)),
    ("triplet_p1", lambda L, a, b, c: L.nn.TripletMarginLoss(p=1.0, reduction="sum")(a, b, c)),
    ("multilabel_w", lambda L, a, b, c: L.nn.MultiLabelSoftMarginLoss(
        weight=L.tensor([1.0, 2.0, 0.5, 1.0], dtype=L.float64))(a, (b > 0).to(a.dtype))),
    ("multimargin_w", lambda L, a, b, c: L.nn.MultiMarginLoss(
        margin=0.7, weight=L.tensor([1.0, 2.0, 0.5, 1.0], dtype=L.float64))(
            a, L.tensor([0, 3, 1, 2, 3]))),
    ("cosine_embedding", lambda L, a, b, c: L.nn.CosineEmbeddingLoss(margin=0.2)(
        a, b, L.tensor([1.0, -1.0, 1.0, -1.0, -1.0], dtype=L.float64))),
    ("margin_ranking", lambda L, a, b, c: L.nn.MarginRankingLoss(margin=0.1)(
        a[:, 0], b[:, 0], c[:, 0].sign())),
    ("poisson_full", lambda L, a, b, c: L.nn.PoissonNLLLoss(full=True)(a, b.abs() * 3)),
    ("gaussian", lambda L, a, b, c: L.nn.GaussianNLLLoss()(a, b, c.abs() + 0.1)),
    ("soft_margin", lambda L, a, b, c: L.nn.SoftMarginLoss()(a, b.detach().sign())),
]


@pytest.mark.parametrize("name,fn", EXTRA_LOSSES, ids=[c[0] for c in EXTRA_LOSSES])
def test_extra_losses_equal_pytorch(name, fn):
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(31)
    arrays = [rng.standard_normal((5, 4)) for _ in range(3)]
    results = []
    for lib in (torch, real):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *ts)
        out.backward()
        results.append([out.detach().numpy()] + [t.grad.numpy() if t.grad is not None
                                                 else np.zeros(0) for t in ts])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_cross_entropy_double_backward():
    from nbtorch.autograd import gradgradcheck
    x, _ = _pair((3, 4), seed=40)
    t = torch.tensor([0, 3, 1])
    w = _t([1.0, 2.0, 0.5, 1.5])
    for kw in ({}, {"weight": w}, {"reduction": "none"}, {"reduction": "sum"}):
        assert gradgradcheck(lambda a: F.cross_entropy(a, t, **kw), (_t(x, True),))


def test_cross_entropy_all_targets_ignored_is_nan_like_pytorch():
    out = F.cross_entropy(torch.zeros(2, 3), torch.tensor([-100, -100]))
    assert np.isnan(out.item())
    assert F.cross_entropy(torch.zeros(2, 3), torch.tensor([-100, -100]),
                           reduction="sum").item() == 0.0


def test_a_fully_ignored_batch_has_a_nan_loss_and_zero_gradients():
    """PyTorch's 0 / 0: the loss is nan, the gradients 0 (they were nan: a padded batch
    corrupted the weights after one step)."""
    x0 = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    ignored = torch.tensor([-100, -100])
    for fn in (lambda x: F.cross_entropy(x, ignored),
               lambda x: F.cross_entropy(x, ignored, label_smoothing=0.1),
               lambda x: F.nll_loss(x, ignored, weight=torch.arange(1.0, 6.0))):
        x = torch.tensor(x0, requires_grad=True)
        loss = fn(x)
        loss.backward()
        assert np.isnan(loss.item()) and np.all(x.grad.numpy() == 0)
    c = torch.compile(lambda x, t: F.cross_entropy(x, t))
    x = torch.tensor(x0, requires_grad=True)
    c(x, torch.tensor([1, 2]))
    x.grad = None
    c(x, ignored).backward()                            # the graph's denominator is a tensor
    assert np.all(x.grad.numpy() == 0)


def test_cross_entropy_of_an_empty_batch_is_nan():
    x = torch.zeros(0, 4, requires_grad=True)
    loss = F.cross_entropy(x, torch.zeros(0, dtype=torch.int64))  # ZeroDivisionError before
    assert np.isnan(loss.item())
    loss.backward()
    assert x.grad.shape == (0, 4)


def test_gaussian_nll_passes_the_gradient_through_the_variance_clamp():
    var = torch.tensor([1e-8, 0.5], requires_grad=True)       # below eps: was a 0 gradient
    nn.GaussianNLLLoss()(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 1.0]), var).backward()
    np.testing.assert_allclose(var.grad.numpy(), [-2.4999975e11, -0.5], rtol=1e-5)
