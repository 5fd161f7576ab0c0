"""The fused CPU losses (nbtorch/ops/loss_fused.py, kernels/cpu/losses.py): the values and
gradients of the composed path they replace (within rounding) and of PyTorch, higher
derivatives, PyTorch's node names and errors, and the cases left to the composed path."""
import warnings

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck, gradgradcheck
from nbtorch.nn.functional import loss as loss_module, loss_pointwise
from nbtorch.ops.loss_fused import _FusedNll, _PointwiseLoss

TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-11, atol=1e-13)}
REDUCTIONS = ["none", "mean", "sum"]


def _fused(out):
    node = out.grad_fn
    return node is not None and issubclass(node._forward_cls, (_PointwiseLoss, _FusedNll))


@pytest.fixture
def composed(monkeypatch):
    """A context in which the losses take their composed path."""
    class Composed:
        def __enter__(self):
            monkeypatch.setattr(loss_pointwise, "fused_pointwise", lambda *a, **k: None)
            monkeypatch.setattr(loss_module, "fused_nll_loss", lambda *a, **k: None)

        def __exit__(self, *exc):
            monkeypatch.undo()
    return Composed()


def _data(dtype, shape=(6, 7), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    y = rng.standard_normal(shape)
    p = 1 / (1 + np.exp(-x))
    q = rng.random(shape)
    w = rng.random(shape) + 0.1
    wc = rng.random(shape[-1]) + 0.1
    lp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    pr = np.exp(y) / np.exp(y).sum(-1, keepdims=True)
    return {k: v.astype(dtype) for k, v in dict(x=x, y=y, p=p, q=q, w=w, wc=wc, lp=lp,
                                                   pr=pr, lpr=np.log(pr)).items()}


# (name, function of (F, tensors dict, reduction), input key, target key, target grad)
CASES = [
    ("mse", lambda F, d, r: F.mse_loss(d["x"], d["y"], reduction=r), "x", "y", True),
    ("mse_w", lambda F, d, r: F.mse_loss(d["x"], d["y"], reduction=r, weight=d["w"]),
     "x", "y", True),
    ("l1", lambda F, d, r: F.l1_loss(d["x"], d["y"], reduction=r), "x", "y", True),
    ("l1_w", lambda F, d, r: F.l1_loss(d["x"], d["y"], reduction=r, weight=d["w"]),
     "x", "y", True),
    ("smooth_l1", lambda F, d, r: F.smooth_l1_loss(d["x"], d["y"], reduction=r, beta=0.7),
     "x", "y", True),
    ("smooth_l1_beta0", lambda F, d, r: F.smooth_l1_loss(d["x"], d["y"], reduction=r,
                                                          beta=0.0), "x", "y", True),
    ("huber", lambda F, d, r: F.huber_loss(d["x"], d["y"], reduction=r, delta=0.6),
     "x", "y", True),
    ("huber_w", lambda F, d, r: F.huber_loss(d["x"], d["y"], reduction=r, delta=0.6,
                                             weight=d["w"]), "x", "y", True),
    ("bce", lambda F, d, r: F.binary_cross_entropy(d["p"], d["q"], reduction=r), "p", "q",
     False),
    ("bce_w", lambda F, d, r: F.binary_cross_entropy(d["p"], d["q"], d["wc"], reduction=r),
     "p", "q", False),
    ("bce_logits", lambda F, d, r: F.binary_cross_entropy_with_logits(
        d["x"] * 5, d["q"], reduction=r), "x", "q", False),
    ("bce_logits_w_pw", lambda F, d, r: F.binary_cross_entropy_with_logits(
        d["x"] * 5, d["q"], d["w"], reduction=r, pos_weight=d["wc"] * 3), "x", "q", False),
    ("bce_logits_pw", lambda F, d, r: F.binary_cross_entropy_with_logits(
        d["x"], d["q"], reduction=r, pos_weight=d["wc"]), "x", "q", False),
    ("kl", lambda F, d, r: F.kl_div(d["lp"], d["pr"], reduction=r), "lp", "pr", False),
    ("kl_log", lambda F, d, r: F.kl_div(d["lp"], d["lpr"], reduction=r, log_target=True),
     "lp", "lpr", False),
]
CASE_IDS = [c[0] for c in CASES]


def _run(lib, fn, arrays, reduction, inp, tgt, target_grad, seed=3):
    """(loss, input grad, target grad or None, node name) of `fn`, backward from a random
    upstream gradient ('none') or the loss itself."""
    d = {k: lib.tensor(v, requires_grad=(k == inp) or (target_grad and k == tgt))
         for k, v in arrays.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(lib.nn.functional, d, reduction)
    if out.dim():
        g = np.random.default_rng(seed).standard_normal(tuple(out.shape)).astype(
            arrays[inp].dtype)
        (out * lib.tensor(g)).sum().backward()
    else:
        out.backward()
    gt = d[tgt].grad.numpy() if target_grad else None
    return out.detach().numpy(), d[inp].grad.numpy(), gt, type(out.grad_fn).__name__


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, fn, inp, tgt, target_grad", CASES, ids=CASE_IDS)
def test_matches_the_composed_path(name, fn, inp, tgt, target_grad, reduction, dtype,
                                   composed):
    arrays = _data(dtype)
    fused = _run(torch, fn, arrays, reduction, inp, tgt, target_grad)
    with composed:
        ref = _run(torch, fn, arrays, reduction, inp, tgt, target_grad)
    for a, b in zip(fused[:3], ref[:3]):
        if b is not None:
            np.testing.assert_allclose(a, b, **TOL[dtype])
    d = {k: torch.tensor(v, requires_grad=k == inp) for k, v in arrays.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _fused(fn(F, d, reduction))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, fn, inp, tgt, target_grad", CASES, ids=CASE_IDS)
def test_matches_pytorch(name, fn, inp, tgt, target_grad, reduction, dtype):
    T = pytest.importorskip("torch")
    arrays = _data(dtype, seed=1)
    ours = _run(torch, fn, arrays, reduction, inp, tgt, target_grad)
    theirs = _run(T, fn, arrays, reduction, inp, tgt, target_grad)
    for a, b in zip(ours[:3], theirs[:3]):
        if b is not None:
            np.testing.assert_allclose(a, b, **TOL[dtype])
    assert ours[3] == theirs[3]                      # PyTorch's node names


def test_kl_div_batchmean_matches_pytorch():
    T = pytest.importorskip("torch")
    arrays = _data("float32", (5, 9))
    for log_target in (False, True):
        fn = (lambda F, d, r: F.kl_div(d["lp"], d["lpr" if log_target else "pr"],
                                       reduction=r, log_target=log_target))
        tgt = "lpr" if log_target else "pr"
        ours = _run(torch, fn, arrays, "batchmean", "lp", tgt, False)
        theirs = _run(T, fn, arrays, "batchmean", "lp", tgt, False)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-8)
        assert ours[3] == theirs[3] == "DivBackward0"


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("name, fn, inp, tgt, target_grad", CASES, ids=CASE_IDS)
def test_first_and_second_derivatives(name, fn, inp, tgt, target_grad):
    arrays = _data("float64", (3, 4), seed=2)
    if name.startswith("bce") and "logits" not in name:
        arrays["p"] = np.clip(arrays["p"], 0.1, 0.9)     # away from the clamps
    if name in ("l1", "l1_w", "smooth_l1_beta0"):
        arrays["y"] = arrays["x"] + np.where(arrays["y"] > 0, 0.5, -0.5)   # away from kinks
    fixed = {k: torch.tensor(v) for k, v in arrays.items()}

    def f(a, b=None):
        d = dict(fixed, **{inp: a})
        if b is not None:
            d[tgt] = b
        return fn(F, d, "sum")
    a = torch.tensor(arrays[inp], requires_grad=True)
    assert _fused(f(a))
    args = (a, torch.tensor(arrays[tgt], requires_grad=True)) if target_grad else (a,)
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)
    if name == "bce":
        return                            # the mean of 'none' below holds nothing new
    assert gradgradcheck(lambda a: fn(F, dict(fixed, **{inp: a}), "mean"), (a,))
    assert gradcheck(lambda a: fn(F, dict(fixed, **{inp: a}), "none"), (a,))


def test_create_graph_gives_the_composed_second_derivative(composed):
    x0 = np.random.default_rng(4).standard_normal((4, 5))
    y = torch.tensor(np.random.default_rng(5).standard_normal((4, 5)))

    def hessian_vector(path):
        x = torch.tensor(x0, requires_grad=True)
        g, = torch.autograd.grad(F.smooth_l1_loss(x, y, beta=0.8), x, create_graph=True)
        (g * g).sum().backward()
        return g.detach().numpy(), x.grad.numpy()
    fused = hessian_vector("fused")
    with composed:
        ref = hessian_vector("composed")
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("upstream", ["sum", "contiguous", "strided", "scalar"])
def test_none_reduction_takes_every_kind_of_upstream_gradient(upstream):
    rng = np.random.default_rng(6)
    x = torch.tensor(rng.standard_normal((8, 6)), dtype=torch.float32, requires_grad=True)
    y = torch.tensor(rng.standard_normal((8, 6)), dtype=torch.float32)
    out = F.smooth_l1_loss(x, y, reduction="none", beta=0.5)
    assert _fused(out)
    g = rng.standard_normal((8, 6)).astype(np.float32)
    if upstream == "sum":
        out.sum().backward()
        g = np.ones_like(g)
    elif upstream == "contiguous":
        out.backward(torch.tensor(g))
    elif upstream == "strided":
        out.backward(torch.tensor(g.T.copy()).t())
    else:
        out.backward(torch.tensor(2.5).expand(8, 6))
        g = np.full_like(g, 2.5)
    d = (x.detach() - y).numpy()
    ref = np.where(np.abs(d) < 0.5, d / 0.5, np.sign(d)) * g
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6, atol=1e-7)


