"""Fused first-order gradients of the piecewise activations (leaky_relu, hardtanh/relu6,
hardsigmoid, hardswish: one kernel instead of a mask, a product and a select): bit for
bit the differentiable formula, which still serves create_graph."""
import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck, gradgradcheck
from nbtorch.ops import pointwise_activation as act

F = nbtorch.nn.functional
CASES = {
    "leaky_relu": (lambda t: F.leaky_relu(t, 0.2), act.LeakyRelu),
    "hardtanh": (lambda t: F.hardtanh(t, -0.7, 1.3), act.Hardtanh),
    "relu6": (F.relu6, act.Hardtanh),
    "hardsigmoid": (F.hardsigmoid, act.Hardsigmoid),
    "hardswish": (F.hardswish, act.Hardswish),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_gradient_is_the_formula_bit_for_bit(name, monkeypatch):
    fn, cls = CASES[name]
    for dtype in (nbtorch.float32, nbtorch.float64):
        for n in (7, 20000):
            x = nbtorch.randn(n, dtype=dtype) * 4
            x[:7] = nbtorch.tensor([float("nan"), 0.0, -0.0, 3.0, -3.0, 1.3, -0.7])
            x.requires_grad_(True)
            g = nbtorch.randn(n, dtype=dtype)
            fn(x).backward(g)
            fused, x.grad = x.grad, None
            with monkeypatch.context() as m:
                m.setattr(cls, "grad_kernel", None)
                fn(x).backward(g)
            np.testing.assert_array_equal(fused.numpy().view(np.uint8),
                                          x.grad.numpy().view(np.uint8))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_and_second_derivatives(name):
    fn, _ = CASES[name]
    x = (nbtorch.rand(4, 5, dtype=nbtorch.float64) * 8 - 4).requires_grad_(True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
