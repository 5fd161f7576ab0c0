"""Tensor basics: storage, strides, views, conversion, repr."""
import numpy as np
import pytest

import nbtorch as torch


def test_seed_examples():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = torch.tensor([[5.0, 6.0], [7.0, 8.0]])
    np.testing.assert_array_equal((x + y).numpy(), [[6, 8], [10, 12]])
    np.testing.assert_array_equal((x * y).numpy(), [[5, 12], [21, 32]])


def test_metadata():
    t = torch.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.size() == torch.Size([2, 3, 4]) and t.size(-1) == 4
    assert t.stride() == (12, 4, 1) and t.storage_offset() == 0
    assert t.dim() == 3 and t.numel() == 24 and len(t) == 2
    assert t.is_contiguous() and t.dtype is torch.float32 and t.device == torch.device("cpu")
    assert repr(t.shape) == "torch.Size([2, 3, 4])"


def test_every_shape_users_see_is_a_torch_size():
    """Tensors keep a plain tuple inside (indexing a Size is a Python call); `.shape`,
    `.size()` and slices of them are torch.Size for every way a tensor is made."""
    x = torch.randn(2, 3, 4)
    made = [x, x.view(6, 4), x[0], x.t() if x.dim() == 2 else x.permute(2, 0, 1), x + 1,
            x.sum(-1), x.reshape(-1), torch.from_numpy(np.zeros((5, 2), np.float32)),
            torch.tensor(3.0), torch.zeros(()), x.unsqueeze(0), x.transpose(0, 1).contiguous(),
            x.topk(2).values, torch.cat([x, x]), x.detach(), torch.empty(0, 3)]
    for t in made:
        for shape in (t.shape, t.size()):
            assert type(shape) is torch.Size and repr(shape).startswith("torch.Size(")
            assert shape == tuple(t.shape) and hash(shape) == hash(tuple(shape))
        if t.dim():
            assert type(t.shape[1:]) is torch.Size
            assert t.shape[1:].numel() == int(np.prod(tuple(t.shape)[1:]))
            assert type(t.shape + (1,)) is torch.Size
    assert x.shape[1:] == torch.Size([3, 4]) and x.size(1) == 3 and x.shape[-1] == 4


def test_numpy_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = torch.from_numpy(a)
    t[0, 0] = 100.0
    assert a[0, 0] == 100.0
    n = t.numpy()
    n[1, 2] = -1
    assert t[1, 2].item() == -1


def test_from_numpy_negative_strides_error():
    with pytest.raises(ValueError, match="negative"):
        torch.from_numpy(np.arange(4)[::-1])


def test_transpose_is_view_and_contiguous_copies():
    x = torch.arange(6.0).reshape(2, 3)
    xt = x.t()
    assert xt.data_ptr() == x.data_ptr() and not xt.is_contiguous()
    c = xt.contiguous()
    assert c.is_contiguous() and c.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(c.numpy(), np.arange(6.0).reshape(2, 3).T)


def test_view_error_and_reshape_copy():
    x = torch.arange(6.0).reshape(2, 3).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(6)
    r = x.reshape(6)
    np.testing.assert_array_equal(r.numpy(), [0, 3, 1, 4, 2, 5])
    y = torch.arange(6.0).reshape(2, 3)
    assert y.reshape(3, 2).data_ptr() == y.data_ptr()


