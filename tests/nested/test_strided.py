"""The strided nested layout (nbtorch/nested/_strided.py): constructor, repr, sizes,
unbind, to_padded_tensor and per-component ops, against PyTorch 2.13."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck

RNG = np.random.default_rng(2)
COMPS = [RNG.standard_normal((2, 3)), RNG.standard_normal((4, 3))]
W = RNG.standard_normal((5, 3))


def _torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*nested tensors.*")
    return torch


def _nt(m, comps=COMPS, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return m.nested.nested_tensor([m.tensor(c) for c in comps], **kw)


def test_repr_sizes_and_padding_match_pytorch():
    torch = _torch()
    ints = [np.arange(6.).reshape(2, 3), np.arange(8.).reshape(2, 4)]
    x, t = _nt(nbtorch, ints), _nt(torch, ints)
    assert repr(x) == repr(t)
    assert x.is_nested and x.layout is nbtorch.strided and isinstance(x, nbtorch.Tensor)
    assert (x.dim(), x.size(0), x.size(1), x.numel()) == (t.dim(), t.size(0), t.size(1),
                                                          t.numel())
    for build in (lambda m, n: n.shape, lambda m, n: n.size(2)):
        with pytest.raises(RuntimeError) as theirs:
            build(torch, t)
        with pytest.raises(RuntimeError, match=str(theirs.value)[:30]):
            build(nbtorch, x)
    np.testing.assert_array_equal(x.to_padded_tensor(-1.).numpy(),
                                  t.to_padded_tensor(-1.).numpy())
    np.testing.assert_array_equal(x.to_padded_tensor(0., (3, 3, 5)).numpy(),
                                  t.to_padded_tensor(0., (3, 3, 5)).numpy())
    with pytest.warns(UserWarning, match="prototype stage"):
        nbtorch.nested.nested_tensor([nbtorch.ones(2)])


@pytest.mark.parametrize("fn", [
    lambda m, x: x.relu() * 2 + 1,
    lambda m, x: m.nn.functional.linear(x, m.tensor(W)),
    lambda m, x: x.softmax(-1),
    lambda m, x: m.nn.functional.layer_norm(x, (3,), m.tensor(W[0]), m.tensor(W[1])),
    lambda m, x: x * x + x,
])
def test_per_component_ops_match_pytorch(fn):
    torch = _torch()

    def run(m):
        ts = [m.tensor(c, requires_grad=True) for c in COMPS]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(m, m.nested.as_nested_tensor(ts))
        assert out.is_nested
        out.to_padded_tensor(0.).sum().backward()
        return out, ts
    (out, ts), (tout, tts) = run(nbtorch), run(torch)
    for a, b in zip(out.unbind(), tout.unbind()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)
    for a, b in zip(ts, tts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_autograd_leaf_gradcheck_and_refusals():
    x = _nt(nbtorch, requires_grad=True)
    assert x.is_leaf
    (x * x).to_padded_tensor(0.).sum().backward()
    for g, c in zip(x.grad.unbind(), COMPS):
        np.testing.assert_allclose(g.numpy(), 2 * c)

    def f(a, b):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            n = nbtorch.nested.as_nested_tensor([a, b])
        return nbtorch.nn.functional.linear(n.tanh(), nbtorch.tensor(W)).to_padded_tensor(0.)
    assert gradcheck(f, [nbtorch.tensor(c, requires_grad=True) for c in COMPS])
    t = _nt(nbtorch).transpose(1, 2).sin()
    for a, c in zip(t.unbind(), COMPS):
        np.testing.assert_allclose(a.numpy(), np.sin(c.T))
    with pytest.raises(NotImplementedError, match=r"'cumsum' .*torch\.strided"):
        _nt(nbtorch).cumsum(1)
    with pytest.raises(RuntimeError, match="dim=0"):
        _nt(nbtorch).softmax(0)


def test_to_padded_tensor_of_a_dense_tensor_is_refused_as_pytorch():
    torch = _torch()
    for m in (torch, nbtorch):
        with pytest.raises(NotImplementedError, match="aten::to_padded_tensor"):
            m.nested.to_padded_tensor(m.ones(2, 3), 0.)