def test_large_inputs_reduce_over_many_blocks():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(5000).astype(np.float32)        # blocks of 1024 and a tail
    y = rng.standard_normal(5000).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    loss = F.mse_loss(xt, torch.tensor(y), reduction="sum")
    loss.backward()
    ref = ((x.astype(np.float64) - y) ** 2).sum()
    np.testing.assert_allclose(loss.item(), ref, rtol=1e-6)
    np.testing.assert_allclose(xt.grad.numpy(), 2 * (x - y), rtol=1e-6)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(8)
    a = torch.tensor(rng.standard_normal((5, 7)), requires_grad=True)
    x, y = a.t(), torch.tensor(rng.standard_normal((7, 5)))
    loss = F.huber_loss(x, y, delta=0.5)             # reduced: fused, from a copy
    assert _fused(loss)
    loss.backward()
    d = (x.detach() - y).numpy()
    ref = np.where(np.abs(d) < 0.5, d, 0.5 * np.sign(d)) / d.size
    np.testing.assert_allclose(a.grad.numpy(), ref.T, rtol=1e-12)
    out = F.huber_loss(x, y, reduction="none", delta=0.5)   # 'none': composed (layout)
    assert not _fused(out)
    np.testing.assert_allclose(out.detach().numpy(),
                               np.where(np.abs(d) < 0.5, 0.5 * d * d, 0.5 * (np.abs(d) - 0.25)),
                               rtol=1e-12)


