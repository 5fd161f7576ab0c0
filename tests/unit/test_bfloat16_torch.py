"""bfloat16 against PyTorch itself: promotion, values bit for bit, gradients, a training step.

Skipped when PyTorch is not installed. "Bit for bit" cases are the ones where
nbtorch computes exactly as PyTorch's CPU kernels do (float32 per op, the same
roundings); the few with `ulps` differ in algorithms (transcendental functions,
accumulation order) by at most that many bfloat16 units in the last place.
"""
import ml_dtypes
import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")

DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
          "uint8", "bool"]


def both(values, dtype="bfloat16"):
    """The same values as a PyTorch and an nbtorch tensor of `dtype`."""
    a = np.asarray(values, np.float32)
    return (torch.tensor(a).to(getattr(torch, dtype)),
            nbtorch.tensor(a).to(getattr(nbtorch, dtype)))


def same(pt, nb, ulps=0):
    """nbtorch result `nb` equals PyTorch's `pt`: dtype, shape, values (NaNs included)."""
    if isinstance(pt, (tuple, list)):
        assert len(pt) == len(nb)
        for p, n in zip(pt, nb):
            same(p, n, ulps)
        return
    assert str(nb.dtype) == str(pt.dtype)
    assert tuple(nb.shape) == tuple(pt.shape)
    p = pt.detach().float().numpy() if pt.dtype.is_floating_point else pt.detach().numpy()
    n = nb.detach().float().numpy() if nb.dtype.is_floating_point else nb.detach().numpy()
    if ulps == 0 or not pt.dtype.is_floating_point:
        np.testing.assert_array_equal(n, p)
    else:
        tol = ulps * np.maximum(np.abs(p), np.abs(n)) * 2.0 ** -7 + 1e-30
        with np.errstate(invalid="ignore"):     # inf - inf
            bad = ~((np.abs(n - p) <= tol) | (n == p) | (np.isnan(n) & np.isnan(p)))
        assert not bad.any(), (n[bad], p[bad])


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return {"a": rng.uniform(-3, 3, (6, 7)), "b": rng.uniform(-3, 3, (6, 7)),
            "p": rng.uniform(0.1, 4, (6, 7)), "c": rng.uniform(-3, 3, (7,)),
            "line": np.linspace(-3, 3, 2001)}


@pytest.mark.parametrize("other", DTYPES)
def test_promote_types_every_pair_with_bfloat16(other):
    for x, y in (("bfloat16", other), (other, "bfloat16")):
        want = torch.promote_types(getattr(torch, x), getattr(torch, y))
        assert str(nbtorch.promote_types(getattr(nbtorch, x), getattr(nbtorch, y))) == str(want)


@pytest.mark.parametrize("other", DTYPES)
def test_result_type_of_tensors_zero_dim_and_scalars(other):
    def pair(lib, dim_a, dim_b):
        a = lib.ones((2,) if dim_a else (), dtype=lib.bfloat16)
        b = lib.ones((2,) if dim_b else (), dtype=getattr(lib, other))
        return lib.result_type(a, b), lib.result_type(b, a)
    for dims in ((True, True), (True, False), (False, True), (False, False)):
        assert [str(d) for d in pair(nbtorch, *dims)] == [str(d) for d in pair(torch, *dims)]
    for s in (2, 2.5, True):
        for lib_shape in ((2,), ()):
            want = torch.result_type(torch.ones(lib_shape, dtype=torch.bfloat16), s)
            got = nbtorch.result_type(nbtorch.ones(lib_shape, dtype=nbtorch.bfloat16), s)
            assert str(got) == str(want)


def test_dtype_facts():
    for attr in ("eps", "max", "min", "tiny", "smallest_normal", "resolution", "bits"):
        assert getattr(nbtorch.finfo(nbtorch.bfloat16), attr) == \
            getattr(torch.finfo(torch.bfloat16), attr)
    assert repr(nbtorch.finfo(nbtorch.bfloat16)) == repr(torch.finfo(torch.bfloat16))
    assert nbtorch.bfloat16.is_signed == torch.bfloat16.is_signed
    assert nbtorch.bfloat16.itemsize == torch.bfloat16.itemsize


