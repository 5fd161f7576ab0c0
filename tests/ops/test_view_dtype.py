"""view(dtype): the same bytes read as another dtype, as PyTorch does."""
import numpy as np
import pytest

import nbtorch


def test_view_dtype_reinterprets_bits_like_pytorch():
    x = nbtorch.tensor([1.0, -2.0, 0.5, 3.0])
    bits = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    np.testing.assert_array_equal(x.view(nbtorch.int32).numpy(), bits.view(np.int32))
    np.testing.assert_array_equal(x.view(nbtorch.float64).numpy(), bits.view(np.float64))
    assert x.view(nbtorch.uint8).shape == (16,)
    y = x.view(nbtorch.int32)
    y[0] = 0                                  # shares memory
    assert x[0].item() == 0.0
    with pytest.raises(RuntimeError, match=r"self.stride\(-1\) must be 1 to view Float as "
                                           r"Double \(different element sizes\), but got 2"):
        x[::2].view(nbtorch.float64)
    with pytest.raises(RuntimeError, match=r"self.size\(-1\) must be divisible by 2"):
        x[:3].view(nbtorch.float64)
    with pytest.raises(RuntimeError, match=r"self.storage_offset\(\) must be divisible by 2"):
        x[1:3].view(nbtorch.float64)
    with pytest.raises(RuntimeError, match=r"self.dim\(\) cannot be 0"):
        nbtorch.tensor(1.0).view(nbtorch.float64)
