"""save/load: round trips, atomic saves, corrupted and malicious files, PyTorch .pt files."""
import collections
import io
import os
import pickle
import sys
import types
import zipfile

import numpy as np
import pytest

import nbtorch as torch


def test_round_trip_nested(tmp_path):
    obj = {"w": torch.randn(2, 3), "i": torch.arange(4, dtype=torch.int32),
           "meta": (1, 2.5, "x", None, [True, float("inf")]),
           "od": collections.OrderedDict(a=torch.ones(2, dtype=torch.float64))}
    p = tmp_path / "ckpt.pt"
    torch.save(obj, p)
    back = torch.load(p)
    assert back["w"].tolist() == obj["w"].tolist() and back["i"].dtype is torch.int32
    assert back["meta"] == (1, 2.5, "x", None, [True, float("inf")])
    assert isinstance(back["od"], collections.OrderedDict)
    assert back["od"]["a"].dtype is torch.float64


def test_save_to_file_object_and_map_location():
    buf = io.BytesIO()
    torch.save([torch.ones(2)], buf)
    buf.seek(0)
    out = torch.load(buf, map_location="cpu")
    assert out[0].tolist() == [1.0, 1.0]


def test_save_is_atomic(tmp_path, monkeypatch):
    p = tmp_path / "ckpt.pt"
    torch.save({"v": torch.ones(1)}, p)

    class Boom(Exception):
        pass

    def fail(*a, **k):
        raise Boom()
    from nbtorch import _torch_pickle_write
    monkeypatch.setattr(_torch_pickle_write, "_storage_bytes", fail)    # mid-write
    with pytest.raises(Boom):
        torch.save({"v": torch.zeros(1)}, p)
    monkeypatch.undo()
    assert torch.load(p)["v"].tolist() == [1.0]
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_truncated_file_is_clear_error(tmp_path):
    p = tmp_path / "ckpt.pt"
    torch.save({"v": torch.randn(100)}, p)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="truncated or corrupted"):
        torch.load(p)


def test_unsupported_object_type():
    with pytest.raises(TypeError, match="cannot store objects of type"):
        torch.save({"f": lambda: 1}, io.BytesIO())


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/nbtorch_pwned",))


def test_malicious_pytorch_pickle_does_not_run(tmp_path):
    target = "/tmp/nbtorch_pwned"
    if os.path.exists(target):
        os.unlink(target)
    p = tmp_path / "evil.pt"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"x": _Evil()}))
    with pytest.raises(pickle.UnpicklingError, match="refusing to load global"):
        torch.load(p)
    assert not os.path.exists(target)


def _fake_torch_pt(path, arrays):
    """Write a zip .pt laid out like PyTorch's, using a stand-in `torch` module for pickling."""
    fake = types.ModuleType("torch")
    fake_utils = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*a):
        raise AssertionError("never called while pickling")
    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    fake_utils._rebuild_tensor_v2 = _rebuild_tensor_v2

    class FloatStorage:
        pass
    FloatStorage.__module__ = "torch"
    FloatStorage.__qualname__ = "FloatStorage"
    fake.FloatStorage = FloatStorage
    fake._utils = fake_utils

    class T:
        def __init__(self, key, arr):
            self.key, self.arr = key, arr

        def __reduce__(self):
            return (_rebuild_tensor_v2, (("PID", self.key, self.arr.size), 0,
                                         self.arr.shape, tuple(s // 4 for s in
                                                               self.arr.strides), False,
                                         collections.OrderedDict()))

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, tuple) and obj and obj[0] == "PID":
                return ("storage", FloatStorage, obj[1], "cpu", obj[2])
            return None

    saved = {k: sys.modules.get(k) for k in ("torch", "torch._utils")}
    sys.modules["torch"], sys.modules["torch._utils"] = fake, fake_utils
    try:
        buf = io.BytesIO()
        P(buf, protocol=2).dump(collections.OrderedDict(
            (k, T(str(i), a)) for i, (k, a) in enumerate(arrays.items())))
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        for i, a in enumerate(arrays.values()):
            z.writestr(f"archive/data/{i}", np.ascontiguousarray(a, np.float32).tobytes())


def test_reads_pytorch_zip_state_dict(tmp_path):
    if "torch" in sys.modules or _torch_installed():
        pytest.skip("the real-PyTorch test below covers this")
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([0.5, -1.0], np.float32)
    p = tmp_path / "w.pt"
    _fake_torch_pt(p, {"linear.weight": w, "linear.bias": b})
    sd = torch.load(p)
    assert list(sd) == ["linear.weight", "linear.bias"]
    np.testing.assert_array_equal(sd["linear.weight"].numpy(), w)
    np.testing.assert_array_equal(sd["linear.bias"].numpy(), b)


def _torch_installed():
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def test_reads_real_pytorch_file(tmp_path):
    real = pytest.importorskip("torch")
    p = tmp_path / "real.pt"
    sd = {"w": real.arange(6.0).reshape(2, 3).t(), "n": real.tensor([1, 2])}
    real.save(sd, p)
    back = torch.load(p)
    np.testing.assert_array_equal(back["w"].numpy(), sd["w"].numpy())
    assert back["n"].dtype is torch.int64


def test_zero_dim_tensors_keep_their_shape():
    buf = io.BytesIO()
    torch.save({"step": torch.tensor(184.0), "v": torch.ones(2)}, buf)
    buf.seek(0)
    back = torch.load(buf)
    assert back["step"].shape == () and back["step"].item() == 184.0


def test_complex_tensors_round_trip(tmp_path):
    """ComplexFloatStorage / ComplexDoubleStorage, as PyTorch writes them (save raised
    KeyError: 'complex64', load refused the storage class)."""
    path = tmp_path / "c.pt"
    c64 = torch.tensor([1 + 2j, 3 - 4j])
    c128 = c64.to(torch.complex128)
    torch.save({"a": c64, "b": c128}, path)
    back = torch.load(path)
    assert back["a"].dtype is torch.complex64 and back["b"].dtype is torch.complex128
    assert back["a"].tolist() == [1 + 2j, 3 - 4j]
    real = pytest.importorskip("torch")
    assert real.load(path, weights_only=True)["b"].tolist() == [1 + 2j, 3 - 4j]
    real.save({"c": real.tensor([5 - 1j])}, tmp_path / "t.pt")
    assert torch.load(tmp_path / "t.pt")["c"].tolist() == [5 - 1j]


class _Config:
    """A user's class in a checkpoint (as argparse namespaces and configs are)."""

    def __init__(self, lr):
        self.lr = lr


def test_safe_globals_allow_a_users_class_both_ways(tmp_path):
    path = tmp_path / "cfg.pt"
    with pytest.raises(TypeError, match="add_safe_globals"):
        torch.save({"cfg": _Config(0.1)}, path)
    with torch.serialization.safe_globals([_Config]):
        torch.save({"cfg": _Config(0.1), "w": torch.ones(2)}, path)
        back = torch.load(path)
        assert back["cfg"].lr == 0.1 and isinstance(back["cfg"], _Config)
    assert torch.serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="add_safe_globals"):
        torch.load(path)
    torch.serialization.add_safe_globals([_Config])
    try:
        assert torch.load(path)["cfg"].lr == 0.1
    finally:
        torch.serialization.clear_safe_globals()
