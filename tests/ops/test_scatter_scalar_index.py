"""gather/scatter on a 1-d tensor with a 0-d index (PyTorch counts a 0-d tensor as 1-d):
the Transforms tutorial's one-hot ``zeros(10).scatter_(0, tensor(y), value=1)``."""
import numpy as np
import pytest

import nbtorch


@pytest.mark.parametrize("op", ["scatter_", "scatter", "scatter_add", "scatter_add_"])
def test_scatter_zero_dim_index_writes_at_the_index(op):
    out = getattr(nbtorch.zeros(10), op)(0, nbtorch.tensor(3), nbtorch.tensor(5.))
    want = np.zeros(10, np.float32)
    want[3] = 5
    np.testing.assert_array_equal(out.numpy(), want)


def test_scatter_value_zero_dim_index():
    out = nbtorch.zeros(10).scatter_(0, nbtorch.tensor(7), value=1)
    assert out.tolist() == [0.0] * 7 + [1.0] + [0.0] * 2


def test_gather_zero_dim_index_and_its_gradient():
    x = nbtorch.arange(10., requires_grad=True)
    y = x.gather(0, nbtorch.tensor(4))
    assert y.shape == () and y.item() == 4.0
    y.backward()
    assert x.grad.tolist() == [0.0] * 4 + [1.0] + [0.0] * 5


@pytest.mark.parametrize("index", [nbtorch.tensor(0), nbtorch.tensor([0])])
def test_inplace_scatter_checks_the_index_dims(index):
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        nbtorch.zeros(2, 3).scatter_(0, index, 1.0)
