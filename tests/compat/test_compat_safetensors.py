"""nbtorch.safetensors: save_file/load_file through the optional safetensors package;
files exchanged with safetensors.torch when PyTorch is importable."""
import numpy as np
import pytest

import nbtorch

pytest.importorskip("safetensors")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]


def _tensors():
    base = nbtorch.arange(12.0).reshape(3, 4)
    out = {d: (nbtorch.arange(6) % 2).to(getattr(nbtorch, d)).reshape(2, 3) for d in DTYPES}
    out.update(strided=base.t(), scalar=nbtorch.tensor(2.5), empty=nbtorch.zeros(0, 3))
    return out


def test_round_trip(tmp_path):
    ts = _tensors()
    p = tmp_path / "m.safetensors"
    nbtorch.safetensors.save_file(ts, p, metadata={"format": "pt"})
    back = nbtorch.safetensors.load_file(p)
    assert sorted(back) == sorted(ts)
    for k, t in ts.items():
        assert back[k].dtype is t.dtype and back[k].shape == t.shape
        assert nbtorch.equal(back[k].float(), t.float())
    back["float32"][0, 0] = 7.0                      # loaded tensors are writable
    assert nbtorch.safetensors.load(nbtorch.safetensors.save(ts))["strided"].shape == (4, 3)
    model = nbtorch.nn.Linear(3, 2)
    nbtorch.safetensors.save_file(model.state_dict(), p)
    fresh = nbtorch.nn.Linear(3, 2)
    fresh.load_state_dict(nbtorch.safetensors.load_file(p))
    assert nbtorch.equal(fresh.weight, model.weight)


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="Key `1` is invalid"):
        nbtorch.safetensors.save({1: nbtorch.ones(1)})
    with pytest.raises(ValueError, match="expected nbtorch.Tensor"):
        nbtorch.safetensors.save({"a": np.ones(1)})
    p = tmp_path / "bad.safetensors"
    p.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(Exception):
        nbtorch.safetensors.load_file(p)


def test_exchange_with_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    p = tmp_path / "ours.safetensors"
    nbtorch.safetensors.save_file(_tensors(), p)
    theirs = st_torch.load_file(str(p))
    for k, t in _tensors().items():
        assert str(theirs[k].dtype) == f"torch.{t.dtype.name}"
        np.testing.assert_array_equal(theirs[k].float().numpy(), t.float().numpy())
    q = tmp_path / "theirs.safetensors"
    st_torch.save_file({"w": torch.arange(6.0).reshape(2, 3).to(torch.bfloat16)}, str(q))
    got = nbtorch.safetensors.load_file(q)
    assert got["w"].dtype is nbtorch.bfloat16
    np.testing.assert_array_equal(got["w"].float().numpy(), np.arange(6.0).reshape(2, 3))
