"""bfloat16 stays on the CPU: numba.cuda has no bfloat16 arrays, so every way of putting
one on a CUDA device raises a TypeError naming the dtype and the device."""
import pytest

import nbtorch

pytestmark = pytest.mark.cuda

_MATCH = r"bfloat16 tensors are not supported on device 'cuda:0'"


@pytest.mark.parametrize("make", [
    lambda: nbtorch.ones(2, dtype=nbtorch.bfloat16).cuda(),
    lambda: nbtorch.ones(2, dtype=nbtorch.bfloat16).to("cuda"),
    lambda: nbtorch.zeros(2, dtype=nbtorch.bfloat16, device="cuda"),
    lambda: nbtorch.tensor([1.5], dtype=nbtorch.bfloat16, device="cuda"),
    lambda: nbtorch.ones(2, device="cuda").to(nbtorch.bfloat16),
    lambda: nbtorch.nn.Linear(2, 2).cuda().bfloat16(),
    lambda: nbtorch.nn.Linear(2, 2).bfloat16().cuda(),
])
def test_bfloat16_on_cuda_is_a_clear_error(make):
    with pytest.raises(TypeError, match=_MATCH):
        make()


def test_float16_on_cuda_still_works_and_bfloat16_round_trips_through_float32():
    x = nbtorch.tensor([1.5, -2.25], dtype=nbtorch.float16, device="cuda")
    assert ((x * 2) + 1).cpu().tolist() == [4.0, -3.5]
    b = nbtorch.tensor([1.00390625, 3.0], dtype=nbtorch.bfloat16)
    y = b.float().cuda() * 2
    assert y.cpu().bfloat16().tolist() == [2.0, 6.0]
