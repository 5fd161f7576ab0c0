"""autograd.graph.allow_mutation_on_saved_tensors: in-place writes into saved tensors."""
import numpy as np
import pytest

import nbtorch
from nbtorch.autograd.graph import allow_mutation_on_saved_tensors


def _run(lib):
    out = {}
    with lib.autograd.graph.allow_mutation_on_saved_tensors():
        a = lib.ones(2, 3, requires_grad=True)
        b = a.clone()
        loss = (b ** 2).sum()
        b.sin_()                            # b was saved by pow: backward sees the ones
        loss.backward()
        out["pow"] = a.grad.numpy().tolist()
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        e = x.exp()
        s = (e * 2).sum() + e.sum()
        e.add_(1)                           # a saved output, written in place
        out["exp"] = lib.autograd.grad(s, x)[0].numpy().tolist()
    return out


def test_backward_uses_saved_values():
    got = _run(nbtorch)
    np.testing.assert_allclose(got["pow"], np.full((2, 3), 2.0))
    np.testing.assert_allclose(got["exp"], [3.0, 3 * np.e], rtol=1e-6)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    ref, got = _run(torch), _run(nbtorch)
    np.testing.assert_allclose(got["pow"], ref["pow"])
    np.testing.assert_allclose(got["exp"], ref["exp"], rtol=1e-6)


def test_backward_outside_the_context():
    a = nbtorch.ones(2, requires_grad=True)
    with allow_mutation_on_saved_tensors():
        b = a.clone()
        loss = (b * b).sum()
        b.mul_(3)
    with pytest.raises(AssertionError, match="Trying to backward outside of the "
                                             "'allow_mutation_on_saved_tensors' context"):
        loss.backward()


def test_not_nested_and_plain_mode_still_refuses():
    with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors contexts "
                                           "cannot be nested"):
        with allow_mutation_on_saved_tensors():
            with allow_mutation_on_saved_tensors():
                pass
    a = nbtorch.ones(2, requires_grad=True)
    b = a.clone()
    loss = (b * b).sum()
    b.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_unmodified_saved_tensor_is_the_original():
    with allow_mutation_on_saved_tensors():
        a = nbtorch.ones(2, requires_grad=True)
        y = a * a
        assert y.grad_fn._saved_self is a
