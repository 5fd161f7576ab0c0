"""uint16/uint32/uint64 and the float8 family: PyTorch's "limited" dtypes (no torch needed).

What they do is what PyTorch 2.x does: creation, conversion (c10's rounding and
saturation rules), views, copies, indexing, sort/unique for the uints and the few ops
PyTorch computes for them; everything else raises PyTorch's NotImplementedError, and
promotion with another dtype raises its RuntimeError. tests/unit/test_limited_dtypes_torch.py
compares the same outcomes with PyTorch itself.
"""
import io

import ml_dtypes
import numpy as np
import pytest

import nbtorch

UINTS = ["uint16", "uint32", "uint64"]
FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
          "float8_e8m0fnu"]
ALL = UINTS + FLOAT8


def dt(name):
    return getattr(nbtorch, name)


@pytest.mark.parametrize("name", ALL)
def test_dtype_attributes(name):
    d = dt(name)
    assert repr(d) == f"torch.{name}"
    assert d.itemsize == (1 if name in FLOAT8 else int(name[4:]) // 8)
    assert d.is_floating_point == (name in FLOAT8)
    assert d.is_signed == (name in FLOAT8 and name != "float8_e8m0fnu")
    assert nbtorch.zeros(2, dtype=d).is_signed() == d.is_signed
    assert nbtorch.zeros(2, dtype=d).element_size() == d.itemsize


def test_iinfo_and_finfo_are_pytorchs():
    assert (nbtorch.iinfo(nbtorch.uint32).min, nbtorch.iinfo(nbtorch.uint32).max) == (0, 2**32 - 1)
    assert nbtorch.iinfo(nbtorch.uint64).max == 2**64 - 1
    assert repr(nbtorch.iinfo(nbtorch.uint16)) == "iinfo(min=0, max=65535, dtype=uint16)"
    f = nbtorch.finfo(nbtorch.float8_e4m3fn)
    assert (f.max, f.min, f.eps, f.tiny, f.resolution, f.bits) == (448, -448, 0.125,
                                                                  0.015625, 1.0, 8)
    assert nbtorch.finfo(nbtorch.float8_e5m2fnuz).eps == 0.125      # c10's, not ml_dtypes'
    assert nbtorch.finfo(nbtorch.float8_e8m0fnu).max == 2.0 ** 127
    assert repr(nbtorch.finfo(nbtorch.float8_e5m2)) == (
        "finfo(resolution=1, min=-57344, max=57344, eps=0.25, smallest_normal=6.10352e-05, "
        "tiny=6.10352e-05, dtype=float8_e5m2)")


def test_promotion_is_refused_with_pytorchs_messages():
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not "
                       "supported, attempted to promote UInt32 and Long"):
        nbtorch.promote_types(nbtorch.uint32, nbtorch.int64)
    with pytest.raises(RuntimeError, match="attempted to promote UInt16 and UInt64"):
        nbtorch.promote_types(nbtorch.uint16, nbtorch.uint64)
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported, "
                       "attempted to promote Float8_e4m3fn and Float"):
        nbtorch.promote_types(nbtorch.float8_e4m3fn, nbtorch.float32)
    with pytest.raises(RuntimeError, match="Float8 Types.*UInt32 and Float8_e5m2"):
        nbtorch.promote_types(nbtorch.uint32, nbtorch.float8_e5m2)
    assert nbtorch.promote_types(nbtorch.uint64, nbtorch.float16) is nbtorch.float16
    u = nbtorch.tensor([1, 2], dtype=nbtorch.uint32)
    with pytest.raises(RuntimeError, match="UInt32 and Long"):
        u * nbtorch.tensor([1, 2])
    assert (u * nbtorch.tensor([0.5, 1.0])).tolist() == [0.5, 2.0]
    assert (u * 3).dtype is nbtorch.uint32 and nbtorch.result_type(u, 2.5) is nbtorch.float32


