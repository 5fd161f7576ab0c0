"""The tape: backward, accumulation, hooks, grad modes, Function, errors."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.autograd import Function, gradcheck, gradgradcheck


def test_backward_accumulates_on_leaves():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])
    assert x.is_leaf and (x * 2).grad_fn is not None and not (x * 2).is_leaf


def test_grad_fn_names():
    x = torch.ones(2, requires_grad=True)
    assert (x + 1).grad_fn.name() == "AddBackward0"
    assert "MulBackward0" in repr(x * 2)


def test_broadcast_gradient_summed_back():
    a = torch.ones(2, 3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    (a * b).sum().backward()
    assert b.grad.shape == (3,) and b.grad.tolist() == [2.0, 2.0, 2.0]


def test_non_scalar_backward_needs_gradient():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(torch.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_backward_twice_error_and_retain_graph():
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_no_grad_and_decorators():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        assert not (x * 2).requires_grad
        with torch.enable_grad():
            assert (x * 2).requires_grad

    @torch.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad

    @torch.no_grad
    def g(t):
        return t * 2
    assert not g(x).requires_grad
    with torch.set_grad_enabled(False):
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    with torch.inference_mode():
        assert not (x * 2).requires_grad


def test_hooks_and_retain_grad():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    y.retain_grad()
    seen = []
    h = y.register_hook(lambda g: seen.append(g.clone()) or g * 10)
    y.sum().backward()
    assert seen[0].tolist() == [1.0, 1.0, 1.0]
    assert x.grad.tolist() == [20.0, 20.0, 20.0]
    assert y.grad.tolist() == [10.0, 10.0, 10.0]   # retain_grad runs after hooks
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    x.grad = None
    x.register_hook(lambda g: g * 0)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_autograd_grad_and_create_graph():
    x = torch.tensor([2.0], requires_grad=True)
    y = x * x * x
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    assert g.item() == 12.0
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert gg.item() == 12.0
    assert x.grad is None
    z = torch.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        torch.autograd.grad((x * 2).sum(), (x, z))
    gx, gz = torch.autograd.grad((x * 2).sum(), (x, z), allow_unused=True)
    assert gz is None and gx.item() == 2.0


def test_inplace_on_leaf_errors():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with torch.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 2.0]


def test_version_counter_detects_modified_saved_tensor():
    x = torch.ones(2, requires_grad=True)
    y = x.exp()
    z = y.exp()          # saves y's output
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_on_non_leaf_rebases_history():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.mul_(x)            # y = 2x * x
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_setitem_view_of_non_leaf_copyslices():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([10.0], requires_grad=True)
    y = x * 1
    y[1:2] = w * 3
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    assert w.grad.tolist() == [3.0]


def test_grad_on_integer_tensor_errors():
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2]).requires_grad_()


def test_deep_chain_no_recursion_limit():
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1
    y.backward()
    assert x.grad.item() == 1.0


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x * x


def test_custom_function_gradcheck_and_names():
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    assert gradcheck(Cube.apply, (x,))
    assert gradgradcheck(Cube.apply, (x,))
    assert Cube.apply(x).grad_fn.name() == "CubeBackward"


class BadShape(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return torch.ones(5)


def test_wrong_gradient_shape_names_node():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="BadShapeBackward returned an invalid gradient"):
        BadShape.apply(x).sum().backward()


def test_needs_input_grad_and_non_differentiable():
    class F(Function):
        @staticmethod
        def forward(ctx, a, b):
            out = a * b
            idx = a > 0
            ctx.mark_non_differentiable(idx)
            ctx.seen = ctx.needs_input_grad
            return out, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            return g, None

    a = torch.ones(2, requires_grad=True)
    out, idx = F.apply(a, torch.ones(2))
    assert not idx.requires_grad and out.requires_grad
    out.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]


def test_gradcheck_views_and_basic_ops():
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (a * b + a / (b * b + 1)).exp(), (x, y))
    assert gradcheck(lambda a: a.t().reshape(6)[1:5:2], (x,))
    assert gradcheck(lambda a: a.permute(1, 0).unsqueeze(0).expand(2, 3, 2), (x,))
    assert gradcheck(lambda a: a.sum(dim=0, keepdim=True) - a.sum(), (x,))
    assert gradgradcheck(lambda a, b: (a * b).exp().sum(dim=1), (x, y))


def test_memory_freed_after_backward():
    import gc
    import weakref
    x = torch.ones(1000, requires_grad=True)
    y = x.exp()
    ref = weakref.ref(y.grad_fn)
    y.sum().backward()
    del y
    gc.collect()
    assert ref() is None


def test_inplace_write_into_expanded_tensor_errors():
    x = torch.ones(3).expand(2, 3)       # (fill_ and zero_ are allowed, as in PyTorch 2.13)
    for write in (lambda: x.add_(1), lambda: x.copy_(torch.zeros(2, 3))):
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            write()
    y = torch.ones(1).expand(1, 1)       # size-1 dims may have stride 0
    y.add_(1)
    assert y.item() == 2.0


def test_next_functions_written_like_pytorch():
    x = torch.ones(2, requires_grad=True)
    y = x * torch.ones(2)
    (node, slot), missing = y.grad_fn.next_functions
    assert node.name() == "torch::autograd::AccumulateGrad" and slot == 0
    assert missing == (None, 0)


def test_only_tensor_arguments_get_edges():
    """PyTorch's next_functions list tensor inputs only: a Function's non-tensor arguments
    (dims, flags, Python numbers) get no edge, and backward still returns one value per
    argument."""
    x = torch.ones(2, 3, requires_grad=True)
    assert len(x.sum(dim=0, keepdim=True).grad_fn.next_functions) == 1
    assert len(x.mean().grad_fn.next_functions) == 1

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, k, t, flag):
            ctx.k = k
            return t * k

        @staticmethod
        def backward(ctx, g):
            return None, g * ctx.k, None

    y = Scale.apply(3.0, x, True)
    assert len(y.grad_fn.next_functions) == 1
    y.sum().backward()
    assert (x.grad.numpy() == 3).all()
    assert repr(y.grad_fn.next_functions[0][0]).startswith("<AccumulateGrad object at ")


def test_wrong_number_of_gradients_counts_every_argument():
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t, k):
            return t * k

        @staticmethod
        def backward(ctx, g):
            return g

    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 1\)"):
        Bad.apply(x, 2.0).sum().backward()
