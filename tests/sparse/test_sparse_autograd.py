"""Autograd through sparse tensors: gradcheck in float64 and PyTorch's gradients (sparse
ones with the input's coalesced pattern for torch.sparse.mm and to_dense, dense for
torch.mm), learnable values through sparse_coo_tensor (nbtorch/sparse/_autograd.py)."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck

I = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]      # (0, 2) twice
V = [3., 4., 5., 1., -2.]
D = np.arange(12.).reshape(3, 4) / 7


def _torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
    return torch


def _vals(m):
    return m.tensor(V, dtype=m.float64, requires_grad=True)


@pytest.mark.parametrize("fn", [
    lambda m, s, d: m.sparse.mm(s, d),
    lambda m, s, d: m.mm(s, d),
    lambda m, s, d: s @ d,
    lambda m, s, d: m.sparse.addmm(d[:, :3].t().contiguous(), s, d[:, :3], beta=2, alpha=.5),
    lambda m, s, d: s.to_dense() * 3,
    lambda m, s, d: (s * 2 + s.t().t()).to_dense(),
    lambda m, s, d: m.sparse.sum(s, 1).to_dense(),
    lambda m, s, d: m.sparse.sum(s),
    lambda m, s, d: m.sparse.softmax(s, 1).to_dense(),
    lambda m, s, d: m.sparse.log_softmax(s, 0).to_dense(),
    lambda m, s, d: (s * d[:, :3]).to_dense(),
    lambda m, s, d: d[:, :3] + s,
    lambda m, s, d: s.coalesce().values() * 2,
    lambda m, s, d: s.sin().to_dense(),
    lambda m, s, d: s.double().clone().to_dense(),
], ids=["sparse.mm", "mm", "matmul", "addmm", "to_dense", "linear", "sum_dim", "sum",
        "softmax", "log_softmax", "mul_dense", "dense_add", "values", "sin", "clone"])
def test_gradcheck_through_values_and_dense(fn):
    """d/d(values) and d/d(dense operand): the learnable-edge-weights pattern of GNNs."""
    def f(v, d):
        return fn(nbtorch, nbtorch.sparse_coo_tensor(I, v, (3, 3)), d)
    d = nbtorch.tensor(D, requires_grad=True)
    assert gradcheck(f, (_vals(nbtorch), d))


def test_value_gradients_match_pytorch():
    torch = _torch()
    w = np.linspace(-1, 1, 9).reshape(3, 3)
    for fn in (lambda m, s, d: (m.sparse.mm(s, d) ** 2).sum(),
               lambda m, s, d: (m.mm(s, d) ** 2).sum(),
               lambda m, s, d: (s.to_dense() * m.tensor(w)).sum(),
               lambda m, s, d: (m.sparse.softmax(s, 1).to_dense() * m.tensor(w)).sum()):
        grads = []
        for m in (nbtorch, torch):
            v, d = _vals(m), m.tensor(D, requires_grad=True)
            fn(m, m.sparse_coo_tensor(m.tensor(I), v, (3, 3)), d).backward()
            grads.append((v.grad, d.grad))
        for a, b in zip(*grads):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)


def test_sparse_leaf_gradients_match_pytorch():
    """A sparse leaf's .grad: sparse (coalesced pattern) for sparse.mm and to_dense, dense
    for torch.mm, as PyTorch gives them; a second backward accumulates."""
    torch = _torch()
    for fn in (lambda m, s, d: (m.sparse.mm(s, d) ** 2).sum(),
               lambda m, s, d: (m.mm(s, d) ** 2).sum(),
               lambda m, s, d: (s.to_dense() * d[:, :3]).sum()):
        grads = []
        for m in (nbtorch, torch):
            s = m.sparse_coo_tensor(m.tensor(I), m.tensor(V, dtype=m.float64), (3, 3),
                                    requires_grad=True)
            for _ in range(2):
                fn(m, s, m.tensor(D)).backward()
            grads.append(s.grad)
        ours, theirs = grads
        assert str(ours.layout) == str(theirs.layout)
        if theirs.layout == torch.sparse_coo:
            assert ours.coalesce().indices().tolist() == theirs.coalesce().indices().tolist()
        np.testing.assert_allclose(ours.to_dense().numpy(), theirs.to_dense().numpy(),
                                   rtol=1e-10)


def test_node_names_and_requires_grad():
    v = _vals(nbtorch)
    s = nbtorch.sparse_coo_tensor(I, v, (3, 3))
    assert s.requires_grad and not s.is_leaf
    assert s.grad_fn.name() == "SparseCooTensorWithDimsAndTensorsBackward0"
    d = nbtorch.tensor(D)
    assert nbtorch.sparse.mm(s, d).grad_fn.name() == "SparseAddmmBackward0"
    assert nbtorch.mm(s, d).grad_fn.name() == "MmBackward0"
    assert s.to_dense().grad_fn.name() == "ToDenseBackward0"
    dense = nbtorch.tensor(D, requires_grad=True)
    sp = dense.to_sparse()
    sp.to_dense().sum().backward()         # to_dense's gradient is masked to the pattern
    np.testing.assert_array_equal(dense.grad.numpy(), D != 0)
    cast = nbtorch.sparse_coo_tensor(I, v, (3, 3)).float()
    assert cast.dtype is nbtorch.float32 and cast.grad_fn.name() == "ToCopyBackward0"
    cast.to_dense().sum().backward()
    assert v.grad.dtype is nbtorch.float64 and v.grad.tolist() == [1.] * 5


def test_a_gcn_layer_trains():
    """Two-layer GCN on a ring graph: the loss goes to ~0 with Adam on dense weights and
    learnable edge weights."""
    n = 8
    src = np.arange(n)
    rows = np.concatenate([src, src, src])
    cols = np.concatenate([src, (src + 1) % n, (src - 1) % n])
    idx = nbtorch.tensor(np.stack([rows, cols]))
    edge_w = nbtorch.ones(3 * n, requires_grad=True)
    x = nbtorch.eye(n)
    y = nbtorch.tensor(src % 2)
    w1 = nbtorch.nn.Parameter(nbtorch.randn(n, 16) * 0.3)
    w2 = nbtorch.nn.Parameter(nbtorch.randn(16, 2) * 0.3)
    opt = nbtorch.optim.Adam([w1, w2, edge_w], lr=0.05)
    for _ in range(60):
        adj = nbtorch.sparse_coo_tensor(idx, edge_w / 3, (n, n))
        h = nbtorch.relu(nbtorch.sparse.mm(adj, x @ w1))
        loss = nbtorch.nn.functional.cross_entropy(adj @ (h @ w2), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05 and edge_w.grad is not None


def test_csr_leaf_gets_csr_gradients():
    torch = _torch()
    for fn in (lambda m, c: m.sparse.mm(c, m.ones(2, 2)).sum(),
               lambda m, c: (c @ m.ones(2, 2)).sum(), lambda m, c: (c.to_dense() * 3).sum()):
        grads = []
        for m in (nbtorch, torch):
            c = m.tensor([[0., 1.], [2., 3.]]).to_sparse_csr().requires_grad_()
            fn(m, c).backward()
            grads.append(c.grad)
        assert repr(grads[0]) == repr(grads[1])