@pytest.mark.parametrize("name", UINTS)
def test_uint_values_and_the_ops_pytorch_computes(name):
    d = dt(name)
    hi = 2 ** (8 * d.itemsize) - 1
    a = nbtorch.tensor([3, hi, 2, 5], dtype=d)
    b = nbtorch.tensor([1, 1, 2, 4], dtype=d)
    assert repr(nbtorch.tensor([0, 7], dtype=d)) == f"tensor([0, 7], dtype=torch.{name})"
    assert a.tolist() == [3, hi, 2, 5] and isinstance(a[1].item(), int)
    assert (a * b).tolist() == [3, hi, 4, 20]                       # wraps as C does
    assert (a * 2).tolist() == [6, hi - 1, 4, 10]
    assert (a & b).tolist() == [1, 1, 2, 4] and (a ^ b).tolist() == [2, hi - 1, 0, 1]
    assert (a == b).tolist() == [False, False, True, False]
    assert a.sum().dtype is nbtorch.int64 and a.cumsum(0).dtype is nbtorch.int64
    assert nbtorch.tensor([-1, 70000]).to(d).tolist() == [hi, 70000 & hi]
    assert a.to(nbtorch.float64).tolist() == [3.0, float(hi), 2.0, 5.0]
    values, indices = a.sort()
    assert values.tolist() == [2, 3, 5, hi] and indices.tolist() == [2, 0, 3, 1]
    assert nbtorch.unique(nbtorch.tensor([5, hi, 5, 0], dtype=d)).tolist() == [0, 5, hi]
    assert a[nbtorch.tensor([1, 3])].tolist() == [hi, 5] and a[1:3].tolist() == [hi, 2]
    assert nbtorch.cat([a, b]).dtype is d and nbtorch.where(a == b, a, b).tolist() == [1, 1, 2, 4]
    assert a.view(nbtorch.uint8).shape == (4 * d.itemsize,)
    assert a.sqrt().dtype is nbtorch.float32 and (a / b).dtype is nbtorch.float32
    assert a.any().item() and not nbtorch.zeros(3, dtype=d).any().item()


def test_float8_conversions_follow_c10():
    x = nbtorch.tensor([1.5, 300.0, 70000.0, -np.inf, np.nan, 0.3])
    assert nbtorch.allclose(x.to(nbtorch.float8_e4m3fn).float(),    # saturates, no inf
                            nbtorch.tensor([1.5, 288.0, 448.0, -448.0, np.nan, 0.3125]),
                            equal_nan=True)
    e5 = x.to(nbtorch.float8_e5m2).float().tolist()
    assert e5[:4] == [1.5, 320.0, np.inf, -np.inf] and np.isnan(e5[4])
    assert np.isnan(x.to(nbtorch.float8_e4m3fnuz).float()[1].item())     # beyond 240
    e8 = nbtorch.tensor([1.5, 3.0, -1.0, 0.0]).to(nbtorch.float8_e8m0fnu)
    assert e8.view(nbtorch.uint8).tolist() == [128, 129, 127, 0]   # magnitude; 0 -> 2**-127
    assert nbtorch.zeros(2, dtype=nbtorch.float8_e8m0fnu).view(nbtorch.uint8).tolist() == [0, 0]
    assert nbtorch.tensor([2**31], dtype=nbtorch.float8_e4m3fn).item() == 448.0
    bits = nbtorch.tensor([1.0, 2.0, 0.5]).to(nbtorch.float8_e4m3fn).view(nbtorch.uint8)
    assert bits.tolist() == [56, 64, 48]
    assert repr(nbtorch.tensor([1.0, 0.5]).to(nbtorch.float8_e5m2)) == (
        "tensor([1.0000, 0.5000], dtype=torch.float8_e5m2)")


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_ops_pytorch_computes(name):
    d = dt(name)
    a = nbtorch.tensor([1.0, 2.0, 0.5, 4.0]).to(d)
    b = nbtorch.tensor([2.0, 1.0, 1.0, 0.5]).to(d)
    assert (a * b).dtype is d and (a * b).float().tolist() == [2.0, 2.0, 0.5, 2.0]
    assert (a == b).tolist() == [False] * 4 and (a != 1).tolist() == [False, True, True, True]
    assert a.float().mean().item() == 1.875 and a.sum(dtype=nbtorch.float32).item() == 7.5
    assert nbtorch.cat([a, b])[4:].float().tolist() == [2.0, 1.0, 1.0, 0.5]
    assert a[nbtorch.tensor([3, 0])].float().tolist() == [4.0, 1.0]
    assert nbtorch.where(a == b, a, b).dtype is d and a.isnan().tolist() == [False] * 4
    assert a.clone().fill_(1).float().tolist() == [1.0] * 4
    with pytest.raises(TypeError, match="unsupported ScalarType"):
        a.numpy()
    with pytest.raises(NotImplementedError, match="mul_cpu_reduced_float"):
        a * 2


