"""uint16-64 and float8 tensors on a CUDA device: creation, copies both ways, views, cat,
indexing and the refusals, as on the CPU (their values move through the host: NumPy does
the conversions, no kernel is compiled for these dtypes)."""
import pytest

import nbtorch

pytestmark = pytest.mark.cuda

NAMES = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"]


@pytest.mark.parametrize("name", NAMES)
def test_creation_copies_and_views_on_cuda(name):
    d = getattr(nbtorch, name)
    x = nbtorch.tensor([1.0, 2.0, 4.0]).to(d).cuda()
    assert x.device.type == "cuda" and x.dtype is d
    assert x.cpu().float().tolist() == [1.0, 2.0, 4.0]
    assert nbtorch.zeros(2, dtype=d, device="cuda").cpu().view(nbtorch.uint8).tolist() == \
        [0] * (2 * d.itemsize)
    assert nbtorch.full((2,), 2, dtype=d, device="cuda").cpu().float().tolist() == [2.0, 2.0]
    y = x.to(nbtorch.float32)                   # a conversion on the device
    assert y.device.type == "cuda" and y.cpu().tolist() == [1.0, 2.0, 4.0]
    z = x.clone()
    z[0] = 4
    assert z.cpu().float().tolist() == [4.0, 2.0, 4.0] and x.cpu().float()[0].item() == 1.0
    assert (x == z).cpu().tolist() == [False, True, True]
    assert nbtorch.cat([x, z]).cpu().float().tolist() == [1.0, 2.0, 4.0, 4.0, 2.0, 4.0]
    assert x[1:].contiguous().cpu().float().tolist() == [2.0, 4.0]
    assert x[nbtorch.tensor([2, 0], device="cuda")].cpu().float().tolist() == [4.0, 1.0]
    with pytest.raises(NotImplementedError, match="add_stub"):
        x + x
