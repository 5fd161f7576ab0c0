"""Elementwise results, clones, casts and *_like tensors keep their inputs' layout, as
PyTorch's TensorIterator and preserve_format do (strides below were printed by PyTorch
2.13); values always equal NumPy's, and the loop runs in the inputs' memory order."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtorch
from nbtorch._memory_format import non_overlapping_and_dense


def _x():
    return nbtorch.arange(24, dtype=nbtorch.float32).reshape(4, 6)


# case -> (fn, the strides PyTorch 2.13 gives)
CASES = {
    "t + t": (lambda x: x.t() + x.t(), (1, 6)),
    "t + contiguous": (lambda x: x.t() + x.t().contiguous(), (1, 6)),
    "contiguous + t": (lambda x: x.t().contiguous() + x.t(), (4, 1)),
    "t * number": (lambda x: x.t() * 2, (1, 6)),
    "exp of t": (lambda x: x.t().exp(), (1, 6)),
    "t + row": (lambda x: x.t() + nbtorch.ones(4), (1, 6)),
    "t + column": (lambda x: x.t() + nbtorch.ones(6, 1), (1, 6)),
    "gapped t + 1": (lambda x: x[:, ::2].t() + 1, (1, 3)),
    "comparison": (lambda x: x.t() > 3, (1, 6)),
    "where": (lambda x: nbtorch.where(x.t() > 3, x.t(), 0.), (1, 6)),
    "expanded column": (lambda x: nbtorch.ones(6, 1).expand(6, 4) + 1, (4, 1)),
    "3-d permute": (lambda x: x.reshape(2, 3, 4).permute(2, 0, 1) + 1, (1, 12, 4)),
    "3-d permute + broadcast": (
        lambda x: x.reshape(2, 3, 4).permute(2, 0, 1) + nbtorch.ones(2, 1), (1, 12, 4)),
    "size-1 dim + number": (lambda x: x[:1].t() + 1, (1, 6)),
    "clamp": (lambda x: x.t().clamp(0, 1), (1, 6)),
    "int + number": (lambda x: x.t().int() + 1, (1, 6)),
    "half + number": (lambda x: x.t().half() + 1, (1, 6)),
    "clone of t": (lambda x: x.t().clone(), (1, 6)),
    "clone of gapped t": (lambda x: x[:, ::2].t().clone(), (1, 3)),
    "double of t": (lambda x: x.t().double(), (1, 6)),
    "double of gapped t": (lambda x: x[:, ::2].t().double(), (1, 3)),
    "zeros_like t": (lambda x: nbtorch.zeros_like(x.t()), (1, 6)),
    "empty_like gapped t": (lambda x: nbtorch.empty_like(x[:, ::2].t()), (1, 3)),
    "full_like t": (lambda x: nbtorch.full_like(x.t(), 2.0), (1, 6)),
    "rand_like t": (lambda x: nbtorch.rand_like(x.t()), (1, 6)),
    "clone contiguous_format": (
        lambda x: x.t().clone(memory_format=nbtorch.contiguous_format), (4, 1)),
    # masked_fill fills a contiguous clone; complex() keeps its parts' layout
    "masked_fill t": (lambda x: x.t().masked_fill(x.t() > 3, 0.), (4, 1)),
    "masked_fill t, tensor value": (
        lambda x: x.t().masked_fill(x.t() > 3, nbtorch.tensor(1.)), (4, 1)),
    "masked_fill int t": (lambda x: x.t().int().masked_fill(x.t() > 3, 2), (4, 1)),
    "masked_fill 3-d permute": (
        lambda x: x.reshape(2, 3, 4).permute(2, 0, 1).masked_fill(
            x.reshape(2, 3, 4).permute(2, 0, 1) > 3, 0.), (6, 3, 1)),
    "complex of t": (lambda x: nbtorch.complex(x.t(), x.t()), (1, 6)),
    "complex of t and contiguous": (
        lambda x: nbtorch.complex(x.t(), x.t().contiguous()), (1, 6)),
    "complex 3-d permute": (
        lambda x: nbtorch.complex(x.reshape(2, 3, 4).permute(2, 0, 1),
                                  x.reshape(2, 3, 4).permute(2, 0, 1)), (1, 12, 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_result_strides_are_pytorchs(name):
    fn, strides = CASES[name]
    assert fn(_x()).stride() == strides


def test_channels_last_inputs_give_a_channels_last_result():
    x = nbtorch.randn(2, 3, 4, 5).contiguous(memory_format=nbtorch.channels_last)
    for r in (x + x, x.relu(), x * 2, x.clone()):
        assert r.is_contiguous(memory_format=nbtorch.channels_last)
        np.testing.assert_array_equal(r.numpy().shape, (2, 3, 4, 5))


def test_values_and_views_of_a_transposed_result():
    x = _x()
    y = x.t() * 2 + 1
    np.testing.assert_array_equal(y.numpy(), x.numpy().T * 2 + 1)
    assert not y.is_contiguous()
    with pytest.raises(RuntimeError, match="view"):
        y.view(24)
    np.testing.assert_array_equal(y.reshape(24).numpy(), (x.numpy().T * 2 + 1).ravel())
    np.testing.assert_array_equal(y.contiguous().view(24).numpy(),
                                  (x.numpy().T * 2 + 1).ravel())


@pytest.mark.parametrize("n", [5, 300])        # the small path and the large one
def test_inplace_on_a_transposed_tensor_writes_in_place(n):
    base = nbtorch.arange(n * 7, dtype=nbtorch.float32).reshape(n, 7)
    ref = base.numpy().copy()
    t = base.t()
    t.mul_(2).add_(nbtorch.ones(n))
    np.testing.assert_array_equal(base.numpy(), ref * 2 + 1)
    nbtorch.exp(nbtorch.zeros(7, n), out=t)
    np.testing.assert_array_equal(base.numpy(), np.ones((n, 7), np.float32))


def test_gradients_through_transposed_operands():
    a = nbtorch.randn(3, 5, dtype=nbtorch.float64, requires_grad=True)
    b = nbtorch.randn(5, 3, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(lambda a, b: (a.t() * b).exp() + a.t().sin(), (a, b))
    out = (a.t() * b).sum()
    out.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.detach().numpy().T)


def _layouts(draw, shape):
    """A tensor of `shape` built as a permuted (and maybe gapped) view of a bigger one."""
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim)))
    step = draw(st.sampled_from([1, 1, 2]))
    base_shape = [shape[perm[j]] for j in range(ndim)]
    if ndim:
        base_shape[-1] *= step
    base = nbtorch.randn(*base_shape)
    if ndim and step > 1:
        base = base[..., ::step]
    inverse = [perm.index(d) for d in range(ndim)]
    return base.permute(*inverse) if ndim else base


@st.composite
def _operands(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    a = _layouts(draw, shape)
    # the second operand: the same shape, a broadcast one, or a number
    kind = draw(st.sampled_from(["same", "broadcast", "number"]))
    if kind == "number":
        return a, 1.5
    if kind == "same":
        return a, _layouts(draw, shape)
    k = draw(st.integers(0, ndim))
    bshape = tuple(1 if draw(st.booleans()) else n for n in shape[k:])
    return a, _layouts(draw, bshape)


@settings(max_examples=60, deadline=None)
@given(_operands(), st.sampled_from(["add", "mul", "sub", "lt"]))
def test_any_layout_gives_numpys_values_in_a_dense_result(ops, name):
    a, b = ops
    fn = getattr(nbtorch, name)
    r = fn(a, b)
    bn = b.numpy() if isinstance(b, nbtorch.Tensor) else np.float32(b)
    want = getattr(np, {"add": "add", "mul": "multiply", "sub": "subtract",
                        "lt": "less"}[name])(a.numpy(), bn)
    np.testing.assert_array_equal(r.numpy(), want)
    assert non_overlapping_and_dense(r._shape, r._strides)
    assert r.storage().size() == r.numel() or r.numel() == 0
    if isinstance(b, nbtorch.Tensor) and a._strides == b._strides and a.shape == b.shape \
            and non_overlapping_and_dense(a._shape, a._strides) and not a.is_contiguous() \
            and not (a.dim() == 4 and a.is_contiguous(memory_format=nbtorch.channels_last)):
        assert r._strides == a._strides          # one shape, one dense layout: kept


torch = None
try:
    import torch
except ImportError:                               # pragma: no cover
    pass


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@settings(max_examples=60, deadline=None)
@given(_operands())
def test_result_strides_match_pytorchs(ops):
    a, b = ops

    def to_torch(t):
        if not isinstance(t, nbtorch.Tensor):
            return t
        base = t._base if t._base is not None else t
        tb = torch.from_numpy(base.numpy().copy())
        return tb.as_strided(t.shape, t.stride(), t.storage_offset())

    want = (to_torch(a) + to_torch(b)).stride()
    assert (a + b).stride() == want
    assert a.clone().stride() == to_torch(a).clone().stride()


def test_complex_of_transposed_parts_and_masked_fill_values():
    x = _x()
    z = nbtorch.complex(x.t(), 2 * x.t())
    np.testing.assert_array_equal(z.numpy(), x.t().numpy() + 2j * x.t().numpy())
    m = x.t() > 3
    np.testing.assert_array_equal(x.t().masked_fill(m, -1.).numpy(),
                                  np.where(m.numpy(), -1, x.t().numpy()))
    y = x.t().clone()
    y.masked_fill_(m, 7.)                       # in place keeps y's own layout
    assert y.stride() == (1, 6)
    np.testing.assert_array_equal(y.numpy(), np.where(m.numpy(), 7, x.t().numpy()))