def test_cases_left_to_the_composed_path():
    x = torch.randn(4, 3, requires_grad=True)
    with pytest.warns(UserWarning, match="Using a target size"):
        out = F.mse_loss(x, torch.randn(3))                  # broadcast target
    assert not _fused(out) and out.shape == ()
    assert not _fused(F.l1_loss(x, torch.randn(4, 3, dtype=torch.float64)))  # mixed dtypes
    assert not _fused(F.mse_loss(x.half(), torch.randn(4, 3).half()))         # half
    assert not _fused(F.mse_loss(torch.randn(0, 3, requires_grad=True), torch.randn(0, 3)))
    q = torch.rand(4, 3, requires_grad=True)                # bce target grad: composed
    out = F.binary_cross_entropy_with_logits(x, q)
    assert not _fused(out)
    out.backward()
    assert q.grad is not None and x.grad is not None
    pw = torch.rand(3, requires_grad=True)                  # weights requiring grad
    out = F.binary_cross_entropy_with_logits(x, q.detach(), pos_weight=pw)
    assert not _fused(out)
    out.backward()
    assert pw.grad is not None
    with torch.no_grad():                                   # ...but not without grad mode
        assert F.binary_cross_entropy_with_logits(x, q, pos_weight=pw).grad_fn is None


def test_without_grad_and_for_target_only_gradients():
    rng = np.random.default_rng(9)
    x = torch.tensor(rng.standard_normal((3, 4)))
    y = torch.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    with torch.no_grad():
        v = F.mse_loss(x, y)
    assert v.grad_fn is None
    np.testing.assert_allclose(v.item(), ((x - y.detach()) ** 2).mean().item(), rtol=1e-14)
    loss = F.mse_loss(x, y)
    assert _fused(loss)
    loss.backward()
    np.testing.assert_allclose(y.grad.numpy(), -2 * (x - y.detach()).numpy() / 12,
                               rtol=1e-14)


