"""make_tensor: shapes, default ranges per dtype, options, and PyTorch's errors."""
import math

import numpy as np
import pytest

import nbtorch
from nbtorch.testing import make_tensor

DEFAULT_RANGES = {"bool": (0, 2), "uint8": (0, 10), "int8": (-9, 10), "int16": (-9, 10),
                  "int32": (-9, 10), "int64": (-9, 10), "float16": (-9, 9),
                  "bfloat16": (-9, 9), "float32": (-9, 9), "float64": (-9, 9)}


@pytest.mark.parametrize("name", sorted(DEFAULT_RANGES))
def test_default_range(name):
    dtype = getattr(nbtorch, name)
    t = make_tensor(400, dtype=dtype, device="cpu")
    assert t.dtype is dtype and t.shape == (400,) and t.is_contiguous()
    values = t.float().numpy() if name == "bfloat16" else t.numpy().astype(np.float64)
    low, high = DEFAULT_RANGES[name]
    assert values.min() >= low and values.max() < high
    assert len(np.unique(values)) > 1


def test_shapes_and_options():
    assert make_tensor((2, 3), dtype=nbtorch.float32, device="cpu").shape == (2, 3)
    assert make_tensor(nbtorch.Size([2, 2]), dtype=nbtorch.float32, device="cpu").shape == (2, 2)
    assert make_tensor((), dtype=nbtorch.bool, device="cpu").shape == ()
    t = make_tensor(2, 3, dtype=nbtorch.float32, device="cpu", noncontiguous=True)
    assert t.shape == (2, 3) and not t.is_contiguous() and t.stride() == (6, 2)
    one = make_tensor([1], dtype=nbtorch.float32, device="cpu", noncontiguous=True)
    assert one.is_contiguous()               # ignored below two elements
    g = make_tensor(2, 2, dtype=nbtorch.float64, device="cpu", requires_grad=True)
    assert g.requires_grad and g.is_leaf
    r = make_tensor(1000, dtype=nbtorch.float32, device="cpu", low=-1, high=1)
    assert r.abs().max().item() <= 1
    z = make_tensor(1000, dtype=nbtorch.int8, device="cpu", low=-1, high=2, exclude_zero=True)
    assert (z != 0).all().item()
    zf = make_tensor(100, dtype=nbtorch.float32, device="cpu", low=0, high=1e-30, exclude_zero=True)
    assert (zf != 0).all().item()
    u = make_tensor(50, dtype=nbtorch.uint8, device="cpu", low=-10, high=3)   # clamped to [0, 3)
    assert u.numpy().min() >= 0 and u.numpy().max() < 3
    wide = make_tensor(20, dtype=nbtorch.float16, device="cpu", low=-1e10, high=1e10)
    assert math.isfinite(wide.float().abs().max().item())


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(dtype="int64", requires_grad=True), ValueError,
     "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
     "dtype=torch.int64"),
    (dict(dtype="float32", low=2, high=1), ValueError,
     "`low` must be less than `high`, but got 2 >= 1"),
    (dict(dtype="float32", low=float("nan")), ValueError,
     "`low` and `high` cannot be NaN, but got low=nan and high=9"),
    (dict(dtype="uint8", low=-10, high=-1), ValueError,
     "The value interval specified by `low` and `high` is [-10, -1), but torch.uint8 only "
     "supports [0, 256)"),
    (dict(dtype="float32", low=1e39, high=1e40), ValueError,
     "The value interval specified by `low` and `high` is [1e+39, 1e+40), but torch.float32 "
     "only supports [-3.4028234663852886e+38, 3.4028234663852886e+38)"),
])
def test_errors_match_pytorch(kwargs, error, message):
    for module in ("nbtorch", "torch"):
        m = pytest.importorskip(module)
        kw = dict(kwargs, dtype=getattr(m, kwargs["dtype"]))
        with pytest.raises(error) as info:
            m.testing.make_tensor(2, 3, device="cpu", **kw)
        assert str(info.value) == message


def test_noncontiguous_and_memory_format_exclusive():
    with pytest.raises(ValueError, match="mutually exclusive"):
        make_tensor(2, dtype=nbtorch.float32, device="cpu", noncontiguous=True,
                    memory_format="contiguous_format")


def test_low_equal_high_is_deprecated():
    with pytest.warns(FutureWarning, match="torch.full"):
        t = make_tensor(3, dtype=nbtorch.float32, device="cpu", low=2.0, high=2.0)
    assert (t == 2.0).all().item()
