"""bfloat16: storage (ml_dtypes), PyTorch's promotion and rounding, ops computed in float32.

References are NumPy float32 computations rounded once to bfloat16 with ml_dtypes
(what PyTorch's CPU kernels do per op), and PyTorch itself where installed.
Every op here runs the float32 kernels other tests compile: no new specialisations.
"""
import io
import zipfile

import ml_dtypes
import numpy as np
import pytest

import nbtorch
from nbtorch import nn

BF = np.dtype(ml_dtypes.bfloat16)
F32 = np.float32


def bf(values):
    """NumPy values rounded to bfloat16 (from float32, round to nearest even)."""
    return np.asarray(values, F32).astype(BF)


def t(values, **kw):
    """An nbtorch bfloat16 tensor holding `values` rounded to bfloat16."""
    return nbtorch.tensor(np.asarray(values, F32), **kw).to(nbtorch.bfloat16)


def vals(x):
    """A bfloat16 tensor's values as float32 (exact)."""
    assert x.dtype is nbtorch.bfloat16
    return x.float().detach().numpy()


def bits(x):
    return x.detach()._array.view(np.uint16).copy()


def assert_bf(x, expected, ulps=0):
    """x is bfloat16 and equals `expected` (float32 values rounded to bfloat16), exactly or
    within `ulps` bfloat16 units in the last place."""
    want = np.asarray(expected, F32).astype(BF).astype(F32)
    got = vals(x)
    assert got.shape == want.shape
    if ulps == 0:
        np.testing.assert_array_equal(got, want)
    else:
        spacing = np.abs(want.astype(BF).astype(F32)) * 2.0 ** -7 + 1e-30
        assert np.all((np.abs(got - want) <= ulps * spacing) | (got == want)), (got, want)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# ---- the dtype ----------------------------------------------------------------------

def test_dtype_attributes_and_names():
    d = nbtorch.bfloat16
    assert repr(d) == str(d) == "torch.bfloat16"
    assert d.is_floating_point and d.is_signed and not d.is_complex
    assert d.itemsize == 2 and d.is_half and d.compute is nbtorch.float32
    assert nbtorch.float16.is_half and not nbtorch.float32.is_half
    x = nbtorch.ones(3, dtype=nbtorch.bfloat16)
    assert x.element_size() == 2 and x.itemsize == 2 and x.nbytes == 6
    assert x.is_floating_point() and x.type() == "torch.BFloat16Tensor"
    assert nbtorch.ones(2).type("torch.BFloat16Tensor").dtype is nbtorch.bfloat16
    assert nbtorch.ones(2).bfloat16().dtype is nbtorch.bfloat16
    assert nbtorch._dtype.to_dtype("bfloat16") is d
    assert nbtorch._dtype.from_numpy_dtype(BF) is d


def test_finfo_matches_pytorch_values():
    f = nbtorch.finfo(nbtorch.bfloat16)
    assert f.eps == 0.0078125 and f.bits == 16 and f.resolution == 0.01
    assert f.max == 3.3895313892515355e+38 and f.min == -f.max
    assert f.tiny == f.smallest_normal == 1.1754943508222875e-38
    assert f.dtype == "bfloat16"
    assert repr(f) == ("finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, "
                       "eps=0.0078125, smallest_normal=1.17549e-38, tiny=1.17549e-38, "
                       "dtype=bfloat16)")
    assert nbtorch.finfo(nbtorch.float32).resolution == 1e-06
    with pytest.raises(TypeError, match="floating point"):
        nbtorch.finfo(nbtorch.int32)


_PROMOTE_WITH_BF16 = {"float16": "float32", "bfloat16": "bfloat16", "float32": "float32",
                      "float64": "float64", "int8": "bfloat16", "int16": "bfloat16",
                      "int32": "bfloat16", "int64": "bfloat16", "uint8": "bfloat16",
                      "bool": "bfloat16"}


@pytest.mark.parametrize("name", sorted(_PROMOTE_WITH_BF16))
def test_promote_types_table(name):
    other = getattr(nbtorch, name)
    want = getattr(nbtorch, _PROMOTE_WITH_BF16[name])
    assert nbtorch.promote_types(nbtorch.bfloat16, other) is want
    assert nbtorch.promote_types(other, nbtorch.bfloat16) is want


