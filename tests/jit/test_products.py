"""fx.passes.products: 2-D products of compiled graphs called without their Function layers,
the same kernel call and bits as the Function path."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
from nbtorch.fx.passes.products import Product
from nbtorch.ops.views import Permute


def _graphs(compiled):
    holder = getattr(compiled, "_compiled", compiled)
    cg = next(iter(holder._cache.values())).cg
    return [gm for gm in (cg.forward_gm, cg.backward_gm) if gm is not None]


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linear_backward_products_lose_their_permutes_and_keep_their_bits(dtype):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)).to(dtype)
    x = torch.randn(7, 6, dtype=dtype)
    model(x).square().sum().backward()
    want = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    compiled = torch.compile(model)
    compiled(x).square().sum().backward()
    for p, w in zip(model.parameters(), want):
        np.testing.assert_array_equal(p.grad.numpy(), w)
    _, backward = _graphs(compiled)
    kinds = {t.__name__ for t in _targets(backward) if isinstance(t, Product)}
    assert kinds == {"mm_nn", "mm_tn"}
    assert not any(getattr(t, "cls", None) is Permute for t in _targets(backward))


def test_user_products_with_transposes_match_eager():
    def f(a, b, c):
        return a.t() @ b, b @ c.t(), b.t() @ a

    rng = np.random.default_rng(0)
    a, b, c = (torch.tensor(rng.standard_normal(s).astype(np.float32))
               for s in ((4, 3), (4, 5), (2, 5)))
    compiled = torch.compile(f)
    for got, want in zip(compiled(a, b, c), f(a, b, c)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert any(isinstance(t, Product) for t in _targets(_graphs(compiled)[0]))


@pytest.mark.parametrize("dtype", [torch.int64, torch.complex64])
def test_other_dtypes_take_the_function_path(dtype):
    def f(a, b):
        return a.t() @ b

    a = (torch.arange(12).reshape(4, 3) % 5).to(dtype)
    b = (torch.arange(8).reshape(4, 2) % 3).to(dtype)
    np.testing.assert_array_equal(torch.compile(f)(a, b).numpy(), f(a, b).numpy())
