"""Checkpoints both ways: nbtorch.save writes PyTorch's zip format (torch.load with
weights_only=True reads it), nbtorch.load reads PyTorch's files and nbtorch's first
format, values come back as what they were, and nothing outside the allow-list loads."""
import collections
import io
import json
import math
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest

import nbtorch
from nbtorch import nn

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]


def _round_trip(obj, **kw):
    buf = io.BytesIO()
    nbtorch.save(obj, buf)
    buf.seek(0)
    return nbtorch.load(buf, **kw)


def _sample():
    base = nbtorch.arange(12.0).reshape(3, 4)
    od = collections.OrderedDict(a=1)
    od._metadata = {"": {"version": 1}}
    return {
        "tensors": {d: nbtorch.ones(2, 3, dtype=getattr(nbtorch, d)) for d in DTYPES},
        "base": base, "view": base[1:, ::2], "t": base.t(),
        "scalar": nbtorch.tensor(3.5), "empty": nbtorch.zeros(0, 4),
        "param": nn.Parameter(nbtorch.ones(2)), "frozen": nn.Parameter(nbtorch.ones(1), False),
        "rg": nbtorch.ones(2, requires_grad=True),
        "np": np.arange(6, dtype=np.int16).reshape(2, 3), "np_t": np.arange(6.0).reshape(2, 3).T,
        "np0": np.array(2.5), "np_scalar": np.float32(1.25), "np_bool": np.array([True, False]),
        "prims": [1, -2 ** 70, 2.5, math.inf, complex(1, 2), "s", b"\x00\xffbytes", None, True],
        "tuple": (1, ("nested", 2.0)), "set": {1, 2}, "counter": collections.Counter("abca"),
        "od": od, "dtype": nbtorch.float16, "device": nbtorch.device("cpu"),
        "size": nbtorch.Size([2, 3]), "int_keys": {1: "a", (2, 3): "b"},
    }


def _check_same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, nbtorch.Tensor):
        assert a.dtype is b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        assert nbtorch.equal(a.detach().float(), b.detach().float())
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _check_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _check_same(x, y)
    else:
        assert a == b or (a != a and b != b)


def test_everything_round_trips_as_what_it_was():
    obj = _sample()
    back = _round_trip(obj)
    _check_same(obj, back)
    assert type(back["param"]).__name__ == "Parameter" and not back["frozen"].requires_grad
    assert back["od"]._metadata == {"": {"version": 1}}
    assert isinstance(back["np_scalar"], np.float32)
    # views share their storage again, as saved
    back["base"][1, 0] = -1.0
    assert back["view"][0, 0].item() == -1.0 and back["t"][0, 1].item() == -1.0


