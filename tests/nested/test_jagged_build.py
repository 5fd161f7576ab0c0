"""Jagged nested tensors: constructors, metadata (shape with the nested int j1, repr,
offsets/lengths), autograd bridges, errors, against PyTorch 2.13 where it is installed."""
import copy
import pickle
import re
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck

A = np.arange(6.).reshape(2, 3)
B = np.arange(9.).reshape(3, 3) - 4


def _torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*nested tensors.*")
    return torch


def _nt(m, *arrays, **kw):
    return m.nested.nested_tensor([m.tensor(a) for a in arrays], layout=m.jagged, **kw)


def _j(text):
    return re.sub(r"j\d+", "j", text)


def test_metadata_matches_pytorch():
    torch = _torch()
    x, t = _nt(nbtorch, A, B), _nt(torch, A, B)
    assert _j(repr(x)) == _j(repr(t))
    assert _j(repr(x.shape)) == _j(repr(t.shape)) == "torch.Size([2, j, 3])"
    assert _j(str(x.stride())) == _j(str(t.stride()))
    assert x.is_nested and x.layout is nbtorch.jagged and isinstance(x, nbtorch.Tensor)
    assert (x.dim(), x.size(0), x.numel(), len(x), x.is_contiguous()) == \
        (t.dim(), t.size(0), t.numel(), len(t), t.is_contiguous())
    assert x.size(1) is x.shape[1] and x.shape[1] != 3
    assert x.values().shape == (5, 3) and x.offsets().tolist() == [0, 2, 5]
    assert x.lengths() is None and x.offsets().dtype is nbtorch.int64
    for c, ref in zip(x.unbind(), (A, B)):
        np.testing.assert_array_equal(c.numpy(), ref)
    np.testing.assert_array_equal(x.to_padded_tensor(-1.).numpy(),
                                  t.to_padded_tensor(-1.).numpy())
    np.testing.assert_array_equal(
        nbtorch.nested.to_padded_tensor(x, 0., output_size=(3, 4, 5)).numpy(),
        torch.nested.to_padded_tensor(t, 0., output_size=(3, 4, 5)).numpy())
    x4 = _nt(nbtorch, np.ones((2, 4, 5)), np.ones((3, 4, 5))).transpose(1, 2)
    t4 = _nt(torch, np.ones((2, 4, 5)), np.ones((3, 4, 5))).transpose(1, 2)
    assert _j(repr(x4)) == _j(repr(t4))
    assert x4.values().shape == t4.values().shape and x4._ragged_idx == 2
    assert x4.unbind()[1].shape == t4.unbind()[1].shape
    assert _j(repr(x4.contiguous())) == _j(repr(t4.contiguous()))


def test_nested_int_identity():
    x = _nt(nbtorch, A, B)
    y = _nt(nbtorch, A, B)
    assert (x + 1).shape == x.shape and x.shape[1] != y.shape[1]
    assert repr(x.shape[1] * 3) == f"3*{x.shape[1]!r}"
    with pytest.raises(RuntimeError, match=r"cannot call binary pointwise function add.Tensor "
                                           r"with inputs of shapes \(2, j\d+, 3\) and "
                                           r"\(2, j\d+, 3\)"):
        x + y
    with pytest.raises(RuntimeError, match="no single value"):
        int(x.shape[1])
    v = nbtorch.randn(5, 3)
    o = nbtorch.tensor([0, 2, 5])
    a = nbtorch.nested.nested_tensor_from_jagged(v, o)
    b = nbtorch.nested.nested_tensor_from_jagged(v * 2, o)
    assert a.shape == b.shape and (a + b).shape == a.shape


@pytest.mark.parametrize("build", [
    lambda m: m.nested.nested_tensor([], layout=m.jagged),
    lambda m: m.nested.nested_tensor([m.tensor(1.), m.tensor(2.)], layout=m.jagged),
    lambda m: m.nested.nested_tensor([m.ones(2, 3), m.ones(3)], layout=m.jagged),
    lambda m: m.nested.nested_tensor([m.ones(2, 3), m.ones(3, 3, dtype=m.float64)],
                                     layout=m.jagged),
    lambda m: m.nested.nested_tensor([m.ones(2, 3), m.ones(3, 4)], layout=m.jagged),
    lambda m: m.nested.nested_tensor([m.ones(2, 3)], layout=m.sparse_coo),
    lambda m: m.nested.nested_tensor_from_jagged(m.ones(5, 3)),
    lambda m: m.nested.narrow(m.ones(2, 5, 3), 2, 0, m.tensor([2, 3]), layout=m.jagged),
    lambda m: m.nested.narrow(m.ones(2, 5, 3), 1, 0, 2),
    lambda m: _nt(m, A, B) + m.ones(2, 3),
    lambda m: _nt(m, A, B).sum(0),
    lambda m: _nt(m, A, B).softmax(0),
    lambda m: m.cat([_nt(m, A, B)] * 2, 0),
    lambda m: m.cat([_nt(m, A, B)] * 2, 1),
    lambda m: _nt(m, A, B).narrow(1, 0, 1),
    lambda m: _nt(m, A, B).unbind(1),
    lambda m: _nt(m, A, B).transpose(0, 1),
    lambda m: _nt(m, A, B)[:, 0],
    lambda m: _nt(m, A, B).view(-1),
])
def test_errors_match_pytorch(build):
    torch = _torch()
    with pytest.raises(Exception) as theirs:
        build(torch)
    with pytest.raises(type(theirs.value)) as ours:
        build(nbtorch)
    mine, theirs = _j(str(ours.value)), _j(str(theirs.value))
    assert mine.split(":")[0] in theirs or theirs.split(":")[0] in mine, (mine, theirs)


