"""Legacy tensor types (torch.FloatTensor, ...), torch.Tensor(...), Tensor.new/type, and
the default device (set_default_device, ``with device(...)``) on the CPU."""
import threading

import numpy as np
import pytest

import nbtorch

TYPES = [("FloatTensor", nbtorch.float32), ("DoubleTensor", nbtorch.float64),
         ("HalfTensor", nbtorch.float16), ("BFloat16Tensor", nbtorch.bfloat16),
         ("ByteTensor", nbtorch.uint8), ("CharTensor", nbtorch.int8),
         ("ShortTensor", nbtorch.int16), ("IntTensor", nbtorch.int32),
         ("LongTensor", nbtorch.int64), ("BoolTensor", nbtorch.bool)]


@pytest.mark.parametrize("name,dtype", TYPES)
def test_legacy_constructor_makes_its_dtype(name, dtype):
    cls = getattr(nbtorch, name)
    t = cls(2, 3)
    assert type(t) is nbtorch.Tensor and t.dtype is dtype and t.shape == (2, 3)
    assert cls([1, 0]).dtype is dtype and cls([1, 0]).tolist() == [1, 0]
    assert cls().shape == (0,) and cls(nbtorch.Size([4])).shape == (4,)
    assert isinstance(t, cls) and isinstance(t, nbtorch.Tensor)
    assert not issubclass(cls, nbtorch.Tensor)
    others = [getattr(nbtorch, n) for n, d in TYPES if d is not dtype]
    assert not any(isinstance(t, o) for o in others)
    assert not isinstance(t, getattr(nbtorch.cuda, name))
    assert repr(cls) == f"<class 'torch.{name}'>" and cls.dtype is dtype
    assert getattr(nbtorch.cuda, name).is_cuda and not cls.is_cuda


def test_legacy_constructor_data_and_errors():
    x = nbtorch.tensor([1.0, 2.0])
    y = nbtorch.FloatTensor(x)                 # same dtype: shares the data, as PyTorch
    y[0] = 5.0
    assert x[0].item() == 5.0
    assert nbtorch.FloatTensor(np.array([1, 2])).dtype is nbtorch.float32
    with pytest.raises(TypeError, match="FloatTensor"):
        nbtorch.FloatTensor(nbtorch.tensor([1, 2]))
    with pytest.raises(TypeError):
        nbtorch.FloatTensor([1.0], dtype=nbtorch.float64)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu"):
        nbtorch.FloatTensor(2, device="cuda")


def test_tensor_legacy_constructor():
    assert nbtorch.Tensor(2, 3).shape == (2, 3)
    assert nbtorch.Tensor(nbtorch.Size([2, 3])).shape == (2, 3)
    assert nbtorch.Tensor((2, 3)).tolist() == [2.0, 3.0]          # a tuple is data
    assert nbtorch.Tensor([1, 2]).dtype is nbtorch.float32
    assert nbtorch.Tensor().shape == (0,)


def test_new_and_type():
    x = nbtorch.tensor([1, 2])
    assert x.new(3).dtype is nbtorch.int64 and x.new(3).shape == (3,)
    assert x.new([7]).tolist() == [7]
    f = nbtorch.randn(2)
    assert f.type() == "torch.FloatTensor"
    assert f.type(nbtorch.DoubleTensor).dtype is nbtorch.float64
    assert f.type("torch.LongTensor").dtype is nbtorch.int64
    assert f.type(nbtorch.float16).dtype is nbtorch.float16
    with pytest.raises(ValueError, match="invalid type"):
        f.type("torch.NoSuchTensor")


def test_legacy_types_against_pytorch():
    torch = pytest.importorskip("torch")
    for name, dtype in TYPES:
        ours, theirs = getattr(nbtorch, name)([1, 0]), getattr(torch, name)([1, 0])
        assert str(ours.dtype) == str(theirs.dtype)
        assert ours.type() == theirs.type()


# ---- default device ---------------------------------------------------------------------

FACTORIES = [lambda: nbtorch.zeros(2), lambda: nbtorch.ones(2), lambda: nbtorch.empty(2),
             lambda: nbtorch.full((2,), 1.0), lambda: nbtorch.arange(3),
             lambda: nbtorch.linspace(0, 1, 3), lambda: nbtorch.logspace(0, 1, 3),
             lambda: nbtorch.eye(2), lambda: nbtorch.tensor([1.0]),
             lambda: nbtorch.as_tensor(np.zeros(2)), lambda: nbtorch.rand(2),
             lambda: nbtorch.randn(2), lambda: nbtorch.randint(3, (2,)),
             lambda: nbtorch.randperm(3), lambda: nbtorch.normal(0.0, 1.0, (2,)),
             lambda: nbtorch.nn.Linear(2, 2).weight, lambda: nbtorch.scalar_tensor(1.0)]


def test_default_device_cpu_and_context():
    assert nbtorch.get_default_device() == nbtorch.device("cpu")
    with nbtorch.device("cpu") as d:
        assert d == nbtorch.device("cpu")
        assert nbtorch.get_default_device() == nbtorch.device("cpu")
        for f in FACTORIES:
            assert f().device == nbtorch.device("cpu")
    nbtorch.set_default_device("cpu")
    try:
        assert nbtorch.zeros(1).device is nbtorch.tensor(1.0).device   # one interned object
    finally:
        nbtorch.set_default_device(None)


def test_default_device_is_per_thread_and_nests(monkeypatch):
    from nbtorch import _device
    seen = []
    # a stand-in second device: factory_device is what every factory asks
    _device._DEFAULT.device = "sentinel"
    try:
        t = threading.Thread(target=lambda: seen.append(_device.factory_device(None)))
        t.start()
        t.join()
        assert seen == [nbtorch.device("cpu")]            # another thread keeps the CPU
        assert _device.factory_device(None) == "sentinel"
        assert _device.factory_device("cpu") == nbtorch.device("cpu")   # given wins
        with nbtorch.device("cpu"):
            assert _device.factory_device(None) == nbtorch.device("cpu")
        assert _device.factory_device(None) == "sentinel"   # restored on exit
    finally:
        _device._DEFAULT.device = None


def test_size_keyword():
    assert nbtorch.empty(size=(2, 3)).shape == (2, 3)
    assert nbtorch.zeros(size=[1]).shape == (1,) and nbtorch.ones(size=(2,)).shape == (2,)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sizes'"):
        nbtorch.zeros(sizes=(2,))
