"""nbtorch.masked (torch.masked's reductions and normalizations) against PyTorch:
values, dtypes and shapes with partly and fully masked rows, and gradients."""
import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")   # PyTorch: prototype API

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.5, -1.0, 2.0]])
M = np.array([[True, False, True], [False, False, False], [True, True, True]])

CALLS = {
    "sum": lambda m, x, k: m.sum(x, 1, mask=k),
    "sum all": lambda m, x, k: m.sum(x, mask=k),
    "sum keepdim": lambda m, x, k: m.sum(x, (0, 1), keepdim=True, mask=k),
    "sum int": lambda m, x, k: m.sum(x.long(), 1, mask=k),
    "prod": lambda m, x, k: m.prod(x, 1, mask=k),
    "amax": lambda m, x, k: m.amax(x, 1, mask=k),
    "amax int": lambda m, x, k: m.amax(x.long(), 1, mask=k),
    "amin": lambda m, x, k: m.amin(x, 0, mask=k),
    "argmax": lambda m, x, k: m.argmax(x, 1, mask=k),
    "argmin": lambda m, x, k: m.argmin(x, 1, mask=k),
    "mean": lambda m, x, k: m.mean(x, 1, mask=k),
    "mean all": lambda m, x, k: m.mean(x, mask=k),
    "mean no mask": lambda m, x, k: m.mean(x, 1),
    "median": lambda m, x, k: m.median(x, 1, mask=k),
    "logsumexp": lambda m, x, k: m.logsumexp(x, 1, mask=k),
    "norm": lambda m, x, k: m.norm(x, 2.0, 1, mask=k),
    "norm 1": lambda m, x, k: m.norm(x, 1.0, 0, mask=k),
    "var": lambda m, x, k: m.var(x, 1, mask=k),
    "var biased": lambda m, x, k: m.var(x, 1, False, mask=k),
    "std": lambda m, x, k: m.std(x, 1, keepdim=True, mask=k),
    "softmax": lambda m, x, k: m.softmax(x, 1, mask=k),
    "log_softmax": lambda m, x, k: m.log_softmax(x, 1, mask=k),
    "softmin": lambda m, x, k: m.softmin(x, 0, mask=k),
    "normalize": lambda m, x, k: m.normalize(x, 2.0, 1, mask=k),
    "cumsum": lambda m, x, k: m.cumsum(x, 1, mask=k),
    "cumprod": lambda m, x, k: m.cumprod(x, 1, mask=k),
    "logaddexp": lambda m, x, k: m.logaddexp(x, x * 2, input_mask=k, other_mask=~k),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_matches_pytorch(name):
    t = CALLS[name](torch.masked, torch.tensor(X), torch.tensor(M))
    n = CALLS[name](nbtorch.masked, nbtorch.tensor(X), nbtorch.tensor(M))
    assert str(t.dtype) == str(n.dtype) and tuple(t.shape) == tuple(n.shape)
    assert np.allclose(t.numpy(), n.numpy(), equal_nan=True)


def test_gradients_reach_unmasked_elements():
    k = np.array([[True, False, True], [False, True, True]])
    grads = []
    for m in (torch, nbtorch):
        x = m.tensor(X[:2], requires_grad=True)
        mask = m.tensor(k)
        loss = m.masked.mean(x, 1, mask=mask).sum() + m.masked.softmax(x, 1, mask=mask)[:, 0].sum()
        loss.backward()
        grads.append(x.grad.numpy())
    assert np.allclose(*grads) and grads[1][0, 1] == 0.0
