"""Type promotion, in-place forms (through views, under autograd), errors, broadcasting."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtorch as torch


# ---- type promotion ------------------------------------------------------------------

@pytest.mark.parametrize("a, b, expected", [
    (torch.tensor([1, 2]), 2.5, torch.float32),
    (torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1, 2]), torch.int64),
    (torch.tensor(1.0, dtype=torch.float64), torch.ones(2), torch.float32),
    (torch.tensor([True]), torch.tensor([True]), torch.bool),
    (torch.tensor([1], dtype=torch.uint8), torch.tensor([1], dtype=torch.int8), torch.int16),
    (torch.tensor([1], dtype=torch.int32), 3, torch.int32),
    (torch.tensor([1.0], dtype=torch.float16), 2.0, torch.float16),
    (torch.tensor([True]), 2, torch.int64),
])
def test_add_promotion(a, b, expected):
    r = a + b
    assert r.dtype is expected
    other = b.numpy() if isinstance(b, torch.Tensor) else b
    np.testing.assert_allclose(r.numpy().astype(np.float64),
                               np.asarray(a.numpy() + other, np.float64))


def test_bool_add_mul_are_or_and():
    t, f = torch.tensor([True, True, False]), torch.tensor([True, False, False])
    assert (t + f).tolist() == [True, True, False]
    assert (t * f).tolist() == [True, False, False]


def test_integer_overflow_wraps_like_pytorch():
    x = torch.tensor([127], dtype=torch.int8)
    assert (x + x).dtype is torch.int8 and (x + x).tolist() == [-2]
    u = torch.tensor([0], dtype=torch.uint8)
    assert (u - 1).tolist() == [255]


# ---- in-place --------------------------------------------------------------------------

def test_inplace_forms_match_out_of_place():
    base = torch.tensor([0.3, 1.7, 2.2])
    cases = [("add_", (1.0,)), ("sub_", (0.5,)), ("mul_", (2.0,)), ("div_", (4.0,)),
             ("pow_", (2.0,)), ("clamp_", (0.5, 2.0)), ("exp_", ()), ("sigmoid_", ()),
             ("tanh_", ()), ("abs_", ()), ("neg_", ()), ("sqrt_", ()), ("floor_", ()),
             ("relu_", ()), ("log_", ()), ("reciprocal_", ()), ("round_", ()),
             ("remainder_", (0.5,)), ("fmod_", (0.5,)), ("lerp_", (torch.ones(3), 0.5))]
    for name, args in cases:
        x = base.clone()
        expected = getattr(base, name[:-1])(*args)
        r = getattr(x, name)(*args)
        assert r is x, name
        np.testing.assert_allclose(x.numpy(), expected.numpy(), rtol=1e-6, err_msg=name)


def test_inplace_operators():
    x = torch.tensor([4, 7])
    x += 1
    x -= 2
    x *= 3
    x //= 2
    x %= 5
    assert x.tolist() == [4, 4] and x.dtype is torch.int64
    y = torch.tensor([2.0])
    y **= 3
    y /= 4
    assert y.tolist() == [2.0]
    m = torch.tensor([True, False])
    m &= torch.tensor([True, True])
    m |= torch.tensor([False, True])
    m ^= torch.tensor([True, True])
    assert m.tolist() == [False, False]


def test_inplace_on_view_writes_through_to_base():
    base = torch.zeros(3, 4)
    col = base[:, 1]
    col.add_(2.0)
    row = base[1]
    row.mul_(3.0).exp_()
    torch.relu_(base[2])
    assert base[:, 1].tolist() == [2.0, np.exp(6.0).astype(np.float32).item(), 2.0]
    assert base[0, 0].item() == 0.0 and base[1, 0].item() == 1.0
    t = base.t()
    t.clamp_(max=1.0)
    assert base.numpy().max() == 1.0


def test_inplace_bumps_version():
    x = torch.ones(2)
    v = x._version
    x.add_(1)
    x.exp_()
    assert x._version >= v + 2


def test_inplace_autograd_through_view():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    b[1:].mul_(2.0)
    b.sum().backward()
    assert a.grad.tolist() == [1.0, 2.0, 2.0]
    c = torch.tensor([0.5, -1.0], requires_grad=True)
    d = c.clone()
    d.sigmoid_()
    d.sum().backward()
    s = 1 / (1 + np.exp(-np.array([0.5, -1.0])))
    np.testing.assert_allclose(c.grad.numpy(), s * (1 - s), rtol=1e-6)


def test_inplace_errors():
    leaf = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.exp_()
    i = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        i.add_(1.5)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i.exp_()
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i /= 2
    with pytest.raises(RuntimeError, match=r"output with shape \[3, 1\] doesn't match the "
                                           r"broadcast shape \[3, 4\]"):
        torch.ones(3, 1).add_(torch.ones(3, 4))


def test_saved_tensor_modified_inplace_is_detected():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---- errors ----------------------------------------------------------------------------

def test_shape_mismatch_names_both_sizes():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        torch.ones(2, 3) + torch.ones(2, 4)


def test_bool_neg_and_sub_errors():
    b = torch.tensor([True, False])
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -b
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        b - b


def test_alpha_float_with_int_tensors_errors():
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        torch.add(torch.tensor([1]), torch.tensor([2]), alpha=0.5)


def test_bad_rounding_mode():
    with pytest.raises(ValueError, match="rounding_mode"):
        torch.div(torch.ones(2), 2, rounding_mode="round")


# ---- broadcasting property test --------------------------------------------------------

@st.composite
def _broadcastable_pair(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=0, max_size=4))
    other = [draw(st.sampled_from([n, 1])) for n in shape]
    other = other[draw(st.integers(0, len(other))):]
    if draw(st.booleans()):
        shape, other = other, shape
    return tuple(shape), tuple(other)


@settings(max_examples=40, deadline=None)
@given(_broadcastable_pair(), st.sampled_from(["add", "mul", "maximum", "atan2", "lt"]))
def test_broadcasting_matches_numpy(shapes, name):
    rng = np.random.default_rng(len(shapes[0]) * 7 + len(shapes[1]))
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    ref = {"add": np.add, "mul": np.multiply, "maximum": np.maximum, "atan2": np.arctan2,
           "lt": np.less}[name]
    r = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    want = ref(a, b)
    assert tuple(r.shape) == want.shape
    np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)


@settings(max_examples=15, deadline=None)
@given(_broadcastable_pair())
def test_broadcast_gradients_sum_back_to_input_shapes(shapes):
    a = torch.randn(*shapes[0], dtype=torch.float64, requires_grad=True)
    b = torch.randn(*shapes[1], dtype=torch.float64, requires_grad=True)
    (a * b).sum().backward()
    an, bn = a.detach().numpy(), b.detach().numpy()
    out_shape = np.broadcast_shapes(an.shape, bn.shape)
    ga = np.broadcast_to(bn, out_shape)
    gb = np.broadcast_to(an, out_shape)
    lead_a = len(out_shape) - an.ndim
    lead_b = len(out_shape) - bn.ndim
    ga = ga.sum(axis=tuple(range(lead_a))) if lead_a else ga
    gb = gb.sum(axis=tuple(range(lead_b))) if lead_b else gb
    ga = ga.sum(axis=tuple(i for i, n in enumerate(an.shape) if n == 1 and ga.shape[i] != 1),
                keepdims=True)
    gb = gb.sum(axis=tuple(i for i, n in enumerate(bn.shape) if n == 1 and gb.shape[i] != 1),
                keepdims=True)
    np.testing.assert_allclose(a.grad.numpy(), ga.reshape(an.shape), rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), gb.reshape(bn.shape), rtol=1e-10)


def test_large_arrays_use_parallel_path_and_match():
    from nbtorch.kernels.cpu import ufuncs as k
    n = k.PARALLEL_THRESHOLD + 13
    a = torch.randn(n)
    b = torch.randn(3, 1)
    np.testing.assert_allclose((a * b).numpy(), a.numpy() * b.numpy(), rtol=1e-6)
    np.testing.assert_allclose(torch.exp(a).numpy(), np.exp(a.numpy()), rtol=1e-6)
    x = torch.randn(2, n)[:, ::2]
    np.testing.assert_allclose(torch.tanh(x).numpy(), np.tanh(x.numpy()), rtol=2e-6,
                               atol=1e-7)


def test_large_inplace_with_overlapping_input():
    """A partly overlapping input is refused (PyTorch's error: the result would depend on
    the order of the writes, and a split over threads would change it); the tensor
    itself (full overlap) is fine at any size."""
    from nbtorch.kernels.cpu import ufuncs as k
    n = k.PARALLEL_THRESHOLD * 2
    x = torch.arange(n, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[1:].add_(x[:-1])
    np.testing.assert_array_equal(x.numpy(), np.arange(n, dtype=np.float32))
    y = torch.arange(n, dtype=torch.float32)
    y.mul_(y)
    np.testing.assert_array_equal(y.numpy(), np.arange(n, dtype=np.float32) ** 2)


def test_parallel_path_works_in_a_forked_child():
    import multiprocessing as mp
    from nbtorch.kernels.cpu import ufuncs as k
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    x = torch.ones(k.PARALLEL_THRESHOLD * 2)
    (x + 1).sum()                          # the parent's pool exists before the fork
    with mp.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_big_add_in_child).get(timeout=60) == 2.0


def _big_add_in_child():
    from nbtorch.kernels.cpu import ufuncs as k
    x = torch.ones(k.PARALLEL_THRESHOLD * 2)
    return float((x + 1).numpy().max())


@pytest.mark.parametrize("make", [lambda x: x * 2.0, lambda x: x / 2.0, lambda x: 3 * x,
                                  lambda x: x * torch.ones(3), lambda x: x / torch.ones(3)])
def test_mul_div_save_only_what_their_gradients_need(make):
    """As PyTorch: x * c and x / c keep no copy of x (only the other operand), so writing
    into x afterwards does not invalidate the graph (it raised 'modified by an inplace
    operation'); a*b with both requiring grad still refuses."""
    x = torch.ones(3, requires_grad=True).clone()
    y = make(x)
    x.add_(1)
    y.sum().backward()
    a = torch.ones(3, requires_grad=True).clone()
    b = torch.ones(3, requires_grad=True)
    z = a * b
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_add_alpha_scales_in_the_result_dtype():
    """p.add_(bfloat16 g, alpha=a) on float32 p: a * g in float32, as PyTorch (it was
    rounded to bfloat16 first: 0.033447 instead of 0.033398 for g = 1/3, a = 0.1)."""
    p = torch.zeros(3)
    p.add_(torch.full((3,), 1 / 3).bfloat16(), alpha=0.1)
    g = np.float32(torch.tensor(1 / 3).bfloat16().float().item())     # exact in float32
    expected = g * np.float32(0.1)
    np.testing.assert_array_equal(p.numpy(), np.full(3, expected, np.float32))