def test_result_type_with_scalars_and_zero_dim_tensors():
    x = nbtorch.ones(2, dtype=nbtorch.bfloat16)
    rt = nbtorch.result_type
    assert rt(x, 2.5) is rt(x, 3) is rt(x, True) is nbtorch.bfloat16
    assert rt(x, nbtorch.tensor(2.5, dtype=nbtorch.float64)) is nbtorch.bfloat16
    assert rt(x, nbtorch.ones(2, dtype=nbtorch.float16)) is nbtorch.float32
    assert rt(x, nbtorch.ones(2)) is nbtorch.float32
    assert rt(x, nbtorch.ones(2, dtype=nbtorch.int64)) is nbtorch.bfloat16
    zero_d = nbtorch.tensor(2.5, dtype=nbtorch.bfloat16)
    assert rt(zero_d, nbtorch.ones(2, dtype=nbtorch.int32)) is nbtorch.bfloat16
    assert rt(zero_d, nbtorch.ones(2)) is nbtorch.float32
    assert rt(nbtorch.ones(2, dtype=nbtorch.int64), zero_d) is nbtorch.bfloat16
    assert (x + nbtorch.ones(2, dtype=nbtorch.float16)).dtype is nbtorch.float32
    assert (x + 1.5).dtype is (1.5 * x).dtype is nbtorch.bfloat16
    assert (nbtorch.tensor([1, 2]) / zero_d).dtype is nbtorch.bfloat16
    assert nbtorch.can_cast(nbtorch.int64, nbtorch.bfloat16)
    assert not nbtorch.can_cast(nbtorch.bfloat16, nbtorch.int64)