def test_repr_and_python_values(data):
    for values in (data["a"][:2, :3], [1e-5, 1e9], [300.7, 1 / 3], 3.14159, [1.0, 2.0, 256.0]):
        pt, nb = both(values)
        assert repr(nb) == repr(pt)
        assert nb.tolist() == pt.tolist()
    pt, nb = both(2.71828)
    assert nb.item() == pt.item() and float(nb) == float(pt)
    with pytest.raises(TypeError) as info:
        pt.numpy()
    with pytest.raises(TypeError, match=str(info.value)):
        nb.numpy()


@pytest.mark.parametrize("values", [
    [1 + 2 ** -8 + 2 ** -30, 1e39, -1e39, float("nan"), 2.0 ** -130],
    [2 ** 24 + 2 ** 16 + 1, 257, -3, 65537],
])
def test_conversions_into_bfloat16(values):
    for src in ("float64", "float32", "int64"):
        if src == "int64" and not float(values[0]).is_integer():
            continue
        same(torch.tensor(values, dtype=getattr(torch, src)).to(torch.bfloat16),
             nbtorch.tensor(values, dtype=getattr(nbtorch, src)).to(nbtorch.bfloat16))
    same(torch.tensor(values, dtype=torch.bfloat16),
         nbtorch.tensor(values, dtype=nbtorch.bfloat16))


_BIT_EXACT = {
    "add": lambda L, a, b: a + b, "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b, "div": lambda L, a, b: a / b,
    "add number": lambda L, a, b: a + 0.3, "sub number": lambda L, a, b: 0.3 - a,
    "mul number": lambda L, a, b: a * 0.3, "div number": lambda L, a, b: a / 0.3,
    "mul 0-d": lambda L, a, b: a * L.tensor(0.3), "add 0-d": lambda L, a, b: a + L.tensor(0.3),
    "pow": lambda L, a, b: a.abs() ** 0.3, "remainder": lambda L, a, b: L.remainder(a, 0.3),
    "floor div": lambda L, a, b: L.div(a, 0.3, rounding_mode="floor"),
    "maximum": lambda L, a, b: L.maximum(a, b), "where": lambda L, a, b: L.where(a > b, a, 0.3),
    "compare": lambda L, a, b: (a > 1.005, a == b, a <= 0.3),
    "exp": lambda L, a, b: a.exp(), "tanh": lambda L, a, b: a.tanh(),
    "sigmoid": lambda L, a, b: a.sigmoid(), "log": lambda L, a, b: a.abs().log(),
    "sqrt": lambda L, a, b: a.abs().sqrt(), "relu": lambda L, a, b: a.relu(),
    "gelu": lambda L, a, b: L.nn.functional.gelu(a), "silu": lambda L, a, b: L.nn.functional.silu(a),
    "leaky_relu": lambda L, a, b: L.nn.functional.leaky_relu(a, 0.1),
    "elu": lambda L, a, b: L.nn.functional.elu(a, 0.3),
    "softplus": lambda L, a, b: L.nn.functional.softplus(a, beta=1.3),
    "softshrink": lambda L, a, b: L.nn.functional.softshrink(a, 0.3),
    "lerp": lambda L, a, b: L.lerp(a, b, 0.3), "clamp": lambda L, a, b: a.clamp(-1.0039, 1.0039),
    "addcmul": lambda L, a, b: L.addcmul(a, a, b, value=0.3),
    "round": lambda L, a, b: (a * 10).round(), "sign": lambda L, a, b: a.sign(),
}


@pytest.mark.parametrize("name", sorted(_BIT_EXACT))
def test_elementwise_bit_for_bit(name, data):
    (pa, na), (pb, nb) = both(data["line"]), both(data["line"][::-1].copy())
    same(_BIT_EXACT[name](torch, pa, pb), _BIT_EXACT[name](nbtorch, na, nb))