def test_errors_match_pytorch():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([0.5, 1.5]), torch.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([0.5, float("nan")]), torch.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([0.5, 0.5]), torch.tensor([0.0, -1.0]))
    for fn in (F.mse_loss, F.l1_loss, F.huber_loss):
        with pytest.raises(ValueError, match="Weights and input must have the same size."):
            fn(torch.zeros(2, 3), torch.zeros(2, 3), weight=torch.ones(3))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.nll_loss(torch.zeros(3, 5), torch.tensor([0, 5, 1]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        F.nll_loss(torch.zeros(3, 5), torch.tensor([0, 1, -1]))


def test_errors_are_pytorchs():
    T = pytest.importorskip("torch")
    for lib in (torch, T):
        Fn = lib.nn.functional
        with pytest.raises(RuntimeError, match="all elements of target should be between"):
            Fn.binary_cross_entropy(lib.tensor([0.5, 0.5]), lib.tensor([0.0, -1.0]))
        with pytest.raises(ValueError, match="Weights and input must have the same size."):
            Fn.mse_loss(lib.zeros(2, 3), lib.zeros(2, 3), weight=lib.ones(3))
        with pytest.raises(IndexError, match="Target 5 is out of bounds."):
            Fn.nll_loss(lib.zeros(3, 5), lib.tensor([0, 5, 1]))


def test_a_target_modified_in_place_is_caught_at_backward():
    x = torch.randn(3, 4, requires_grad=True)
    y = torch.randn(3, 4)
    loss = F.mse_loss(x, y)
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_extreme_logits_stay_finite():
    x = torch.tensor([-200.0, -100.0, -30.0, 0.0, 30.0, 100.0, 200.0], requires_grad=True)
    t = torch.tensor([1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 0.0])
    out = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    expected = [200.0, 100.0, 0.0, np.log(2.0), 9.357623e-14, 100.0, 200.0]   # PyTorch's
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-6, atol=1e-30)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1, -1, 9.357623e-14, 0, 0, 1, 1],
                               atol=1e-7)
    p = torch.tensor([0.0, 1.0, 0.5], requires_grad=True)     # BCE's clamped logs
    out = F.binary_cross_entropy(p, torch.tensor([1.0, 0.0, 0.5]), reduction="none")
    np.testing.assert_allclose(out.detach().numpy(), [100.0, 100.0, np.log(2.0)], rtol=1e-6)
    out.sum().backward()
    assert np.isfinite(p.grad.numpy()).all()


# ---- nll_loss -------------------------------------------------------------------------