def test_set_default_dtype_bfloat16():
    try:
        nbtorch.set_default_dtype(nbtorch.bfloat16)
        assert nbtorch.get_default_dtype() is nbtorch.bfloat16
        assert nbtorch.tensor([1.5]).dtype is nbtorch.zeros(2).dtype is nbtorch.bfloat16
        assert (nbtorch.tensor([1, 2]) / 3).dtype is nbtorch.bfloat16
        assert nn.Linear(2, 2).weight.dtype is nbtorch.bfloat16
        assert repr(nbtorch.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"
        assert repr(nbtorch.tensor([1.5], dtype=nbtorch.float32)) == \
            "tensor([1.5000], dtype=torch.float32)"
    finally:
        nbtorch.set_default_dtype(nbtorch.float32)


# ---- rounding into bfloat16 ------------------------------------------------------------

def test_float32_to_bfloat16_rounds_to_nearest_even():
    above, below = np.nextafter(F32(1.00390625), F32(2)), np.nextafter(F32(1.01171875), F32(0))
    x = np.array([1.0, 1.00390625, 1.01171875, above, below, -1.00390625,
                  3.3895313e38, 3.39e38, 3.4e38, -3.4e38, np.inf, -np.inf, 1e-39,
                  -0.0, 9.2e-41, 1e-45], F32)
    y = nbtorch.from_numpy(x).to(nbtorch.bfloat16)
    got = vals(y)
    # ties to even (1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6); off a tie, to the nearest
    assert got[:6].tolist() == [1.0, 1.0, 1.015625, 1.0078125, 1.0078125, -1.0]
    assert got[6] == got[7] == 3.3895313892515355e38         # the largest bfloat16
    assert got[8] == np.inf and got[9] == -np.inf            # past it by half an ulp: inf
    assert got[10] == np.inf and got[11] == -np.inf
    assert 0 < got[12] < 1.2e-38 and np.signbit(got[13]) and got[13] == 0   # subnormal, -0
    np.testing.assert_array_equal(bits(y), bf(x).view(np.uint16))
    nan = nbtorch.tensor([float("nan")]).to(nbtorch.bfloat16)
    assert np.isnan(vals(nan)).all()


def test_float64_and_integers_round_through_float32_as_pytorch_does():
    v = 1 + 2 ** -8 + 2 ** -30          # direct rounding: 1 + 2^-7; via float32: a tie -> 1
    assert vals(nbtorch.tensor([v], dtype=nbtorch.float64).to(nbtorch.bfloat16)) == [1.0]
    assert vals(nbtorch.tensor([v], dtype=nbtorch.bfloat16)) == [1.0]
    assert vals(nbtorch.full((1,), v, dtype=nbtorch.bfloat16)) == [1.0]
    assert vals(nbtorch.zeros(1, dtype=nbtorch.bfloat16).fill_(v)) == [1.0]
    w = 2 ** 24 + 2 ** 16 + 1           # int64 -> float32 -> a tie -> 2^24
    assert vals(nbtorch.tensor([w, 257, -3]).to(nbtorch.bfloat16)).tolist() == [2 ** 24, 256, -3]
    assert vals(nbtorch.tensor([1e39, -1e39], dtype=nbtorch.float64).bfloat16()).tolist() == \
        [np.inf, -np.inf]


def test_conversions_out_of_bfloat16():
    x = t([1.5, -2.5, 255.0, 0.0, 3.140625])
    assert x.to(nbtorch.float32).tolist() == [1.5, -2.5, 255.0, 0.0, 3.140625]
    assert x.double().tolist() == [1.5, -2.5, 255.0, 0.0, 3.140625]
    assert x.to(nbtorch.int64).tolist() == [1, -2, 255, 0, 3]
    assert x.bool().tolist() == [True, True, True, False, True]
    assert x.half().tolist() == [1.5, -2.5, 255.0, 0.0, 3.140625]
    assert t([float("nan")]).bool().tolist() == [True]


# ---- Python and NumPy protocol --------------------------------------------------------

def test_repr_item_tolist():
    x = t([1.0, 2.5, 3.14159])
    assert repr(x) == str(x) == "tensor([1.0000, 2.5000, 3.1406], dtype=torch.bfloat16)"
    assert repr(t(3.14159)) == "tensor(3.1406, dtype=torch.bfloat16)"
    assert repr(t([300.7, 1 / 3])) == "tensor([300.0000,   0.3340], dtype=torch.bfloat16)"
    assert repr(t([1e-5, 1e9])) == "tensor([1.0014e-05, 9.9824e+08], dtype=torch.bfloat16)"
    assert x.tolist() == [1.0, 2.5, 3.140625] and isinstance(x.tolist()[0], float)
    assert x[2].item() == 3.140625 and isinstance(x[2].item(), float)
    assert float(x[1]) == 2.5 and int(x[2]) == 3 and f"{x[1]:.2f}" == "2.50"
    assert [v.item() for v in x] == [1.0, 2.5, 3.140625]
    r = t([1.0, 2.0], requires_grad=False).requires_grad_()
    assert repr(r * 2).endswith("dtype=torch.bfloat16, grad_fn=<MulBackward0>)")


def test_numpy_and_array_raise_like_pytorch():
    x = t([1.0, 2.0])
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        x.numpy()
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        np.array(x, dtype=np.float32)
    assert x.float().numpy().tolist() == [1.0, 2.0]


def test_from_numpy_accepts_ml_dtypes_bfloat16_and_shares_memory():
    a = np.array([1.5, 2.0, -3.0], BF)
    x = nbtorch.from_numpy(a)
    assert x.dtype is nbtorch.bfloat16 and x.tolist() == [1.5, 2.0, -3.0]
    a[0] = 7
    assert x[0].item() == 7.0
    assert nbtorch.tensor(a).dtype is nbtorch.as_tensor(a).dtype is nbtorch.bfloat16


def test_pickle_and_deepcopy_keep_bits():
    import copy
    import pickle
    x = t([1.0, -2.5, 3.14159, np.inf])
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert y.dtype is nbtorch.bfloat16
        np.testing.assert_array_equal(bits(y), bits(x))


# ---- creation ---------------------------------------------------------------------------

def test_creation_ops():
    d = nbtorch.bfloat16
    assert vals(nbtorch.zeros(2, 3, dtype=d)).tolist() == [[0.0] * 3] * 2
    assert vals(nbtorch.ones(2, dtype=d)).tolist() == [1.0, 1.0]
    assert vals(nbtorch.full((2,), 0.0039, dtype=d)).tolist() == [0.00390625] * 2
    assert vals(nbtorch.eye(2, dtype=d)).tolist() == [[1, 0], [0, 1]]
    assert_bf(nbtorch.arange(250, 262, dtype=d), np.arange(250, 262))
    assert_bf(nbtorch.arange(0, 3, 0.3, dtype=d), np.arange(10, dtype=np.float64) * 0.3)
    assert_bf(nbtorch.linspace(-3, 3, 51, dtype=d), np.linspace(-3, 3, 51), ulps=1)
    for fn in (nbtorch.rand, nbtorch.randn, nbtorch.empty):
        assert fn(4, dtype=d).dtype is d
    r = nbtorch.rand(1000, dtype=d)
    assert 0 <= vals(r).min() and vals(r).max() <= 1
    assert nbtorch.randn(1000, dtype=d).float().std().item() == pytest.approx(1, abs=0.15)
    x = t([1.0, 2.0])
    for y in (nbtorch.zeros_like(x), nbtorch.ones_like(x), nbtorch.full_like(x, 2.0),
              nbtorch.rand_like(x), nbtorch.randn_like(x), x.new_zeros(3), x.new_ones(1),
              x.new_full((2,), 1.5), x.new_tensor([1.5])):
        assert y.dtype is d


# ---- elementwise ------------------------------------------------------------------------

_UNARY = {
    "exp": np.exp, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "neg": np.negative,
    "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "reciprocal": np.reciprocal, "relu": lambda a: np.maximum(a, 0),
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "square": np.square,
}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_unary_ops_compute_in_float32_and_round_once(name, rng):
    a = bf(rng.uniform(-3, 3, (4, 5)))
    ref = _UNARY[name](a.astype(F32))
    assert_bf(getattr(t(a), name)(), ref, ulps=0 if name != "sigmoid" else 1)


def test_positive_domain_ops(rng):
    a = bf(rng.uniform(0.1, 4, (3, 7)))
    x, a32 = t(a), a.astype(F32)
    assert_bf(x.log(), np.log(a32), ulps=1)
    assert_bf(x.sqrt(), np.sqrt(a32))
    assert_bf(x.rsqrt(), 1 / np.sqrt(a32), ulps=1)
    assert_bf(x ** 2.5, a32 ** F32(2.5), ulps=1)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum"])
def test_binary_ops_with_broadcasting_and_strides(op, rng):
    a = bf(rng.uniform(-3, 3, (4, 6)))
    b = bf(rng.uniform(0.5, 3, (6,)))
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "maximum": np.maximum, "minimum": np.minimum}[op]
    got = getattr(nbtorch, op)(t(a)[:, ::2], t(b)[::2])
    assert_bf(got, fn(a.astype(F32)[:, ::2], b.astype(F32)[::2]))


