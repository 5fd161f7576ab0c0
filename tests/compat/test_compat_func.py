"""torch.func: grad, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call,
stack_module_state; closed forms, and PyTorch's values when it is importable."""
import numpy as np
import pytest

import nbtorch
from nbtorch import nn
from nbtorch.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev,
                          jvp, stack_module_state, vjp, vmap)


def t(*v):
    return nbtorch.tensor(list(v), dtype=nbtorch.float64)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_grad_closed_forms_and_nesting():
    x = t(1.0, 2.0, 3.0)
    g = grad(lambda x: (x ** 3).sum())(x)
    close(g, [3.0, 12.0, 27.0])
    assert not g.requires_grad
    close(grad(grad(lambda x: x ** 3))(nbtorch.tensor(2.0, dtype=nbtorch.float64)), 12.0)
    ga, gb = grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, t(4.0, 5.0, 6.0))
    close(ga, [4.0, 5.0, 6.0])
    close(gb, [1.0, 2.0, 3.0])
    g, aux = grad(lambda x: ((x ** 2).sum(), "aux"), has_aux=True)(x)
    assert aux == "aux"
    g, v = grad_and_value(lambda x: (x ** 2).sum())(x)
    close(v, 14.0)
    tree = grad(lambda p: (p["w"] * p["b"][0]).sum())({"w": x, "b": [t(2.0)]})
    close(tree["w"], [2.0, 2.0, 2.0])
    close(tree["b"][0], [6.0])
    # a closure variable differentiated by the outer transform
    close(grad(lambda x: grad(lambda y: (x * y).sum())(t(1.0, 1.0, 1.0)).sum())(x),
          [1.0, 1.0, 1.0])


def test_grad_errors():
    x = t(1.0, 2.0)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        grad(lambda x: x)(x)
    with pytest.raises(RuntimeError, match="return a Tensor"):
        grad(lambda x: 3.0)(x)
    with pytest.raises(RuntimeError, match="argnums=2"):
        grad(lambda x: x.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match="floating point"):
        grad(lambda x: x.sum())(nbtorch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="tuple: \\(output, aux\\)"):
        grad(lambda x: x.sum(), has_aux=True)(x)


def test_vjp_jvp_jacobians():
    x, v = t(1.0, 2.0), t(1.0, -1.0)
    out, fn = vjp(lambda x: x ** 2, x)
    close(out, [1.0, 4.0])
    close(fn(v)[0], [2.0, -4.0])
    close(fn(v)[0], [2.0, -4.0])                       # callable twice
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        fn(t(1.0))
    out, jv = jvp(lambda x: x ** 2, (x,), (v,))
    close(jv, [2.0, -4.0])
    close(jacrev(lambda x: x ** 2)(x), np.diag([2.0, 4.0]))
    close(jacfwd(lambda x: x ** 2)(x), np.diag([2.0, 4.0]))
    close(hessian(lambda x: (x ** 3).sum())(x), np.diag([6.0, 12.0]))
    ja, jb = jacrev(lambda a, b: a * b, argnums=(0, 1))(x, v)
    close(ja, np.diag([1.0, -1.0]))
    close(jb, np.diag([1.0, 2.0]))
    out = jacrev(lambda x: {"sq": x ** 2, "s": x.sum()})(x)
    close(out["sq"], np.diag([2.0, 4.0]))
    close(out["s"], [1.0, 1.0])


def test_vmap():
    ones = nbtorch.ones(3, 4)
    close(vmap(lambda r: r.sum())(ones), [4.0, 4.0, 4.0])
    close(vmap(nbtorch.dot)(nbtorch.ones(2, 3), nbtorch.ones(2, 3)), [3.0, 3.0])
    x = nbtorch.arange(6.0).reshape(2, 3)
    close(vmap(lambda c: c * 2, in_dims=1)(x), (x.numpy() * 2).T)
    close(vmap(lambda r: r * 2, out_dims=1)(x), (x.numpy() * 2).T)
    close(vmap(lambda r, s: r * s, in_dims=(0, None))(x, nbtorch.tensor(10.0)), x.numpy() * 10)
    close(vmap(vmap(lambda e: e + 1))(x), x.numpy() + 1)
    a, b = vmap(lambda r: (r.sum(), r.max()))(x)
    close(a, [3.0, 12.0])
    close(b, [2.0, 5.0])
    d = vmap(lambda p: p["a"] + p["b"], in_dims=({"a": 0, "b": None},))(
        {"a": x, "b": nbtorch.ones(3)})
    close(d, x.numpy() + 1)
    e = vmap(lambda r: r.sum())(nbtorch.ones(0, 3))
    assert e.shape == (0,)
    xs = nbtorch.ones(3, 2, requires_grad=True)          # gradients flow through the loop
    vmap(lambda r: (r * r).sum())(xs).sum().backward()
    close(xs.grad, np.full((3, 2), 2.0))


