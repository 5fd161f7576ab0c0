"""The training path's shortcuts keep PyTorch's behaviour.

- AccumulateGrad takes a gradient nobody else holds as `.grad` without a copy
  (as PyTorch does), and copies whenever the gradient is shared: held by the
  user, by a hook, by another leaf, or a view.
- Tensors share one interned device object per device (the engine's and the
  operands' identity checks rely on it).
- The shape-layout cache of `empty` gives the same strides and sizes.
"""
import weakref

import numpy as np

import nbtorch
from nbtorch._device import CPU
from nbtorch._tensor import empty, contiguous_strides


def _storage_of_first_grad(node_of, x, run):
    """Run backward, remembering (weakly) the storage of the gradient a node sends to x.

    The node's apply is wrapped rather than hooked: a hook could keep what it
    sees, so the engine never hands a hooked gradient over without a copy.
    """
    seen = []
    out = run()
    node = node_of(out)
    apply = node.apply

    def spy(*grads):
        result = apply(*grads)
        seen.append(weakref.ref(result[0]._storage))
        return result
    node.apply = spy
    out.backward()
    return seen[0]()


def test_fresh_gradient_is_taken_without_a_copy():
    x = nbtorch.ones(5, requires_grad=True)
    storage = _storage_of_first_grad(lambda s: s.grad_fn.next_functions[0][0], x,
                                     lambda: (x * 3).sum())
    assert x.grad._storage is storage
    assert np.array_equal(x.grad.numpy(), np.full(5, 3, np.float32))


def test_gradient_held_by_the_user_is_copied():
    x = nbtorch.ones(3, requires_grad=True)
    g = nbtorch.tensor([1.0, 2.0, 3.0])
    x.backward(g)
    assert x.grad is not g and x.grad._storage is not g._storage
    x.grad.add_(1.0)
    assert g.tolist() == [1.0, 2.0, 3.0]


def test_gradient_kept_by_a_hook_is_copied():
    x = nbtorch.ones(3, requires_grad=True)
    kept = []
    x.register_hook(kept.append)
    (x * 2).sum().backward()
    assert kept[0]._storage is not x.grad._storage
    x.grad.zero_()
    assert kept[0].tolist() == [2.0, 2.0, 2.0]


def test_gradient_shared_by_two_leaves_is_copied():
    x = nbtorch.ones(3, requires_grad=True)
    y = nbtorch.ones(3, requires_grad=True)
    (x + y).sum().backward()
    assert x.grad._storage is not y.grad._storage
    x.grad.add_(5.0)
    assert y.grad.tolist() == [1.0, 1.0, 1.0]


def test_accumulation_over_two_backwards():
    x = nbtorch.ones(4, requires_grad=True)
    for _ in range(2):
        (x * x).sum().backward()
    assert x.grad.tolist() == [4.0] * 4


def test_gradient_of_a_view_is_not_taken():
    x = nbtorch.ones(2, 3, requires_grad=True)
    (x.t() * 2).sum().backward()
    assert x.grad.is_contiguous() and x.grad.tolist() == [[2.0] * 3] * 2


def test_devices_are_interned():
    a = nbtorch.ones(2, device=nbtorch.device("cpu"))
    b = nbtorch.zeros_like(a)
    c = nbtorch.tensor([1.0], device=nbtorch.device("cpu"))
    assert a.device is CPU and b.device is CPU and c.device is CPU
    assert (a + b).device is CPU


def test_empty_layout_cache():
    for shape in [(), (0,), (3,), (2, 3), [2, 3], (4, 1, 5)]:
        t = empty(shape, nbtorch.float32)
        assert t.shape == tuple(shape) and t.stride() == contiguous_strides(tuple(shape))
        assert type(t.shape).__name__ == "Size"


def test_linear_is_one_node_with_gradients_in_parameter_layout():
    import nbtorch.nn.functional as F
    from nbtorch.autograd import gradcheck, gradgradcheck
    x = nbtorch.randn(4, 3, dtype=nbtorch.float64, requires_grad=True)
    w = nbtorch.randn(2, 3, dtype=nbtorch.float64, requires_grad=True)
    b = nbtorch.randn(2, dtype=nbtorch.float64, requires_grad=True)
    y = F.linear(x, w, b)
    assert y.grad_fn.name() == "AddmmBackward0"
    y.sum().backward()
    assert w.grad.is_contiguous() and w.grad.shape == w.shape and b.grad.shape == b.shape
    assert gradcheck(F.linear, (x, w, b))
    assert gradgradcheck(F.linear, (x, w, b))


def test_sum_to_drops_leading_dims_with_one_reduction():
    from nbtorch.ops._common import sum_to
    g = nbtorch.ones(4, 2, 3)
    assert sum_to(g, (3,)).tolist() == [8.0] * 3
    assert sum_to(g, (2, 1)).tolist() == [[12.0], [12.0]]
    assert sum_to(g, (1, 3)).tolist() == [[8.0] * 3]


def test_int_index_view_without_grad_and_with_grad():
    x = nbtorch.arange(24.0).reshape(2, 3, 4)
    for i in (0, 1, -1, -2):
        v = x[i]
        assert v.shape == (3, 4) and v.stride() == (4, 1) and v._base is (x if x._base is None else x._base)
        assert np.array_equal(v.numpy(), x.numpy()[i])
        assert np.shares_memory(v.numpy(), x.numpy())
    assert x[1][2][3].item() == 23.0 and x[1][2][3].numpy().shape == ()
    x[0].fill_(-1.0)
    assert x.sum().item() == -12.0 + sum(range(12, 24))
    w = nbtorch.ones(3, 2, requires_grad=True)
    w[1].sum().backward()
    assert w.grad.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]


def test_hooks_registered_between_backwards_take_the_general_path():
    """The engine's short path runs `_plain` nodes only: registering any hook or a
    retained gradient on a node that already ran through it turns it off."""
    x = nbtorch.randn(3, dtype=nbtorch.float64, requires_grad=True)
    h = x * 2.0
    y = h.exp()
    loss = y.sum()
    loss.backward(retain_graph=True)
    first = x.grad.clone()
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: seen.append("post"))
    h.register_hook(lambda g: g * 3)
    h.retain_grad()
    x.grad = None
    loss.backward()
    assert seen == ["pre", "post"]
    np.testing.assert_allclose(x.grad.numpy(), 3 * first.numpy())
    np.testing.assert_allclose(h.grad.numpy(), y.detach().numpy() * 3)
