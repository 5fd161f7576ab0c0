"""uint16-64 and float8 against PyTorch itself: for each op and dtype, the same values
where PyTorch computes and the same error (class and message) where it refuses; files
saved by either load in the other; DLPack hands the memory over without a copy."""
import io
import math

import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")

DTYPES = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
          "float8_e5m2fnuz", "float8_e8m0fnu"]


def _inputs(m, name):
    d = getattr(m, name)
    if name.startswith("float8"):
        return m.tensor([1.0, 2.0, 0.5, 4.0]).to(d), m.tensor([2.0, 1.0, 1.0, 0.5]).to(d)
    return m.tensor([3, 1, 2, 5]).to(d), m.tensor([1, 1, 2, 4]).to(d)


# op(m, d, a, b) with m the module (torch or nbtorch), d the dtype, a and b two tensors
OPS = {
    "zeros": lambda m, d, a, b: m.zeros(3, dtype=d),
    "full": lambda m, d, a, b: m.full((2,), 2, dtype=d),
    "tensor": lambda m, d, a, b: m.tensor([1, 2], dtype=d),
    "arange": lambda m, d, a, b: m.arange(4, dtype=d),
    "rand": lambda m, d, a, b: m.rand(3, dtype=d),
    "randint": lambda m, d, a, b: m.randint(0, 5, (3,), dtype=d).shape,
    "eye": lambda m, d, a, b: m.eye(2, dtype=d),
    "to_float": lambda m, d, a, b: a.to(m.float32),
    "to_int64": lambda m, d, a, b: a.to(m.int64),
    "from_float": lambda m, d, a, b: m.tensor([1.5, 3.0, 300.0, -1.0, 1e9, -math.inf]).to(d),
    "from_int64": lambda m, d, a, b: m.tensor([1, 3, 70000, -1]).to(d),
    "from_half": lambda m, d, a, b: m.tensor([1.5, 3.0, 300.0]).half().to(d),
    "copy_into": lambda m, d, a, b: m.zeros(4, dtype=d).copy_(m.arange(4.0)),
    "contiguous_T": lambda m, d, a, b: a.reshape(2, 2).t().contiguous(),
    "view_dtype": lambda m, d, a, b: a.view(m.uint8),
    "cat": lambda m, d, a, b: m.cat([a, b]),
    "stack": lambda m, d, a, b: m.stack([a, b]),
    "index": lambda m, d, a, b: a[m.tensor([0, 2])],
    "mask_select": lambda m, d, a, b: a[m.tensor([True, False, True, False])],
    "setitem": lambda m, d, a, b: (a.__setitem__(m.tensor([0, 2]), b[:2]), a)[1],
    "setitem_mask": lambda m, d, a, b: (a.__setitem__(a == b, b[0]), a)[1],
    "fill_": lambda m, d, a, b: a.fill_(1),
    "fill_big": lambda m, d, a, b: a.fill_(2**32 + 5),
    "flip": lambda m, d, a, b: a.flip(0),
    "sort": lambda m, d, a, b: a.sort(),
    "argsort": lambda m, d, a, b: a.argsort(descending=True),
    "unique": lambda m, d, a, b: m.unique(m.cat([a, b]), return_counts=True),
    "eq": lambda m, d, a, b: a == b,
    "ne_scalar": lambda m, d, a, b: a != 1,
    "lt": lambda m, d, a, b: a < b,
    "add": lambda m, d, a, b: a + b,
    "sub_scalar": lambda m, d, a, b: a - 1,
    "mul": lambda m, d, a, b: a * b,
    "mul_scalar": lambda m, d, a, b: a * 2,
    "div": lambda m, d, a, b: a / b,
    "floor_divide": lambda m, d, a, b: a // b,
    "remainder": lambda m, d, a, b: a % b,
    "neg": lambda m, d, a, b: -a,
    "abs": lambda m, d, a, b: a.abs(),
    "pow": lambda m, d, a, b: a ** 2,
    "bitwise_and": lambda m, d, a, b: a & b,
    "bitwise_xor": lambda m, d, a, b: a ^ b,
    "bitwise_not": lambda m, d, a, b: ~a,
    "lshift": lambda m, d, a, b: a << 1,
    "sum": lambda m, d, a, b: a.sum(),
    "sum_float": lambda m, d, a, b: a.sum(dtype=m.float32),
    "sum_dim": lambda m, d, a, b: a.reshape(2, 2).sum(0),
    "cumsum": lambda m, d, a, b: a.cumsum(0),
    "prod": lambda m, d, a, b: a.prod(),
    "mean": lambda m, d, a, b: a.mean(),
    "max": lambda m, d, a, b: a.max(),
    "max_dim": lambda m, d, a, b: a.max(0),
    "amin": lambda m, d, a, b: a.amin(),
    "aminmax": lambda m, d, a, b: a.aminmax(),
    "argmax": lambda m, d, a, b: a.argmax(),
    "cummax": lambda m, d, a, b: a.cummax(0),
    "maximum": lambda m, d, a, b: m.maximum(a, b),
    "clamp": lambda m, d, a, b: a.clamp(0, 2),
    "where": lambda m, d, a, b: m.where(a == b, a, b),
    "any": lambda m, d, a, b: a.any(),
    "all": lambda m, d, a, b: a.all(),
    "nonzero": lambda m, d, a, b: a.nonzero(),
    "count_nonzero": lambda m, d, a, b: m.count_nonzero(a),
    "isnan": lambda m, d, a, b: a.isnan(),
    "isfinite": lambda m, d, a, b: a.isfinite(),
    "isinf": lambda m, d, a, b: a.isinf(),
    "sqrt": lambda m, d, a, b: a.sqrt(),
    "floor": lambda m, d, a, b: a.floor(),
    "logical_not": lambda m, d, a, b: m.logical_not(a),
    "matmul": lambda m, d, a, b: a.reshape(2, 2) @ b.reshape(2, 2),
    "gather": lambda m, d, a, b: m.gather(a, 0, m.tensor([1, 0])),
    "index_select": lambda m, d, a, b: m.index_select(a, 0, m.tensor([3, 0])),
    "index_add": lambda m, d, a, b: a.index_add(0, m.tensor([0]), b[:1]),
    "scatter": lambda m, d, a, b: a.scatter(0, m.tensor([0]), b[:1]),
    "masked_fill": lambda m, d, a, b: a.masked_fill(a == b, 0),
    "topk": lambda m, d, a, b: a.topk(2),
    "tril": lambda m, d, a, b: a.reshape(2, 2).tril(),
    "repeat_interleave": lambda m, d, a, b: a.repeat_interleave(2),
    "roll": lambda m, d, a, b: a.roll(1),
    "promote_int64": lambda m, d, a, b: a + m.tensor([1, 1, 1, 1]),
    "promote_float": lambda m, d, a, b: a * m.tensor([1.0, 1, 1, 1]),
    "promote_0d": lambda m, d, a, b: a * m.tensor(2),
    "promote_types": lambda m, d, a, b: m.promote_types(d, m.uint8),
    "result_type": lambda m, d, a, b: m.result_type(a, 1),
    "tolist": lambda m, d, a, b: a.tolist(),
    "item": lambda m, d, a, b: a[1].item(),
    "numpy": lambda m, d, a, b: a.numpy(),
    "repr": lambda m, d, a, b: repr(a.reshape(2, 2)),
    "repr_nan": lambda m, d, a, b: repr(m.tensor([math.nan, 2.0, 0.0]).to(d)),
    "equal": lambda m, d, a, b: m.equal(a, b),
    "kthvalue": lambda m, d, a, b: a.kthvalue(1),
    "median": lambda m, d, a, b: a.median(),
    "searchsorted": lambda m, d, a, b: m.searchsorted(b, a),
    "dot": lambda m, d, a, b: a.dot(b),
    "take": lambda m, d, a, b: a.take(m.tensor([0, 3])),
    "cumprod": lambda m, d, a, b: a.cumprod(0),
    "std": lambda m, d, a, b: a.std(),
    "softmax": lambda m, d, a, b: a.softmax(0),
    "nansum": lambda m, d, a, b: a.nansum(),
    "nan_to_num": lambda m, d, a, b: a.nan_to_num(),
    "relu": lambda m, d, a, b: m.relu(a),
    "sigmoid": lambda m, d, a, b: a.sigmoid(),
    "addcmul": lambda m, d, a, b: m.addcmul(a, a, b),
    "scatter_add": lambda m, d, a, b: a.scatter_add(0, m.tensor([0]), b[:1]),
    "pad": lambda m, d, a, b: m.nn.functional.pad(a, (1, 2), value=1.0),
    "embedding": lambda m, d, a, b: m.nn.functional.embedding(m.tensor([1, 0]), a.reshape(2, 2)),
}