def test_vmap_errors_and_randomness():
    x = nbtorch.ones(3, 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(lambda a, b: a + b)(x, nbtorch.ones(4, 2))
    with pytest.raises(ValueError, match="in_dims=None"):
        vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="non-Tensor"):
        vmap(lambda a, b: a, in_dims=(0, 0))(x, 3.0)
    with pytest.raises(ValueError, match="dimensionality 2"):
        vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda a: 3.0)(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: a + nbtorch.rand(2))(x)
    same = vmap(lambda a: a + nbtorch.rand(2), randomness="same")(x)
    close(same[0], same[1])
    diff = vmap(lambda a: a + nbtorch.rand(2), randomness="different")(x)
    assert not np.allclose(diff[0].numpy(), diff[1].numpy())
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda a: a, randomness="x")


def test_functional_call_and_per_sample_grads():
    nbtorch.manual_seed(0)
    m = nn.Linear(3, 1).double()
    params = {k: v.detach() for k, v in m.named_parameters()}
    X, Y = nbtorch.randn(5, 3, dtype=nbtorch.float64), nbtorch.randn(5, 1, dtype=nbtorch.float64)
    zero = {k: nbtorch.zeros_like(v) for k, v in params.items()}
    close(functional_call(m, zero, (X,)), np.zeros((5, 1)))
    assert m.weight is not zero["weight"] and m.weight.requires_grad     # restored

    def loss(p, xb, yb):
        return ((functional_call(m, p, (xb,)) - yb) ** 2).mean()

    per = vmap(grad(loss), in_dims=(None, 0, 0))(params, X, Y)
    assert per["weight"].shape == (5, 1, 3) and per["bias"].shape == (5, 1)
    for i in range(5):
        m.zero_grad()
        loss(dict(m.named_parameters()), X[i], Y[i]).backward()
        close(per["weight"][i], m.weight.grad.numpy())
        close(per["bias"][i], m.bias.grad.numpy())
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'"):
        functional_call(m, {"nope": X}, (X,), strict=True)
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        functional_call(m, {"weight": params["weight"]}, (X,), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        functional_call(m, ({"bias": params["bias"]}, {"bias": params["bias"]}), (X,))


def test_tied_weights_and_stack_module_state():
    emb = nn.Linear(2, 2, bias=False)
    seq = nn.Sequential(emb, nn.Linear(2, 2, bias=False))
    seq[1].weight = emb.weight                           # tied
    w = nbtorch.eye(2)
    out = functional_call(seq, {"0.weight": w * 2}, (nbtorch.ones(1, 2),))
    close(out, [[4.0, 4.0]])                             # both layers saw 2*I
    out = functional_call(seq, {"0.weight": w * 2}, (nbtorch.ones(1, 2),), tie_weights=False)
    assert out.shape == (1, 2)
    models = [nn.Linear(2, 1) for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert params["weight"].shape == (3, 1, 2) and params["weight"].requires_grad
    assert params["weight"].is_leaf and buffers == {}
    x = nbtorch.randn(4, 2)
    out = vmap(lambda p: functional_call(models[0], p, (x,)))(params)
    for i, mod in enumerate(models):
        close(out[i].detach(), mod(x).detach().numpy(), 1e-6)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))

    def f(x):
        return (x.sin() * x.exp()).sum(-1)

    for ours, theirs in [(jacrev(f), torch.func.jacrev(f)), (jacfwd(f), torch.func.jacfwd(f)),
                         (vmap(f), torch.func.vmap(f))]:
        close(ours(nbtorch.tensor(a)), theirs(torch.tensor(a)).numpy())
    row = a[0]
    close(hessian(lambda x: f(x))(nbtorch.tensor(row)),
          torch.func.hessian(lambda x: f(x))(torch.tensor(row)).numpy())
    close(vmap(grad(f))(nbtorch.tensor(a)), torch.func.vmap(torch.func.grad(f))(
        torch.tensor(a)).numpy())
    assert nbtorch.vmap(f)(nbtorch.tensor(a)).shape == (3,)