def test_number_operands_round_to_bfloat16_first_but_mul_keeps_them_in_float32():
    x = t([1.0078125, 1.0078125])
    # add: 0.0039 -> bfloat16 2^-8, so 1.0078125 + 2^-8 is a tie -> even (PyTorch's result)
    assert vals(x + 0.0039).tolist() == [1.015625] * 2
    assert vals(0.0039 + x).tolist() == [1.015625] * 2
    assert (x > 1.005).tolist() == [False] * 2        # 1.005 -> 1.0078125
    assert (x == 1.005).tolist() == [True, True]
    # mul and div read the number in float32 ("opmath"), as PyTorch's CPU kernels do
    y = t(np.linspace(-3, 3, 201))
    y32 = vals(y)
    assert_bf(y * 0.3, y32 * F32(0.3))
    assert_bf(y / 0.3, y32 / F32(0.3))
    assert_bf(y * nbtorch.tensor(0.3), y32 * F32(0.3))
    # parameters (slopes, weights) are not rounded either
    assert_bf(nn.functional.leaky_relu(y, 0.1), np.where(y32 > 0, y32, y32 * F32(0.1)))
    assert_bf(nbtorch.lerp(y, y.flip(0), 0.3), y32 + F32(0.3) * (y32[::-1] - y32), ulps=1)


def test_mixed_dtype_operands_round_to_the_common_dtype_first():
    # int64 257 -> bfloat16 256 before the add (PyTorch): 256 + 1 = 257 -> 256
    assert vals(nbtorch.tensor([257]) + t([1.0])).tolist() == [256.0]
    assert (t([1.5]) + nbtorch.tensor([1.25], dtype=nbtorch.float16)).dtype is nbtorch.float32
    y = t([1.0, 2.0]) + nbtorch.tensor([0.5, 0.25])
    assert y.dtype is nbtorch.float32 and y.tolist() == [1.5, 2.25]


def test_comparisons_where_clamp_and_special_values():
    x = t([1.0, float("nan"), float("inf"), -2.5])
    assert nbtorch.isnan(x).tolist() == [False, True, False, False]
    assert nbtorch.isinf(x).tolist() == [False, False, True, False]
    assert nbtorch.isfinite(x).tolist() == [True, False, False, True]
    assert vals(nbtorch.nan_to_num(x)).tolist() == [1.0, 0.0, 3.3895313892515355e38, -2.5]
    y = t([1.0, -1.0, 0.5, -2.5])
    assert (y < 0.6).tolist() == [False, True, True, True]
    assert vals(nbtorch.where(y > 0, y, 0.0039)).tolist() == [1.0, 0.00390625, 0.5, 0.00390625]
    assert vals(y.clamp(-1.0, 0.75)).tolist() == [0.75, -1.0, 0.5, -1.0]
    assert vals(y.masked_fill(y < 0, 0.0039)).tolist() == [1.0, 0.00390625, 0.5, 0.00390625]


