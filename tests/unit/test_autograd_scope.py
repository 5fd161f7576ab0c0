"""What a backward runs and what it refuses: autograd.grad and backward(inputs=...) run only
the nodes the requested gradients need, as PyTorch does (a node before an input, or on a
branch leading to no input, does not run); a backward made of kernels that record no graph
refuses to be differentiated again instead of giving a second derivative without its terms."""
import nbtorch


class _Spy(nbtorch.autograd.Function):
    calls = []

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        _Spy.calls.append(1)
        return g


def test_grad_stops_at_its_inputs():
    _Spy.calls.clear()
    x = nbtorch.randn(3, requires_grad=True)
    h = _Spy.apply(x) * 2
    g, = nbtorch.autograd.grad(h.exp().sum(), h)
    assert not _Spy.calls
    assert nbtorch.allclose(g, h.exp())


def test_backward_with_inputs_skips_other_branches():
    _Spy.calls.clear()
    x = nbtorch.randn(3, requires_grad=True)
    w = nbtorch.randn(3, requires_grad=True)
    (_Spy.apply(x) * w).sum().backward(inputs=[w])
    assert not _Spy.calls and x.grad is None
    assert nbtorch.allclose(w.grad, x)


def test_an_input_behind_another_still_gets_its_gradient():
    x = nbtorch.randn(3, requires_grad=True)
    h = x * 2
    gh, gx = nbtorch.autograd.grad((h * h).sum(), (h, x))
    assert nbtorch.allclose(gh, 2 * h) and nbtorch.allclose(gx, 8 * x)


def test_backwards_without_a_second_derivative_say_so():
    """grid_sample's and ctc_loss's backwards are kernels that record no graph: under
    create_graph=True their gradients came back as constants, so second derivatives
    silently lacked their terms (gradgradcheck failed). Differentiating them again raises
    now (ctc_loss with PyTorch's message); first derivatives are unchanged."""
    import pytest
    import nbtorch.nn.functional as F
    x = nbtorch.randn(1, 1, 3, 3, dtype=nbtorch.float64, requires_grad=True)
    grid = (nbtorch.rand(1, 2, 2, 2, dtype=nbtorch.float64) * 1.6 - 0.8).requires_grad_()
    out = F.grid_sample(x, grid, align_corners=False).pow(2).sum()
    gx, = nbtorch.autograd.grad(out, x, create_graph=True)
    plain, = nbtorch.autograd.grad(F.grid_sample(x, grid, align_corners=False).pow(2).sum(), x)
    assert nbtorch.allclose(gx.detach(), plain)
    with pytest.raises(RuntimeError, match="grid_sample's backward is not implemented"):
        nbtorch.autograd.grad(gx.sum(), grid)
    lp = nbtorch.randn(4, 1, 3, dtype=nbtorch.float64, requires_grad=True)
    loss = F.ctc_loss(lp.log_softmax(2), nbtorch.tensor([[1, 2]]), nbtorch.tensor([4]),
                      nbtorch.tensor([2]))
    g, = nbtorch.autograd.grad(loss, lp, create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for _ctc_loss_backward"):
        g.pow(2).sum().backward()
