"""Views that carry their parent's array (t, transpose, permute on the CPU) and the small
clone path: the array a view is handed must be the one its storage would give it."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch._tensor import _cpu_view


def _storage_view(t):
    return _cpu_view(t._storage.data, t._offset, t._shape, t._strides, t.dtype.np)


def _check_view(v):
    """v's array (already set or built now) equals, in layout and memory, the view its
    storage gives."""
    a, ref = v._array, _storage_view(v)
    assert a.shape == ref.shape
    if a.size:                           # (an empty view may get an array of its own)
        assert a.__array_interface__["data"][0] == ref.__array_interface__["data"][0]
        for size, s, r in zip(a.shape, a.strides, ref.strides):
            assert size <= 1 or s == r
    np.testing.assert_array_equal(a, ref)


@pytest.mark.parametrize("make", [
    lambda x: x.t(),
    lambda x: x.transpose(0, 1),
    lambda x: x.transpose(-1, 0),
    lambda x: x.permute(1, 0),
    lambda x: x[1:, ::2].t(),
    lambda x: x.reshape(2, 3, 4).permute(2, 0, 1),
    lambda x: x.reshape(2, 3, 4).transpose(0, 2),
    lambda x: x.reshape(2, 3, 4)[:, 1].t(),
])
@pytest.mark.parametrize("grad", [False, True])
def test_view_array_matches_storage(make, grad):
    x = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    if grad:
        x.requires_grad_(True)
    with torch.no_grad():
        _ = x._array                     # the parent's array exists: the view derives it
        v = make(x)
    _check_view(v)
    with torch.no_grad():
        x.add_(1.0)                      # a write through the parent shows in the view
    np.testing.assert_array_equal(v._array, _storage_view(v))
    np.testing.assert_array_equal(v.numpy(), make(x.detach()).numpy())


def test_view_of_view_chain():
    x = torch.randn(3, 4, 5)
    v = x.permute(2, 0, 1).transpose(0, 1).permute(2, 1, 0)
    _check_view(v)
    np.testing.assert_array_equal(
        v.contiguous().numpy(), x.numpy().transpose(2, 0, 1).swapaxes(0, 1).transpose(2, 1, 0))


def test_size_one_and_empty_dims():
    for shape in [(1, 5), (5, 1), (0, 3), (1, 1)]:
        x = torch.zeros(shape)
        _check_view(x.t())
        assert x.t().contiguous().shape == shape[::-1]


def test_clone_small_path_is_a_fresh_copy():
    x = torch.randn(8, 16)
    with torch.no_grad():
        c = x.clone()
    assert c.data_ptr() != x.data_ptr() and c.is_contiguous()
    np.testing.assert_array_equal(c.numpy(), x.numpy())
    c.add_(1.0)
    assert not np.array_equal(c.numpy(), x.numpy())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_clone_dtypes_and_layouts(dtype):
    x = (torch.arange(12).reshape(3, 4) % 3).to(dtype)
    for src in (x, x.t(), x[:, 1:]):
        c = src.clone()
        assert c.dtype is dtype and c.shape == src.shape
        np.testing.assert_array_equal(c.numpy(), src.numpy())
    assert x.t().clone().stride() == x.t().stride()        # preserve_format keeps strides
    assert x.t().clone(memory_format=torch.contiguous_format).is_contiguous()


def test_clone_records_when_grad_is_needed():
    x = torch.randn(4, 3, requires_grad=True)
    c = x.clone()
    assert c.grad_fn is not None
    c.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((4, 3), np.float32))


def _outcome(f, *a):
    try:
        return f(*a)
    except RuntimeError as e:
        return ("error", str(e))


def test_target_shape_agrees_with_the_general_rule():
    from hypothesis import given, settings, strategies as st
    from nbtorch.ops import views

    dims = st.lists(st.integers(-3, 6), max_size=4)

    @settings(max_examples=150, deadline=None)
    @given(dims, st.integers(0, 60), st.sampled_from(["varargs", "tuple", "list"]))
    def check(shape, numel, form):
        args = tuple(shape) if form == "varargs" else (
            (tuple(shape),) if form == "tuple" else (list(shape),))
        assert _outcome(views._target_shape, args, numel) == _outcome(
            views._infer_size, views._shape_args(args), numel)
    check()
    assert views._target_shape((torch.Size([2, 3]),), 6) == (2, 3)
    assert views._target_shape((True, 6), 6) == (1, 6)
