"""Arithmetic ops: values vs NumPy over dtypes/layouts, gradients, operators with scalars."""
import numpy as np
import pytest

import nbtorch as torch
from harness import FLOATS, INTS, NUMERIC, check_op, check_grad

S = (3, 4)


@pytest.mark.parametrize("name, np_fn", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply)])
def test_add_sub_mul(name, np_fn, device):
    check_op(getattr(torch, name), np_fn, S, S, dtypes=NUMERIC, gradgrad=name == "mul",
             device=device)


def test_int32_and_small_int_arithmetic(device):
    check_op(torch.add, np.add, S, S, dtypes=(torch.int32, torch.int16), grad=False, device=device)
    check_op(torch.mul, np.multiply, S, S, dtypes=(torch.int32, torch.uint8), grad=False,
             low=0, high=9, device=device)


def test_add_sub_alpha(device):
    check_op(lambda a, b: torch.add(a, b, alpha=2), lambda a, b: a + 2 * b, S, S,
             dtypes=NUMERIC, device=device)
    check_op(lambda a, b: torch.sub(a, b, alpha=0.5), lambda a, b: a - 0.5 * b, S, S,
             device=device)


def test_div_true(device):
    check_op(torch.div, np.divide, S, S, low=0.5, high=3.0, gradgrad=True, device=device)
    check_op(torch.div, lambda a, b: (a / b).astype(np.float32), S, np.array([1, 2, -3, 4]),
             dtypes=INTS, grad=False, out_dtype=torch.float32, device=device)


@pytest.mark.parametrize("mode, np_fn", [("trunc", lambda a, b: np.trunc(a / b)),
                                         ("floor", np.floor_divide)])
def test_div_rounding(mode, np_fn, device):
    divisor = np.array([1.5, -2.0, 3.0, -0.5])
    check_op(lambda a, b: torch.div(a, b, rounding_mode=mode), np_fn, S, divisor,
             dtypes=FLOATS, grad=False, low=-5, high=5, device=device)
    ints = np.array([1, -2, 3, -4])
    check_op(lambda a, b: torch.div(a, b, rounding_mode=mode),
             lambda a, b: np_fn(a.astype(np.float64), b).astype(a.dtype), S, ints,
             dtypes=INTS, grad=False, low=-9, high=9, out_dtype=lambda d: d, device=device)


