"""Sparse tensors: construction, PyTorch's checks and errors, coalescing, conversions, reprs,
and the refusal of dense-only ops (nbtorch/sparse/)."""
import pickle
import copy
import warnings

import numpy as np
import pytest

import nbtorch

I = [[0, 1, 1, 0], [2, 0, 2, 2]]        # (0, 2) twice: uncoalesced
V = [3., 4., 5., 1.]


def _coo(dtype=nbtorch.float32, **kw):
    return nbtorch.sparse_coo_tensor(nbtorch.tensor(I), nbtorch.tensor(V, dtype=dtype), (2, 3),
                                     **kw)


def _torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
    return torch


def test_a_sparse_tensor_is_a_tensor_with_metadata():
    s = _coo()
    assert isinstance(s, nbtorch.Tensor)
    assert s.layout is nbtorch.sparse_coo and s.is_sparse and not s.is_sparse_csr
    assert s.shape == nbtorch.Size([2, 3]) and s.dtype is nbtorch.float32
    assert s.device == nbtorch.device("cpu") and s.dim() == 2 and s.numel() == 6
    assert (s.sparse_dim(), s.dense_dim(), s._nnz()) == (2, 0, 4)
    assert not s.is_coalesced() and not s.requires_grad and s.grad is None
    dense = nbtorch.ones(2)
    assert dense.layout is nbtorch.strided and not dense.is_sparse and not dense.is_sparse_csr
    assert (dense.sparse_dim(), dense.dense_dim()) == (0, 1)


def test_coalesce_sums_duplicates_and_sorts():
    s = nbtorch.sparse_coo_tensor([[1, 0, 1], [0, 2, 0]], [1., 2., 3.])
    assert s.shape == (2, 3)                           # inferred size
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    assert c.indices().tolist() == [[0, 1], [2, 0]] and c.values().tolist() == [2., 4.]
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        s.indices()
    assert s._indices().tolist() == [[1, 0, 1], [0, 2, 0]]      # _indices(): as given
    assert s._values().tolist() == [1., 2., 3.]


def test_to_dense_adds_duplicates():
    np.testing.assert_array_equal(_coo().to_dense().numpy(), [[0, 0, 4], [4, 0, 5]])
    for dt in (nbtorch.float64, nbtorch.int64, nbtorch.float16, nbtorch.int8):
        d = _coo(dt).to_dense()
        assert d.dtype is dt and d.tolist() == [[0, 0, 4], [4, 0, 5]]


def test_hybrid_values_and_to_sparse_of_dense():
    x = nbtorch.tensor([[[1., 0.], [0., 0.]], [[0., 0.], [2., 3.]]])
    s = x.to_sparse(2)
    assert (s.sparse_dim(), s.dense_dim(), s._nnz()) == (2, 1, 2)
    assert s.indices().tolist() == [[0, 1], [0, 1]] and s.values().tolist() == [[1, 0], [2, 3]]
    assert nbtorch.equal(s.to_dense(), x)
    full = x.to_sparse()
    assert full.sparse_dim() == 3 and full._nnz() == 3 and nbtorch.equal(full.to_dense(), x)
    assert x.to_dense() is x
    h = nbtorch.sparse_coo_tensor([[0, 2]], nbtorch.ones(2, 2))
    assert h.shape == (3, 2) and h.to_dense().tolist() == [[1, 1], [0, 0], [1, 1]]
    scalar = nbtorch.tensor(3.).to_sparse()
    assert scalar.shape == () and scalar._nnz() == 1 and scalar.to_dense().item() == 3.


