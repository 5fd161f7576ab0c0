"""nbtorch.save / load of sparse tensors in PyTorch's format (_rebuild_sparse_tensor), both
ways with PyTorch, with the indices of a loaded file checked."""
import warnings

import pytest

import nbtorch


def _tensors():
    s = nbtorch.sparse_coo_tensor([[1, 0, 1], [0, 2, 0]],
                                  nbtorch.tensor([1., 2., 3.], dtype=nbtorch.float64))
    return {"coo": s, "coalesced": s.coalesce(), "csr": s.coalesce().to_sparse_csr(),
            "hybrid": nbtorch.tensor([[[1., 0.]], [[0., 0.]]]).to_sparse(2),
            "dense": nbtorch.ones(2)}


def _check(loaded, saved):
    for k, t in saved.items():
        assert loaded[k].layout is t.layout and loaded[k].dtype is t.dtype
        assert nbtorch.equal(loaded[k].to_dense(), t.to_dense())
        if t.is_sparse:
            assert loaded[k].is_coalesced() == t.is_coalesced()


def test_round_trip(tmp_path):
    saved = _tensors()
    nbtorch.save(saved, tmp_path / "sp.pt")
    _check(nbtorch.load(tmp_path / "sp.pt"), saved)


def test_pytorch_reads_ours_and_we_read_pytorchs(tmp_path):
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
    saved = _tensors()
    nbtorch.save(saved, tmp_path / "ours.pt")
    theirs = torch.load(tmp_path / "ours.pt", weights_only=True)
    for k, t in saved.items():
        assert str(theirs[k].layout) == str(t.layout)
        assert theirs[k].to_dense().tolist() == t.to_dense().tolist()
    torch.save(theirs, tmp_path / "theirs.pt")
    _check(nbtorch.load(tmp_path / "theirs.pt"), saved)
    bad = torch.sparse_coo_tensor(torch.tensor([[0, 5]]), torch.tensor([1., 2.]), (2,))
    torch.save(bad, tmp_path / "bad.pt")             # PyTorch does not check unless asked
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        nbtorch.load(tmp_path / "bad.pt")