def test_inplace_ops_and_out():
    x = t([1.0078125, 2.0])
    x.add_(0.0039)
    assert vals(x).tolist() == [1.015625, 2.0]
    x.mul_(nbtorch.tensor([2.0, 0.5]))          # float32 operand into a bfloat16 result
    assert x.dtype is nbtorch.bfloat16 and vals(x).tolist() == [2.03125, 1.0]
    out = nbtorch.empty(2, dtype=nbtorch.bfloat16)
    nbtorch.add(t([1.0, 2.0]), t([0.5, 0.25]), out=out)
    assert vals(out).tolist() == [1.5, 2.25]
    out32 = nbtorch.empty(2)
    nbtorch.mul(t([1.5, 2.5]), 3, out=out32)
    assert out32.tolist() == [4.5, 7.5]
    with pytest.raises(RuntimeError, match="can't be cast"):
        nbtorch.ones(2, dtype=nbtorch.int64).add_(t([1.5, 1.5]))


# ---- reductions, softmax, scans, matmul ------------------------------------------------

def test_sum_and_mean_accumulate_in_float32_and_round_once():
    x = nbtorch.full((3000,), 1.0078125, dtype=nbtorch.bfloat16)
    # a bfloat16 running sum would stall at 512; float32 gives 3023.4375 -> 3024
    assert vals(x.sum()).tolist() == 3024.0
    assert vals(x.mean()).tolist() == 1.0078125
    a = bf(np.random.default_rng(0).uniform(-3, 3, (5, 7)))
    assert_bf(t(a).sum(1), a.astype(F32).sum(1))
    assert_bf(t(a).mean(0), a.astype(F32).mean(0))
    assert t(a).sum(dtype=nbtorch.float32).dtype is nbtorch.float32


def test_other_reductions(rng):
    a = bf(rng.uniform(-3, 3, (4, 6)))
    x, a32 = t(a), a.astype(F32)
    v, i = x.max(1)
    assert_bf(v, a32.max(1))
    assert i.tolist() == a32.argmax(1).tolist()
    assert_bf(x.amin(0), a32.min(0))
    assert x.argmin().item() == a32.argmin()
    assert_bf(x.var(1), a32.var(1, ddof=1), ulps=1)
    assert_bf(x.std(0), a32.std(0, ddof=1), ulps=1)
    assert_bf(x.norm(dim=1), np.sqrt((a32 ** 2).sum(1)), ulps=1)
    assert_bf(x.logsumexp(1), np.log(np.exp(a32).sum(1)), ulps=1)
    assert_bf(x.cumsum(1), np.cumsum(a32, 1), ulps=1)
    assert x.all().item() is True and x.any(1).tolist() == [True] * 4
    assert nbtorch.count_nonzero(t([0.0, 1.5, 0.0])).item() == 1


def test_softmax_and_log_softmax(rng):
    a = bf(rng.uniform(-4, 4, (5, 9)))
    a32 = a.astype(F32)
    e = np.exp(a32 - a32.max(1, keepdims=True))
    assert_bf(t(a).softmax(1), e / e.sum(1, keepdims=True), ulps=1)
    # PyTorch rounds the row's sum of exponentials and its log to bfloat16
    shifted = a32 - a32.max(1, keepdims=True)
    log_total = np.log(bf(e.sum(1, keepdims=True)).astype(F32)).astype(BF).astype(F32)
    assert_bf(t(a).log_softmax(1), shifted - log_total)


def test_matmul_family_in_float32_rounded_once(rng):
    a, b = bf(rng.uniform(-2, 2, (5, 16))), bf(rng.uniform(-2, 2, (16, 3)))
    c = bf(rng.uniform(-2, 2, (5, 3)))
    a32, b32, c32 = a.astype(F32), b.astype(F32), c.astype(F32)
    assert_bf(t(a) @ t(b), a32 @ b32, ulps=1)
    assert_bf(nbtorch.mm(t(a), t(b)), a32 @ b32, ulps=1)
    assert_bf(nbtorch.bmm(t(a)[None], t(b)[None])[0], a32 @ b32, ulps=1)
    assert_bf(nbtorch.mv(t(a), t(b)[:, 0]), a32 @ b32[:, 0], ulps=1)
    assert_bf(nbtorch.addmm(t(c), t(a), t(b), beta=0.5, alpha=0.3),
              F32(0.5) * c32 + F32(0.3) * (a32 @ b32), ulps=1)
    assert_bf(nn.functional.linear(t(a), t(b.T), t(c[0])), a32 @ b32 + c32[0], ulps=1)
    assert_bf(nbtorch.einsum("ij,jk->ik", t(a), t(b)), a32 @ b32, ulps=1)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        t(a) @ t(a)


