"""Sparse tensor ops against NumPy and PyTorch: products with dense matrices, arithmetic,
sums, softmax, transposes and casts (nbtorch/sparse/_ops.py)."""
import warnings

import numpy as np
import pytest

import nbtorch

I = [[0, 1, 1, 0], [2, 0, 2, 2]]
V = [3., 4., 5., 1.]
DENSE = np.array([[0., 0., 4.], [4., 0., 5.]])


def _coo(dtype=nbtorch.float64):
    return nbtorch.sparse_coo_tensor(I, nbtorch.tensor(V, dtype=dtype), (2, 3))


def _torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
    return torch


def _tcoo(torch, dtype=None):
    return torch.sparse_coo_tensor(torch.tensor(I), torch.tensor(V, dtype=dtype or
                                                                  torch.float64), (2, 3))


def _same(ours, theirs):
    """Equal values, dtype and layout (sparse results compared coalesced)."""
    assert str(ours.layout) == str(theirs.layout) and str(ours.dtype) == str(theirs.dtype)
    if theirs.layout.__repr__() == "torch.sparse_coo":
        ours, theirs = ours.coalesce(), theirs.coalesce()
        assert ours.indices().tolist() == theirs.indices().tolist()
        np.testing.assert_allclose(ours.values().numpy(), theirs.values().numpy(), 1e-12)
    else:
        np.testing.assert_allclose(ours.to_dense().detach().numpy(),
                                   theirs.to_dense().detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64])
def test_mm_matmul_and_operator(dtype):
    rng = np.random.default_rng(0)
    d = rng.standard_normal((3, 5)).astype(dtype.np)
    want = DENSE.astype(dtype.np) @ d
    s, dt = _coo(dtype), nbtorch.tensor(d)
    for got in (nbtorch.sparse.mm(s, dt), nbtorch.mm(s, dt), nbtorch.matmul(s, dt), s @ dt,
                s.mm(dt), nbtorch.spmm(s, dt), s.to_sparse_csr() @ dt,
                nbtorch.sparse.mm(s.to_sparse_csr(), dt)):
        assert got.layout is nbtorch.strided and got.dtype is dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(nbtorch.matmul(s, dt[:, 0]).numpy(), want[:, 0], rtol=1e-5)
    left = nbtorch.tensor(d.T[:2, :2].copy())          # dense @ sparse
    np.testing.assert_allclose((left @ s).numpy(), d.T[:2, :2] @ DENSE, rtol=1e-5)
    np.testing.assert_allclose(nbtorch.mm(left, s).numpy(), d.T[:2, :2] @ DENSE, rtol=1e-5)


def test_mm_errors_match_pytorch():
    torch = _torch()
    cases = [(lambda m, s: m.mm(s, m.ones(3, 2, dtype=m.float32)), RuntimeError,
              "expected scalar type Double but found Float"),
             (lambda m, s: m.mm(s, m.ones(4, 2, dtype=m.float64)), RuntimeError,
              "addmm: Argument #3 \\(dense\\): Expected dim 0 size 3, got 4"),
             (lambda m, s: m.sparse.mm(s, m.ones(3, dtype=m.float64)), IndexError,
              "Dimension out of range")]
    for fn, err, msg in cases:
        with pytest.raises(err, match=msg):
            fn(nbtorch, _coo())
        with pytest.raises(err, match=msg):
            fn(torch, _tcoo(torch))


def test_addmm():
    torch = _torch()
    d = np.arange(6.).reshape(3, 2)
    for kw in ({}, {"beta": 2, "alpha": 3}, {"beta": 0}):
        got = nbtorch.sparse.addmm(nbtorch.ones(2, 2, dtype=nbtorch.float64), _coo(),
                                   nbtorch.tensor(d), **kw)
        want = torch.sparse.addmm(torch.ones(2, 2, dtype=torch.float64), _tcoo(torch),
                                  torch.tensor(d), **kw)
        np.testing.assert_allclose(got.numpy(), want.numpy())
    got = nbtorch.addmm(nbtorch.ones(2, 2, dtype=nbtorch.float64), _coo(), nbtorch.tensor(d))
    np.testing.assert_allclose(got.numpy(), 1 + DENSE @ d)


