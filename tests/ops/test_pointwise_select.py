"""Selection, comparison, logical and classification ops vs NumPy; their gradients."""
import numpy as np
import pytest

import nbtorch as torch
from harness import FLOATS, INTS, NUMERIC, check_grad, check_op

S = (3, 4)
BOOL_INT = (torch.bool, torch.int64)


@pytest.mark.parametrize("name, ref", [("maximum", np.maximum), ("minimum", np.minimum),
                                       ("fmax", np.fmax), ("fmin", np.fmin)])
def test_max_min(name, ref, device):
    check_op(getattr(torch, name), ref, S, S, dtypes=NUMERIC, device=device)
    a = torch.tensor([np.nan, 1.0, np.nan])
    b = torch.tensor([1.0, np.nan, np.nan])
    np.testing.assert_array_equal(getattr(torch, name)(a, b).numpy(),
                                  ref(a.numpy(), b.numpy()))


def test_max_min_split_tied_gradient():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([1.0, 1.0, 4.0], requires_grad=True)
    torch.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 1.0, 0.0] and b.grad.tolist() == [0.5, 0.0, 1.0]
    a.grad = b.grad = None
    torch.minimum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 0.0, 1.0] and b.grad.tolist() == [0.5, 1.0, 0.0]


def test_clamp_scalars_tensors_and_none(device):
    check_op(lambda x: torch.clamp(x, -0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), S,
             dtypes=FLOATS, grad=False, device=device)
    check_op(lambda x: torch.clamp(x, min=0), lambda x: np.maximum(x, 0), S, dtypes=NUMERIC,
             grad=False, device=device)
    check_op(lambda x: torch.clip(x, max=1), lambda x: np.minimum(x, 1), S, dtypes=NUMERIC,
             grad=False, device=device)
    check_op(lambda x, lo, hi: torch.clamp(x, lo, hi),
             lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), S, S, S, dtypes=FLOATS,
             grad=False, device=device)
    check_grad(lambda x, lo, hi: torch.clamp(x, lo, hi), S, S, S, gradgrad=True, device=device)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        torch.clamp(torch.ones(2))
    assert torch.clamp(torch.tensor([1, 5]), 2.5).dtype is torch.float32


def test_clamp_gradient_passes_at_boundary_and_min_above_max():
    x = torch.tensor([0.0, 0.5, 1.0, 2.0], requires_grad=True)
    torch.clamp(x, 0.0, 1.0).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 0.0]
    assert torch.clamp(torch.tensor([0.0, 5.0]), 3.0, 1.0).tolist() == [1.0, 1.0]
    assert np.isnan(torch.clamp(torch.tensor([np.nan]), 0, 1).item())


def test_where(device):
    check_op(lambda c, x, y: torch.where(c > 0, x, y), lambda c, x, y: np.where(c > 0, x, y),
             S, S, S, dtypes=NUMERIC, device=device)
    x = torch.tensor([-1.0, 2.0])
    assert torch.where(x > 0, x, 0.0).tolist() == [0.0, 2.0]
    assert torch.where(x > 0, 1, 0).dtype is torch.int64
    assert torch.where(x > 0, 1.0, x).dtype is torch.float32
    with pytest.raises(RuntimeError, match="boolean"):
        torch.where(x, x, x)


def test_small_where_equals_the_kernel():
    """Small CPU selects run NumPy's where (pointwise_select.small_where): the kernel's
    dtypes and bits for numbers, broadcasting, mixed dtypes and NaN; a user's "where"
    kernel still runs itself."""
    from nbtorch.ops import pointwise_select as ps
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 1, 5)).astype("f4")
    a[0, 0, 0] = np.nan
    c = torch.tensor(rng.standard_normal((3, 1)) > 0)
    x, x64 = torch.tensor(a), torch.tensor(a.astype("f8"))
    cases = [(c, x, 0.0), (c, 1, x64), (c, x, x64), (c, 2, 0), (c, True, False),
             (c, x, torch.tensor(2.5)), (c, torch.tensor([1, 2, 3, 4, 5]), 7)]
    limit = ps._SMALL_SELECT
    for cond, p, q in cases:
        small = torch.where(cond, p, q)
        try:
            ps._SMALL_SELECT = 0        # every call through the kernel
            ref = torch.where(cond, p, q)
        finally:
            ps._SMALL_SELECT = limit
        assert small.dtype is ref.dtype and small.shape == ref.shape
        np.testing.assert_array_equal(small.numpy(), ref.numpy())
    calls = []
    original = torch._registry.get_kernel("where", "cpu")

    def mine(out, *args):
        calls.append(1)
        return original(out, *args)
    torch.register_kernel("where", "cpu", mine, override=True)
    try:
        assert torch.where(c, x, 0.0).shape == (4, 3, 5) and calls
        assert x.masked_fill(x > 0, 0.0).shape == (4, 1, 5) and len(calls) == 2
    finally:
        torch.register_kernel("where", "cpu", original, override=True)


