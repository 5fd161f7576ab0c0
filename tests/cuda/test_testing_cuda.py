"""nbtorch.testing on CUDA tensors: device checks, values compared on the host, make_tensor."""
import pytest

import nbtorch
from nbtorch.testing import assert_close, make_tensor

pytestmark = pytest.mark.cuda


def test_assert_close_devices():
    x = nbtorch.tensor([1.0, 2.0], device="cuda")
    assert_close(x, x.clone())
    with pytest.raises(AssertionError, match=r"^The values for attribute 'device' do not "
                                             r"match: cuda:0 != cpu\.$"):
        assert_close(x, x.cpu())
    assert_close(x, x.cpu(), check_device=False)
    with pytest.raises(AssertionError, match=r"Greatest absolute difference: 1\.0 at index \(1,\)"):
        assert_close(x, nbtorch.tensor([1.0, 3.0]), check_device=False)


def test_make_tensor_on_cuda():
    t = make_tensor(3, 4, dtype=nbtorch.float32, device="cuda", low=-1, high=1,
                    noncontiguous=True)
    assert t.device.type == "cuda" and not t.is_contiguous() and t.shape == (3, 4)
    assert t.abs().max().item() <= 1
    i = make_tensor(8, dtype=nbtorch.int64, device="cuda", exclude_zero=True)
    assert (i != 0).all().item()