def test_item_tolist_len_iter():
    t = torch.tensor([[1, 2], [3, 4]])
    assert t.dtype is torch.int64
    assert t.tolist() == [[1, 2], [3, 4]]
    assert t[1, 0].item() == 3
    assert [r.tolist() for r in t] == [[1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        t.item()


def test_dtype_conversions():
    t = torch.tensor([1.7, -2.2])
    assert t.long().tolist() == [1, -2]
    assert t.double().dtype is torch.float64
    assert t.half().dtype is torch.float16 and t.half().float().tolist() == pytest.approx(
        [1.7, -2.2], rel=1e-3)
    assert t.bool().tolist() == [True, True]
    assert t.to(torch.int32).dtype is torch.int32
    assert t.type_as(torch.zeros(1, dtype=torch.float64)).dtype is torch.float64


def test_repr_like_pytorch():
    assert repr(torch.tensor([[1.0, 2.0], [3.0, 4.0]])) == \
        "tensor([[1., 2.],\n        [3., 4.]])"
    assert repr(torch.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"
    assert repr(torch.tensor([1, 2], dtype=torch.int32)) == \
        "tensor([1, 2], dtype=torch.int32)"
    assert repr(torch.tensor(3.0, requires_grad=True)) == "tensor(3., requires_grad=True)"
    assert repr(torch.tensor([True, False])) == "tensor([ True, False])"


def test_clone_detach():
    x = torch.ones(3, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    c = x.clone()
    assert c.requires_grad and c.grad_fn is not None and c.data_ptr() != x.data_ptr()


def test_creation_functions():
    assert torch.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert torch.ones((2,), dtype=torch.int32).tolist() == [1, 1]
    assert torch.full((2,), 7).dtype is torch.int64
    assert torch.full((2,), 7.0).dtype is torch.float32
    assert torch.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert torch.arange(1, 2, 0.5).tolist() == [1.0, 1.5]
    assert torch.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert torch.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert torch.zeros_like(torch.ones(2, dtype=torch.int8)).dtype is torch.int8
    with pytest.raises(RuntimeError, match="negative dimension"):
        torch.zeros(-1)


def test_random_reproducible():
    torch.manual_seed(3)
    a = torch.randn(4)
    torch.manual_seed(3)
    assert torch.randn(4).tolist() == a.tolist()
    g = torch.Generator().manual_seed(5)
    b = torch.rand(3, generator=g)
    g.manual_seed(5)
    assert torch.rand(3, generator=g).tolist() == b.tolist()
    p = torch.randperm(10)
    assert sorted(p.tolist()) == list(range(10))
    r = torch.randint(0, 3, (100,))
    assert r.dtype is torch.int64 and 0 <= r.numpy().min() and r.numpy().max() < 3


def test_legacy_constructor():
    assert torch.Tensor(2, 3).shape == (2, 3)
    assert torch.Tensor([1, 2]).dtype is torch.float32


def test_basic_indexing_views():
    x = torch.arange(24.0).reshape(2, 3, 4)
    a = np.arange(24.0).reshape(2, 3, 4)
    for idx in [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 2), (None, 0),
                (slice(0, 2), slice(None, None, 2), slice(1, 4, 2)), (1, Ellipsis, None)]:
        v = x[idx]
        np.testing.assert_array_equal(v.numpy(), a[idx])
        assert v.data_ptr() >= x.data_ptr()
    with pytest.raises(IndexError, match="out of bounds"):
        x[2]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]


def test_setitem_writes_through_views():
    x = torch.zeros(3, 4)
    x[1] = 5.0
    x[:, ::2] = torch.tensor([1.0, 2.0])
    a = np.zeros((3, 4))
    a[1] = 5.0
    a[:, ::2] = [1.0, 2.0]
    np.testing.assert_array_equal(x.numpy(), a)


def test_cuda_unavailable_is_clear():
    with pytest.raises(Exception):
        torch.zeros(2, device="cuda")


def test_numpy_scalars_keep_their_dtype():
    assert torch.tensor(np.uint8(1)).dtype is torch.uint8
    assert torch.tensor(np.float16(1)).dtype is torch.float16
    assert torch.tensor(np.float64(2.5)).dtype is torch.float64


@pytest.mark.parametrize("values", [
    [float("nan"), float("inf"), -0.0, 1e-39], [0.0, 1e-5, 1.0], [0.0, 1e-9, 3.0],
    [[-0.0, 1.5], [float("nan"), -12.25]], [0.0, -0.0, 1.0], [float("-inf"), 2.0],
    [2.0, 3000.0], [0.5, 600.0], [1e9], [123456789.0, 1.0]])
def test_float_repr_matches_pytorch(values):
    """Formatting decided on nonzero finite values, padded to their width (PyTorch's rules)."""
    pt = pytest.importorskip("torch")
    for dt in ("float32", "float64"):
        assert repr(torch.tensor(values, dtype=getattr(torch, dt))) == repr(
            pt.tensor(values, dtype=getattr(pt, dt)))


def test_summarised_repr_matches_pytorch():
    pt = pytest.importorskip("torch")
    for make in (lambda m: m.arange(2000.0), lambda m: m.arange(2000),
                 lambda m: m.arange(2000.0).reshape(1000, 2)):
        assert repr(make(torch)) == repr(make(pt))


def test_copy_between_partly_overlapping_tensors_is_refused_as_in_pytorch():
    x = torch.arange(10.)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[2:].copy_(x[:-2])
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[:5].copy_(x[1:6])
    x.copy_(x)                                    # the same elements: fine
    x[:5].copy_(x[5:])                            # disjoint halves: fine
    x[::2].copy_(x[1::2])                         # strided: not checked (as in PyTorch)
    y = torch.arange(6.)
    y[:3].copy_(y[3:])
    assert y.tolist() == [3., 4., 5., 3., 4., 5.]


def test_untyped_storage_reads_like_pytorchs():
    """size() in bytes, data_ptr() shared by views: the 'do these share memory' idiom."""
    t = torch.arange(4.0)
    s = t.untyped_storage()
    assert s.size() == len(s) == s.nbytes() == 16 and s.element_size() == 1
    assert t[1:].untyped_storage().data_ptr() == s.data_ptr()
    assert torch.arange(4.0).untyped_storage().data_ptr() != s.data_ptr()
    assert torch.tensor([1], dtype=torch.uint8).untyped_storage().tolist() == [1]
    assert bool(torch.empty(0).untyped_storage())