# ---- indexing, sorting, joining ---------------------------------------------------------

def test_indexing_ops_move_bits(rng):
    a = bf(rng.uniform(-3, 3, (4, 5)))
    x, a32 = t(a), a.astype(F32)
    idx = nbtorch.tensor([2, 0, 2])
    assert_bf(x[idx], a32[[2, 0, 2]])
    assert_bf(x[x > 0], a32[a32 > 0])
    assert_bf(x[:, 1::2], a32[:, 1::2])
    g = nbtorch.tensor([[0, 1], [2, 3], [4, 0], [1, 1]])
    assert_bf(x.gather(1, g), np.take_along_axis(a32, g.numpy(), 1))
    assert_bf(nbtorch.index_select(x, 1, idx), a32[:, [2, 0, 2]])
    assert_bf(nbtorch.take(x, nbtorch.tensor([0, 7, 19])), a32.ravel()[[0, 7, 19]])
    assert_bf(nbtorch.masked_select(x, x > 0), a32[a32 > 0])
    assert nbtorch.nonzero(t([0.0, 1.5, 0.0, -2.0])).tolist() == [[1], [3]]
    z = nbtorch.zeros(4, 5, dtype=nbtorch.bfloat16)
    z[1] = t(a[0])
    z[:, 0] = 0.0039
    want = np.zeros((4, 5), F32)
    want[1] = a32[0]
    want[:, 0] = 0.00390625
    assert_bf(z, want)
    s = nbtorch.zeros(2, 3, dtype=nbtorch.bfloat16).scatter(
        1, nbtorch.tensor([[2], [0]]), t([[1.5], [2.5]]))
    assert vals(s).tolist() == [[0, 0, 1.5], [2.5, 0, 0]]


def test_index_add_and_scatter_add_accumulate_in_float32():
    src = t([1.0078125, 0.0078125, 0.0078125, 2.5])
    out = nbtorch.zeros(2, dtype=nbtorch.bfloat16).index_add(0, nbtorch.tensor([0, 0, 0, 1]),
                                                               src)
    assert vals(out).tolist() == [1.0234375, 2.5]
    out = nbtorch.zeros(2, dtype=nbtorch.bfloat16).scatter_add(0, nbtorch.tensor([0, 0, 0, 1]),
                                                                 src)
    assert vals(out).tolist() == [1.0234375, 2.5]
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):   # as PyTorch
        nbtorch.zeros(2, dtype=nbtorch.bfloat16).index_add(0, nbtorch.tensor([5]), t([1.0]))


def test_sort_topk_unique(rng):
    a = bf(rng.uniform(-3, 3, (3, 8)))
    x, a32 = t(a), a.astype(F32)
    v, i = x.sort(1)
    assert_bf(v, np.sort(a32, 1))
    assert_bf(x.gather(1, i), np.sort(a32, 1))
    v, i = x.topk(3, 1)
    assert_bf(v, -np.sort(-a32, 1)[:, :3])
    assert v.dtype is nbtorch.bfloat16 and i.dtype is nbtorch.int64
    assert vals(nbtorch.unique(t([2.0, 1.0, 2.0, 3.0]))).tolist() == [1.0, 2.0, 3.0]
    assert x.argsort(1).tolist() == np.argsort(a32, 1, kind="stable").tolist()


def test_cat_stack_and_views(rng):
    a = bf(rng.uniform(-3, 3, (2, 3)))
    x = t(a)
    assert_bf(nbtorch.cat([x, x]), np.concatenate([a, a]).astype(F32))
    assert_bf(nbtorch.stack([x, x], 1), np.stack([a, a], 1).astype(F32))
    y = nbtorch.cat([x, nbtorch.ones(1, 3)])
    assert y.dtype is nbtorch.float32
    assert_bf(x.t().contiguous(), a.T.astype(F32))
    assert_bf(x.flip(0), a[::-1].astype(F32))
    assert_bf(x.repeat(2, 1), np.tile(a, (2, 1)).astype(F32))
    view = x[0]
    view.fill_(2.0)
    assert vals(x)[0].tolist() == [2.0] * 3


# ---- autograd ---------------------------------------------------------------------------

