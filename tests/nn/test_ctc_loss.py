"""CTCLoss / F.ctc_loss: a brute-force NumPy reference (every alignment of tiny inputs),
PyTorch's values and gradients, gradcheck through log_softmax, errors, devices."""
import itertools

import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _ctc_brute(lp, target, blank=0):
    """-log of the summed probability of every path (T symbols) that collapses to target."""
    T, C = lp.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        out, prev = [], None
        for c in path:
            if c != prev and c != blank:
                out.append(c)
            prev = c
        if out == list(target):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


LP = _log_softmax(np.random.default_rng(0).standard_normal((5, 3, 4)))
TARGETS = np.array([[1, 2, 2], [3, 1, 0], [2, 2, 2]])
IL, TL = [5, 4, 5], [3, 2, 1]


def _t(a, requires_grad=False, device="cpu"):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad, device=device)


def test_ctc_loss_matches_every_alignment(device):
    lp = _t(LP, device=device)
    want = np.array([_ctc_brute(LP[:IL[n], n], TARGETS[n, :TL[n]]) for n in range(3)])
    got = F.ctc_loss(lp, _t(TARGETS, device=device), IL, TL, reduction="none")
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10)
    flat = np.concatenate([TARGETS[n, :TL[n]] for n in range(3)])
    got = F.ctc_loss(lp, _t(flat, device=device), _t(IL, device=device),
                     _t(TL, device=device), reduction="sum")
    np.testing.assert_allclose(got.item(), want.sum(), rtol=1e-10)
    got = F.ctc_loss(lp, _t(TARGETS, device=device), IL, TL)          # mean of loss / length
    np.testing.assert_allclose(got.item(), (want / np.array(TL)).mean(), rtol=1e-10)


def test_ctc_loss_blank_impossible_and_empty_targets():
    lp = _t(LP[:, :1])
    want = _ctc_brute(LP[:, 0], [1, 3], blank=2)
    np.testing.assert_allclose(F.ctc_loss(lp, _t([[1, 3]]), [5], [2], blank=2,
                                          reduction="none").numpy(), [want], rtol=1e-10)
    np.testing.assert_allclose(F.ctc_loss(lp, _t([[1]]), [5], [0], reduction="none").numpy(),
                               [_ctc_brute(LP[:, 0], [])], rtol=1e-10)
    impossible = F.ctc_loss(lp, _t([[1, 1, 1]]), [3], [3], reduction="none")   # needs 5 frames
    assert np.isinf(impossible.item())
    x = _t(LP[:, :1], True)
    loss = F.ctc_loss(x, _t([[1, 1, 1]]), [3], [3], zero_infinity=True)
    assert loss.item() == 0
    loss.backward()
    assert np.all(x.grad.numpy() == 0)


def test_ctc_loss_gradcheck_through_log_softmax():
    x = _t(np.random.default_rng(1).standard_normal((5, 3, 4)), True)
    tg = _t(TARGETS)
    for red in ("mean", "sum"):
        assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), tg, IL, TL, reduction=red), (x,))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_loss_against_torch(dtype):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal((7, 4, 5)).astype(dtype)
    tg = np.array([[1, 2, 3], [4, 4, 1], [2, 0, 0], [3, 3, 3]])
    il, tl = [7, 6, 7, 3], [3, 2, 1, 3]      # the last one is impossible (needs 5 frames)
    for red, zero in (("none", False), ("mean", True), ("sum", True), ("mean", False)):
        xo, xt = _t(x, True), torch.tensor(x, requires_grad=True)
        lo = nn.CTCLoss(reduction=red, zero_infinity=zero)(xo.log_softmax(2), _t(tg), _t(il),
                                                           _t(tl))
        lt = torch.nn.CTCLoss(reduction=red, zero_infinity=zero)(
            xt.log_softmax(2), torch.tensor(tg), torch.tensor(il), torch.tensor(tl))
        np.testing.assert_allclose(lo.detach().numpy(), lt.detach().numpy(), rtol=1e-5)
        assert lo.dtype == getattr(nbtorch, dtype)
        if np.isfinite(lt.detach().numpy()).all():
            lo.sum().backward()
            lt.sum().backward()
            np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    # the gradient with respect to log_probs themselves is PyTorch's (exp(lp) - posterior)
    lp = _log_softmax(x.astype(np.float64))
    lo, lt = _t(lp, True), torch.tensor(lp, requires_grad=True)
    F.ctc_loss(lo, _t(tg), il, tl, zero_infinity=True).backward()
    torch.nn.functional.ctc_loss(lt, torch.tensor(tg), torch.tensor(il), torch.tensor(tl),
                                 zero_infinity=True).backward()
    np.testing.assert_allclose(lo.grad.numpy(), lt.grad.numpy(), rtol=1e-10, atol=1e-12)
    # unbatched
    lo = F.ctc_loss(_t(lp[:, 0]), _t(tg[0]), _t(7), _t(3), reduction="none")
    lt = torch.nn.functional.ctc_loss(torch.tensor(lp[:, 0]), torch.tensor(tg[0]),
                                      torch.tensor(7), torch.tensor(3), reduction="none")
    assert lo.shape == () and np.isclose(lo.item(), lt.item())
    assert repr(nn.CTCLoss(blank=3, zero_infinity=True)) == "CTCLoss()"


