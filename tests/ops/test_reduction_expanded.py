"""Sums of tensors expanded along kept dims (the gradient of a sum reaching `expand` or
`repeat`'s backward) reduce one slice and expand it: the bits of reducing every copy."""
import numpy as np
import pytest

import nbtorch
from nbtorch.ops import reduction

CASES = [
    (lambda: nbtorch.tensor(1.7).expand(2, 256, 1, 512), (0,)),
    (lambda: nbtorch.randn(256, 1).expand(256, 512), (0,)),
    (lambda: nbtorch.randn(1, 512).expand(300, 512), (1,)),
    (lambda: nbtorch.randn(5, 1, 7).expand(5, 6, 7), (0, 2)),
    (lambda: nbtorch.randn(5, 1, 7, dtype=nbtorch.float64).expand(5, 6, 7), (1,)),
    (lambda: nbtorch.randn(3, 1, 9000).expand(3, 4, 9000), (2,)),
    (lambda: nbtorch.randn(1, 1).expand(40000, 33), (0,)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_expanded_sum_has_the_bits_of_summing_every_copy(case, monkeypatch):
    make, dims = CASES[case]
    nbtorch.manual_seed(case)
    x = make()
    got = x.sum(dims)
    mean = x.mean(dims, keepdim=True)
    monkeypatch.setattr(reduction, "_expanded_sum", lambda *a: None)
    want = x.sum(dims)
    assert got.shape == want.shape and got.is_contiguous()
    np.testing.assert_array_equal(got.numpy().view(np.uint8), want.numpy().view(np.uint8))
    np.testing.assert_array_equal(mean.numpy(), x.mean(dims, keepdim=True).numpy())


def test_repeat_backward_of_a_sum():
    x = nbtorch.randn(6, 5, requires_grad=True)
    x.repeat(3, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((6, 5), 6.0, np.float32))
    y = nbtorch.randn(4, 1, requires_grad=True)
    (y.expand(4, 9) * 2).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.full((4, 1), 18.0, np.float32))