def test_state_dict_round_trip_and_file_layout(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    p = tmp_path / "model.pt"
    nbtorch.save(model.state_dict(), p)
    fresh = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    fresh.load_state_dict(nbtorch.load(p))
    for (k, v), (k2, v2) in zip(model.state_dict().items(), fresh.state_dict().items()):
        assert k == k2 and nbtorch.equal(v, v2)
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
        assert names[:4] == ["model/data.pkl", "model/.format_version",
                             "model/.storage_alignment", "model/byteorder"]
        assert names[-2:] == ["model/version", "model/.data/serialization_id"]
        assert z.read("model/byteorder") == b"little" and z.read("model/version") == b"3\n"
        raw = p.read_bytes()
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:
                                                           info.header_offset + 30])
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0
        # pickled with the names PyTorch's weights-only loader accepts, nothing else
        data = z.read("model/data.pkl")
        for needle in (b"torch._utils\n_rebuild_tensor_v2", b"torch\nFloatStorage",
                       b"collections\nOrderedDict"):
            assert needle in data
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_pytorch_reads_nbtorch_checkpoints(tmp_path):
    torch = pytest.importorskip("torch")
    obj = _sample()
    del obj["np"], obj["np_t"], obj["np0"], obj["np_scalar"], obj["np_bool"]
    p = tmp_path / "ckpt.pt"
    nbtorch.save(obj, p)
    got = torch.load(p, weights_only=True)
    for d in DTYPES:
        t = got["tensors"][d]
        assert str(t.dtype) == f"torch.{d}" and t.shape == (2, 3)
        assert t.float().eq(1).all()
    np.testing.assert_array_equal(got["view"].numpy(), obj["view"].numpy())
    assert got["view"].untyped_storage().data_ptr() == got["base"].untyped_storage().data_ptr()
    assert isinstance(got["param"], torch.nn.Parameter) and got["param"].requires_grad
    assert not got["frozen"].requires_grad and got["rg"].requires_grad and got["rg"].is_leaf
    assert got["scalar"].shape == () and got["scalar"].item() == 3.5
    assert got["dtype"] is torch.float16 and got["device"] == torch.device("cpu")
    assert got["size"] == torch.Size([2, 3]) and got["od"]._metadata == {"": {"version": 1}}
    assert got["prims"] == obj["prims"] and got["set"] == {1, 2} and got["tuple"] == obj["tuple"]
    assert got["counter"] == collections.Counter("abca")
    assert torch.load(p, weights_only=True, mmap=True)["base"].sum().item() == 66.0
    # a model's state dict goes straight into the PyTorch model
    ours = nn.Linear(3, 2)
    nbtorch.save(ours.state_dict(), p)
    theirs = torch.nn.Linear(3, 2)
    theirs.load_state_dict(torch.load(p, weights_only=True))
    np.testing.assert_array_equal(theirs.weight.detach().numpy(), ours.weight.detach().numpy())
    # NumPy arrays load in PyTorch as arrays, where NumPy's globals are allowed
    nbtorch.save({"a": np.arange(3), "s": np.float32(2)}, p)
    got = torch.load(p, weights_only=False)
    assert isinstance(got["a"], np.ndarray) and got["a"].tolist() == [0, 1, 2]
    assert isinstance(got["s"], np.float32)


def test_nbtorch_reads_pytorch_checkpoints(tmp_path):
    torch = pytest.importorskip("torch")
    base = torch.arange(12.0).reshape(3, 4)
    obj = {"base": base, "view": base[1:, 1:], "bf": torch.ones(2, dtype=torch.bfloat16),
           "p": torch.nn.Parameter(torch.ones(2)), "np": np.arange(4.0), "n": 3,
           "dt": torch.int8, "dev": torch.device("cpu"), "size": torch.Size([1]),
           "sd": torch.nn.Linear(2, 1).state_dict()}
    p = tmp_path / "theirs.pt"
    torch.save(obj, p)
    got = nbtorch.load(p)
    np.testing.assert_array_equal(got["view"].numpy(), base[1:, 1:].numpy())
    got["base"][1, 1] = 100.0
    assert got["view"][0, 0].item() == 100.0                     # shared storage kept
    assert got["bf"].dtype is nbtorch.bfloat16 and type(got["p"]).__name__ == "Parameter"
    assert isinstance(got["np"], np.ndarray) and got["n"] == 3
    assert got["dt"] is nbtorch.int8 and got["dev"] == nbtorch.device("cpu")
    assert got["size"] == nbtorch.Size([1]) and list(got["sd"]) == ["weight", "bias"]


def test_map_location_forms():
    obj = {"w": nbtorch.ones(2)}
    assert _round_trip(obj, map_location="cpu")["w"].device == nbtorch.device("cpu")
    assert _round_trip(obj, map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]
    seen = []
    _round_trip(obj, map_location=lambda t, loc: seen.append(loc))
    assert seen == ["cpu"]


