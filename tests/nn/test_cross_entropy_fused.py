"""cross_entropy's fused CPU path (nbtorch/ops/cross_entropy.py): the same values and
gradients as the composed path (within float32 rounding), PyTorch's errors, and the
cases it leaves to the composed path."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck, gradgradcheck


def _logits(shape, dtype=torch.float32, seed=0, scale=5.0):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.standard_normal(shape) * scale, dtype=dtype, requires_grad=True)


def _composed(x, y, reduction):
    """The composed path's value and gradient (class weights of one take it)."""
    x2 = x.detach().clone().requires_grad_()
    loss = F.cross_entropy(x2, y, weight=torch.ones(x.shape[1], dtype=x.dtype),
                           reduction=reduction)
    loss.backward()
    return loss, x2.grad


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_matches_the_composed_path(dtype, tol, reduction):
    x = _logits((64, 10), dtype)
    y = torch.tensor(np.random.default_rng(1).integers(0, 10, 64))
    loss = F.cross_entropy(x, y, reduction=reduction)
    assert type(loss.grad_fn).__name__ == "NllLossBackward0"
    loss.backward()
    ref, ref_grad = _composed(x, y, reduction)
    assert loss.dtype is dtype and loss.shape == ()
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=tol)
    np.testing.assert_allclose(x.grad.numpy(), ref_grad.numpy(), rtol=tol, atol=tol)


def test_matches_pytorch():
    T = pytest.importorskip("torch")
    x = _logits((128, 10), seed=2)
    y = np.random.default_rng(3).integers(0, 10, 128)
    loss = F.cross_entropy(x, torch.tensor(y))
    loss.backward()
    xt = T.tensor(x.detach().numpy(), requires_grad=True)
    ref = T.nn.functional.cross_entropy(xt, T.tensor(y))
    ref.backward()
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_first_and_second_derivatives():
    x = _logits((5, 4), torch.float64, scale=1.0)
    y = torch.tensor([0, 3, 1, 1, 2])
    assert gradcheck(lambda x: F.cross_entropy(x, y), (x,))
    assert gradgradcheck(lambda x: F.cross_entropy(x, y, reduction="sum"), (x,))


def test_errors_and_fallbacks():
    x = _logits((5, 4))
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.cross_entropy(x, torch.tensor([0, 1, 2, 3, 4]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        F.cross_entropy(x, torch.tensor([0, 1, -1, 3, 2]))
    y = torch.tensor([0, -100, 2, 3, 1])                    # ignored target: composed path
    loss, _ = _composed(x, y, "mean")
    np.testing.assert_allclose(F.cross_entropy(x, y).item(), loss.item(), rtol=1e-6)
    y8 = torch.tensor([0, 1, 2, 3, 1], dtype=torch.uint8)  # uint8 targets: composed path
    assert F.cross_entropy(x, y8).shape == ()
    nan = x.detach().clone()
    nan[1, 2] = float("nan")
    assert np.isnan(F.cross_entropy(nan, torch.tensor([0, 1, 2, 3, 1])).item())


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_large_batches_split_over_threads_give_the_serial_values(dtype, tol, monkeypatch):
    from nbtorch.ops import cross_entropy as ce
    x = _logits((300, 257), dtype, scale=3.0)       # 77,100 logits: the split path
    y = torch.tensor(np.random.default_rng(2).integers(0, 257, 300))
    results = []
    for chunks in (None, 1):
        if chunks is not None:
            monkeypatch.setattr(ce, "_row_chunks", lambda a: chunks)
        x.grad = None
        loss = F.cross_entropy(x, y)
        loss.backward()
        results.append((loss.item(), x.grad.numpy().copy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])
    ref, ref_grad = _composed(x, y, "mean")
    np.testing.assert_allclose(results[0][0], ref.item(), rtol=tol)
    np.testing.assert_allclose(results[0][1], ref_grad.numpy(), rtol=tol, atol=tol)
    x2 = x.detach().clone()
    x2[7, 3] = float("nan")                          # a NaN row: its loss is NaN
    assert np.isnan(F.cross_entropy(x2, y).item())