def test_constructors_match_pytorch():
    torch = _torch()
    for build in (lambda m: m.nested.nested_tensor([[1, 2], [3]], layout=m.jagged),
                  lambda m: m.nested.nested_tensor([m.ones(2, 3), m.ones(2, 4)],
                                                   layout=m.jagged),
                  lambda m: m.nested.as_nested_tensor(m.arange(24.).reshape(2, 3, 4),
                                                      layout=m.jagged),
                  lambda m: m.nested.nested_tensor_from_jagged(
                      m.arange(15.).reshape(5, 3), lengths=m.tensor([2, 3])),
                  lambda m: m.nested.masked_select(
                      m.arange(6.).reshape(2, 3), m.tensor([[True, False, True],
                                                            [False, False, True]])),
                  lambda m: m.nested.masked_select(m.arange(6.).reshape(2, 3),
                                                   m.tensor([True, False, True])),
                  lambda m: m.nested.narrow(m.arange(45.).reshape(3, 5, 3), 1,
                                            m.tensor([0, 1, 2]), m.tensor([2, 3, 1]),
                                            layout=m.jagged),
                  lambda m: m.nested.narrow(m.arange(30.).reshape(2, 5, 3), 1, 0, 2,
                                            layout=m.jagged),
                  lambda m: m.nested.nested_tensor_from_jagged(
                      m.arange(18.).reshape(6, 3), m.tensor([0, 2, 5]),
                      lengths=m.tensor([1, 2]))):
        x, t = build(nbtorch), build(torch)
        assert _j(repr(x)) == _j(repr(t))
        assert x.dtype == getattr(nbtorch, str(t.dtype).split(".")[1])
        for c, d in zip(x.unbind(), t.unbind()):
            np.testing.assert_array_equal(c.numpy(), d.numpy())


def test_graph_kept_or_cut_as_pytorch():
    a = nbtorch.tensor(A, requires_grad=True)
    b = nbtorch.tensor(B, requires_grad=True)
    x = nbtorch.nested.nested_tensor([a, b], layout=nbtorch.jagged)
    assert x.is_leaf and not x.requires_grad
    y = nbtorch.nested.as_nested_tensor([a, b], layout=nbtorch.jagged)
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn.name() == "NestedViewFromJaggedBackward0"
    assert y.values().grad_fn.name() == "NestedGetValuesBackward0"
    (y * y).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * A)
    # a nested leaf gets a nested gradient of its structure; hooks and retain_grad work
    z = nbtorch.nested.nested_tensor([a, b], layout=nbtorch.jagged, requires_grad=True)
    seen = []
    z.register_hook(lambda g: seen.append(g.is_nested))
    w = z * 3
    w.retain_grad()
    w.to_padded_tensor(0.).sum().backward()
    assert z.grad.is_nested and z.grad.shape == z.shape and seen == [True]
    np.testing.assert_array_equal(z.grad.values().numpy(), np.full((5, 3), 3.))
    assert w.grad.is_nested
    (z * 2).to_padded_tensor(0.).sum().backward()      # accumulates (in place, nested)
    np.testing.assert_array_equal(z.grad.values().numpy(), np.full((5, 3), 5.))
    g, = nbtorch.autograd.grad((z * 3).to_padded_tensor(0.).sum(), [z])
    assert g.is_nested and g.shape == z.shape
    # values requiring grad: nested_tensor_from_jagged is a view of them
    v = nbtorch.tensor(np.arange(15.).reshape(5, 3), requires_grad=True)
    n = nbtorch.nested.nested_tensor_from_jagged(v, nbtorch.tensor([0, 2, 5]))
    n.softmax(1).unbind()[1].sum().backward()
    assert v.grad.shape == (5, 3)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (z * 1).backward()


def test_gradcheck_through_from_jagged_narrow_and_masked_select():
    def f(v):
        n = nbtorch.nested.nested_tensor_from_jagged(v, nbtorch.tensor([0, 2, 5]))
        return (n.softmax(-1) * n.sum(1, keepdim=True)).to_padded_tensor(0.)

    def g(t):
        n = nbtorch.nested.narrow(t, 1, nbtorch.tensor([0, 1]), nbtorch.tensor([2, 3]),
                                  layout=nbtorch.jagged)
        return n.mean(1) + n.exp().sum(1)

    def h(t):
        n = nbtorch.nested.masked_select(t, t > 0)
        return n.to_padded_tensor(-1.) * 2
    rng = np.random.default_rng(1)
    assert gradcheck(f, [nbtorch.tensor(rng.standard_normal((5, 3)), requires_grad=True)])
    assert gradcheck(g, [nbtorch.tensor(rng.standard_normal((2, 5, 3)), requires_grad=True)])
    assert gradcheck(h, [nbtorch.tensor(rng.standard_normal((3, 4)), requires_grad=True)])