def test_lerp_addcmul_addcdiv(device):
    check_op(lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: a + 0.3 * (b - a), S, S,
             gradgrad=True, device=device)
    check_op(torch.lerp, lambda a, b, w: a + w * (b - a), S, S, S, low=0, high=1, device=device)
    check_op(lambda a, b, c: torch.addcmul(a, b, c, value=0.5),
             lambda a, b, c: a + 0.5 * b * c, S, S, S, gradgrad=True, device=device)
    check_op(lambda a, b, c: torch.addcdiv(a, b, c, value=2),
             lambda a, b, c: a + 2 * b / c, S, S, S, low=0.5, high=2, device=device)
    assert torch.lerp(torch.tensor([0.0]), torch.tensor([10.0]), 1.0).item() == 10.0


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons(name, device):
    ref = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal}[name]
    check_op(getattr(torch, name), ref, S, S, dtypes=NUMERIC + (torch.bool,), grad=False,
             low=-1, high=1, out_dtype=torch.bool, device=device)
    x = torch.tensor([1.0, 2.0])
    assert getattr(x, f"__{name}__")(1.5).tolist() == ref([1.0, 2.0], 1.5).tolist()


def test_equal_allclose_isclose(device):
    a = torch.tensor([1.0, 2.0, np.nan])
    assert torch.equal(torch.ones(2), torch.ones(2)) and not torch.equal(a, a)
    assert not torch.equal(torch.ones(2), torch.ones(3))
    assert torch.allclose(torch.ones(3), torch.ones(3) + 1e-9)
    assert torch.isclose(a, a, equal_nan=True).tolist() == [True, True, True]
    check_op(lambda x, y: torch.isclose(x, y, rtol=0.1, atol=0.01),
             lambda x, y: np.isclose(x, y, rtol=0.1, atol=0.01), S, S, grad=False, device=device)
    inf = torch.tensor([np.inf, -np.inf])
    assert torch.isclose(inf, inf).tolist() == [True, True]


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical(name, device):
    check_op(getattr(torch, name), getattr(np, name), S, S, dtypes=FLOATS + BOOL_INT,
             low=-1, high=1, grad=False, out_dtype=torch.bool, device=device)


def test_logical_not_and_bitwise(device):
    check_op(torch.logical_not, np.logical_not, S, dtypes=FLOATS + BOOL_INT, low=-1, high=1,
             grad=False, out_dtype=torch.bool, device=device)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        check_op(getattr(torch, name), getattr(np, name), S, S, dtypes=BOOL_INT, low=-9,
                 high=9, grad=False, device=device)
    check_op(torch.bitwise_not, np.invert, S, dtypes=BOOL_INT, low=-9, high=9, grad=False,
             device=device)
    m = torch.tensor([True, False])
    assert (~m).tolist() == [False, True]
    assert (m & True).tolist() == [True, False] and (m | False).tolist() == [True, False]
    assert (m ^ m).tolist() == [False, False]
    assert (~torch.tensor([0, 5])).tolist() == [-1, -6]
    assert (torch.tensor([6]) & 3).tolist() == [2]
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.ones(2) & torch.ones(2)


def test_classification_and_nan_to_num(device):
    x = torch.tensor([1.0, np.nan, np.inf, -np.inf])
    assert torch.isnan(x).tolist() == [False, True, False, False]
    assert torch.isinf(x).tolist() == [False, False, True, True]
    assert torch.isfinite(x).tolist() == [True, False, False, False]
    assert torch.isposinf(x).tolist() == [False, False, True, False]
    assert torch.isneginf(x).tolist() == [False, False, False, True]
    assert torch.isfinite(torch.tensor([1, 2])).tolist() == [True, True]
    assert torch.isnan(torch.tensor([1, 2])).tolist() == [False, False]
    big = np.finfo(np.float32).max
    assert torch.nan_to_num(x).tolist() == [1.0, 0.0, float(big), float(-big)]
    assert torch.nan_to_num(x, nan=2.0, posinf=3.0, neginf=-3.0).tolist() == [1, 2, 3, -3]
    check_op(lambda t: torch.nan_to_num(t, nan=0.5), lambda t: np.nan_to_num(t, nan=0.5), S,
             dtypes=FLOATS + INTS, device=device)
    y = torch.tensor([1.0, np.nan], requires_grad=True)
    torch.nan_to_num(y).sum().backward()
    assert y.grad.tolist() == [1.0, 0.0]


def test_small_where_of_empty_tensors_is_contiguous():
    """NumPy gives an empty result strides of 0; the tensor made from it has the row-major
    strides PyTorch gives an empty tensor."""
    e = torch.zeros(0, 5)
    for r in (torch.where(e > 0, e, 0.0), e.masked_fill(e < 0, 1.0),
              torch.from_numpy(np.zeros((0, 5), np.float32))):
        assert r.shape == (0, 5) and r.stride() == (5, 1) and r.is_contiguous()