def test_floor_divide_and_remainder_follow_python():
    a = torch.tensor([-7, 7, -7, 7])
    b = torch.tensor([2, 2, -2, -2])
    assert (a // b).tolist() == [-4, 3, 3, -4]
    assert (a % b).tolist() == [1, 1, -1, -1]
    assert torch.fmod(a, b).tolist() == [-1, 1, -1, 1]
    x = torch.tensor([-7.5, 7.5])
    assert (x // 2).tolist() == [-4.0, 3.0]
    assert (x % 2).tolist() == [0.5, 1.5]
    assert (7 // torch.tensor([2, -2])).tolist() == [3, -4]
    assert (7 % torch.tensor([3, -3])).tolist() == [1, -2]


def test_remainder_fmod_values_and_grads(device):
    b = np.array([1.5, -2.0, 3.0, -0.7])
    check_op(torch.remainder, np.remainder, S, b, low=-5, high=5, grad=False, device=device)
    check_op(torch.fmod, np.fmod, S, b, low=-5, high=5, grad=False, device=device)
    check_op(torch.remainder, np.remainder, S, np.array([2, -3, 4, 5]), dtypes=INTS,
             grad=False, low=-9, high=9, device=device)
    # gradients away from the discontinuities
    x = torch.tensor([0.3, 1.2, -0.4], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.0, 0.7, 0.9], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(torch.remainder, (x, y))
    assert torch.autograd.gradcheck(torch.fmod, (x, y))


def test_integer_division_by_zero_raises():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([1, 2]) // torch.tensor([1, 0])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.remainder(torch.tensor([1, 2]), 0)


def test_float_division_by_zero_is_ieee():
    r = torch.tensor([1.0, -1.0, 0.0]) / 0
    assert r[0].item() == np.inf and r[1].item() == -np.inf and np.isnan(r[2].item())


def test_pow_forms(device):
    check_op(lambda x: torch.pow(x, 3), lambda x: x ** 3, S, dtypes=NUMERIC, gradgrad=True,
             device=device)
    check_op(lambda x: x ** 2, np.square, S, dtypes=NUMERIC, device=device)
    check_op(lambda x: x ** 0.5, np.sqrt, S, low=0.2, high=3, device=device)
    check_op(lambda x: 2 ** x, lambda x: 2.0 ** x, S, gradgrad=True, device=device)
    check_op(torch.pow, np.power, S, S, low=0.3, high=2.0, gradgrad=True, device=device)
    check_op(lambda x: torch.pow(x, 0), lambda x: x ** 0, S, grad=True, device=device)


def test_int_pow():
    a = torch.tensor([2, -3, 0, 1])
    assert (a ** 3).tolist() == [8, -27, 0, 1]
    assert (a ** 3).dtype is torch.int64
    assert (2 ** torch.tensor([0, 1, 10])).tolist() == [1, 2, 1024]
    assert torch.pow(torch.tensor([2, -1, 1]), torch.tensor([-1, -3, -2])).tolist() == [0, -1, 1]
    with pytest.raises(RuntimeError, match="negative integer powers"):
        a ** -1
    assert (2.0 ** torch.tensor([1, 2])).dtype is torch.float32


def test_neg_abs(device):
    check_op(torch.neg, np.negative, S, dtypes=NUMERIC, gradgrad=True, device=device)
    check_op(torch.abs, np.abs, S, dtypes=NUMERIC + (torch.float16,), grad=False, device=device)
    check_grad(torch.abs, S, device=device)
    x = torch.tensor([0.0, -2.0], requires_grad=True)
    x.abs().sum().backward()
    assert x.grad.tolist() == [0.0, -1.0]


def test_reflected_operators_with_scalars():
    x = torch.tensor([1.0, 2.0, 4.0])
    assert (1 + x).tolist() == [2, 3, 5]
    assert (1 - x).tolist() == [0, -1, -3]
    assert (2 * x).tolist() == [2, 4, 8]
    assert (4 / x).tolist() == [4, 2, 1]
    assert (2 ** x).tolist() == [2, 4, 16]
    assert (9 // x).tolist() == [9, 4, 2]
    assert (9 % x).tolist() == [0, 1, 1]
    assert (-x).tolist() == [-1, -2, -4]
    assert (+x) is x


def test_operators_reject_other_types():
    x = torch.ones(2)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        torch.add(x, "a")
    assert (x == None) is False  # noqa: E711


def test_out_argument():
    a, b = torch.ones(3), torch.full((3,), 2.0)
    out = torch.empty(3)
    r = torch.add(a, b, out=out)
    assert r is out and out.tolist() == [3, 3, 3]
    torch.exp(torch.zeros(3), out=out)
    assert out.tolist() == [1, 1, 1]
    small = torch.empty(2)
    with pytest.warns(UserWarning, match="was resized"):      # PyTorch resizes, and warns
        torch.mul(a, b, out=small)
    assert small.tolist() == [2, 2, 2]
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        torch.mul(a.requires_grad_(), b, out=out)


def test_square_reciprocal_rsub(device):
    check_op(torch.square, np.square, S, dtypes=NUMERIC, device=device)
    check_op(torch.reciprocal, np.reciprocal, S, low=0.5, high=2, gradgrad=True, device=device)
    assert torch.reciprocal(torch.tensor([2, 4])).tolist() == [0.5, 0.25]
    assert torch.rsub(torch.tensor([1.0, 2.0]), 5).tolist() == [4.0, 3.0]
