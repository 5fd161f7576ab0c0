"""`ctx.mark_dirty` and `once_differentiable` do what PyTorch's do.

mark_dirty: the dirty input comes back as the same object, one version bump
later, with its history ending in the Function's node (a view: its base in a
CopySlices node, the view in an AsStrided of it); PyTorch's errors for a leaf
that requires grad (or a view of one) and for a dirty tensor not returned.
once_differentiable: the backward runs with grad mode off, and differentiating
through it twice raises PyTorch's error.
Each test runs on nbtorch and, where importable, on PyTorch.
"""
import numpy as np
import pytest

import nbtorch


def _libs():
    libs = [nbtorch]
    try:
        import torch
        libs.append(torch)
    except ImportError:
        pass
    return libs


LIBS = pytest.mark.parametrize("lib", _libs(), ids=lambda m: m.__name__)


def _functions(lib):
    Function = lib.autograd.Function

    class MulInplace(Function):
        @staticmethod
        def forward(ctx, x, s):
            ctx.mark_dirty(x)
            ctx.s = s
            return x.copy_(x * s)         # one version bump, as mul_ in PyTorch

        @staticmethod
        def backward(ctx, g):
            return g * ctx.s, None

    class AddInplace(Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.mark_dirty(x)
            return x.copy_(x + w)

        @staticmethod
        def backward(ctx, g):
            return g, g

    class DirtyNotReturned(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            x.copy_(x * 2)
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g

    class SquareInplace(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)       # saved before the write: PyTorch saves at the
            x.copy_(x * x)                 # end of forward, so backward sees x squared
            return x

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * 2 * y.sqrt()

    class TwoOutputs(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            y = x * 1
            x.copy_(x * 2)
            return y, x

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + 2 * g2
    return MulInplace, AddInplace, DirtyNotReturned, SquareInplace, TwoOutputs


@LIBS
def test_dirty_input_is_returned_bumped_and_rebased(lib):
    MulInplace = _functions(lib)[0]
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.clone()
    v0 = b._version
    y = MulInplace.apply(b, 2.0)
    assert y is b
    assert b._version == v0 + 2              # mul_ inside forward, then mark_dirty's bump
    assert type(b.grad_fn).__name__ == "MulInplaceBackward"
    assert b.grad_fn.next_functions[0][0].name() == "CloneBackward0"
    y.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]


@LIBS
def test_dirty_tensor_that_required_no_grad_joins_the_graph(lib):
    AddInplace = _functions(lib)[1]
    x = lib.zeros(3)
    w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v0 = x._version
    r = AddInplace.apply(x, w)
    assert r is x and x.requires_grad and not x.is_leaf and x._version == v0 + 2
    (x * x).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0, 6.0]


@LIBS
def test_dirty_leaf_that_requires_grad_errors(lib):
    MulInplace = _functions(lib)[0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been "
                                           "used in an in-place operation"):
        MulInplace.apply(lib.ones(3, requires_grad=True), 2.0)
    leaf = lib.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad "
                                           "is being used in an in-place operation"):
        MulInplace.apply(leaf[:2], 2.0)


@LIBS
def test_dirty_leaf_without_recording_is_allowed_and_bumped(lib):
    MulInplace = _functions(lib)[0]
    with lib.no_grad():
        q = lib.ones(3, requires_grad=True)
        v0 = q._version
        MulInplace.apply(q, 2.0)
        assert q._version == v0 + 2 and q.is_leaf and q.tolist() == [2.0] * 3
    x = lib.ones(3)                             # nothing requires grad: nothing recorded
    v0 = x._version
    r = MulInplace.apply(x, 3.0)
    assert r is x and x._version == v0 + 2 and x.grad_fn is None and not x.requires_grad


@LIBS
def test_dirty_but_not_returned_errors(lib):
    DirtyNotReturned = _functions(lib)[2]
    msg = "Some elements marked as dirty during the forward method were not returned"
    for x in (lib.ones(3, requires_grad=True).clone(), lib.ones(3)):
        with pytest.raises(RuntimeError, match=msg):
            DirtyNotReturned.apply(x)
    with lib.no_grad():
        with pytest.raises(RuntimeError, match=msg):
            DirtyNotReturned.apply(lib.ones(3, requires_grad=True))


