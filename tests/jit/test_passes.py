"""fx graph passes: CSE, constant folding, normalisation, dead code; each on its own."""
import operator

import numpy as np

import nbtorch as torch
import nbtorch.fx as fx
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.fx.passes.constant_fold import constant_fold
from nbtorch.fx.passes.cse import CSEPass, eliminate_common_subexpressions
from nbtorch.fx.passes.normalize import normalize


def _t(*shape, seed=0):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _targets(gm, op="call_function"):
    return [n.target for n in gm.graph.nodes if n.op == op]


def test_cse_merges_identical_pure_nodes():
    def f(x):
        a = torch.relu(x + 1)
        b = torch.relu(x + 1)
        c = x + 1.0                   # another constant type: kept apart
        return a * b + c
    gm = fx.symbolic_trace(f)
    x = _t(3, 4)
    assert eliminate_common_subexpressions(gm) == 2
    assert _targets(gm).count(torch.relu) == 1
    assert sum(t is operator.add for t in _targets(gm)) == 3
    np.testing.assert_allclose(gm(x).numpy(), f(x).numpy())
    assert CSEPass()(gm) is gm


def test_cse_keeps_random_and_inplace_ordering():
    def f(x):
        a = x * 2
        x.add_(1)                     # a node after this reads another value of x
        b = x * 2
        r1 = torch.rand(3)
        r2 = torch.rand(3)
        return a, b, r1, r2
    gm = fx.symbolic_trace(f)
    assert eliminate_common_subexpressions(gm) == 0
    x = torch.ones(3)
    a, b, r1, r2 = gm(x)
    np.testing.assert_allclose(a.numpy(), [2, 2, 2])
    np.testing.assert_allclose(b.numpy(), [4, 4, 4])
    assert not np.array_equal(r1.numpy(), r2.numpy())


def test_buffers_filled_through_views_are_neither_merged_nor_folded():
    def f(x):
        a = x.new_zeros(2, 4)
        a.narrow(1, 0, 2).copy_(x)    # two fresh buffers, each written through a view
        b = x.new_zeros(2, 4)
        b.narrow(1, 2, 2).copy_(x)
        return a + b
    x = _t(2, 2)
    gm = fx.symbolic_trace(f)
    assert eliminate_common_subexpressions(gm) == 0
    assert constant_fold(gm) == 0
    want = np.concatenate([x.numpy(), x.numpy()], 1)
    np.testing.assert_allclose(gm(x).numpy(), want)
    np.testing.assert_allclose(gm(x).numpy(), want)      # no state kept between calls


def test_compiled_gradients_of_two_views_of_one_input():
    # the backward of each slice fills zeros through a view: CSE had merged the two
    # zeros, so a compiled roll (cat of two narrows) got the sum of both gradients twice
    y = _t(3, 8, seed=1)

    def f(x):
        return (torch.roll(x, 3, 1) * y).sum() + (x.narrow(1, 2, 4) * 2).sum()
    x = _t(3, 8).requires_grad_()
    f(x).backward()
    want, x.grad = x.grad.numpy().copy(), None
    cf = torch.compile(f)
    for _ in range(2):
        cf(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
        x.grad = None
    assert not cf.fallback_reasons


class _WithConstants(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("shift", torch.full((3,), 0.5))

    def forward(self, x):
        c = torch.ones(3) * 3 + 1          # a constant computation: folded
        return self.lin(x) * c + self.shift * 2


def test_constant_fold_factories_not_weights():
    m = _WithConstants()
    x = _t(2, 3)
    traced = torch.jit.trace(m, x)
    ref = m(x)
    assert constant_fold(traced) == 1       # ones(3) * 3 + 1 -> one tensor
    folded = [n for n in traced.graph.nodes if n.op == "get_attr"
              and n.target.startswith("_folded_constant")]
    assert len(folded) == 1
    np.testing.assert_allclose(getattr(traced, folded[0].target).numpy(), [4, 4, 4])
    np.testing.assert_allclose(traced(x).detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    assert "_folded_constant_0" not in traced.state_dict()
    # weights and buffers are still read at run time
    with torch.no_grad():
        m.shift.fill_(1.0)
    np.testing.assert_allclose(traced(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)


def test_constant_fold_buffers_when_asked():
    m = _WithConstants()
    x = _t(2, 3)
    traced = torch.jit.trace(m, x)
    assert constant_fold(traced, fold_buffers=True) == 2      # and shift * 2
    np.testing.assert_allclose(traced(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.act = nn.GELU(approximate="tanh")
        self.ln = nn.LayerNorm(6)
        self.bn = nn.BatchNorm1d(6)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        y = self.act(self.fc(x)) * 2
        y = 1 - y.sigmoid() + y.relu()
        return self.drop(self.ln(y) + self.bn(y)).sum(-1)


def test_normalize_operators_methods_and_modules():
    m = _Net().eval()
    x = _t(5, 4)
    traced = torch.jit.trace(m, x)
    ref = m(x)
    normalize(traced)
    assert not any(n.op in ("call_module", "call_method") for n in traced.graph.nodes)
    targets = _targets(traced)
    for fn in (F.linear, F.gelu, torch.mul, torch.rsub, torch.sigmoid, torch.relu, torch.add,
               F.layer_norm, F.batch_norm, torch.sum):
        assert fn in targets, fn
    assert not any(getattr(operator, getattr(t, "__name__", ""), None) is t for t in targets)
    gelu = next(n for n in traced.graph.nodes if n.target is F.gelu)
    assert gelu.kwargs == {"approximate": "tanh"}
    weights = {n.target for n in traced.graph.nodes if n.op == "get_attr"}
    assert {"fc.weight", "fc.bias", "ln.weight", "bn.running_mean"} <= weights
    np.testing.assert_allclose(traced(x).detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert list(traced.state_dict()) == list(m.state_dict())


def test_normalize_keeps_training_batchnorm_and_size_arithmetic():
    m = _Net().train()
    x = _t(5, 4)
    traced = torch.jit.trace(m, x, check_trace=False)
    normalize(traced)
    assert [n.target for n in traced.graph.nodes if n.op == "call_module"] == ["bn"]
    assert F.dropout in _targets(traced)

    def f(x):
        return x.view(x.size(0) * 2, -1)
    t2 = torch.jit.trace(f, _t(4, 6))
    normalize(t2)
    assert operator.mul in _targets(t2)       # ints stay Python arithmetic
    assert t2(_t(2, 6)).shape == (4, 3)


def test_dead_code_elimination_keeps_impure():
    def f(x):
        unused = torch.exp(x)          # noqa: F841
        x.mul_(2)
        return x + 1
    gm = fx.symbolic_trace(f)
    assert gm.graph.eliminate_dead_code()
    assert torch.exp not in _targets(gm)
    assert any(n.target == "mul_" for n in gm.graph.nodes)