@pytest.mark.parametrize("name,fn,ulps", [
    ("rsqrt", lambda L, a: a.abs().rsqrt(), 1),
    ("erf", lambda L, a: a.erf(), 1),
    ("add alpha", lambda L, a: L.add(a, a.flip(0), alpha=0.3), 1),
    ("rdiv", lambda L, a: 0.3 / a, 2),        # PyTorch: a.reciprocal() * 0.3 (two roundings)
])
def test_elementwise_within_an_ulp(name, fn, ulps, data):
    pa, na = both(data["line"])
    same(fn(torch, pa), fn(nbtorch, na), ulps)


_REDUCTIONS = {
    "sum": lambda L, x: x.sum(1), "sum all": lambda L, x: x.sum(), "mean": lambda L, x: x.mean(0),
    "amax": lambda L, x: x.amax(1), "max": lambda L, x: x.max(1), "argmin": lambda L, x: x.argmin(0),
    "var": lambda L, x: x.var(1), "std": lambda L, x: x.std(0), "norm": lambda L, x: x.norm(dim=1),
    "softmax": lambda L, x: x.softmax(1), "log_softmax": lambda L, x: x.log_softmax(1),
    "logsumexp": lambda L, x: x.logsumexp(1), "cumsum": lambda L, x: x.cumsum(1),
    "sort": lambda L, x: x.sort(1), "topk": lambda L, x: x.topk(3, 1),
    "cummax": lambda L, x: x.cummax(1), "median": lambda L, x: x.median(1),
}


@pytest.mark.parametrize("name", sorted(_REDUCTIONS))
def test_reductions_softmax_sorting_bit_for_bit(name, data):
    values = data["line"][:2000]
    if name in ("sort", "topk", "cummax", "median", "max", "argmin"):
        # distinct bfloat16 values, so that indices do not depend on how ties are broken
        distinct = (np.arange(2000, dtype=np.uint16) + 0x3C00).view(ml_dtypes.bfloat16)
        signs = np.where(np.arange(2000) % 2, 1.0, -1.0)
        values = np.random.default_rng(5).permutation(distinct.astype(np.float32) * signs)
    pa, na = both(values.reshape(40, 50))
    same(_REDUCTIONS[name](torch, pa), _REDUCTIONS[name](nbtorch, na))


def test_matmul_family(data):
    rng = np.random.default_rng(0)
    m1, m2, c = rng.standard_normal((30, 16)), rng.standard_normal((16, 20)), \
        rng.standard_normal((30, 20))
    b1, b2 = rng.standard_normal((3, 30, 16)), rng.standard_normal((3, 16, 20))
    (p1, n1), (p2, n2), (pc, nc) = both(m1), both(m2), both(c)
    (pb1, nb1), (pb2, nb2) = both(b1), both(b2)
    same(torch.addmm(pc, p1, p2, beta=0.5, alpha=0.3),
         nbtorch.addmm(nc, n1, n2, beta=0.5, alpha=0.3), ulps=1)
    same(torch.nn.functional.linear(p1, p2.t(), pc[0]),
         nbtorch.nn.functional.linear(n1, n2.t(), nc[0]), ulps=1)
    same(torch.addbmm(pc, pb1, pb2), nbtorch.addbmm(nc, nb1, nb2), ulps=1)
    same(torch.baddbmm(pc, pb1, pb2), nbtorch.baddbmm(nc, nb1, nb2), ulps=1)
    same(torch.addr(pc, p1[:, 0], p2[0]), nbtorch.addr(nc, n1[:, 0], n2[0]))
    same(p1 @ p2, n1 @ n2, ulps=1)


def test_indexing_bit_for_bit(data):
    (pa, na), (pc, nc) = both(data["a"]), both(data["c"])
    idx = [[0, 1], [2, 3], [4, 0], [1, 1], [6, 5], [3, 3]]
    same(pa.gather(1, torch.tensor(idx)), na.gather(1, nbtorch.tensor(idx)))
    same(pa[torch.tensor([0, 2, 2])], na[nbtorch.tensor([0, 2, 2])])
    same(pa[pa > 0], na[na > 0])
    same(torch.zeros(3, dtype=torch.bfloat16).index_add(0, torch.tensor([0, 0, 2]), pc[:3]),
         nbtorch.zeros(3, dtype=nbtorch.bfloat16).index_add(0, nbtorch.tensor([0, 0, 2]), nc[:3]))
    same(pa.masked_fill(pa > 0, 0.0039), na.masked_fill(na > 0, 0.0039))
    same(torch.cat([pa, pa.float()]), nbtorch.cat([na, na.float()]))
    same(torch.stack([pa, pa]), nbtorch.stack([na, na]))


