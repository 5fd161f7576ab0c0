"""Writes a differential sweep against PyTorch found landing in the wrong place."""
import numpy as np
import pytest

import nbtorch


def test_setitem_with_a_python_list_indexes_the_first_dim():
    x = nbtorch.zeros(3, 4)
    x[[0, 2]] = 1                            # set x[0, 2] alone before
    np.testing.assert_array_equal(x.numpy(), [[1] * 4, [0] * 4, [1] * 4])
    x[[0, 2]] += 1
    assert x[:, 0].tolist() == [2, 0, 2]
    y = nbtorch.zeros(5)
    y[[0, 2]] = 1
    assert y.tolist() == [1, 0, 1, 0, 0]
    z = nbtorch.zeros(3)
    z[[True, False, True]] = 7
    assert z.tolist() == [7, 0, 7]
    w = nbtorch.zeros(3, 4)
    w[[[0], [2]]] = 5                        # nested lists: one index too
    assert w[:, 1].tolist() == [5, 0, 5]


@pytest.mark.parametrize("n", [3, 5000])
def test_elementwise_out_into_a_strided_view(n):
    base = nbtorch.zeros(n, 3)
    a, b = nbtorch.ones(n), nbtorch.full((n,), 2.0)
    nbtorch.add(a, b, out=base[:, 0])        # landed in row 0 (densely) before
    want = np.zeros((n, 3), np.float32)
    want[:, 0] = 3
    np.testing.assert_array_equal(base.numpy(), want)
    flat = nbtorch.zeros(2 * n)
    nbtorch.exp(nbtorch.zeros(n), out=flat[::2])
    assert flat[::2].tolist() == [1.0] * n and flat[1::2].tolist() == [0.0] * n
    sq = nbtorch.zeros(4, 4)
    nbtorch.sigmoid(nbtorch.zeros(4), out=sq.diagonal())
    np.testing.assert_array_equal(sq.numpy(), np.eye(4) * 0.5)
