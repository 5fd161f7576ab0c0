"""Differences, integrals, searching, binning, quantiles, moments, distances, windows and
logcumsumexp (ops/calculus.py, searching.py, statistics.py, distance.py, windows.py,
scan.py) against NumPy, gradients by gradcheck; value tests run on each device."""
import numpy as np
import pytest

import nbtorch
from harness import check_grad
from harness import check_op as _check_op

F64 = (nbtorch.float64,)


def check_op(nb_fn, np_fn, *specs, layouts=("contiguous", "noncontig"), grad=True,
             device="cpu", **kw):
    _check_op(nb_fn, np_fn, *specs, layouts=layouts, grad=False, device=device, **kw)
    if grad:
        check_grad(nb_fn, *specs, layouts=("contiguous",), device=device)


def test_diff_gradient_trapezoid(device):
    check_op(lambda x: nbtorch.diff(x, 2, 0), lambda x: np.diff(x, 2, 0), (4, 3),
             device=device)
    check_op(lambda x, p: x.diff(dim=1, prepend=p), lambda x, p: np.diff(x, 1, 1, prepend=p),
             (3, 4), (3, 1), device=device)
    check_op(lambda x: nbtorch.gradient(x, spacing=0.5, dim=1, edge_order=2)[0],
             lambda x: np.gradient(x, 0.5, axis=1, edge_order=2), (3, 5), device=device)
    coords = np.array([0.0, 0.5, 1.5, 3.0, 3.2])

    def c(x):
        return nbtorch.tensor(coords, device=x.device)
    for order in (1, 2):
        check_op(lambda x: nbtorch.gradient(x, spacing=[c(x)], dim=0, edge_order=order)[0],
                 lambda x: np.gradient(x, coords, axis=0, edge_order=order), (5, 2),
                 dtypes=F64, device=device)
    check_op(lambda x: nbtorch.trapezoid(x, c(x)), lambda x: np.trapezoid(x, coords), (2, 5),
             device=device)
    check_op(lambda x: nbtorch.cumulative_trapezoid(x, dx=0.5, dim=0),
             lambda x: np.cumsum((x[1:] + x[:-1]) * 0.25, 0), (4, 2), device=device)


def test_logcumsumexp(device):
    check_op(lambda x: x.logcumsumexp(1), lambda x: np.logaddexp.accumulate(x, 1), (3, 5),
             device=device, low=-30, high=30)
    x = nbtorch.tensor([[0.0, -1000.0, 1000.0, -np.inf]], device=device)
    np.testing.assert_allclose(x.logcumsumexp(1).cpu().numpy(),
                               [[0.0, 0.0, 1000.0, 1000.0]])
    assert nbtorch.full((2,), -np.inf).logcumsumexp(0).tolist() == [-np.inf, -np.inf]
    with pytest.raises(NotImplementedError, match="logcumsumexp"):
        nbtorch.tensor([1, 2]).logcumsumexp(0)


def test_searchsorted_bucketize(device):
    rng = np.random.default_rng(0)
    seq = np.sort(rng.integers(0, 10, (3, 6)), axis=1).astype(np.float32)
    vals = rng.integers(-1, 12, (3, 4)).astype(np.float32)
    for right in (False, True):
        got = nbtorch.searchsorted(nbtorch.tensor(seq, device=device),
                                   nbtorch.tensor(vals, device=device), right=right)
        want = np.stack([np.searchsorted(s, v, "right" if right else "left")
                         for s, v in zip(seq, vals)])
        np.testing.assert_array_equal(got.cpu().numpy(), want)
        got = nbtorch.bucketize(nbtorch.tensor(vals, device=device),
                                nbtorch.tensor(seq[0], device=device), right=right,
                                out_int32=True)
        assert got.dtype is nbtorch.int32
        np.testing.assert_array_equal(got.cpu().numpy(),
                                      np.searchsorted(seq[0], vals, "right" if right else "left"))
    s = nbtorch.tensor([5.0, 1.0, 3.0], device=device)
    assert nbtorch.searchsorted(s, 2.0, sorter=s.argsort()).item() == 1
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        nbtorch.searchsorted(nbtorch.ones(2, 3), nbtorch.ones(3, 1))


