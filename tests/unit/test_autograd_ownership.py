"""Gradient buffers change hands by ownership the engine sets (engine.py, Ownership).

A leaf's `.grad` takes a gradient without a copy only when the engine owns it:
made by the engine (the implicit root gradient, a sum of two gradients) or
returned new by a built-in node and seen by no hook. Everything else is copied,
so a `.grad` never aliases the user's tensors, a hook's, or another leaf's —
what PyTorch guarantees (its AccumulateGrad steals only unshared gradients).
"""
import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import Function, graph


@pytest.fixture
def copies(monkeypatch):
    """Count the copies AccumulateGrad makes instead of taking a gradient over."""
    made = []
    real = graph._copy_of

    def counting(g):
        made.append(g)
        return real(g)
    monkeypatch.setattr(graph, "_copy_of", counting)
    return made


def _libs():
    libs = [nbtorch]
    try:
        import torch
        libs.append(torch)
    except ImportError:
        pass
    return libs


LIBS = pytest.mark.parametrize("lib", _libs(), ids=lambda m: m.__name__)


def test_new_gradients_of_built_in_nodes_are_taken(copies):
    nbtorch.manual_seed(0)
    model = nbtorch.nn.Sequential(nbtorch.nn.Linear(4, 3), nbtorch.nn.ReLU(),
                                  nbtorch.nn.Linear(3, 2))
    x = nbtorch.randn(5, 4)
    for _ in range(2):
        model.zero_grad()
        model(x).square().sum().backward()
    assert copies == []
    assert all(p.grad is not None and p.grad.is_contiguous() for p in model.parameters())


def test_implicit_root_gradient_and_sums_are_taken(copies):
    x = nbtorch.ones((), requires_grad=True)
    x.backward()                                   # the root's ones(): the engine's own
    w = nbtorch.ones(3, requires_grad=True)
    (w * 2 + w * 3).sum().backward()               # two gradients meet at w: their sum
    assert copies == []
    assert x.grad.item() == 1.0 and w.grad.tolist() == [5.0] * 3


def test_a_pass_through_gradient_is_copied(copies):
    """add's backward passes its gradient on as is: two leaves, two buffers."""
    x = nbtorch.ones(3, requires_grad=True)
    y = nbtorch.ones(3, requires_grad=True)
    (x * 2 + y).sum().backward()
    assert len(copies) == 1
    assert x.grad._storage is not y.grad._storage


def test_a_view_of_a_given_gradient_is_copied(copies):
    x = nbtorch.ones(2, 3, requires_grad=True)
    (x.view(6) * nbtorch.arange(6.0)).sum().backward()
    assert len(copies) == 1
    assert x.grad.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@LIBS
def test_grad_tensors_of_the_user_are_not_aliased(lib):
    x = lib.ones(3, requires_grad=True)
    g = lib.tensor([1.0, 2.0, 3.0])
    x.backward(g)
    x.grad.add_(1.0)
    assert g.tolist() == [1.0, 2.0, 3.0]
    y = x * 1
    y.backward(g)                 # a pass-through of the user's tensor, then accumulated
    assert g.tolist() == [1.0, 2.0, 3.0] and x.grad.tolist() == [3.0, 5.0, 7.0]


@LIBS
def test_a_gradient_kept_by_a_post_hook_is_not_aliased(lib):
    x = lib.ones(3, requires_grad=True)
    kept = []
    y = x * 3
    y.grad_fn.register_hook(lambda gi, go: kept.append(gi[0]))
    y.sum().backward()
    x.grad.mul_(0.0)
    assert kept[0].tolist() == [3.0] * 3


@LIBS
def test_a_gradient_kept_by_a_leaf_hook_is_not_aliased(lib):
    x = lib.ones(3, requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2).sum().backward()
    (x * 2).sum().backward()                # in-place accumulation into .grad
    assert [k.tolist() for k in kept] == [[2.0] * 3] * 2
    assert x.grad.tolist() == [4.0] * 3


@LIBS
def test_a_tensor_returned_by_a_pre_hook_is_not_aliased(lib):
    x = lib.ones(3, requires_grad=True)
    mine = lib.full((3,), 7.0)
    y = x.clone()                           # clone's backward passes its gradient on
    y.grad_fn.register_prehook(lambda go: (mine,))
    y.sum().backward()
    x.grad.zero_()
    assert mine.tolist() == [7.0] * 3


@LIBS
def test_a_tensor_a_custom_function_keeps_is_not_aliased(lib):
    kept = {}

    class Keep(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            kept["g"] = g * 2               # new, but this backward holds on to it
            return kept["g"]
    x = lib.ones(2, requires_grad=True)
    Keep.apply(x).sum().backward()
    Keep.apply(x).sum().backward()          # accumulates into x.grad in place
    assert kept["g"].tolist() == [2.0, 2.0] and x.grad.tolist() == [4.0, 4.0]


def test_one_new_gradient_returned_twice_is_copied(copies):
    """A node that returns one tensor for two inputs shares it: the leaves get copies."""
    class Twice(Function):
        __module__ = "nbtorch.ops.test_only"        # counts as built-in: trusted
        _backward_cls = None

        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            h = g * 1.0
            return h, h
    assert Twice._backward_cls._new_grads
    x = nbtorch.ones(2, requires_grad=True)
    y = nbtorch.ones(2, requires_grad=True)
    Twice.apply(x, y).sum().backward()
    assert copies and x.grad._storage is not y.grad._storage
    x.grad.add_(1.0)
    assert y.grad.tolist() == [1.0, 1.0]


def test_custom_functions_are_not_trusted(copies):
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    assert not Double._backward_cls._new_grads
    x = nbtorch.ones(2, requires_grad=True)
    Double.apply(x).sum().backward()
    assert len(copies) == 1 and x.grad.tolist() == [2.0, 2.0]


def test_accumulation_is_in_place_and_create_graph_still_records():
    x = nbtorch.ones(3, requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    (x * x).sum().backward()
    assert x.grad is first and first.tolist() == [4.0] * 3
    x.grad = None
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = nbtorch.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.full(3, 6.0))


def test_no_reference_counting_in_autograd():
    import inspect
    from nbtorch.autograd import engine
    for mod in (graph, engine):
        assert "getrefcount" not in inspect.getsource(mod)
