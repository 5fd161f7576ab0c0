"""A Python int with a float tensor (x + 1, x > 0) takes the Python-float path when every
float dtype holds it exactly: the same bits as the int given as a NumPy scalar of x's dtype
(the path every int took before), at every size (the small ufunc call, the mid-size kernel,
the large split loop); comparisons and arithmetic also agree with a 0-d tensor operand."""
import operator

import numpy as np
import pytest

import nbtorch as torch

_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.gt,
        operator.le, operator.eq, operator.ne, operator.pow, operator.mod,
        operator.floordiv, operator.lt]
_INTS = [0, 1, -1, 3, 7, -200, 1 << 24, -(1 << 24), (1 << 24) + 1, 1 << 30, -(1 << 31)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [5, 5000, 1 << 17])
def test_int_operand_same_bits_as_zero_d_tensor(dtype, n):
    x = torch.randn(n, dtype=dtype) * 50
    x[:3] = torch.tensor([0.0, 1.0, -1.0], dtype=dtype)
    for op in _OPS:
        for v in _INTS:
            if op is operator.pow and abs(v) > 3:
                continue
            got = op(x, v)
            ref = op(x, dtype.np.type(v))
            assert got.dtype is ref.dtype and got.shape == ref.shape
            np.testing.assert_array_equal(got.numpy(), ref.numpy(), err_msg=f"{op} {v}")
            if op is not operator.pow:      # (a tensor exponent takes pow's general loop)
                ref = op(x, torch.tensor(v, dtype=dtype))
                np.testing.assert_array_equal(got.numpy(), ref.numpy(), err_msg=f"{op} {v}")


def test_reflected_and_comparison_results():
    x = torch.tensor([-2.0, 0.0, 3.0])
    assert (x > 0).dtype is torch.bool
    np.testing.assert_array_equal((x > 0).numpy(), [False, False, True])
    np.testing.assert_array_equal((1 - x).numpy(), [3.0, 1.0, -2.0])
    np.testing.assert_array_equal((x * 2).numpy(), [-4.0, 0.0, 6.0])
    assert (x + 1).dtype is torch.float32
    assert (torch.arange(3) + 1).dtype is torch.int64        # int tensors keep the int path
    assert (torch.arange(3) * 2).tolist() == [0, 2, 4]
    np.testing.assert_array_equal((2 * x).numpy(), (x * 2.0).numpy())
    np.testing.assert_array_equal((3 + x).numpy(), (x + np.float32(3)).numpy())
    assert (x * True).dtype is torch.float32
    for v in (0, 2.5, -1, torch.tensor([1.0, 0.0, 3.0])):     # the comparison operators
        for op in (operator.gt, operator.ge, operator.lt, operator.le, operator.eq, operator.ne):
            got = op(x, v)
            ref = op(x.numpy(), v.numpy() if isinstance(v, torch.Tensor) else np.float32(v))
            assert got.dtype is torch.bool
            np.testing.assert_array_equal(got.numpy(), ref)
    assert (torch.arange(3) > 1).tolist() == [False, False, True]
    assert (x.double() > torch.tensor([0.0, 1.0, 2.0])).tolist() == [False, False, True]
    z = torch.tensor([1 + 1j])
    with pytest.raises(NotImplementedError, match="\"gt_cpu\" not implemented for 'ComplexFloat'"):
        z > 0
    with pytest.raises(NotImplementedError, match="\"le_cpu\" not implemented"):
        torch.le(z, z)
    assert (z == 1).tolist() == [False] and (z != 1).tolist() == [True]
    with pytest.raises(OverflowError):
        x + (1 << 70)
