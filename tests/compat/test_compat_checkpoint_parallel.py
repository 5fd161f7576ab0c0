"""utils.checkpoint (both variants), nn.DataParallel / DistributedDataParallel, and the
utils.data names (StackDataset, ChainDataset, default_convert, get_worker_info)."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch import nn
from nbtorch.utils.checkpoint import checkpoint, checkpoint_sequential


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _model():
    nbtorch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Dropout(0.5), nn.Linear(4, 2))


def _grads(m, x):
    return [p.grad.clone() for p in m.parameters()] + [x.grad.clone()]


def _zero(m, x):
    for p in m.parameters():
        p.grad = None
    x.grad = None


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_matches_plain_backward(reentrant):
    m = _model()
    x = nbtorch.randn(5, 3, requires_grad=True)
    state = nbtorch.get_rng_state()
    m(x).sum().backward()
    want = _grads(m, x)
    _zero(m, x)
    nbtorch.set_rng_state(state)              # the same dropout mask, recomputed the same
    y = checkpoint(m, x, use_reentrant=reentrant)
    assert y.requires_grad
    y.sum().backward()
    for a, b in zip(want, _grads(m, x)):
        close(a, b)
    _zero(m, x)
    nbtorch.set_rng_state(state)
    checkpoint_sequential(m, 2, x, use_reentrant=reentrant).sum().backward()
    for a, b in zip(want, _grads(m, x)):
        close(a, b)


def test_non_reentrant_serves_autograd_grad_and_kwargs():
    m = _model()
    x = nbtorch.randn(5, 3, requires_grad=True)
    state = nbtorch.get_rng_state()
    want = nbtorch.autograd.grad(m(x).sum(), list(m.parameters()) + [x])
    nbtorch.set_rng_state(state)
    got = nbtorch.autograd.grad(checkpoint(m, x, use_reentrant=False).sum(),
                                list(m.parameters()) + [x])
    for a, b in zip(want, got):
        close(a, b)
    # tensors inside containers and keyword arguments are inputs too
    w = nbtorch.randn(3, requires_grad=True)
    out = checkpoint(lambda d, scale=None: ((d["a"] * scale).sum(), d["a"].argmax()),
                     {"a": x}, scale=w, use_reentrant=False)
    assert out[1].dtype is nbtorch.int64
    gx, gw = nbtorch.autograd.grad(out[0], [x, w])
    close(gx, np.broadcast_to(w.detach().numpy(), (5, 3)))
    close(gw, x.detach().numpy().sum(0))


def test_reentrant_refusals_and_warnings():
    x = nbtorch.randn(3, requires_grad=True)
    y = checkpoint(lambda a: a.sin(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad()"):
        nbtorch.autograd.grad(y.sum(), x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: b"):
        checkpoint(lambda a, b=1: a, x, b=2, use_reentrant=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(lambda a: a.sin(), nbtorch.randn(3), use_reentrant=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        checkpoint(lambda a: a.sin(), x)
    with pytest.raises(ValueError, match="context_fn"):
        checkpoint(lambda a: a, x, use_reentrant=True, debug=True)
    with nbtorch.no_grad():
        assert not checkpoint(lambda a: a * 2, x, use_reentrant=False).requires_grad


def test_checkpoint_against_pytorch():
    torch = pytest.importorskip("torch")
    a = np.linspace(-1, 1, 6).reshape(2, 3)
    w = np.linspace(0.5, 1.5, 12).reshape(3, 4)
    res = []
    for lib in (torch, nbtorch):
        x = lib.tensor(a, requires_grad=True)
        W = lib.tensor(w, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = lib.utils.checkpoint.checkpoint(lambda x: (x @ W).tanh(), x,
                                                use_reentrant=False)
        (y ** 2).sum().backward()
        res.append((x.grad.detach().numpy(), W.grad.detach().numpy()))
    close(res[0][0], res[1][0], 1e-10)
    close(res[0][1], res[1][1], 1e-10)


def test_data_parallel_one_device_runs_the_module():
    m = nn.Linear(3, 2)
    dp = nn.DataParallel(m)
    assert dp.module is m and dp.device_ids == []
    x = nbtorch.randn(4, 3)
    close(dp(x).detach(), m(x).detach())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert nn.parallel.data_parallel(m, x).shape == (4, 2)
    with pytest.raises(ValueError, match="process group has not been initialized"):
        nn.parallel.DistributedDataParallel(m)      # PyTorch's error before init_process_group


def test_split_run_gather_sends_gradients_to_the_original():
    """The several-device path, on CPU "devices": chunks, replicas through
    functional_call, the gather; gradients must equal an unsplit run's."""
    from nbtorch.nn.parallel.data_parallel import _parallel_forward
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = nbtorch.randn(5, 3)
    m(x).pow(2).sum().backward()
    want = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    cpu = nbtorch.device("cpu")
    out = _parallel_forward(m, (x,), {}, [cpu, cpu, cpu], cpu, 0)
    assert out.shape == (5, 1)
    close(out.detach(), m(x).detach())
    out.pow(2).sum().backward()
    for a, p in zip(want, m.parameters()):
        close(a, p.grad)
    from nbtorch.nn.parallel import gather, scatter
    parts = scatter((x, {"k": x}, 3), [cpu, cpu], 0)
    assert len(parts) == 2 and parts[0][0].shape == (3, 3) and parts[1][1]["k"].shape == (2, 3)
    assert parts[1][2] == 3
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        assert gather([nbtorch.tensor(1.0), nbtorch.tensor(2.0)], cpu).tolist() == [1.0, 2.0]


def test_data_names():
    from nbtorch.utils.data import (ChainDataset, IterableDataset, StackDataset,
                                    default_convert, get_worker_info)
    s = StackDataset([1, 2], ["a", "b"])
    assert len(s) == 2 and s[1] == (2, "b") and s.__getitems__([0, 1]) == [(1, "a"), (2, "b")]
    assert StackDataset(x=[1, 2], y=[3, 4])[0] == {"x": 1, "y": 3}
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset([1], [1, 2])
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset([1], y=[1])

    class Count(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    assert list(ChainDataset([Count(2), Count(3)])) == [0, 1, 0, 1, 2]
    assert get_worker_info() is None
    conv = default_convert({"a": np.ones(2), "b": [np.zeros(1)]})
    assert isinstance(conv["a"], nbtorch.Tensor) and isinstance(conv["b"][0], nbtorch.Tensor)