@LIBS
def test_dirty_view_rebases_its_base(lib):
    MulInplace = _functions(lib)[0]
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    base = x * 1
    v = base[1:3]
    v0 = base._version
    r = MulInplace.apply(v, 3.0)
    assert r is v and base._version == v0 + 2 and v._version == v0 + 2
    assert base.grad_fn.name() == "torch::autograd::CopySlices"
    assert type(base.grad_fn).__name__ == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert v.grad_fn.next_functions[0][0] is base.grad_fn
    assert base.tolist() == [1.0, 6.0, 9.0, 4.0]
    (base * base).sum().backward()       # d/dx of x0^2 + 9 x1^2 + 9 x2^2 + x3^2
    assert x.grad.tolist() == [2.0, 36.0, 54.0, 8.0]


@LIBS
def test_dirty_view_of_a_base_that_required_no_grad(lib):
    AddInplace = _functions(lib)[1]
    base = lib.zeros(4)
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    v = base[:2]
    AddInplace.apply(v, w)
    assert base.requires_grad and type(base.grad_fn).__name__ == "CopySlices"
    (base * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


@LIBS
def test_saving_the_dirty_input_is_no_version_error(lib):
    SquareInplace = _functions(lib)[3]
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = x.clone()
    y = SquareInplace.apply(c)
    assert y is c and c.tolist() == [1.0, 4.0, 9.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


@LIBS
def test_saved_elsewhere_then_dirtied_is_a_version_error(lib):
    MulInplace = _functions(lib)[0]
    x = lib.ones(3, requires_grad=True)
    u = x * 2
    s = u * u                                  # saves u
    MulInplace.apply(u, 2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()


@LIBS
def test_dirty_second_output(lib):
    TwoOutputs = _functions(lib)[4]
    x = lib.ones(3, requires_grad=True)
    c = x.clone()
    v0 = c._version
    o1, o2 = TwoOutputs.apply(c)
    assert o2 is c and c.grad_fn is o1.grad_fn and c._version == v0 + 2
    (o1 + o2).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


@LIBS
def test_dirty_tensor_that_is_not_an_input_warns(lib):
    g = lib.ones(3)

    class DirtyOther(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(g)
            g.copy_(g + 1)
            return g, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            return g2 * 2
    v0 = g._version
    with pytest.warns(UserWarning, match="received a tensor that was not an input"):
        r, _ = DirtyOther.apply(lib.ones(3, requires_grad=True))
    assert r is g and g.requires_grad and g._version == v0 + 2


def test_dirty_output_is_freed_without_the_cycle_collector():
    import gc
    import weakref
    MulInplace = _functions(nbtorch)[0]
    gc.disable()
    try:
        x = nbtorch.ones(3, requires_grad=True)
        c = x * 1
        MulInplace.apply(c, 2.0)
        ref = weakref.ref(c)
        del c
        assert ref() is None
    finally:
        gc.enable()


# ---- once_differentiable ---------------------------------------------------------

def _cube(lib, seen):
    from_fn = lib.autograd.function.once_differentiable

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @from_fn
        def backward(ctx, g):
            seen.append((lib.is_grad_enabled(), g.requires_grad))
            x, = ctx.saved_tensors
            return 3 * x * x * g
    return Cube


@LIBS
def test_once_differentiable_first_order_under_no_grad(lib):
    seen = []
    Cube = _cube(lib, seen)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, 12.0] and seen == [(False, False)]
    (gx,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert not gx.requires_grad                 # the incoming gradient required none


@LIBS
def test_once_differentiable_twice_raises(lib):
    seen = []
    Cube = _cube(lib, seen)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x)
    (gx,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
    assert seen == [(False, True)]
    np.testing.assert_allclose(gx.detach().numpy(), [6.0, 384.0 / 2])
    assert gx.requires_grad and gx.grad_fn.name() == "torch::autograd::Error"
    assert type(gx.grad_fn).__name__ == "Error"
    nxt = gx.grad_fn.next_functions[0][0]
    assert nxt.name() == "torch::autograd::AccumulateGrad"
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that "
                                           "was marked with @once_differentiable"):
        gx.sum().backward()


@LIBS
def test_once_differentiable_with_two_outputs_and_a_none(lib):
    once = lib.autograd.function.once_differentiable

    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * 2

        @staticmethod
        @once
        def backward(ctx, g):
            return g * 2, None
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (gx,) = lib.autograd.grad(Scale.apply(x, lib.ones(2)).pow(2).sum(), x,
                              create_graph=True)
    assert gx.tolist() == [8.0, 16.0] and gx.grad_fn.name() == "torch::autograd::Error"
    with pytest.raises(RuntimeError, match="differentiate twice"):
        gx.sum().backward()