@pytest.mark.parametrize("args, kwargs, err, msg", [
    (([0, 1], [1., 2.]), {}, RuntimeError, r"indices must be sparse_dim x nnz, but got: \[2\]"),
    (([[0, 1]], [1., 2., 3.], (2,)), {}, RuntimeError,
     "indices and values must have same nnz, but got nnz from indices: 2, nnz from values: 3"),
    (([[0, 2]], [1., 2.], (2,)), {}, RuntimeError,
     "size is inconsistent with indices: for dim 0, size is 2 but found index 2"),
    (([[0, -1]], [1., 2.], (2,)), {}, RuntimeError, "found negative index -1 for dim 0"),
    (([[0, -1]], [1., 2.]), {}, RuntimeError, "found negative index -1 for dim 0"),
    (([[0, 1]], [1., 2.], (2, 3)), {}, RuntimeError,
     r"'len\(size\) == sparse_dim \+ dense_dim' is not satisfied: len\(size\) = 2, "
     r"sparse_dim = 1, dense_dim = 0"),
    (([[0, 1]], [[1., 2.], [3., 4.]], (2, 3)), {}, RuntimeError,
     r"values has incorrect size, expected \[2, 3\], got \[2, 2\]"),
    (([[0, 1]], [1, 2], (2,)), {"requires_grad": True}, RuntimeError,
     "Only Tensors of floating point and complex dtype can require gradients"),
    (([[0, 1]], [1., 2.], (2,)), {"device": "cuda"}, NotImplementedError, "CPU-only"),
])
def test_bad_coo_input_raises_pytorchs_errors(args, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        nbtorch.sparse_coo_tensor(*args, **kwargs)
    if err is RuntimeError:     # PyTorch's own error (it checks bounds when asked; nbtorch
        torch = _torch()        # always does, as its kernels do no bounds checks)
        targs = [torch.tensor(a) if isinstance(a, list) else a for a in args]
        with pytest.raises(err, match=msg):
            torch.sparse_coo_tensor(*targs, **kwargs, check_invariants=True)


def test_csr_construction_accessors_and_conversions():
    c = nbtorch.sparse_csr_tensor([0, 1, 3], [2, 0, 2], [4., 4., 5.], (2, 3))
    assert c.layout is nbtorch.sparse_csr and c.is_sparse_csr and not c.is_sparse
    assert c.crow_indices().tolist() == [0, 1, 3] and c.col_indices().tolist() == [2, 0, 2]
    assert c.values().tolist() == [4., 4., 5.] and c._nnz() == 3
    assert c.to_dense().tolist() == [[0, 0, 4], [4, 0, 5]]
    assert nbtorch.equal(_coo().to_sparse_csr().to_dense(), c.to_dense())
    coo = c.to_sparse_coo()
    assert coo.is_coalesced() and coo.indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    assert nbtorch.equal(nbtorch.tensor([[0., 1.], [2., 0.]]).to_sparse(
        layout=nbtorch.sparse_csr).crow_indices(), nbtorch.tensor([0, 1, 2]))
    assert nbtorch.sparse_csr_tensor([0, 1, 2], [1, 0], [1., 2.]).shape == (2, 2)
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout "
                                           "but got SparseCsr"):
        c.indices()
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed "
                                           "tensor layout but got Sparse"):
        _coo().crow_indices()
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout "
                                           "but got Strided"):
        nbtorch.ones(2).indices()


@pytest.mark.parametrize("crow, col, msg", [
    ([0, 1, 3], [1, 0], r"`crow_indices\[..., -1\] == nnz` is not satisfied."),
    ([1, 1, 2], [1, 0], r"`crow_indices\[..., 0\] == 0` is not satisfied."),
    ([0, 1, 2], [1, 5], "`0 <= col_indices < ncols` is not satisfied."),
    ([0, 1, 2], [1, -1], "`0 <= col_indices < ncols` is not satisfied."),
    ([0, 2, 2], [1, 1], "sorted and distinct"),
    ([0, 2, 2], [1, 0], "sorted and distinct"),
    ([0, 1], [1, 0], r"crow_indices.shape\[-1\] must be equal to the number of rows \+ 1 "
                     r"\(=3\), but got 2"),
])
def test_bad_csr_input_is_refused(crow, col, msg):
    """Always checked (PyTorch checks with check_invariants=True: same messages)."""
    with pytest.raises(RuntimeError, match=msg):
        nbtorch.sparse_csr_tensor(crow, col, [1., 2.], (2, 2))
    torch = _torch()
    with pytest.raises(RuntimeError, match=msg):
        torch.sparse_csr_tensor(torch.tensor(crow), torch.tensor(col), torch.tensor([1., 2.]),
                                (2, 2), check_invariants=True)