def _grad_of(fn, *arrays):
    """(bfloat16 grads, float32 grads rounded to bfloat16) of sum(fn(*inputs))."""
    xs = [t(a).requires_grad_() for a in arrays]
    fn(*xs).sum().backward()
    refs = [nbtorch.tensor(a.astype(F32), requires_grad=True) for a in arrays]
    fn(*refs).sum().backward()
    return [x.grad for x in xs], [r.grad.numpy() for r in refs]


# ulps: each op of the chain (forward and backward) rounds to bfloat16, as in PyTorch,
# so a chain drifts a few units from one float32 computation rounded once
@pytest.mark.parametrize("name,fn,ulps", [
    ("mul", lambda a, b: a * b, 0),
    ("div", lambda a, b: a / (b.abs() + 1), 2),
    ("tanh", lambda a, b: a.tanh() * b, 6),
    ("matmul", lambda a, b: a @ b.t(), 1),
    ("softmax", lambda a, b: a.softmax(1) * b, 4),
    ("log_softmax", lambda a, b: a.log_softmax(1) * b, 6),
    ("mean", lambda a, b: (a * b).mean(1), 1),
    ("max", lambda a, b: a.amax(1) + b.sum(1), 0),
])
def test_gradients_are_bfloat16_and_match_float32_rounded(name, fn, ulps, rng):
    a, b = bf(rng.uniform(-2, 2, (3, 5))), bf(rng.uniform(-2, 2, (3, 5)))
    grads, refs = _grad_of(fn, a, b)
    for g, r in zip(grads, refs):
        assert g.dtype is nbtorch.bfloat16
        assert_bf(g, r, ulps=ulps)


def test_gradient_through_a_cast_and_leaf_accumulation():
    x = t([1.5, -2.0]).requires_grad_()
    (x.float() * 3).sum().backward()
    (x * 2).sum().backward()
    assert x.grad.dtype is nbtorch.bfloat16 and vals(x.grad).tolist() == [5.0, 5.0]
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        nbtorch.ones(2, dtype=nbtorch.int64).requires_grad_()


# ---- nn layers and optimizers -----------------------------------------------------------

def _layer_check(layer, x_np, ulps):
    """Output and input gradient of `layer` in bfloat16 against its float32 copy."""
    nbtorch.manual_seed(0)
    ref = layer
    low = __import__("copy").deepcopy(layer).to(nbtorch.bfloat16)
    assert all(p.dtype is nbtorch.bfloat16 for p in low.parameters())
    for p, q in zip(ref.parameters(), low.parameters()):     # the same (rounded) weights
        with nbtorch.no_grad():
            p.copy_(q.float())
    x = t(x_np).requires_grad_()
    x32 = x.detach().float().requires_grad_()
    out, out32 = low(x), ref(x32)
    assert out.dtype is nbtorch.bfloat16
    assert_bf(out, out32.detach().numpy(), ulps=ulps)
    out.sum().backward()
    out32.sum().backward()
    assert x.grad.dtype is nbtorch.bfloat16
    return low, ref


def test_linear_conv_layernorm_after_to_bfloat16(rng):
    lin, lin32 = _layer_check(nn.Linear(6, 4), bf(rng.uniform(-1, 1, (5, 6))), ulps=1)
    assert_bf(lin.weight.grad, lin32.weight.grad.numpy(), ulps=1)
    assert_bf(lin.bias.grad, lin32.bias.grad.numpy())
    conv, conv32 = _layer_check(nn.Conv2d(2, 3, 3, padding=1),
                                bf(rng.uniform(-1, 1, (2, 2, 5, 5))), ulps=1)
    assert_bf(conv.weight.grad, conv32.weight.grad.numpy(), ulps=1)
    _layer_check(nn.LayerNorm(7), bf(rng.uniform(-1, 1, (3, 7))), ulps=2)
    m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).bfloat16()
    assert {p.dtype for p in m.parameters()} == {nbtorch.bfloat16}
    assert m.half().float()[0].weight.dtype is nbtorch.float32


def test_sgd_step_on_bfloat16_parameters():
    w = nn.Parameter(t([1.0, -2.0, 0.5]))
    w.grad = t([0.25, 0.5, -1.0])
    nbtorch.optim.SGD([w], lr=0.1).step()
    assert w.dtype is nbtorch.bfloat16
    assert_bf(w, np.array([1.0, -2.0, 0.5], F32) - F32(0.1) * np.array([0.25, 0.5, -1.0], F32))
    p = nn.Parameter(t([1.0, -2.0]))
    opt = nbtorch.optim.Adam([p], lr=0.01)
    p.grad = t([0.5, -0.5])
    opt.step()
    assert p.dtype is nbtorch.bfloat16 and vals(p).tolist() == [0.98828125, -1.9921875]
    assert opt.state[p]["exp_avg"].dtype is nbtorch.bfloat16


