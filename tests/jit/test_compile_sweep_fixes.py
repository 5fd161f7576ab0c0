"""compile / trace / script cases a sweep of user code found wrong (each was a silent wrong
result, a crash, or memory read past a tensor), checked against eager."""
import copy
import dataclasses
import warnings

import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _branch_on_tensor(x):
    z = x * 2
    return z + 1 if isinstance(z, nbtorch.Tensor) else z - 100


def _branch_on_is_tensor(x):
    return x + 1 if nbtorch.is_tensor(x) else x - 100


def test_isinstance_of_traced_values_answers_for_the_value():
    x = nbtorch.ones(3)
    want = _branch_on_tensor(x).tolist()
    assert nbtorch.compile(_branch_on_tensor)(x).tolist() == want
    assert nbtorch.jit.trace(_branch_on_tensor, (x,))(x).tolist() == want
    assert nbtorch.jit.script(_branch_on_tensor)(x).tolist() == want
    assert nbtorch.compile(_branch_on_is_tensor)(x).tolist() == [2.0] * 3


class _TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 6, batch_first=True)

    def forward(self, x):
        out = self.rnn(x)
        if isinstance(out, tuple):          # the common idiom for layers returning tuples
            out = out[0]
        return out.relu()


def test_isinstance_tuple_of_a_layers_traced_output():
    nbtorch.manual_seed(0)
    m, x = _TupleOut(), nbtorch.randn(2, 5, 4)
    want = m(x).detach().numpy()
    c = nbtorch.compile(m)
    np.testing.assert_allclose(c(x).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    assert not c.fallback_reasons       # a tuple came back (compiled) or trace failed before
    np.testing.assert_allclose(nbtorch.jit.trace(m, x)(x).detach().numpy(), want, rtol=1e-5,
                               atol=1e-6)


def test_compiled_embedding_checks_the_index_range():
    emb = nn.Embedding(4, 2)
    c = nbtorch.compile(emb)
    c(nbtorch.tensor([0, 3]))
    with pytest.raises(IndexError, match="index out of range in self"):
        c(nbtorch.tensor([0, 9]))       # read memory past the weight before


def test_one_hot_without_num_classes_follows_the_data():
    c = nbtorch.compile(lambda i: F.one_hot(i) * 1.0)
    assert _quiet(c, nbtorch.tensor([0, 1, 4])).shape == (3, 5)
    assert _quiet(c, nbtorch.tensor([0, 1, 2])).shape == (3, 3)   # was (3, 5)


def test_batch_norm_with_cumulative_average_matches_eager():
    nbtorch.manual_seed(0)
    m1 = nn.BatchNorm2d(3, momentum=None)
    m2 = copy.deepcopy(m1)
    c = nbtorch.compile(m2)
    for step in range(3):
        x = nbtorch.randn(4, 3, 5, 5) + step
        m1(x)
        _quiet(c, x)
    np.testing.assert_allclose(m2.running_mean.numpy(), m1.running_mean.numpy(), rtol=1e-6)
    assert int(m2.num_batches_tracked) == 3


def test_tensor_type_conversion_traces():
    x = nbtorch.randn(3)
    t = nbtorch.jit.trace(lambda x: x.type(nbtorch.float64) * 2, (x,))
    assert t(x).dtype is nbtorch.float64
    c = nbtorch.compile(lambda x: x.type(nbtorch.float64) * 2)
    assert c(x).dtype is nbtorch.float64 and not c.fallback_reasons


def test_compiled_keepdim_reduction_returned_directly_trains():
    x = nbtorch.randn(3, 5, requires_grad=True)
    x.amin(1, keepdim=True).sum().backward()
    want = x.grad.clone()
    x.grad = None
    nbtorch.compile(lambda x: x.amin(1, keepdim=True))(x).sum().backward()   # KeyError before
    np.testing.assert_array_equal(x.grad.numpy(), want.numpy())


class _Attrs(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [1.0]                 # a list, changed in place
        self.w = nbtorch.ones(3)            # an unregistered tensor, reassigned
        self.out_dtype = nbtorch.float32    # a dtype, reassigned

    def forward(self, x):
        return (x * self.scales[0] * self.w).to(self.out_dtype)


def test_module_attributes_beyond_numbers_are_guarded():
    m, x = _Attrs(), nbtorch.ones(3)
    c = nbtorch.compile(m)
    c(x)
    m.scales[0] = 2.0
    assert c(x).tolist() == [2.0] * 3               # the first graph's 1.0 before
    m.w = nbtorch.full((3,), 5.0)
    assert c(x).tolist() == [10.0] * 3
    m.out_dtype = nbtorch.float64
    assert c(x).dtype is nbtorch.float64


class _ResidualBlock(nn.Module):
    """ResNet's basic block: ReLU(inplace=True) and an in-place residual add."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.c2, self.b2 = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        y += x
        return self.relu(y)


def test_in_place_activations_on_intermediates_compile():
    nbtorch.manual_seed(0)
    m = _ResidualBlock()
    m2 = copy.deepcopy(m)
    c = nbtorch.compile(m2)
    x = nbtorch.randn(2, 4, 6, 6, requires_grad=True)
    for _ in range(2):
        a, b = m(x), c(x)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        a.sum().backward()
        b.sum().backward()
    assert not c.fallback_reasons                   # ran eagerly before (relu_grad's input)
    np.testing.assert_array_equal(m.c1.weight.grad.numpy(), m2.c1.weight.grad.numpy())
    f = nbtorch.compile(lambda x: (x * 2).sigmoid_() * 3)
    f(x).sum().backward()
    assert not f.fallback_reasons


def test_in_place_op_saves_self_as_pytorchs_do():
    x = nbtorch.randn(3, requires_grad=True)
    y = (x * 2).relu_()
    y.add_(1)                   # relu_ saved y itself: its backward sees the change
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*output 0 of "
                                           "ReluBackward"):
        y.sum().backward()


class _ClampedWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)

    def forward(self, x):
        with nbtorch.no_grad():
            self.l.weight.clamp_(-0.1, 0.1)         # a max-norm style constraint
        return self.l(x)


def test_in_place_update_of_a_weight_under_no_grad_in_forward():
    nbtorch.manual_seed(0)
    m = _ClampedWeight()
    m2 = copy.deepcopy(m)
    c = nbtorch.compile(m2)                         # raised 'a leaf Variable ...' before
    o1 = nbtorch.optim.SGD(m.parameters(), lr=0.5)
    o2 = nbtorch.optim.SGD(m2.parameters(), lr=0.5)
    for _ in range(3):
        x = nbtorch.randn(2, 3)
        for opt, f in ((o1, m), (o2, c)):
            opt.zero_grad()
            f(x).pow(2).sum().backward()
            opt.step()
    np.testing.assert_array_equal(m.l.weight.detach().numpy(), m2.l.weight.detach().numpy())
    assert not c.fallback_reasons


def test_enable_grad_inside_code_called_under_no_grad_runs_eagerly():
    lin = nn.Linear(3, 3)

    def f(x):
        with nbtorch.enable_grad():
            return lin(x) * 2
    c = nbtorch.compile(f)
    with nbtorch.no_grad():
        out = _quiet(c, nbtorch.randn(2, 3))
    assert out.requires_grad                        # False (no backward) before
    out.sum().backward()
    assert lin.weight.grad is not None and c.fallback_reasons


def test_a_capture_leaves_the_users_generator_where_it_was():
    def f(x, g):
        return x + nbtorch.randn(x.shape, generator=g)
    c = nbtorch.compile(f)
    x = nbtorch.zeros(3)
    g1, g2 = nbtorch.Generator().manual_seed(3), nbtorch.Generator().manual_seed(3)
    want = [f(x, g1).tolist() for _ in range(2)]
    assert [_quiet(c, x, g2).tolist() for _ in range(2)] == want    # one draw ahead before


@dataclasses.dataclass
class _Output:                   # a model output record, as Hugging Face's ModelOutput
    logits: nbtorch.Tensor
    loss: object = None


class _RecordModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x, y=None):
        z = self.l(x)
        return _Output(z, None if y is None else (z - y).pow(2).mean())


def test_dataclass_outputs_compile_and_trace():
    nbtorch.manual_seed(0)
    m = _RecordModel()
    c = nbtorch.compile(m, fullgraph=True)         # CompileError before (fell back)
    x, y, x2 = nbtorch.randn(2, 4), nbtorch.randn(2, 3), nbtorch.randn(2, 4)
    out = c(x, y)
    assert isinstance(out, _Output) and out.loss.requires_grad
    out.loss.backward()
    g = m.l.weight.grad.clone()
    m.l.weight.grad = None
    m(x, y).loss.backward()
    np.testing.assert_array_equal(g.numpy(), m.l.weight.grad.numpy())
    np.testing.assert_array_equal(c(x2).logits.detach().numpy(), m(x2).logits.detach().numpy())
    assert c(x2).loss is None
    t = nbtorch.jit.trace(m, (x,))
    np.testing.assert_array_equal(t(x2).logits.detach().numpy(), m(x2).logits.detach().numpy())


def test_a_closure_list_changed_in_place_recompiles():
    conf = [1.0]
    f = nbtorch.compile(lambda x: x * conf[0])
    x = nbtorch.ones(3)
    f(x)
    conf[0] = 3.0
    assert f(x).tolist() == [3.0] * 3              # the first graph's 1.0 before


def test_a_list_the_code_appends_to_is_a_side_effect_not_a_guard():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2
    c = nbtorch.compile(f)
    for _ in range(4):
        c(nbtorch.ones(3))
    assert c.recompiles == 0


class _SharedNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn, self.l = nn.BatchNorm1d(4), nn.Linear(4, 4)

    def forward(self, x):
        return self.bn(self.l(self.bn(x)))          # one BatchNorm applied twice


def test_more_code_that_ran_eagerly_now_compiles():
    nbtorch.manual_seed(0)
    m = _SharedNorm()
    m2 = copy.deepcopy(m)
    c = nbtorch.compile(m2)
    for _ in range(3):
        x = nbtorch.randn(8, 4)
        a, b = m(x), c(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(m.bn.running_mean.numpy(), m2.bn.running_mean.numpy())
    fn = lambda x: x * nbtorch.bernoulli(nbtorch.full_like(x, 0.5))   # noqa: E731
    nbtorch.manual_seed(1)
    want = [fn(nbtorch.ones(6)).tolist() for _ in range(2)]
    f = nbtorch.compile(fn)
    nbtorch.manual_seed(1)
    assert [f(nbtorch.ones(6)).tolist() for _ in range(2)] == want   # drawn per call
    g = nbtorch.compile(lambda x: x + x.new_tensor([1.0, 2.0, 3.0]) + x.new_full((3,), 2.0))
    assert g(nbtorch.ones(3)).tolist() == [4.0, 5.0, 6.0]
    for compiled in (c, f, g):
        assert not compiled.fallback_reasons


def test_module_compile_in_place():
    """model.compile() (PyTorch 2.2+): the module itself runs compiled graphs, train/eval
    switches recompile, the state_dict is unchanged."""
    nbtorch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.1),
                      nn.Linear(8, 2))
    m2 = copy.deepcopy(m)
    assert m2.compile() is None
    for i in range(2):
        x = nbtorch.randn(6, 4)
        nbtorch.manual_seed(i)
        a = m(x)
        nbtorch.manual_seed(i)
        np.testing.assert_array_equal(a.detach().numpy(), m2(x).detach().numpy())
    m.eval()
    m2.eval()
    x = nbtorch.randn(6, 4)
    np.testing.assert_array_equal(m(x).detach().numpy(), m2(x).detach().numpy())
    assert m2._compiled_call_impl.recompiles == 1 and not m2._compiled_call_impl.fallback_reasons
    assert list(m2.state_dict()) == list(m.state_dict())