def _outcome(m, name, op):
    try:
        return _plain(OPS[op](m, getattr(m, name), *_inputs(m, name)), m)
    except Exception as e:      # noqa: BLE001 - the outcome compared is the error
        return ("error", type(e).__name__, str(e).split("\n")[0])


def _plain(v, m):
    if isinstance(v, tuple):
        return tuple(_plain(x, m) for x in v)
    if isinstance(v, m.Tensor):
        data = v.to(m.float64) if v.dtype.is_floating_point else v
        return (str(v.dtype), tuple(v.shape), repr(data.tolist()))
    if isinstance(v, np.ndarray):
        return (str(v.dtype), v.tolist())
    return repr(v) if not isinstance(v, (int, float, bool, str)) else v


@pytest.mark.parametrize("op", sorted(OPS))
def test_outcomes_match_pytorch(op):
    for name in DTYPES:
        assert _outcome(nbtorch, name, op) == _outcome(torch, name, op), name


@pytest.mark.parametrize("name", DTYPES)
def test_pytorch_files_load_and_nbtorch_files_load_in_pytorch(name):
    src = torch.tensor([1.0, 2.0, 4.0, 0.5, 448.0]).to(getattr(torch, name))[1:]
    buf = io.BytesIO()
    torch.save({"t": src, "p": torch.nn.Parameter(src.clone(), requires_grad=False)}, buf)
    got = nbtorch.load(io.BytesIO(buf.getvalue()))
    assert got["t"].dtype is getattr(nbtorch, name)
    assert got["t"].view(nbtorch.uint8).tolist() == src.view(torch.uint8).tolist()
    out = io.BytesIO()
    nbtorch.save(got, out)
    back = torch.load(io.BytesIO(out.getvalue()))
    for key in ("t", "p"):
        assert back[key].dtype == src.dtype
        assert torch.equal(back[key].view(torch.uint8), src.view(torch.uint8))
    assert isinstance(back["p"], torch.nn.Parameter)