def test_casts_copies_inplace_and_pickle():
    x = _nt(nbtorch, A, B)
    assert x.to(nbtorch.float32).dtype is nbtorch.float32
    assert x.double().shape == x.shape and x.to("cpu") is x
    c = x.clone()
    c.mul_(2)
    np.testing.assert_array_equal(c.values().numpy(), 2 * x.values().numpy())
    assert x.detach().shape == x.shape and not x.detach().requires_grad
    leaf = _nt(nbtorch, A, B, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.add_(1)
    y = leaf * 1
    y.add_(1)
    y.to_padded_tensor(0.).sum().backward()
    np.testing.assert_array_equal(leaf.grad.values().numpy(), np.ones((5, 3)))
    for back in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert back.is_nested and back.offsets().tolist() == [0, 2, 5]
        np.testing.assert_array_equal(back.values().numpy(), x.values().numpy())


def test_dense_only_ops_name_the_op_and_the_layout():
    x = _nt(nbtorch, A, B)
    with pytest.raises(NotImplementedError, match=r"'cumsum' .*torch\.jagged"):
        x.cumsum(-1)
    with pytest.raises(NotImplementedError, match=r"'mm' .*torch\.jagged"):
        nbtorch.mm(x, x)
    with pytest.raises(RuntimeError, match="numpy"):
        x.numpy()
    with pytest.raises((NotImplementedError, ValueError)):     # PyTorch: AssertionError
        nbtorch.nn.MultiheadAttention(3, 1, batch_first=True)(x, x, x, need_weights=False)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)


@pytest.mark.parametrize("nested_op, dense_op", [
    (lambda x: x * 2 + 1, lambda c, i: c * 2 + 1),
    (lambda x: x * nbtorch.tensor([[[1.]], [[2.]], [[3.]]]), lambda c, i: c * (i + 1)),
    (lambda x: x.softmax(1), lambda c, i: c.softmax(0)),
    (lambda x: x.softmax(-1), lambda c, i: c.softmax(-1)),
    (lambda x: x.sum(-1), lambda c, i: c.sum(-1)),
    (lambda x: x.contiguous(), lambda c, i: c),
    (lambda x: nbtorch.nn.functional.normalize(x, dim=-1),
     lambda c, i: nbtorch.nn.functional.normalize(c, dim=-1)),
    (lambda x: x.transpose(1, 2).exp().transpose(1, 2), lambda c, i: c.exp()),
])
def test_components_with_holes_match_a_loop(nested_op, dense_op):
    """narrow() leaves holes between components: ops see each component's rows only."""
    base = nbtorch.tensor(np.random.default_rng(3).standard_normal((3, 5, 2)))
    start, length = nbtorch.tensor([0, 1, 3]), nbtorch.tensor([2, 4, 1])
    x = nbtorch.nested.narrow(base, 1, start, length, layout=nbtorch.jagged)
    assert not x.is_contiguous() and x.lengths().tolist() == [2, 4, 1]
    out = nested_op(x)
    for i, got in enumerate(out.unbind()):
        s, n = int(start[i]), int(length[i])
        np.testing.assert_allclose(got.numpy(), dense_op(base[i, s:s + n], i).numpy(),
                                   rtol=1e-12)
    assert x.sum(1).shape == (3, 2)
    np.testing.assert_allclose(x.mean(1).numpy(), np.stack(
        [base[i, int(start[i]):int(start[i]) + int(length[i])].numpy().mean(0)
         for i in range(3)]), rtol=1e-12)


def test_constructor_options():
    x = nbtorch.nested.nested_tensor([[1, 2], [3]], layout=nbtorch.jagged,
                                     dtype=nbtorch.float64, device="cpu", requires_grad=True)
    assert x.dtype is nbtorch.float64 and x.is_leaf and x.requires_grad
    assert nbtorch.nested.as_nested_tensor(x, layout=nbtorch.jagged) is x
    v = nbtorch.randn(5, 3)
    y = nbtorch.nested.nested_tensor_from_jagged(v, nbtorch.tensor([0, 2, 5]), max_seqlen=7)
    assert (y._max_seqlen, y._min_seqlen) == (7, 2)
    z = nbtorch.nested.nested_tensor_from_jagged(v.t(), nbtorch.tensor([0, 2, 5]),
                                                 jagged_dim=2)
    assert z.dim() == 3 and z.size(1) == 3 and z.unbind()[1].shape == (3, 3)
    with pytest.raises(TypeError, match="tensor or a list"):
        nbtorch.nested.as_nested_tensor([[1., 2.]], layout=nbtorch.jagged)
