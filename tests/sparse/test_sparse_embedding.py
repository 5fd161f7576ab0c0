"""nn.Embedding(sparse=True) / F.embedding(sparse=True): a sparse COO weight gradient,
one entry per looked-up index as PyTorch's (padding_idx left out, duplicates kept),
accumulated over backward calls."""
import warnings

import numpy as np
import pytest

import nbtorch

IDX = [[1, 0, 3], [1, 4, 0]]


def test_sparse_weight_gradient():
    e = nbtorch.nn.Embedding(5, 2, sparse=True, padding_idx=0)
    out = e(nbtorch.tensor(IDX))
    w = nbtorch.arange(12.).reshape(2, 3, 2)
    (out * w).sum().backward()
    g = e.weight.grad
    assert g.layout is nbtorch.sparse_coo and not g.is_coalesced() and g.shape == (5, 2)
    assert g._indices().tolist() == [[1, 3, 1, 4]]
    assert g._values().tolist() == [[0, 1], [4, 5], [6, 7], [8, 9]]
    assert out.grad_fn.name() == "EmbeddingBackward0"
    (out * w).sum().backward()                     # accumulates
    dense = nbtorch.nn.Embedding(5, 2, padding_idx=0)
    dense.weight.data = e.weight.detach().clone()
    for _ in range(2):
        (dense(nbtorch.tensor(IDX)) * w).sum().backward()
    np.testing.assert_allclose(g.to_dense().numpy(), dense.weight.grad.numpy())
    f = nbtorch.nn.functional.embedding(nbtorch.tensor([1, 1, 2]), e.weight.detach().clone()
                                        .requires_grad_(), sparse=True,
                                        scale_grad_by_freq=True)
    assert f.shape == (3, 2)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
    grads = []
    for m in (nbtorch, torch):
        m.manual_seed(0)
        weight = m.tensor(np.arange(10.).reshape(5, 2), requires_grad=True)
        out = m.nn.functional.embedding(m.tensor(IDX), weight, padding_idx=0, sparse=True)
        (out * m.arange(12.).reshape(2, 3, 2)).sum().backward()
        grads.append(weight.grad)
    assert repr(grads[0]) == repr(grads[1])