NLL_SHAPES = [((7, 5), (7,)), ((5,), ()), ((4, 5, 3), (4, 3)), ((4, 5, 3, 2), (4, 3, 2)),
              ((2, 5, 2, 2, 2), (2, 2, 2, 2))]


def _nll_case(dtype, shape, tshape, seed=0):
    rng = np.random.default_rng(seed)
    C = shape[0] if len(shape) == 1 else shape[1]
    x = rng.standard_normal(shape).astype(dtype)
    t = np.asarray(rng.integers(0, C, tshape))
    if t.ndim:
        t.reshape(-1)[::3] = -100
    return x, t, (rng.random(C) + 0.1).astype(dtype)


def _nll_run(lib, x, t, reduction, **kw):
    X = lib.tensor(x, requires_grad=True)
    kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    out = lib.nn.functional.nll_loss(X, lib.tensor(t), reduction=reduction, **kw)
    g = np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(x.dtype)
    (out * lib.tensor(g)).sum().backward()
    return out.detach().numpy(), X.grad.numpy(), type(out.grad_fn).__name__


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape, tshape", NLL_SHAPES, ids=str)
def test_nll_loss_matches_the_composed_path_and_pytorch(shape, tshape, reduction, dtype,
                                                       composed):
    x, t, w = _nll_case(dtype, shape, tshape)
    for kw in ({}, {"weight": w}, {"ignore_index": 1}):
        tk = np.where(t == -100, 1, t) if "ignore_index" in kw else t
        ours = _nll_run(torch, x, tk, reduction, **kw)
        with composed:
            ref = _nll_run(torch, x, tk, reduction, **kw)
        for a, b in zip(ours[:2], ref[:2]):
            np.testing.assert_allclose(a, b, **TOL[dtype])
        try:
            import torch as T
        except ImportError:
            continue
        theirs = _nll_run(T, x, tk, reduction, **kw)
        for a, b in zip(ours[:2], theirs[:2]):
            np.testing.assert_allclose(a, b, **TOL[dtype])
        assert ours[2] == theirs[2]


def test_nll_loss_derivatives_and_fully_ignored_batches():
    x, t, w = _nll_case("float64", (4, 5), (4,), seed=1)
    t[:] = [0, 3, -100, 2]
    xt = torch.tensor(x, requires_grad=True)
    assert _fused(F.nll_loss(xt, torch.tensor(t)))
    for kw in ({}, {"weight": torch.tensor(w)}, {"reduction": "none"}, {"reduction": "sum"}):
        assert gradcheck(lambda a: F.nll_loss(a, torch.tensor(t), **kw), (xt,))
        assert gradgradcheck(lambda a: F.nll_loss(a, torch.tensor(t), **kw), (xt,))
    ignored = torch.full((4,), -100, dtype=torch.int64)
    loss = F.nll_loss(xt, ignored)
    assert _fused(loss) and np.isnan(loss.item())
    loss.backward()
    assert (xt.grad.numpy() == 0).all()
    xt.grad = None
    assert F.nll_loss(xt, ignored, reduction="sum").item() == 0


def test_nll_loss_left_to_the_composed_path():
    x = torch.randn(3, 5, requires_grad=True)
    assert not _fused(F.nll_loss(x, torch.tensor([0, 1, 2], dtype=torch.uint8)))
    assert not _fused(F.nll_loss(x.double(), torch.tensor([0, 1, 2]), weight=torch.ones(5)))
    assert not _fused(F.nll_loss(x.half(), torch.tensor([0, 1, 2])))
    assert np.isnan(F.nll_loss(torch.randn(0, 5), torch.zeros(0, dtype=torch.int64)).item())
    xs = torch.randn(5, 3, requires_grad=True)             # a transposed input: fused, copied
    loss = F.nll_loss(xs.t(), torch.tensor([4, 0, 1]), reduction="sum")
    assert _fused(loss)
    loss.backward()
    expected = np.zeros((5, 3), np.float32)
    expected[[4, 0, 1], [0, 1, 2]] = -1
    np.testing.assert_array_equal(xs.grad.numpy(), expected)