@pytest.mark.parametrize("name", DTYPES)
def test_dlpack_both_ways_without_a_copy(name):
    src = torch.tensor([1.0, 2.0, 4.0]).to(getattr(torch, name))
    mine = nbtorch.from_dlpack(src)
    assert mine.dtype is getattr(nbtorch, name) and mine.data_ptr() == src.data_ptr()
    back = torch.from_dlpack(mine)
    assert back.dtype == src.dtype and back.data_ptr() == src.data_ptr()


def test_iinfo_finfo_match_pytorch():
    for name in DTYPES[:3]:
        a, b = nbtorch.iinfo(getattr(nbtorch, name)), torch.iinfo(getattr(torch, name))
        assert (a.bits, a.min, a.max, repr(a)) == (b.bits, b.min, b.max, repr(b))
    for name in DTYPES[3:]:
        a, b = nbtorch.finfo(getattr(nbtorch, name)), torch.finfo(getattr(torch, name))
        assert (a.bits, a.eps, a.max, a.min, a.tiny, a.resolution, repr(a)) == \
            (b.bits, b.eps, b.max, b.min, b.tiny, b.resolution, repr(b))


def test_conversion_values_match_pytorch_bit_for_bit():
    """Every float32 bit pattern's neighbourhood: 4096 values spread over the range."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(2048) * 10.0 ** rng.integers(-8, 8, 2048),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 448, 449, 464, 480, 57344,
                         61440, 240, 248, 2.0 ** -127, 2.0 ** 127, 3e38]]).astype(np.float32)
    for name in DTYPES[3:]:
        a = nbtorch.tensor(x).to(getattr(nbtorch, name)).view(nbtorch.uint8).numpy()
        b = torch.tensor(x).to(getattr(torch, name)).view(torch.uint8).numpy()
        assert np.array_equal(a, b), name
        back = nbtorch.from_numpy(np.arange(256, dtype=np.uint8)).view(getattr(nbtorch, name))
        ref = torch.arange(256, dtype=torch.uint8).view(getattr(torch, name))
        np.testing.assert_array_equal(back.float().numpy(), ref.float().numpy())