def test_ctc_loss_errors():
    lp = _t(LP)
    tg = _t(TARGETS)
    cases = [
        (lambda: F.ctc_loss(lp, tg, IL, TL, blank=4), RuntimeError, "blank must be in label "
                                                                      "range"),
        (lambda: F.ctc_loss(lp, tg, [6, 4, 5], TL), RuntimeError,
         "Expected input_lengths to have value at most 5, but got value 6"),
        (lambda: F.ctc_loss(lp, tg, IL, [4, 2, 1]), RuntimeError,
         "Expected tensor to have size at least 4 at dimension 1, but got size 3 for argument "
         "#2 'targets'"),
        (lambda: F.ctc_loss(lp, tg, [5], TL), RuntimeError,
         "input_lengths must be of size batch_size"),
        (lambda: F.ctc_loss(lp, tg, IL, [2, -1, 1]), RuntimeError,
         "Expected target_lengths to have value at least 0, but got value -1"),
        (lambda: F.ctc_loss(lp, tg, _t([5.0, 4.0, 5.0]), TL), RuntimeError,
         "input_lengths must be integral"),
        (lambda: F.ctc_loss(lp.long(), tg, IL, TL), NotImplementedError,
         "\"ctc_loss_cpu\" not implemented for 'Long'"),
        (lambda: F.ctc_loss(lp, tg, IL, TL, reduction="foo"), ValueError,
         "foo is not a valid value for reduction"),
        (lambda: F.ctc_loss(lp, tg.reshape(1, 3, 3), IL, TL), RuntimeError,
         "Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'"),
        (lambda: F.ctc_loss(lp, _t([1, 2, 3]), IL, TL), RuntimeError,
         "Expected tensor to have size 6 at dimension 0, but got size 3"),
        (lambda: F.ctc_loss(lp[:, :0], tg[:0], [], []), RuntimeError,
         "log_probs tensor must not be empty"),
        (lambda: F.ctc_loss(lp, _t([[1, 9, 1]] * 3), IL, TL), RuntimeError,
         r"target labels must lie in \[0, 4\), got 9"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


@pytest.mark.parametrize("lengths_as", ["tensors", "lists"])
def test_ctc_loss_compiles_whole_with_new_targets_each_call(lengths_as):
    """The loss node reads each call's targets and lengths itself (a capture replays it;
    they were made on the host outside it and the function ran eagerly): fullgraph compile
    of log_softmax + ctc_loss, new targets every call, the same loss and gradient."""
    def loss_fn(x, targets, il, tl):
        return F.ctc_loss(x.log_softmax(2), targets, il, tl, zero_infinity=True)

    fast = nbtorch.compile(loss_fn, fullgraph=True)
    rng = np.random.default_rng(3)
    il = [6, 5]
    for step in range(3):
        x = _t(rng.standard_normal((6, 2, 5)), True)
        x2 = x.detach().clone().requires_grad_()
        targets = _t(rng.integers(1, 5, (2, 3)))
        tl = [3, 2 + step % 2]
        if lengths_as == "tensors":
            il_arg, tl_arg = _t(il), _t(tl)
        else:
            il_arg, tl_arg = il, tl
        want = loss_fn(x, targets, il_arg, tl_arg)
        got = fast(x2, targets, il_arg, tl_arg)
        want.backward()
        got.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
        np.testing.assert_allclose(x2.grad.numpy(), x.grad.numpy(), rtol=1e-10, atol=1e-12)