def test_refusals(tmp_path):
    with pytest.raises(TypeError, match="cannot store objects of type function"):
        nbtorch.save({"f": lambda: 1}, io.BytesIO())
    with pytest.raises(TypeError, match="cannot store objects of type Linear"):
        nbtorch.save(nn.Linear(2, 2), io.BytesIO())
    with pytest.raises(TypeError, match="cannot store objects of type frozenset"):
        nbtorch.save(frozenset(), io.BytesIO())
    with pytest.raises(TypeError, match="arrays of Python objects"):
        nbtorch.save(np.array([object()]), io.BytesIO())

    def archive(payload, records=()):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("archive/data.pkl", payload)
            for name, data in records:
                z.writestr(f"archive/{name}", data)
        buf.seek(0)
        return buf

    obj_array = pickle.dumps({"a": np.array([1, "x"], dtype=object)}, protocol=2)
    with pytest.raises(pickle.UnpicklingError):
        nbtorch.load(archive(obj_array))
    with pytest.raises(pickle.UnpicklingError, match="refusing to load global"):
        nbtorch.load(archive(pickle.dumps(collections.deque("ab"), protocol=2)))
    # a view beyond its storage, and a storage shorter than it claims: clear errors
    good = io.BytesIO()
    nbtorch.save({"w": nbtorch.arange(4.0)}, good)
    with zipfile.ZipFile(io.BytesIO(good.getvalue())) as z:
        pkl = z.read("archive/data.pkl")
    bad = pkl.replace(b"K\x04\x85", b"K\x09\x85")           # size (4,) -> (9,)
    assert bad != pkl
    with pytest.raises(RuntimeError, match="does not fit its storage"):
        nbtorch.load(archive(bad, [("data/0", np.arange(4.0, dtype=np.float32).tobytes())]))
    with pytest.raises(RuntimeError, match="truncated or corrupted"):
        nbtorch.load(archive(pkl, [("data/0", b"\x00" * 8)]))
    p = tmp_path / "cut.pt"
    nbtorch.save({"w": nbtorch.randn(1000)}, p)
    p.write_bytes(p.read_bytes()[:2000])
    with pytest.raises(RuntimeError, match="truncated or corrupted"):
        nbtorch.load(p)


def test_reads_the_first_nbtorch_format(tmp_path):
    p = tmp_path / "v1.pt"
    structure = {"format": "nbtorch-checkpoint-v1", "root": {"__dict__": [
        ["w", {"__tensor__": 0, "requires_grad": False, "device": "cpu", "parameter": True}],
        ["b", {"__tensor__": 1, "requires_grad": False, "device": "cpu", "parameter": False,
               "dtype": "bfloat16"}],
        ["epoch", 3], ["t", {"__tuple__": [1, {"__float__": "inf"}]}]], "ordered": True}}
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("nbtorch.json", json.dumps(structure))
        for i, a in enumerate([np.ones(2, np.float32),
                               np.array([0x3F80], np.uint16)]):      # bfloat16 1.0
            buf = io.BytesIO()
            np.save(buf, a, allow_pickle=False)
            z.writestr(f"tensors/{i}.npy", buf.getvalue())
    got = nbtorch.load(p)
    assert isinstance(got, collections.OrderedDict) and got["epoch"] == 3
    assert type(got["w"]).__name__ == "Parameter" and got["w"].tolist() == [1.0, 1.0]
    assert got["b"].dtype is nbtorch.bfloat16 and got["b"].float().item() == 1.0
    assert got["t"] == (1, math.inf)


def test_pytorch_legacy_format_is_a_clear_error():
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2)}, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="legacy \\(pre-1.6, non-zip\\) format"):
        nbtorch.load(buf)


def test_cuda_location_without_cuda_needs_map_location():
    if nbtorch.cuda.is_available():
        pytest.skip("CUDA is available here")
    buf = io.BytesIO()
    nbtorch.save({"w": nbtorch.ones(2)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        pkl = z.read("archive/data.pkl").replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
        data = z.read("archive/data/0")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/data/0", data)
    out.seek(0)
    with pytest.raises(RuntimeError, match="map_location=torch.device\\('cpu'\\)"):
        nbtorch.load(out)
    out.seek(0)
    assert nbtorch.load(out, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    out.seek(0)
    assert nbtorch.load(out, map_location={"cuda:0": "cpu"})["w"].device.type == "cpu"