def test_gradients_bit_for_bit(data):
    def run(L, a, b):
        a, b = a.clone().requires_grad_(), b.clone().requires_grad_()
        y = (a * b).sum(1) + a.log_softmax(1).amax(1) + (a @ b.t()).mean(0) + a.softmax(0)[:, 0]
        y.sum().backward()
        return y, a.grad, b.grad
    (pa, na), (pb, nb) = both(data["a"]), both(data["b"])
    same(run(torch, pa, pb), run(nbtorch, na, nb))


def test_cross_entropy_gradient_and_linear_sgd_step():
    rng = np.random.default_rng(0)
    W, bias = rng.standard_normal((4, 8)) * 0.3, rng.standard_normal(4) * 0.1
    X, Y = rng.standard_normal((16, 8)), rng.integers(0, 4, 16)

    def step(L):
        m = L.nn.Linear(8, 4)
        with L.no_grad():
            m.weight.copy_(L.tensor(W, dtype=L.float32))
            m.bias.copy_(L.tensor(bias, dtype=L.float32))
        m = m.to(L.bfloat16)
        opt = L.optim.SGD(m.parameters(), lr=0.125)
        x = L.tensor(X, dtype=L.float32).to(L.bfloat16)
        loss = L.nn.functional.cross_entropy(m(x), L.tensor(Y))
        loss.backward()
        grads = (m.weight.grad.clone(), m.bias.grad.clone())
        opt.step()
        return loss, grads, (m.weight.detach(), m.bias.detach())
    pt, nb = step(torch), step(nbtorch)
    same(pt[1], nb[1])                  # gradients: bit for bit
    same(pt[2], nb[2])                  # SGD with a bfloat16-exact lr: bit for bit
    same(pt[0], nb[0], ulps=2)          # loss: PyTorch sums the picked terms in bfloat16


@pytest.mark.parametrize("layer,shape", [
    (lambda L: L.nn.Conv2d(2, 3, 3, padding=1), (2, 2, 5, 5)),
    (lambda L: L.nn.LayerNorm(7), (4, 7)),
])
def test_layers_within_a_few_ulps(layer, shape):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, shape)
    params = [rng.uniform(-1, 1, tuple(p.shape)) for p in layer(torch).parameters()]
    outs = []
    for L in (torch, nbtorch):
        m = layer(L)
        with L.no_grad():
            for p, v in zip(m.parameters(), params):
                p.copy_(L.tensor(v, dtype=L.float32))
        outs.append(m.to(L.bfloat16)(L.tensor(x, dtype=L.float32).to(L.bfloat16)))
    same(outs[0], outs[1], ulps=2)


def test_float16_matches_pytorch_on_the_shared_half_paths(data):
    fns = [lambda L, a: a * 0.3, lambda L, a: a + 0.3, lambda L, a: a.log_softmax(1),
           lambda L, a: a.logsumexp(1), lambda L, a: L.nn.functional.leaky_relu(a, 0.1),
           lambda L, a: a.std(1), lambda L, a: a.sum(1)]
    pa, na = both(data["line"][:2000].reshape(40, 50), "float16")
    for fn in fns:
        same(fn(torch, pa), fn(nbtorch, na))


def test_float64_to_half_rounds_through_float32_like_pytorch():
    """c10::Half and c10::BFloat16 are made from a float: a double rounds twice."""
    v = 1 + 2 ** -11 + 2 ** -40          # a float16 tie once rounded to float32
    for name in ("float16", "bfloat16"):
        ours = [nbtorch.tensor(v, dtype=nbtorch.float64).to(getattr(nbtorch, name)).item(),
                nbtorch.tensor([v], dtype=getattr(nbtorch, name)).item()]
        theirs = [torch.tensor(v, dtype=torch.float64).to(getattr(torch, name)).item(),
                  torch.tensor([v], dtype=getattr(torch, name)).item()]
        assert ours == theirs