def test_reprs_match_pytorch():
    torch = _torch()
    ours = [_coo(), _coo(nbtorch.float64), _coo(nbtorch.float64, requires_grad=True),
            _coo().coalesce() * 2, nbtorch.tensor([[[1., 0.], [0., 0.]]]).to_sparse(2),
            nbtorch.sparse_coo_tensor(nbtorch.zeros(2, 0, dtype=nbtorch.int64),
                                      nbtorch.zeros(0), (2, 2)),
            _coo(nbtorch.float64).to_sparse_csr(), nbtorch.ones(2, 3).to_sparse_csr(),
            nbtorch.tensor([1, 0, 2]).to_sparse()]
    ti, tv = torch.tensor(I), torch.tensor(V)
    theirs = [torch.sparse_coo_tensor(ti, tv, (2, 3)),
              torch.sparse_coo_tensor(ti, tv.double(), (2, 3)),
              torch.sparse_coo_tensor(ti, tv.double(), (2, 3), requires_grad=True),
              torch.sparse_coo_tensor(ti, tv, (2, 3)).coalesce() * 2,
              torch.tensor([[[1., 0.], [0., 0.]]]).to_sparse(2),
              torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0),
                                      (2, 2)),
              torch.sparse_coo_tensor(ti, tv.double(), (2, 3)).to_sparse_csr(),
              torch.ones(2, 3).to_sparse_csr(), torch.tensor([1, 0, 2]).to_sparse()]
    for a, b in zip(ours, theirs):
        assert repr(a) == repr(b)


def test_dense_only_ops_name_the_op_and_layout():
    s = _coo()
    for fn, op in ((lambda: s.exp(), "exp"), (lambda: nbtorch.exp(s), "exp"),
                   (lambda: s.view(6), "view"), (lambda: s.mean(), "mean"),
                   (lambda: nbtorch.nn.functional.gelu(s), "gelu"),
                   (lambda: s.reshape(6), "reshape"), (lambda: s.exp_(), "exp_"),
                   (lambda: nbtorch.zeros(2, 3).copy_(s), "copy_"),
                   (lambda: s.cumsum(0), "cumsum"), (lambda: nbtorch.stack([s, s]), "stack")):
        with pytest.raises(NotImplementedError,
                           match=rf"Could not run 'aten::{op}' with arguments from "):
            fn()
    csr = s.to_sparse_csr()
    with pytest.raises(NotImplementedError, match="'SparseCsrCPU' backend.*sparse_csr"):
        csr.exp()
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        s.numpy()
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        s + nbtorch.ones(2, 3)
    with pytest.raises(NotImplementedError, match="Cannot access storage"):
        s.untyped_storage()
    assert s.stride() == (0, 0) and not s.is_contiguous()


def test_copies_pickle_deepcopy_detach():
    s = _coo(nbtorch.float64, requires_grad=True)
    for t in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert t.layout is nbtorch.sparse_coo and nbtorch.equal(t.to_dense(), s.to_dense())
    assert copy.deepcopy(s).requires_grad
    d = s.detach()
    assert not d.requires_grad and d._values() is s._values() and d.is_leaf
    c = s.clone()
    assert c.grad_fn is not None and c._values() is not s._values()
    csr = s.detach().to_sparse_csr()
    assert nbtorch.equal(pickle.loads(pickle.dumps(csr)).to_dense(), csr.to_dense())


def test_cuda_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="CPU-only"):
        _coo().cuda()
    with pytest.raises(NotImplementedError, match="CPU-only"):
        _coo().to("cuda")