def test_small_training_step_reduces_the_loss():
    nbtorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(nbtorch.bfloat16)
    opt = nbtorch.optim.SGD(model.parameters(), lr=0.1)
    x = nbtorch.randn(32, 8).bfloat16()
    y = nbtorch.randint(0, 3, (32,))
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert loss.dtype is nbtorch.bfloat16 and losses[-1] < losses[0]


# ---- save / load ------------------------------------------------------------------------

def test_state_dict_save_load_round_trip_is_bit_exact(tmp_path):
    model = nn.Linear(3, 2).bfloat16()
    with nbtorch.no_grad():
        model.bias.copy_(t([np.nan, -0.0]))
    path = tmp_path / "m.pt"
    nbtorch.save({"model": model.state_dict(), "x": t([1e-40, np.inf, 3.14159])}, path)
    with zipfile.ZipFile(path) as z:            # PyTorch's format: a BFloat16Storage record
        assert b"torch\nBFloat16Storage" in z.read("m/data.pkl")
    back = nbtorch.load(path)
    for k, v in model.state_dict().items():
        assert back["model"][k].dtype is nbtorch.bfloat16
        np.testing.assert_array_equal(bits(back["model"][k]), bits(v))
    np.testing.assert_array_equal(bits(back["x"]), bits(t([1e-40, np.inf, 3.14159])))
    fresh = nn.Linear(3, 2).bfloat16()
    fresh.load_state_dict(back["model"])
    np.testing.assert_array_equal(bits(fresh.weight), bits(model.weight))


def test_load_pytorch_checkpoint_with_bfloat16():
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.0, -2.5, 3.14159, float("inf"), float("nan"), 1e-40],
                     dtype=torch.bfloat16)
    buf = io.BytesIO()
    torch.save({"w": x, "p": torch.nn.Parameter(x[:3].clone()), "f": torch.ones(2)}, buf)
    buf.seek(0)
    got = nbtorch.load(buf)
    assert got["w"].dtype is got["p"].dtype is nbtorch.bfloat16
    np.testing.assert_array_equal(bits(got["w"]), x.view(torch.int16).numpy().view(np.uint16))
    assert got["f"].dtype is nbtorch.float32


# ---- float16 unchanged -------------------------------------------------------------------

def test_float16_still_computes_in_float32(rng):
    a = rng.uniform(-3, 3, (4, 5)).astype(np.float16)
    x = nbtorch.from_numpy(a)
    np.testing.assert_array_equal((x + 0.3).numpy(), (a.astype(F32) + np.float16(0.3)
                                                      .astype(F32)).astype(np.float16))
    np.testing.assert_array_equal((x * 0.3).numpy(), (a.astype(F32) * F32(0.3))
                                  .astype(np.float16))
    np.testing.assert_array_equal(x.exp().numpy(), np.exp(a.astype(F32)).astype(np.float16))
    np.testing.assert_array_equal(x.sum(1).numpy(), a.astype(F32).sum(1).astype(np.float16))
    assert (x + x).dtype is nbtorch.float16 and x.numpy().dtype == np.float16


def test_inspect_refuses_half_dtypes():
    from nbtorch import _inspect
    for d in (nbtorch.float16, nbtorch.bfloat16):
        with pytest.raises(ValueError, match=f"Numba has no {d.name}"):
            _inspect._check_dtype(d)


def test_ml_dtypes_is_imported_only_when_bfloat16_is_used():
    """`import ml_dtypes` takes ~0.6 s: `import nbtorch` must not pay it (target < 1 s)."""
    import subprocess
    import sys
    code = ("import sys, nbtorch\n"
            "assert 'ml_dtypes' not in sys.modules\n"
            "x = nbtorch.ones(2) + 0.5\n"
            "assert 'ml_dtypes' not in sys.modules\n"
            "y = nbtorch.tensor([1.0, 2.5], dtype=nbtorch.bfloat16) * 2\n"
            "assert 'ml_dtypes' in sys.modules and y.tolist() == [2.0, 5.0]\n"
            "assert nbtorch.finfo(nbtorch.bfloat16).eps == 0.0078125\n")
    subprocess.run([sys.executable, "-c", code], check=True)
