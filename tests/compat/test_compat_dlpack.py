"""DLPack both ways (NumPy, PyTorch), zero copy: a write on one side is seen on the other;
capsules consumed once; memory freed when the last user lets go."""
import gc

import numpy as np
import pytest

import nbtorch
from nbtorch import _dlpack
from nbtorch.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.parametrize("name", DTYPES)
def test_numpy_both_ways_share_memory(name):
    a = np.zeros((2, 3), dtype=name)
    t = nbtorch.from_dlpack(a)
    assert t.dtype is getattr(nbtorch, name) and t.shape == (2, 3)
    t[1, 2] = 1
    assert a[1, 2] == 1
    x = nbtorch.zeros(2, 3, dtype=getattr(nbtorch, name))
    b = np.from_dlpack(x)
    b[0, 1] = 1
    assert x[0, 1].item() == 1


def test_strided_zero_size_and_0d():
    a = np.zeros((4, 6))[::2, 1::3]
    t = nbtorch.from_dlpack(a)
    assert t.shape == (2, 2) and t.stride() == (12, 3)
    t.fill_(5.0)
    assert (a == 5.0).all()
    x = nbtorch.arange(12.0).reshape(3, 4).t()
    np.testing.assert_array_equal(np.from_dlpack(x), x.numpy())
    assert nbtorch.from_dlpack(np.zeros((0, 3))).shape == (0, 3)
    assert np.from_dlpack(nbtorch.zeros(0, 2)).shape == (0, 2)
    s = nbtorch.from_dlpack(np.array(3.5))
    assert s.shape == () and s.item() == 3.5


def test_capsules_consumed_once_and_freed():
    live = len(_dlpack._LIVE)
    c = to_dlpack(nbtorch.ones(2))
    assert from_dlpack(c).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="can be consumed only once"):
        from_dlpack(c)
    with pytest.raises(RuntimeError, match="invalid capsule"):
        nbtorch.from_dlpack(3)
    del c
    gc.collect()
    assert len(_dlpack._LIVE) == live
    unused = nbtorch.ones(3).__dlpack__(max_version=(1, 0))
    assert len(_dlpack._LIVE) == live + 1
    del unused                                  # never consumed: the destructor frees it
    gc.collect()
    assert len(_dlpack._LIVE) == live
    y = nbtorch.from_dlpack(nbtorch.ones(3))    # our own export and import
    assert len(_dlpack._LIVE) == live + 1
    del y
    gc.collect()
    assert len(_dlpack._LIVE) == live


def test_protocol_details():
    x = nbtorch.ones(2)
    assert x.__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    with pytest.raises(BufferError, match="require gradient"):
        nbtorch.ones(2, requires_grad=True).__dlpack__()
    assert to_dlpack(nbtorch.ones(2, requires_grad=True)) is not None   # detached, as PyTorch
    copy = nbtorch.from_dlpack(_Wrap(x, copy=True))
    copy[0] = 5.0
    assert x[0].item() == 1.0
    with pytest.raises(AttributeError, match="non-CUDA tensor type: torch.FloatTensor"):
        x.__cuda_array_interface__
    assert not hasattr(x, "__cuda_array_interface__")


class _Wrap:
    """A producer that forwards extra __dlpack__ keywords (to test copy=)."""

    def __init__(self, t, **kw):
        self.t, self.kw = t, kw

    def __dlpack__(self, **kw):
        return self.t.__dlpack__(**kw, **self.kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_bfloat16_via_capsules():
    x = nbtorch.tensor([1.0, -2.5], dtype=nbtorch.bfloat16)
    y = from_dlpack(to_dlpack(x))
    y[0] = 3.0
    assert y.dtype is nbtorch.bfloat16 and x[0].item() == 3.0


def test_pytorch_both_ways_share_memory():
    torch = pytest.importorskip("torch")
    for name in DTYPES + ["bfloat16"]:
        x = nbtorch.zeros(2, 3, dtype=getattr(nbtorch, name))
        t = torch.from_dlpack(x)
        assert str(t.dtype) == f"torch.{name}"
        t[1, 1] = 1
        assert x[1, 1].item() == 1
        theirs = torch.zeros(3, 2, dtype=getattr(torch, name)).t()
        ours = nbtorch.from_dlpack(theirs)
        assert ours.dtype is getattr(nbtorch, name) and ours.stride() == tuple(theirs.stride())
        ours[0, 2] = 1
        assert theirs[0, 2].item() == 1
    c = torch.utils.dlpack.to_dlpack(torch.arange(3))
    assert from_dlpack(c).tolist() == [0, 1, 2]
    assert torch.utils.dlpack.from_dlpack(to_dlpack(nbtorch.arange(3))).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="consumed only once"):
        torch.utils.dlpack.from_dlpack(_consumed())


def _consumed():
    c = to_dlpack(nbtorch.ones(1))
    from_dlpack(c)
    return c
