"""Writes whose result would depend on their order are refused, as PyTorch refuses them:
an output partly overlapping an input (in-place ops, out=, copy_), an output whose
elements share memory (expand). Full overlap (x.mul_(x)) and layouts too hard to tell
(x[::2] against x[1::2]) run. Expected outcomes are PyTorch 2.13's."""
import pytest

import nbtorch

PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single"
INTERNAL = "more than one element of the written-to tensor refers to a single memory"


def _x():
    return nbtorch.arange(10.0)


def _m():
    return nbtorch.arange(9.0).reshape(3, 3)


REFUSED = {
    "add_ of a shifted view": lambda x, m: x[2:].add_(x[:-2]),
    "add_ of an element of self": lambda x, m: x.add_(x[0]),
    "add_ of the transpose": lambda x, m: m.add_(m.t()),
    "add_ of a row of self": lambda x, m: m.add_(m[0]),
    "clamp_ by elements of self": lambda x, m: x.clamp_(x[0], x[-1]),
    "add out= shifted": lambda x, m: nbtorch.add(x[:-1], 1, out=x[1:]),
    "add out= one input shifted": lambda x, m: nbtorch.add(x[:-1], x[1:], out=x[:-1]),
    "exp out= shifted": lambda x, m: nbtorch.exp(x[:-2], out=x[2:]),
    "copy_ of the transpose": lambda x, m: m.copy_(m.t()),
    "copy_ shifted": lambda x, m: x[1:].copy_(x[:-1]),
    "setitem of a shifted view": lambda x, m: x.__setitem__(slice(1, 4), x[:3]),
    "index_copy_ from self": lambda x, m: x.index_copy_(0, nbtorch.tensor([1, 2, 3]), x[:3]),
    "abs out= shifted": lambda x, m: nbtorch.abs(x[:-1], out=x[1:]),
    "clamp out= shifted": lambda x, m: nbtorch.clamp(x[:-1], 0, 5, out=x[1:]),
    "cumsum out= shifted": lambda x, m: nbtorch.cumsum(x[:-1], 0, out=x[1:]),
    "cat out= over its inputs": lambda x, m: nbtorch.cat([x[:3], x[3:6]], out=x[2:8]),
    "stack out= over its inputs": lambda x, m: nbtorch.stack([x[:2], x[2:4]],
                                                             out=x[3:7].view(2, 2)),
    "sort out= shifted": lambda x, m: nbtorch.sort(
        x[:-1], out=(x[1:], nbtorch.empty(9, dtype=nbtorch.int64))),
    "diff out= shifted": lambda x, m: nbtorch.diff(x[:-1], out=x[1:9]),
    "eq_ shifted": lambda x, m: x[1:].eq_(x[:-1]),
    "lt_ shifted": lambda x, m: x[1:].lt_(x[:-1]),
    "logical_and_ shifted": lambda x, m: x[1:].logical_and_(x[:-1]),
}

ALLOWED = {
    "mul_ by itself": lambda x, m: x.mul_(x),
    "exp out= itself": lambda x, m: nbtorch.exp(x[:5], out=x[:5]),
    "exp out= disjoint": lambda x, m: nbtorch.exp(x[:5], out=x[5:]),
    "strided halves": lambda x, m: x[::2].add_(x[1::2]),
    "sum out= an element": lambda x, m: nbtorch.sum(x, 0, out=x[0]),
    "masked_fill_": lambda x, m: x.masked_fill_(x > 3, 0.0),
    "mm out= an input": lambda x, m: nbtorch.mm(m, m, out=m),
    "add out= shifted, of a copy": lambda x, m: nbtorch.add(x[:-1].double(), 1, out=x[1:]),
    "eq_ by itself": lambda x, m: x.eq_(x),
    "softmax out= shifted": lambda x, m: nbtorch.softmax(x[:-1], 0, out=x[1:]),
    "matmul out= partly overlapping": lambda x, m: nbtorch.matmul(m[:2], m, out=m[1:3]),
    "amax out= an element": lambda x, m: nbtorch.amax(m, 0, out=m[0]),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_partial_overlap_is_refused(case):
    x, m = _x(), _m()
    before = (x.clone(), m.clone())
    with pytest.raises(RuntimeError, match=PARTIAL):
        REFUSED[case](x, m)
    assert nbtorch.equal(x, before[0]) and nbtorch.equal(m, before[1])   # nothing written


@pytest.mark.parametrize("case", sorted(ALLOWED))
def test_full_or_no_overlap_runs(case):
    ALLOWED[case](_x(), _m())


def test_results_where_the_overlap_is_full():
    x = _x()
    assert nbtorch.exp(x[:5], out=x[:5]) is not None
    assert nbtorch.allclose(x[:5], nbtorch.arange(5.0).exp())
    m = _m()
    assert nbtorch.equal(nbtorch.mm(m, m, out=m), _m() @ _m())


def test_bernoulli_by_a_shifted_view_of_self_is_refused():
    p = nbtorch.full((10,), 0.5)
    with pytest.raises(RuntimeError, match=PARTIAL):
        p[1:].bernoulli_(p[:-1])
    assert p.tolist() == [0.5] * 10


def test_masked_scatter_from_self_reads_the_source_first():
    x = _x()
    x.masked_scatter_(x > 4, x)                       # PyTorch 2.13's result
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 2.0, 3.0, 4.0]


def test_nan_to_num_replacements_must_be_numbers():
    x = nbtorch.tensor([float("nan"), float("inf"), 1.0])
    assert nbtorch.nan_to_num(x, nbtorch.tensor(2.0), posinf=None).tolist()[0] == 2.0
    assert nbtorch.nan_to_num(x, None).tolist()[0] == 0.0
    with pytest.raises(TypeError, match="argument 'nan' must be float, not str"):
        nbtorch.nan_to_num(x, "a")
    with pytest.raises(TypeError, match="argument 'posinf' must be float, not str"):
        x.nan_to_num(posinf="a")
    with pytest.raises(TypeError, match="nan_to_num_\\(\\): argument 'nan' must be float, not "
                                        "Tensor"):
        _x()[1:].nan_to_num_(_x()[:-1])


def test_expanded_out_is_refused():
    with pytest.raises(RuntimeError, match=INTERNAL):
        nbtorch.add(nbtorch.ones(3), 1, out=nbtorch.zeros(1).expand(3))
    with pytest.raises(RuntimeError, match=INTERNAL):
        nbtorch.exp(nbtorch.ones(3), out=nbtorch.zeros(1).expand(3))


def test_boolean_outputs_and_out_free_predicates():
    x = nbtorch.tensor([1.0, -2.0, float("inf")])
    for name in ("signbit", "isposinf", "isneginf"):
        with pytest.raises(RuntimeError, match=f"{name} does not support non-boolean"):
            getattr(nbtorch, name)(x, out=nbtorch.empty(3))
        out = nbtorch.empty(3, dtype=nbtorch.bool)
        assert getattr(nbtorch, name)(x, out=out) is out
        assert out.tolist() == getattr(nbtorch, name)(x).tolist()
    for name in ("isnan", "isinf"):
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            getattr(nbtorch, name)(x, out=nbtorch.empty(3, dtype=nbtorch.bool))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype bool, but got "
                                           "float instead"):
        nbtorch.isin(x, x, out=nbtorch.empty(3))