def test_histogram_and_unique_consecutive(device):
    rng = np.random.default_rng(1)
    x = rng.normal(size=50)
    w = rng.uniform(size=50)
    t = nbtorch.tensor(x, device=device)
    for kw in ({"bins": 7}, {"bins": 4, "range": (-1.0, 1.0)}, {"bins": 5, "density": True}):
        hist, edges = nbtorch.histogram(t, weight=nbtorch.tensor(w, device=device), **kw)
        want_h, want_e = np.histogram(x, weights=w, **kw)
        np.testing.assert_allclose(hist.cpu().numpy(), want_h, rtol=1e-9)
        np.testing.assert_allclose(edges.cpu().numpy(), want_e, rtol=1e-12)
    edges = np.array([-2.0, 0.0, 0.5, 3.0])
    hist, _ = t.histogram(nbtorch.tensor(edges, device=device))
    np.testing.assert_array_equal(hist.cpu().numpy(), np.histogram(x, edges)[0])
    v = nbtorch.tensor([1, 1, 2, 2, 3, 1, 1], device=device)
    u, inv, cnt = nbtorch.unique_consecutive(v, return_inverse=True, return_counts=True)
    assert u.tolist() == [1, 2, 3, 1] and cnt.tolist() == [2, 2, 1, 2]
    assert inv.tolist() == [0, 0, 1, 1, 2, 3, 3]
    m = nbtorch.tensor([[1, 1], [1, 1], [2, 3], [1, 1]], device=device)
    assert m.unique_consecutive(dim=0).tolist() == [[1, 1], [2, 3], [1, 1]]


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation, device):
    q = [0.0, 0.3, 0.5, 1.0]
    check_op(lambda x: nbtorch.quantile(x, nbtorch.tensor(q, dtype=x.dtype, device=x.device),
                                        dim=1, interpolation=interpolation),
             lambda x: np.quantile(x, q, axis=1, method=interpolation),
             (3, 7), dtypes=F64, device=device, grad=interpolation == "linear")
    x = np.array([[1.0, np.nan, 3.0, 0.0], [np.nan] * 4])
    got = nbtorch.nanquantile(nbtorch.tensor(x, device=device), 0.4, dim=1, keepdim=True,
                              interpolation=interpolation)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanquantile(x, 0.4, axis=1, keepdims=True, method=interpolation)
    np.testing.assert_allclose(got.cpu().numpy(), want)


def test_cov_corrcoef(device):
    rng = np.random.default_rng(2)
    fw = rng.integers(1, 4, 6)
    aw = rng.uniform(0.5, 2, 6)
    check_op(lambda x: nbtorch.cov(x), lambda x: np.cov(x), (3, 6), device=device)
    check_op(lambda x: x.cov(correction=0, fweights=nbtorch.tensor(fw, device=x.device),
                             aweights=nbtorch.tensor(aw, device=x.device)),
             lambda x: np.cov(x, ddof=0, fweights=fw, aweights=aw), (2, 6), device=device)
    check_op(nbtorch.corrcoef, np.corrcoef, (3, 6), device=device)


def _np_cdist(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if p == np.inf:
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, np.inf])
def test_cdist(p, device):
    check_op(lambda a, b: nbtorch.cdist(a, b, p), lambda a, b: _np_cdist(a, b, p),
             (2, 4, 3), (2, 5, 3), device=device, grad=p != 0.0)


