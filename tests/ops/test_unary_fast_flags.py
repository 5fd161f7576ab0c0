"""square, neg and frac keep a float input's dtype, so they take the elementwise fast paths
(small unrecorded calls, the fast recorded node); their other dtype rules stay as they were."""
import numpy as np
import pytest

import nbtorch as torch


@pytest.mark.parametrize("name", ["square", "neg", "frac"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [7, 5000, 1 << 17])
def test_same_bits_fast_and_recorded(name, dtype, n):
    x = torch.randn(n, dtype=dtype) * 3
    with torch.no_grad():
        fast = getattr(x, name)()
    slow = getattr(x.clone().requires_grad_(True), name)().detach()
    assert fast.dtype is dtype
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    ref = {"square": np.square, "neg": np.negative,
           "frac": lambda a: a - np.trunc(a)}[name](x.numpy())
    np.testing.assert_array_equal(fast.numpy(), ref)


def test_other_dtypes_keep_their_rules():
    b = torch.tensor([True, False])
    assert b.square().dtype is torch.int64 and b.square().tolist() == [1, 0]
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -b
    assert (-torch.tensor([1, 2])).tolist() == [-1, -2]
    with pytest.raises(NotImplementedError, match="frac_cpu"):
        torch.tensor([1, 2]).frac()


def test_gradients():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    for f in (torch.square, torch.neg, lambda t: -t, torch.frac):
        assert torch.autograd.gradcheck(f, (x,))
    assert x.square().grad_fn is not None and (-x).grad_fn is not None


@pytest.mark.parametrize("b", [1, 2, 0.5, -0.5, -1, 2.0, 3, 1.5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_pow_special_exponents_same_bits(b, dtype):
    x = torch.rand(300, dtype=dtype) + 0.25
    with torch.no_grad():
        fast, method, fn = x ** b, x.pow(b), torch.pow(x, b)
    slow = (x.clone().requires_grad_(True) ** b).detach()
    for got in (fast, method, fn):
        assert got.dtype is dtype
        np.testing.assert_array_equal(got.numpy(), slow.numpy())


def test_pow_other_cases():
    assert (torch.tensor([2, 3]) ** 2).tolist() == [4, 9]
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        torch.tensor([2, 3]) ** -1
    x = torch.tensor([4.0, 9.0], requires_grad=True)
    (x ** 0.5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.25, 1 / 6], rtol=1e-6)
    out = torch.empty(2)
    torch.pow(torch.tensor([2.0, 3.0]), 2, out=out)
    assert out.tolist() == [4.0, 9.0]