def test_arithmetic_matches_pytorch():
    torch = _torch()
    other_i = [[0], [0]]
    ours_o = nbtorch.sparse_coo_tensor(other_i, nbtorch.tensor([7.], dtype=nbtorch.float64),
                                       (2, 3))
    theirs_o = torch.sparse_coo_tensor(torch.tensor(other_i), torch.tensor([7.],
                                       dtype=torch.float64), (2, 3))
    dense = np.arange(6.).reshape(2, 3) + 1
    ops = [lambda s, o, d: s * 2, lambda s, o, d: 2 * s, lambda s, o, d: s / 2,
           lambda s, o, d: -s, lambda s, o, d: s + o, lambda s, o, d: s - o,
           lambda s, o, d: s.add(o, alpha=2), lambda s, o, d: d + s, lambda s, o, d: d - s,
           lambda s, o, d: s * d, lambda s, o, d: d * s, lambda s, o, d: s.mul(d[0]),
           lambda s, o, d: s * (s + o), lambda s, o, d: s.sin(), lambda s, o, d: s.sqrt(),
           lambda s, o, d: s.abs(), lambda s, o, d: s.pow(2),
           lambda s, o, d: s.coalesce() + o.coalesce()]
    for op in ops:
        _same(op(_coo(), ours_o, nbtorch.tensor(dense)),
              op(_tcoo(torch), theirs_o, torch.tensor(dense)))


def test_coalesced_flags_follow_pytorch():
    c = _coo().coalesce()
    assert (c + c).is_coalesced() and (c * 2).is_coalesced()
    assert not c.t().is_coalesced() and not (_coo() * 2).is_coalesced()
    assert nbtorch.zeros(2, 3).to_sparse().is_coalesced()


def test_sum_softmax_transpose_cast():
    torch = _torch()
    for fn in (lambda m, s: m.sparse.sum(s), lambda m, s: m.sparse.sum(s, 0),
               lambda m, s: m.sparse.sum(s, 1), lambda m, s: m.sparse.sum(s, (0, 1)),
               lambda m, s: s.sum(), lambda m, s: m.sparse.softmax(s, 1),
               lambda m, s: m.sparse.softmax(s, 0), lambda m, s: m.sparse.log_softmax(s, 1),
               lambda m, s: s.t(), lambda m, s: s.transpose(0, 1), lambda m, s: s.to(m.float32),
               lambda m, s: s.float(), lambda m, s: s.clone(), lambda m, s: s.detach()):
        ours, theirs = fn(nbtorch, _coo()), fn(torch, _tcoo(torch))
        if theirs.layout == torch.strided:
            assert ours.layout is nbtorch.strided and str(ours.dtype) == str(theirs.dtype)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy())
        else:
            _same(ours, theirs)
    hybrid = nbtorch.tensor([[[1., 0.], [0., 0.]], [[0., 0.], [2., 3.]]])
    np.testing.assert_allclose(nbtorch.sparse.sum(hybrid.to_sparse(2), 2).to_dense().numpy(),
                               hybrid.sum(2).numpy())
    np.testing.assert_allclose(nbtorch.sparse.sum(hybrid.to_sparse(2), (0, 1)).numpy(),
                               [3., 3.])
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 sparse"):
        nbtorch.ones(2, 2, 2).to_sparse().t()
    with pytest.raises(IndexError, match="Dimension out of range"):
        nbtorch.sparse.sum(_coo(), 5)


def test_csr_ops():
    c = _coo().to_sparse_csr()
    assert (c * 2).to_dense().tolist() == (DENSE * 2).tolist()
    assert (c + c).to_dense().tolist() == (DENSE * 2).tolist()
    assert c.to(nbtorch.float32).dtype is nbtorch.float32 and c.clone().is_sparse_csr
    with pytest.raises(NotImplementedError, match="sparse_csc"):
        c.t()


def test_in_place_add_mul_zero_move_the_version():
    s = _coo()
    v = s._version
    s.add_(_coo())
    assert s._version > v and s.to_dense().tolist() == (2 * DENSE).tolist()
    s.mul_(0.5)
    assert s.to_dense().tolist() == DENSE.tolist()
    s.zero_()
    assert s._nnz() == 0 and s.to_dense().tolist() == [[0] * 3] * 2


def test_sparse_mask():
    torch = _torch()
    dense = np.arange(6.).reshape(2, 3)
    ours = nbtorch.tensor(dense).sparse_mask(_coo())
    theirs = torch.tensor(dense).sparse_mask(_tcoo(torch))
    assert repr(ours) == repr(theirs)
    with pytest.raises(RuntimeError, match="sparse_mask expected sparse coordinate"):
        nbtorch.ones(2).sparse_mask(nbtorch.ones(2))


@pytest.mark.parametrize("dim, index", [(0, [1, 0, 0]), (1, [2, 1]), (0, [])])
def test_index_select(dim, index):
    torch = _torch()
    ours = _coo().index_select(dim, nbtorch.tensor(index, dtype=nbtorch.int64))
    theirs = _tcoo(torch).index_select(dim, torch.tensor(index, dtype=torch.long))
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours.to_dense().numpy(), theirs.to_dense().numpy())
    with pytest.raises(IndexError, match="index out of range in self"):
        _coo().index_select(0, nbtorch.tensor([5]))
    v = nbtorch.tensor(V, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(
        lambda v: nbtorch.sparse_coo_tensor(I, v, (2, 3)).index_select(dim, nbtorch.tensor(
            index, dtype=nbtorch.int64)).to_dense(), (v,))