def test_cdist_matmul_path_pdist_dist():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(30, 4)), rng.normal(size=(26, 4))
    np.testing.assert_allclose(nbtorch.cdist(nbtorch.tensor(a), nbtorch.tensor(b)).numpy(),
                               _np_cdist(a, b, 2), rtol=1e-10)
    check_grad(lambda x, y: nbtorch.cdist(x, y), (27, 3), (2, 3), layouts=("contiguous",))
    x = rng.normal(size=(5, 3))
    iu = np.triu_indices(5, 1)
    np.testing.assert_allclose(nbtorch.pdist(nbtorch.tensor(x), 1).numpy(),
                               _np_cdist(x, x, 1)[iu])
    check_grad(lambda x: nbtorch.pdist(x), (4, 3), layouts=("contiguous",))
    assert nbtorch.tensor([3.0, 0.0]).dist(nbtorch.tensor([0.0, 4.0])).item() == 5.0
    with pytest.raises(RuntimeError, match="same number of columns"):
        nbtorch.cdist(nbtorch.ones(2, 3), nbtorch.ones(2, 2))


def test_windows():
    for n in (1, 5, 8):
        np.testing.assert_allclose(nbtorch.hann_window(n, periodic=False).numpy(),
                                   np.hanning(n), atol=1e-6)
        np.testing.assert_allclose(nbtorch.hamming_window(n, False).numpy(), np.hamming(n),
                                   atol=1e-6)
        np.testing.assert_allclose(nbtorch.blackman_window(n, False).numpy(), np.blackman(n),
                                   atol=1e-6)
        np.testing.assert_allclose(nbtorch.bartlett_window(n, False).numpy(), np.bartlett(n),
                                   atol=1e-6)
        np.testing.assert_allclose(
            nbtorch.kaiser_window(n, False, 8.0, dtype=nbtorch.float64).numpy(),
            np.kaiser(n, 8.0), rtol=1e-12)
    np.testing.assert_allclose(nbtorch.hann_window(6).numpy(), np.hanning(7)[:6], atol=1e-6)
    assert nbtorch.hann_window(0).shape == (0,)
    with pytest.raises(RuntimeError, match="floating point"):
        nbtorch.hann_window(3, dtype=nbtorch.int64)


def test_histogramdd_and_segment_reduce(device):
    rng = np.random.default_rng(4)
    pts = rng.normal(size=(40, 2))
    w = rng.uniform(size=40)
    hist, edges = nbtorch.histogramdd(nbtorch.tensor(pts, device=device), bins=[3, 4],
                                      weight=nbtorch.tensor(w, device=device), density=True)
    want_h, want_e = np.histogramdd(pts, bins=[3, 4], weights=w, density=True)
    np.testing.assert_allclose(hist.cpu().numpy(), want_h, rtol=1e-9)
    for e, we in zip(edges, want_e):
        np.testing.assert_allclose(e.cpu().numpy(), we, rtol=1e-12)
    data = rng.normal(size=(6, 2))
    lengths = [2, 0, 4]
    starts = np.cumsum([0] + lengths)
    for reduce, f in (("sum", np.sum), ("max", np.max), ("mean", np.mean), ("prod", np.prod)):
        got = nbtorch.segment_reduce(nbtorch.tensor(data, device=device), reduce,
                                     lengths=nbtorch.tensor(lengths, device=device),
                                     initial=None if reduce != "max" else -5.0)
        for k, n in enumerate(lengths):
            seg = data[starts[k]:starts[k] + n]
            if n:
                want = f(seg, 0) if reduce != "max" else np.maximum(f(seg, 0), -5.0)
            else:
                want = {"sum": 0.0, "max": -5.0, "mean": np.nan, "prod": 1.0}[reduce]
            np.testing.assert_allclose(got[k].cpu().numpy(), np.broadcast_to(want, (2,)))
    check_grad(lambda x: nbtorch.segment_reduce(x, "mean", lengths=nbtorch.tensor(
        [1, 3], device=x.device)), (4, 2), layouts=("contiguous",), device=device)
