"""MaxUnpool1d/2d/3d, LPPool1d/2d/3d, FractionalMaxPool2d/3d: values against NumPy,
gradients by gradcheck, PyTorch's errors and values where importable."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck
from harness import assert_close, check_layer

F32 = (nbtorch.float32,)


def _np_pool_taps(x, k, s):
    """(N, C, *out, prod(k)) windows of x without padding."""
    nd = x.ndim - 2
    out = [(x.shape[2 + d] - k[d]) // s[d] + 1 for d in range(nd)]
    taps = []
    for tap in np.ndindex(*k):
        taps.append(x[(Ellipsis,) + tuple(slice(t, t + st * (o - 1) + 1, st)
                                          for t, st, o in zip(tap, s, out))])
    return np.stack(taps, -1)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_lp_pool_values_and_gradients(dims, device):
    shape = (2, 2) + (5, 4, 3)[:dims]
    k, s = (2,) * dims, (2, 1, 2)[:dims]
    make = lambda: getattr(nn, f"LPPool{dims}d")(3.0, k, s)   # noqa: E731
    ref = lambda m, x: (np.abs(_np_pool_taps(x.astype(np.float64), k, s)) ** 3).sum(-1) ** (1 / 3)
    check_layer(make, ref, shape, dtypes=F32, low=0.2, high=2.0, device=device)


def test_max_unpool_values_gradients_and_duplicates(device):
    rng = np.random.default_rng(0)
    for dims, shape in ((1, (2, 2, 7)), (2, (2, 2, 5, 4)), (3, (1, 2, 3, 4, 4))):
        x = nbtorch.tensor(rng.standard_normal(shape), device=device)
        out, idx = getattr(F, f"max_pool{dims}d")(x, 2, 1, return_indices=True)  # duplicates
        up = getattr(F, f"max_unpool{dims}d")(out, idx, 2, 1, output_size=shape[2:])
        want = np.zeros(shape).reshape(shape[0], shape[1], -1)
        np.put_along_axis(want, idx.cpu().numpy().reshape(shape[0], shape[1], -1),
                          out.cpu().numpy().reshape(shape[0], shape[1], -1), 2)
        assert_close(up, want.reshape(shape), nbtorch.float64)
        if device == "cpu":      # (distinct indices: with duplicates one value is kept)
            out, idx = getattr(F, f"max_pool{dims}d")(x, 2, return_indices=True)
            v = out.detach().requires_grad_()
            assert gradcheck(lambda v: getattr(F, f"max_unpool{dims}d")(v, idx, 2), (v,))
    m = nn.MaxUnpool2d(2).to(device)
    out, idx = nn.MaxPool2d(2, return_indices=True)(nbtorch.randn(1, 3, 4, 4, device=device))
    assert m(out, idx, output_size=(1, 3, 5, 5)).shape == (1, 3, 5, 5)
    assert m(out[0], idx[0]).shape == (3, 4, 4)


def _intervals(u, n_in, n_out, k, ftype):
    """PyTorch's generate_intervals in the input's float type."""
    seq = np.empty(n_out, np.int64)
    if n_out > 1:
        alpha = ftype(n_in - k) / ftype(n_out - 1)
        for i in range(n_out - 1):
            seq[i] = int(ftype(ftype(i) + u) * alpha) - int(ftype(u * alpha))
    seq[-1] = n_in - k
    return seq


def fractional_ref(x, k, size, samples):
    """Values and flat indices of fractional max pooling, window by window."""
    n, c = x.shape[:2]
    dims, spatial = len(k), x.shape[2:]
    order = (1, 0) if dims == 2 else (0, 1, 2)
    out, idx = np.empty((n, c) + size), np.empty((n, c) + size, np.int64)
    for b in range(n):
        for ch in range(c):
            seqs = [_intervals(samples[b, ch, order[d]], spatial[d], size[d], k[d], x.dtype.type)
                    for d in range(dims)]
            for cell in np.ndindex(*size):
                starts = [seqs[d][cell[d]] for d in range(dims)]
                win = x[(b, ch) + tuple(slice(s0, s0 + kk) for s0, kk in zip(starts, k))]
                j = np.unravel_index(np.argmax(win), win.shape)
                out[(b, ch) + cell] = win[j]
                idx[(b, ch) + cell] = np.ravel_multi_index(
                    tuple(s0 + jj for s0, jj in zip(starts, j)), spatial)
    return out, idx


@pytest.mark.parametrize("dims,shape,size", [(2, (2, 3, 9, 7), (4, 3)),
                                             (3, (1, 2, 6, 7, 5), (3, 4, 2))])
def test_fractional_max_pool_values_and_gradients(dims, shape, size, device):
    rng = np.random.default_rng(1)
    x = rng.permutation(np.prod(shape)).reshape(shape).astype(np.float32)   # no ties
    samples = rng.random((shape[0], shape[1], dims)).astype(np.float32)
    fn = getattr(F, f"fractional_max_pool{dims}d")
    out, idx = fn(nbtorch.tensor(x, device=device), 2, output_size=size, return_indices=True,
                  _random_samples=nbtorch.tensor(samples, device=device))
    want, want_idx = fractional_ref(x, (2,) * dims, size, samples)
    assert_close(out, want, nbtorch.float32)
    np.testing.assert_array_equal(idx.cpu().numpy(), want_idx)
    if device == "cpu":
        xt = nbtorch.tensor(x.astype(np.float64) / x.size, requires_grad=True)
        s64 = nbtorch.tensor(samples.astype(np.float64))
        assert gradcheck(lambda t: fn(t, 2, output_size=size, _random_samples=s64), (xt,))


def test_fractional_module_arguments():
    m = nn.FractionalMaxPool2d(3, output_ratio=0.5)
    assert m(nbtorch.randn(2, 3, 10, 9)).shape == (2, 3, 5, 4)
    assert m(nbtorch.randn(3, 10, 9)).shape == (3, 5, 4)
    with pytest.raises(ValueError, match="requires specifying either an output size"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool2d(2, 3, 0.5)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)


def _message(fn):
    try:
        fn()
    except Exception as e:           # noqa: BLE001 -- the error itself is what is compared
        return type(e).__name__, str(e)
    return None


def _pooled(L, F):
    x = L.tensor(np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4))
    return F.max_pool2d(x, 2, return_indices=True)


ERRORS = [
    lambda L, F: F.max_unpool2d(*_pooled(L, F), 2, output_size=(6, 5)),
    lambda L, F: F.max_unpool2d(*_pooled(L, F), 2, output_size=(5,)),
    lambda L, F: F.max_unpool2d(_pooled(L, F)[0], _pooled(L, F)[1][..., :1], 2),
    lambda L, F: F.max_unpool2d(_pooled(L, F)[0], _pooled(L, F)[1].float(), 2),
    lambda L, F: F.max_unpool2d(_pooled(L, F)[0], _pooled(L, F)[1] + 100, 2),
    lambda L, F: F.max_unpool2d(_pooled(L, F)[0][0, 0], _pooled(L, F)[1][0, 0], 2),
    lambda L, F: F.max_unpool3d(L.zeros(1, 1, 2, 2, 2), L.zeros(1, 1, 2, 2, 2).long() - 1, 2),
    lambda L, F: F.fractional_max_pool2d(L.zeros(1, 2, 4, 4), 2),
    lambda L, F: F.fractional_max_pool2d(L.zeros(1, 2, 4, 4), 2, output_size=4),
    lambda L, F: F.fractional_max_pool2d(L.zeros(1, 2, 4, 4), 2, output_size=2,
                                         _random_samples=L.zeros(1, 2, 3)),
    lambda L, F: F.fractional_max_pool2d(L.zeros(1, 2, 4, 4), 2, output_size=2,
                                         _random_samples=L.zeros(1, 3, 2)),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_pytorch(case):
    torch = pytest.importorskip("torch")
    want = _message(lambda: ERRORS[case](torch, torch.nn.functional))
    got = _message(lambda: ERRORS[case](nbtorch, F))
    assert want is not None and got == want


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 7, 6))
    o, i = tF.max_pool2d(torch.tensor(x), 3, 1, 1, return_indices=True)
    np.testing.assert_array_equal(
        F.max_unpool2d(nbtorch.tensor(o.numpy()), nbtorch.tensor(i.numpy()), 3, 1, 1).numpy(),
        tF.max_unpool2d(o, i, 3, 1, 1).numpy())
    for p in (1.0, 2, 3.5):
        np.testing.assert_allclose(F.lp_pool2d(nbtorch.tensor(x), p, (2, 3), 2, True).numpy(),
                                   tF.lp_pool2d(torch.tensor(x), p, (2, 3), 2, True).numpy(),
                                   atol=1e-12)
    s = torch.rand(2, 3, 2, dtype=torch.float64)
    a, ai = F.fractional_max_pool2d(nbtorch.tensor(x), (2, 3), output_ratio=(0.5, 0.5),
                                    return_indices=True, _random_samples=nbtorch.tensor(s.numpy()))
    b, bi = tF.fractional_max_pool2d(torch.tensor(x), (2, 3), output_ratio=(0.5, 0.5),
                                     return_indices=True, _random_samples=s)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(ai.numpy(), bi.numpy())
