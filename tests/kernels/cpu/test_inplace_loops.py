"""In-place elementwise loops (kernels/cpu/inplace.py): `x.add_(y)`, `x += y`, `x.mul_(2)`,
`x.relu_()` on large contiguous tensors read x itself, with the bits of the out-of-place
ufunc, split over the helpers or not; every other case is left to the general path."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.kernels.cpu import inplace, ufuncs, workers

BINARY = ["add", "sub", "mul", "div"]


def _values(n, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(dtype)
    x[:7] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e30]
    return x


def _reference(name, x, y):
    out = np.empty_like(x)
    ufuncs.kernel(name)(out, *((x,) if y is None else (x, y)))
    return out


@pytest.fixture(params=[False, True], ids=["serial", "split"])
def split(request, monkeypatch):
    if request.param:
        monkeypatch.setattr(workers, "NUM_THREADS", 2)
        monkeypatch.setattr(workers, "use_helpers", lambda key: True)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("operand", ["tensor", "scalar"])
def test_binary_loops_have_the_ufuncs_bits(name, dtype, operand, split):
    n = ufuncs.PARALLEL_THRESHOLD + 1001 if split else 5003
    x = _values(n, dtype, 0)
    y = _values(n, dtype, 1)[::-1].copy() if operand == "tensor" else np.array(0.75, dtype)
    if operand == "tensor":
        y[3] = 0.0                                   # x / 0, 0 / 0
    expected = _reference(name, x, y)
    assert inplace.run(name, x, y, split)
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_keeps_nan_and_clamps_minus_inf(dtype, split):
    n = ufuncs.PARALLEL_THRESHOLD + 17 if split else 4099
    x = _values(n, dtype, 2)
    expected = _reference("relu", x, None)
    assert inplace.run("relu", x, None, split)
    np.testing.assert_array_equal(x, expected)
    assert np.isnan(x[0]) and x[2] == 0


def test_cases_left_to_the_general_path():
    x = np.ones(8192, np.float32)
    assert not inplace.run("add", x, x[::-1], False)                 # shares memory
    assert not inplace.run("add", x, np.ones(8192), False)           # another dtype
    assert not inplace.run("add", x, np.ones((1,), np.float32), False)   # broadcast
    assert not inplace.run("add", x[::2], np.ones(4096, np.float32), False)
    assert not inplace.run("add", np.ones(8192, np.int64), np.ones(8192, np.int64), False)
    assert not inplace.run("exp", x, None, False)                    # no loop for it
    assert not inplace.run("relu", x, np.float32(1), False)
    assert (x == 1).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_tensor_methods_take_the_in_place_loops(dtype, monkeypatch):
    n = ufuncs.PARALLEL_THRESHOLD * 2
    calls = []
    real = inplace.run
    monkeypatch.setattr(inplace, "run", lambda *a: calls.append(a[0]) or real(*a))
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, generator=g, dtype=dtype), torch.randn(n, generator=g, dtype=dtype)
    ref = x.clone()
    x.add_(y)
    x += y
    x.sub_(y)
    x.mul_(1.5)
    x.div_(y)
    x.relu_()
    torch.mul(x, y, out=x)
    expected = torch.relu(((ref + y + y - y) * 1.5) / y) * y
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    assert calls == ["add", "add", "sub", "mul", "div", "relu", "mul"]
    assert x._version >= 7


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_y_is_x_reads_x_alone(name, dtype, split):
    """x op= x (the same array, or another view of the same elements): the SELF loops."""
    n = ufuncs.PARALLEL_THRESHOLD + 17 if split else 4099
    x = _values(n, dtype, 3)
    expected = _reference(name, x, x.copy())
    assert inplace.run(name, x, x, split)
    np.testing.assert_array_equal(x.view(np.uint8), expected.view(np.uint8))
    y = _values(n, dtype, 4)
    expected = _reference(name, y, y.copy())
    assert inplace.run(name, y, y[:], split)
    np.testing.assert_array_equal(y.view(np.uint8), expected.view(np.uint8))
