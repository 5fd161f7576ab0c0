"""autograd.grad and backward(inputs=...) run only the nodes the requested gradients need,
as PyTorch does: a node before an input, or on a branch leading to no input, does not run."""
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
