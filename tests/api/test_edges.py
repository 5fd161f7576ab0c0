"""PyTorch's behaviour at the edges (issue 11, part 9), pinned from PyTorch 2.13 so the
tests need no PyTorch; with PyTorch installed, every EDGES entry is also compared with
it (the same call on both libraries: equal values, or the same error class)."""
import math

import numpy as np
import pytest

import nbtorch

inf, nan = math.inf, math.nan


def _u8(*v):
    return nbtorch.tensor(list(v), dtype=nbtorch.uint8)


# ---- index ops check every index as PyTorch does ---------------------------------------

def test_index_checks():
    x = nbtorch.arange(6.0).reshape(2, 3)
    i = nbtorch.tensor
    cases = [  # call, error class, message
        (lambda: x.gather(1, i([[-1], [0]])), RuntimeError, "index -1 is out of bounds"),
        (lambda: x.gather(1, i([[3], [0]])), RuntimeError, "index 3 is out of bounds"),
        (lambda: x.scatter(1, i([[-1], [0]]), 0.0), RuntimeError, "index -1 is out"),
        (lambda: x.scatter_add(1, i([[3], [0]]), x), RuntimeError, "index 3 is out"),
        (lambda: x.index_select(1, i([-1])), RuntimeError, "id=-1 axis_dim=3"),
        (lambda: x.index_select(1, i([3])), RuntimeError, "out of DATA bounds"),
        (lambda: x.index_select(0, i([-1])), IndexError, "index out of range in self"),
        (lambda: x.index_add(1, i([-1]), nbtorch.ones(2, 1)), RuntimeError, "index -1"),
        (lambda: x.index_copy(1, i([3]), nbtorch.ones(2, 1)), IndexError, "index_copy_"),
        (lambda: x.take(i([6])), IndexError, "out of"),
        (lambda: x[:, i([3])], IndexError, "out of bounds"),
        (lambda: x.put(i([6]), i([1.0])), IndexError, "out of range"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call()
    assert x.take(i([-1])).item() == 5.0                  # these two wrap, as PyTorch
    assert x[:, i([-1])].reshape(-1).tolist() == [2.0, 5.0]


# ---- Python scalars meet integer tensors ----------------------------------------------------

def test_scalars_wrap_or_raise_as_pytorch():
    u = _u8(0, 3, 200)
    assert (u + 300).tolist() == [44, 47, 244]
    assert (u * -1).tolist() == [0, 253, 56]
    assert (-2 // _u8(3, 5)).tolist() == [84, 50]
    assert (u == -1).tolist() == [False, False, False]
    assert (u < 300).tolist() == [True, True, False]
    assert (nbtorch.tensor([1], dtype=nbtorch.int8) + 1000).tolist() == [-23]
    assert u.clamp(min=2, max=-2).tolist() == [2, 3, 200]
    assert nbtorch.zeros(2, dtype=nbtorch.uint8).fill_(-1).tolist() == [255, 255]
    assert nbtorch.full((1,), -1, dtype=nbtorch.uint8).tolist() == [255]
    assert u.masked_fill(u > 0, -1).tolist() == [0, 255, 255]
    assert nbtorch.where(u > 0, u, -1).tolist() == [255, 3, 200]
    for call in (lambda: u.clamp(min=300), lambda: nbtorch.zeros(1, dtype=nbtorch.uint8).fill_(300),
                 lambda: nbtorch.zeros(1, dtype=nbtorch.int8).fill_(200),
                 lambda: nbtorch.zeros(1).fill_(1e39),
                 lambda: nbtorch.zeros(1, dtype=nbtorch.float16).fill_(65520.0),
                 lambda: nbtorch.zeros(1, dtype=nbtorch.bfloat16).fill_(3.4e38),
                 lambda: nbtorch.zeros(2, dtype=nbtorch.float16).masked_fill_(
                     nbtorch.tensor([True, False]), 1e10),
                 lambda: nbtorch.nn.functional.pad(_u8(1, 2).reshape(1, 2), (1, 1), value=-1)):
        with pytest.raises(RuntimeError, match="without overflow"):
            call()
    h = nbtorch.zeros(2, dtype=nbtorch.float16)
    assert h.fill_(65504.0).tolist() == [65504.0] * 2 and h.fill_(float("inf"))[0].item() > 1e5
    assert nbtorch.zeros(1, dtype=nbtorch.bfloat16).fill_(1e10).item() == 9999220736.0


# ---- dtype rules -------------------------------------------------------------------------

def test_dtype_rules():
    b, f, i64 = nbtorch.tensor([True]), nbtorch.ones(3), nbtorch.tensor([1, 2])
    for call, exc, msg in [
            (lambda: b - b, RuntimeError, "two bool tensors"),
            (lambda: b - 1, RuntimeError, "with a bool tensor is not supported"),
            (lambda: f - b, RuntimeError, "with a bool tensor is not supported"),
            (lambda: -b, RuntimeError, "Negation"),
            (lambda: nbtorch.add(i64, i64, alpha=True), RuntimeError, "Boolean alpha"),
            (lambda: nbtorch.add(i64, i64, alpha=0.5), RuntimeError, "alpha must not be"),
            (lambda: f.scatter(0, i64, nbtorch.ones(2, dtype=nbtorch.float64)), RuntimeError,
             "Expected self.dtype to be equal to src.dtype"),
            (lambda: f.index_put((i64,), nbtorch.ones(2, dtype=nbtorch.float64)),
             RuntimeError, "Index put requires the source and destination dtypes match"),
            (lambda: f.__setitem__(i64, i64), RuntimeError, "Index put requires"),
            (lambda: nbtorch.fmax(f, 2.0), TypeError, "must be Tensor, not float"),
            (lambda: nbtorch.maximum(f, 2), TypeError, "must be Tensor, not int"),
            (lambda: nbtorch.lerp(i64, i64, 0.5), NotImplementedError, "lerp_kernel_scalar"),
            (lambda: nbtorch.nn.functional.layer_norm(i64, (2,)), NotImplementedError,
             "LayerNormKernelImpl"),
            (lambda: nbtorch.softmax(i64, 0), NotImplementedError, "not implemented")]:
        with pytest.raises(exc, match=msg):
            call()
    assert nbtorch.add(b, b, alpha=True).tolist() == [True]
    f[nbtorch.tensor([0])] = 5                               # a Python number is fine
    assert f[0].item() == 5.0


# ---- repeated dims, 0-d tensors, empty index lists ------------------------------------------

def test_shapes_at_the_edges():
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        nbtorch.ones(2, 2).flip([0, -2])
    (w,) = nbtorch.where(nbtorch.tensor(1.5))
    assert w.tolist() == [0] and w.dtype is nbtorch.int64
    (w,) = nbtorch.nonzero(nbtorch.tensor(0), as_tuple=True)
    assert w.shape == (0,)
    s = nbtorch.tensor(2.0)
    assert s.mT is s and s.mH is s
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        nbtorch.ones(3).mT
    assert nbtorch.ones(3, 2)[[]].shape == (0, 2)
    for bad in ([1, None], [[1], [None]]):
        with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
            nbtorch.tensor(bad)


# ---- numerics ----------------------------------------------------------------------------

def test_numerics_at_the_edges():
    F = nbtorch.nn.functional
    assert nbtorch.tensor(3e38).norm().item() == pytest.approx(3e38, rel=1e-6)
    assert nbtorch.tensor([[3e38]]).norm(dim=1).tolist() == pytest.approx([3e38], rel=1e-6)
    assert nbtorch.linspace(2, 5, 1).tolist() == [2.0]
    assert nbtorch.linspace(2, 5, 1, dtype=nbtorch.int64).tolist() == [2]
    assert nbtorch.logspace(2, 5, 1).tolist() == [100.0]
    assert nbtorch.arange(0, 5, 1.5, dtype=nbtorch.int64).tolist() == [0, 1, 2, 3, 4]
    assert nbtorch.arange(-0.5, 2.5, 1, dtype=nbtorch.int64).tolist() == [0, 1]
    assert nbtorch.arange(0.0, 3.0, 0.7, dtype=nbtorch.int32).tolist() == [0] * 5
    with pytest.raises(ValueError, match="step must be nonzero"):
        nbtorch.arange(0, 3, 0.7, dtype=nbtorch.int64)
    a = nbtorch.tensor([1.0, inf, -inf, nan])
    assert nbtorch.isclose(a, a).tolist() == [True, True, True, False]
    assert nbtorch.isclose(a, a, equal_nan=True).tolist() == [True] * 4
    assert nbtorch.isclose(nbtorch.tensor([inf]), nbtorch.tensor([-inf])).tolist() == [False]
    assert not nbtorch.isclose(nbtorch.tensor([inf], dtype=nbtorch.float64),
                               nbtorch.tensor([1e308], dtype=nbtorch.float64)).item()
    assert nbtorch.allclose(a[:3], a[:3]) and not nbtorch.allclose(a, a)
    assert math.isnan(F.kl_div(nbtorch.tensor([0.1, 0.2]), nbtorch.tensor([-0.5, 0.5]),
                               reduction="sum").item())
    assert F.kl_div(nbtorch.tensor([0.1, 0.2]), nbtorch.tensor([0.0, 0.5]),
                    reduction="none")[0].item() == 0.0
    std, mean = nbtorch.std_mean(nbtorch.tensor([1.0, inf]))
    assert math.isnan(std.item()) and mean.item() == inf
    std, mean = nbtorch.std_mean(nbtorch.tensor([-inf, inf]))
    assert math.isnan(std.item()) and math.isnan(mean.item())
    # layer_norm normalises huge rows exactly (PyTorch's float32 moments overflow to NaN
    # above ~1e19; nbtorch keeps the representable answer: see test_differential.KNOWN)
    y = F.layer_norm(nbtorch.tensor([[1e30, 2e30, 3e30]]), (3,))
    np.testing.assert_allclose(y.numpy(), [[-1.2247449, 0.0, 1.2247449]], atol=1e-6)


def test_unfold_backward_accumulates_and_scatter_multiply():
    x = nbtorch.arange(5.0, requires_grad=True)
    x.unfold(0, 3, 1).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]
    y = nbtorch.arange(12.0, requires_grad=True)
    (y.reshape(3, 4)[:, 1:].unfold(1, 2, 1) ** 2).sum().backward()
    assert y.grad.tolist() == [0, 2, 8, 6, 0, 10, 24, 14, 0, 18, 40, 22]
    z = nbtorch.arange(12.0, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(lambda t: t.reshape(3, 4).t().unfold(0, 2, 1), (z,))
    s = nbtorch.ones(3)
    s.scatter_(0, nbtorch.tensor([0, 0]), 2.0, reduce="multiply")
    assert s.tolist() == [4.0, 1.0, 1.0]


# ---- the same calls on PyTorch -------------------------------------------------------------

EDGES = {
    "u8 + 300": lambda m: m.tensor([0, 3, 200], dtype=m.uint8) + 300,
    "-2 // u8": lambda m: -2 // m.tensor([3, 5], dtype=m.uint8),
    "clamp u8": lambda m: m.tensor([0, 3, 200], dtype=m.uint8).clamp(min=2, max=-2),
    "clamp u8 300": lambda m: m.tensor([0, 3], dtype=m.uint8).clamp(min=300),
    "pad u8 -1": lambda m: m.nn.functional.pad(m.tensor([[1, 2]], dtype=m.uint8), (1, 1),
                                               value=-1),
    "fill u8 -1": lambda m: m.zeros(2, dtype=m.uint8).fill_(-1),
    "bool - 1": lambda m: m.tensor([True]) - 1,
    "alpha True": lambda m: m.add(m.tensor([1, 2]), m.tensor([1, 2]), alpha=True),
    "scatter dtype": lambda m: m.zeros(3).scatter(0, m.tensor([0]),
                                                  m.tensor([1.0], dtype=m.float64)),
    "index_put dtype": lambda m: m.zeros(3).index_put((m.tensor([0]),), m.tensor([1])),
    "fmin number": lambda m: m.fmin(m.ones(2), 2.0),
    "int lerp": lambda m: m.lerp(m.tensor([1, 2]), m.tensor([3, 4]), 0.5),
    "flip repeated": lambda m: m.ones(2, 2).flip([0, 0]),
    "where 0d": lambda m: m.where(m.tensor(1.0)),
    "nonzero 0d": lambda m: m.nonzero(m.tensor(0), as_tuple=True),
    "mT 0d": lambda m: m.tensor(1.0).mT,
    "mT 1d": lambda m: m.ones(3).mT,
    "empty index": lambda m: m.ones(3, 2)[[]],
    "tensor None": lambda m: m.tensor([1, None]),
    "norm 3e38": lambda m: m.tensor(3e38).norm(),
    "linspace 1": lambda m: m.linspace(2.0, 5.0, 1),
    "logspace 1": lambda m: m.logspace(2.0, 5.0, 1),
    "arange int": lambda m: m.arange(0, 5, 1.5, dtype=m.int64),
    "arange int 0": lambda m: m.arange(0, 3, 0.7, dtype=m.int64),
    "isclose inf": lambda m: m.isclose(m.tensor([inf, inf, nan]), m.tensor([inf, -inf, nan])),
    "kl_div neg": lambda m: m.nn.functional.kl_div(m.tensor([0.1, 0.2]),
                                                   m.tensor([-0.5, 0.5]), reduction="sum"),
    "std_mean inf": lambda m: m.std_mean(m.tensor([1.0, inf])),
    "unfold grad": lambda m: _unfold_grad(m),
    "scatter multiply": lambda m: m.ones(3).scatter(0, m.tensor([0, 0]), 2.0,
                                                    reduce="multiply"),
    "flip varargs": lambda m: m.arange(4.0).reshape(2, 2).flip(0, 1),
    "unique dim": lambda m: m.unique(m.tensor([[3, 1], [1, 2], [3, 1]]), dim=0,
                                     return_inverse=True, return_counts=True),
    "abs bool": lambda m: m.tensor([True]).abs(),
    "floor_divide bool": lambda m: m.tensor([True]) // m.tensor([True]),
    "remainder bool": lambda m: m.tensor([True]) % m.tensor([True]),
    "addcdiv int": lambda m: m.addcdiv(m.ones(1), m.tensor([1]), m.tensor([2])),
    "invert float": lambda m: ~m.ones(1),
    "randn negative": lambda m: m.randn(2, -1),
    "nan_to_num str": lambda m: m.nan_to_num(m.ones(1), "a"),
    "int64 + 2**64": lambda m: m.ones(1, dtype=m.int64) + 2 ** 64,
    "int64 + 2**64 - 1": lambda m: m.ones(1, dtype=m.int64) + (2 ** 64 - 1),
    "float - 2**63": lambda m: m.ones(1) - 2 ** 63,
    "tensor 2**63": lambda m: m.tensor([2 ** 63]),
    "tensor u8 -1": lambda m: m.tensor([-1, 5], dtype=m.uint8),
    "tensor u8 300": lambda m: m.tensor([300], dtype=m.uint8),
    "atan2 grad at origin": lambda m: _grad_of(m, lambda y, x: m.atan2(y, x), [0.0], [0.0]),
    "norm p0.5 grad at 0": lambda m: _grad_of(m, lambda v: v.norm(p=0.5), [0.0, 4.0]),
    "pdist grad zero distance": lambda m: _grad_of(
        m, lambda v: m.nn.functional.pdist(v.reshape(2, 2)), [1.0, 1.0, 1.0, 1.0]),
    "cosine grad zero vector": lambda m: _grad_of(
        m, lambda u, v: m.nn.functional.cosine_similarity(u, v), [[0.0, 0.0]], [[1.0, 2.0]]),
}


def _grad_of(m, fn, *values):
    xs = [m.tensor(v, requires_grad=True) for v in values]
    fn(*xs).sum().backward()
    return m.cat([x.grad.reshape(-1) for x in xs])


def _grads(fn, *values):
    xs = [nbtorch.tensor(v, requires_grad=True) for v in values]
    fn(*xs).sum().backward()
    return [x.grad.tolist() for x in xs]


def test_gradients_at_singular_points_are_pytorchs():
    """Pinned from PyTorch 2.13: finite gradients where a formula would give 0 * inf."""
    y, x = _grads(nbtorch.atan2, [0.0, 1.0], [0.0, 0.0])            # 0 at the origin
    assert y == [0.0, 0.0] and x == [0.0, -1.0] and math.copysign(1, x[0]) == -1
    g, = _grads(lambda v: v.norm(p=0.5), [0.0, 4.0])                  # p < 1, x = 0
    assert g == [0.0, 1.0]
    g, = _grads(lambda v: nbtorch.linalg.vector_norm(v, -1.0), [0.0, 2.0])
    assert g[0] == 0.0
    a, b = _grads(lambda u, v: nbtorch.nn.functional.cosine_similarity(u, v),
                  [[0.0, 0.0], [1.0, 2.0]], [[1.0, 1.0], [1.0, 1.0]])   # a zero vector
    assert a[0] == pytest.approx([7.0710678e7] * 2, rel=1e-6) and b[0] == [0.0, 0.0]
    assert a[1] == pytest.approx([0.12649111, -0.063245535], rel=1e-6)
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point"):
        nbtorch.nn.functional.cosine_similarity(nbtorch.tensor([[1, 2]]),
                                                nbtorch.tensor([[2, 4]]))
    g, = _grads(lambda v: nbtorch.nn.functional.pdist(v.reshape(2, 2)), [1.0, 1.0, 1.0, 1.0])
    assert g == [0.0, 0.0, 0.0, 0.0]                                  # a zero distance


def test_second_derivatives_of_a_product_with_zeros():
    """PyTorch 2.13's: d/dx of the gradient of prod([0, 2, 3]) is [5, 3, 2] (the gradient
    of the non-zero elements is 0 at x0 = 0, but not its derivative)."""
    for rows, dim, first, second in (
            ([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0]], 1, [6, 0, 0, 0, 0, 0], [5, 3, 2, 0, 1, 1]),
            ([[0.0, 2.0], [3.0, 4.0]], None, [24, 0, 0, 0], [26, 12, 8, 6])):
        x = nbtorch.tensor(rows, dtype=nbtorch.float64, requires_grad=True)
        y = x.prod() if dim is None else x.prod(dim)
        g, = nbtorch.autograd.grad(y.sum(), x, create_graph=True)
        h, = nbtorch.autograd.grad(g.sum(), x)
        assert g.reshape(-1).tolist() == first and h.reshape(-1).tolist() == second
    x = nbtorch.tensor([[0.0, 2.0, 3.0], [1.0, 0.0, 5.0]], dtype=nbtorch.float64,
                       requires_grad=True)
    assert nbtorch.autograd.gradgradcheck(lambda t: t.prod(1), (x,))


def test_errors_and_forms_as_pytorch_gives_them():
    """Pinned from PyTorch 2.13: the error classes and messages of ops without a kernel for
    a dtype, and the printed dtype of empty tensors (no values to infer it from)."""
    t = nbtorch.tensor
    cases = [
        (lambda: t([True]).abs(), NotImplementedError, '"abs_cpu" not implemented for'),
        (lambda: t([True]) // t([True]), NotImplementedError, '"div_floor_cpu"'),
        (lambda: nbtorch.fmod(t([True]), t([True])), NotImplementedError, '"fmod_cpu"'),
        (lambda: t([1.0]) & t([1.0]), NotImplementedError, '"bitwise_and_cpu"'),
        (lambda: ~t([1.0]), TypeError, "only implemented on integer and Boolean"),
        (lambda: nbtorch.addcdiv(t([1]), t([1]), t([2])), RuntimeError,
         "Integer division with addcdiv is no longer supported"),
        (lambda: nbtorch.rand(-2), RuntimeError, "negative dimension -2"),
        (lambda: nbtorch.ones(2, 2).flip(0, 0), RuntimeError, "appears multiple times"),
        (lambda: nbtorch.ones(1, dtype=nbtorch.int64) + 2 ** 64, OverflowError,
         "int too big to convert"),
        (lambda: nbtorch.ones(1) < -2 ** 63 - 1, OverflowError, "negative int to unsigned"),
        (lambda: nbtorch.tensor([2 ** 63]), ValueError, "Overflow when unpacking long long"),
        (lambda: nbtorch.tensor([300], dtype=nbtorch.uint8), RuntimeError,
         "value cannot be converted to type uint8 without overflow"),
    ]
    assert (nbtorch.ones(1, dtype=nbtorch.int64) + (2 ** 64 - 1)).tolist() == [0]   # wraps
    assert nbtorch.tensor([-1, 5], dtype=nbtorch.uint8).tolist() == [255, 5]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call()
    assert nbtorch.ones(2, 2).flip(0, 1).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert repr(nbtorch.zeros(0, dtype=nbtorch.int64)) == "tensor([], dtype=torch.int64)"
    assert repr(nbtorch.zeros(0, 3, dtype=nbtorch.bool)) == \
        "tensor([], size=(0, 3), dtype=torch.bool)"
    assert repr(nbtorch.zeros(0)) == "tensor([])"
    assert repr(nbtorch.zeros(2, dtype=nbtorch.int64)) == "tensor([0, 0])"


def _unfold_grad(m):
    x = m.arange(6.0, requires_grad=True)
    (x.unfold(0, 3, 2) * m.arange(6.0).reshape(2, 3)).sum().backward()
    return x.grad


@pytest.mark.parametrize("name", sorted(EDGES))
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_edges_match_pytorch(name):
    torch = pytest.importorskip("torch")
    import differential as D
    t_out, t_err = _run(EDGES[name], torch)
    n_out, n_err = _run(EDGES[name], nbtorch)
    if t_err is not None or n_err is not None:
        assert t_err is not None and n_err is not None, (t_err, n_err)
        assert D.error_class(t_err) == D.error_class(n_err), (t_err, n_err)
        return
    problem = D.compare(t_out, n_out)
    assert problem is None, problem


def _run(fn, m):
    try:
        return fn(m), None
    except Exception as e:
        return None, e


def test_size_keywords_and_method_argument_names():
    """size= in rand/randn and the new_* factories, Tensor.split(split_size=...) (part 8)."""
    x = nbtorch.ones(2)
    assert nbtorch.rand(size=(2, 3)).shape == (2, 3) == nbtorch.randn(size=[2, 3]).shape
    for fn in (x.new_empty, x.new_zeros, x.new_ones):
        assert fn(size=(3, 1)).shape == (3, 1)
    assert x.new_zeros(size=(2,)).tolist() == [0.0, 0.0]
    with pytest.raises(TypeError):
        nbtorch.rand(2, size=(2,))
    pieces = nbtorch.arange(4).split(split_size=2)
    assert [p.tolist() for p in pieces] == [[0, 1], [2, 3]]
    pieces = nbtorch.split(nbtorch.arange(4), split_size_or_sections=[1, 3])
    assert [p.tolist() for p in pieces] == [[0], [1, 2, 3]]
