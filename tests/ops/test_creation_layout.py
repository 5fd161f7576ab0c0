"""Memory formats (channels_last, preserve_format), frombuffer, empty_permuted."""
import numpy as np
import pytest

import nbtorch as torch


def test_memory_formats():
    x = torch.arange(120.0).reshape(2, 3, 4, 5)
    y = x.contiguous(memory_format=torch.channels_last)
    assert y.stride() == (60, 1, 15, 3) and y.is_contiguous(memory_format=torch.channels_last)
    assert not y.is_contiguous() and y.tolist() == x.tolist()
    assert y.contiguous(memory_format=torch.channels_last) is y
    assert x.to(memory_format=torch.channels_last).stride() == (60, 1, 15, 3)
    assert torch.empty_like(x, memory_format=torch.channels_last).stride() == (60, 1, 15, 3)
    assert torch.zeros_like(x, memory_format=torch.channels_last).sum().item() == 0
    assert torch.empty(2, 3, 4, 5, 6, memory_format=torch.channels_last_3d).stride() == \
        (360, 1, 90, 18, 3)
    p = x.permute(0, 2, 3, 1)
    assert p.clone(memory_format=torch.preserve_format).stride() == p.stride()
    assert torch.full_like(p, 2.0, memory_format=torch.preserve_format).stride() == p.stride()
    assert x[:, :, ::2].clone(memory_format=torch.preserve_format).is_contiguous()
    assert torch.zeros(1, 3, 1, 1).is_contiguous(memory_format=torch.channels_last)
    assert repr(torch.channels_last) == "torch.channels_last"
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        torch.zeros(3, 4).contiguous(memory_format=torch.channels_last)
    with pytest.raises(TypeError, match="memory_format"):
        x.clone(memory_format="channels_last")


def test_memory_format_gradients_flow():
    x = torch.randn(1, 2, 3, 3, requires_grad=True)
    (x.contiguous(memory_format=torch.channels_last) * 2).sum().backward()
    assert x.grad.tolist() == torch.full((1, 2, 3, 3), 2.0).tolist()


def test_frombuffer_shares_memory():
    b = bytearray(np.array([1, 2, 3], np.int32).tobytes())
    t = torch.frombuffer(b, dtype=torch.int32)
    assert t.tolist() == [1, 2, 3]
    b[0] = 7
    assert t[0].item() == 7
    t[1] = 9
    assert np.frombuffer(b, np.int32)[1] == 9
    assert torch.frombuffer(b, dtype=torch.int8, count=2, offset=4).tolist() == [9, 0]
    with pytest.raises(ValueError, match="multiple of element size"):
        torch.frombuffer(b, dtype=torch.int32, offset=3)
    with pytest.raises(ValueError, match="must not be greater than actual buffer length"):
        torch.frombuffer(b, dtype=torch.int32, count=4)
    with pytest.raises(ValueError, match="buffer protocol"):
        torch.frombuffer([1, 2], dtype=torch.int8)


def test_empty_permuted_and_new_empty_strided():
    assert torch.empty_permuted((2, 3, 4), (2, 0, 1)).stride() == (3, 1, 6)
    assert torch.zeros(2).new_empty_strided((2, 3), (1, 2)).stride() == (1, 2)


def test_small_contiguous_without_a_node_is_the_clone_and_respects_a_swapped_kernel():
    """Unrecorded small CPU contiguous() is one np.copyto (ops/copy._numpy_contiguous): the
    values, dtype and a fresh contiguous storage as Clone gives them; with grad, or with a
    user's copy kernel registered, the Clone path runs."""
    x = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4).permute(2, 0, 1)
    c = x.contiguous()
    assert c.is_contiguous() and c.dtype is torch.float64 and c._base is None
    assert np.array_equal(c.numpy(), np.ascontiguousarray(x.numpy()))
    assert c.data_ptr() != x.data_ptr()
    g = x.detach().requires_grad_().contiguous()
    assert g.grad_fn is not None and np.array_equal(g.detach().numpy(), c.numpy())
    b = torch.tensor([[True, False], [False, True]]).t().contiguous()
    assert b.tolist() == [[True, False], [False, True]] and b.is_contiguous()
    calls = []
    original = torch._registry.get_kernel("copy_", "cpu")

    def mine(*args):
        calls.append(1)
        return original(*args)
    torch.register_kernel("copy_", "cpu", mine, override=True)
    try:
        assert np.array_equal(x.contiguous().numpy(), c.numpy()) and calls
    finally:
        torch.register_kernel("copy_", "cpu", original, override=True)