# (op, dtypes it is refused for, PyTorch's kernel name in the message)
REFUSED = [
    (lambda a, b: a + b, ALL, "add_stub"),
    (lambda a, b: a - 1, ALL, "add_stub"),
    (lambda a, b: a < b, ALL, "lt_cpu"),
    (lambda a, b: -a, ALL, "neg_cpu"),
    (lambda a, b: a.max(), ALL, "max_all"),
    (lambda a, b: a.max(0), ALL, "max_cpu"),
    (lambda a, b: a.amin(), ALL, "min_values_cpu"),
    (lambda a, b: a.argmax(), ALL, "argmax_cpu"),
    (lambda a, b: a.flip(0), ALL, "flip_cpu"),
    (lambda a, b: a.topk(2), ALL, "topk_cpu"),
    (lambda a, b: a.nonzero(), ALL, "nonzero_count_cpu"),
    (lambda a, b: a.masked_fill(a == b, 0), ALL, "masked_fill"),
    (lambda a, b: a.clamp(0, 1), ALL, "clamp_scalar_cpu"),
    (lambda a, b: a.cummax(0), ALL, "cummax_cpu"),
    (lambda a, b: nbtorch.arange(3, dtype=a.dtype), ALL, "arange_cpu"),
    (lambda a, b: nbtorch.rand(2, dtype=a.dtype), ALL, "check_uniform_bounds"),
    (lambda a, b: a.reshape(2, 2) @ b.reshape(2, 2), UINTS + ["float8_e8m0fnu"],
     "addmm_impl_cpu_"),
    (lambda a, b: a.index_select(0, nbtorch.tensor([0])), UINTS, "index_select"),
    (lambda a, b: nbtorch.eye(2, dtype=a.dtype), UINTS, "eye"),
    (lambda a, b: a.sort(), FLOAT8, "sorting_kernel_method_name"),
    (lambda a, b: a.sum(), FLOAT8, "sum_cpu"),
    (lambda a, b: a.cumsum(0), FLOAT8, "cumsum_out_cpu"),
    (lambda a, b: a / b, FLOAT8, "div_cpu"),
    (lambda a, b: a & b, FLOAT8, "bitwise_and_cpu"),
]


@pytest.mark.parametrize("op, names, kernel", REFUSED)
def test_refused_ops_raise_pytorchs_error(op, names, kernel):
    for name in names:
        d = dt(name)
        a = nbtorch.tensor([3.0, 1.0, 2.0, 4.0]).to(d)
        with pytest.raises(NotImplementedError) as info:
            op(a, a.clone())
        type_name = nbtorch._dtype.type_name(d)
        assert str(info.value) == f"\"{kernel}\" not implemented for '{type_name}'"


def test_numpy_interop_shares_memory_for_uints():
    a = np.arange(4, dtype=np.uint32)
    t = nbtorch.from_numpy(a)
    a[0] = 9
    assert t.dtype is nbtorch.uint32 and t[0].item() == 9
    assert np.shares_memory(t.numpy(), a)
    assert nbtorch.tensor(np.array([1, 2**63], np.uint64)).tolist() == [1, 2**63]
    f = nbtorch.from_numpy(np.array([1.0, 2.0], ml_dtypes.float8_e5m2))   # ml_dtypes too
    assert f.dtype is nbtorch.float8_e5m2


@pytest.mark.parametrize("name", ALL)
def test_save_load_and_dlpack_round_trips(name):
    d = dt(name)
    t = nbtorch.tensor([1.0, 2.0, 4.0, 0.5]).to(d)[1:]
    buf = io.BytesIO()
    nbtorch.save({"t": t, "p": nbtorch.nn.Parameter(t.clone(), requires_grad=False)}, buf)
    back = nbtorch.load(io.BytesIO(buf.getvalue()))
    for x in back.values():
        assert x.dtype is d and x.view(nbtorch.uint8).tolist() == t.view(nbtorch.uint8).tolist()
    u = nbtorch.from_dlpack(t)
    assert u.dtype is d and u.data_ptr() == t.data_ptr()
