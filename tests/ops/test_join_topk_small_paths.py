"""The small unrecorded CPU paths of topk / sort (`ops/sorting._small_topk`, `_small_sort`)
and of cat / stack (`ops/joining._unrecorded_cat`, `_joined`): the general path's bits
(values, indices, dtype, shape, strides), NumPy's and PyTorch's results, the order of
ties, and every case they leave to the general path, errors included."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtorch
from nbtorch.ops import sorting

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.int8, np.uint8, np.bool_]


def _bits(t):
    return t.numpy().tobytes(), tuple(t.shape), t.stride(), t.dtype


def _same(a, b):
    assert _bits(a) == _bits(b)


def _array(rng, shape, dtype, ties=True):
    """Random values with many ties (and NaNs for floats) where `ties`."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if ties:
        a = rng.integers(-3, 4, shape)
        a = a.astype(dtype) if np.issubdtype(dtype, np.signedinteger) or \
            np.issubdtype(dtype, np.floating) else (a + 3).astype(dtype)
        if np.issubdtype(dtype, np.floating):
            a[rng.random(shape) < 0.15] = np.nan
        return a
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    return rng.permutation(int(np.prod(shape))).reshape(shape).astype(dtype)


def _first_k_reference(a, k, largest):
    """The k best of each last-dim row, better first, equal values (NaN the largest) by
    lower index: the first k of the stable sort."""
    key = a.astype(np.float64)
    key = np.where(np.isnan(key), np.inf, key)
    rank = np.where(np.isnan(a.astype(np.float64)), 1, 0)       # NaN above +inf
    n = a.shape[-1]
    idx = np.broadcast_to(np.arange(n), a.shape)
    if largest:
        order = np.lexsort((idx, -key, -rank), axis=-1)
    else:
        order = np.lexsort((idx, key, rank), axis=-1)
    order = order[..., :k]
    return np.take_along_axis(a, order, -1), order


def _general_topk(x, k, dim=-1, largest=True):
    """topk through its recorded path (TopK.apply), detached."""
    if x.dtype.is_floating_point:
        v, i = x.detach().requires_grad_().topk(k, dim, largest=largest)
        return v.detach(), i
    return sorting._topk_cpu(x, dim % x.dim(), k, largest)


def _general_sort(x, dim=-1, descending=False):
    if x.dtype.is_floating_point:
        v, i = x.detach().requires_grad_().sort(dim, descending=descending)
        return v.detach(), i
    return sorting.Sort.apply(x, dim % x.dim(), descending)


SHAPES = [(16,), (8, 16), (3, 4, 9), (2, 1, 3, 5), (1, 1), (5, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_topk_small_path_gives_the_general_paths_bits(dtype, shape):
    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    x = nbtorch.from_numpy(_array(rng, shape, dtype))
    n = shape[-1]
    for k in sorted({1, min(3, n), n}):
        for largest in (True, False):
            for sorted_ in (True, False):
                with nbtorch.no_grad():
                    fast = sorting._small_topk(x, k, -1, largest)
                    assert fast is not None
                    v, i = x.topk(k, largest=largest, sorted=sorted_)
                gv, gi = _general_topk(x, k, -1, largest)
                _same(v, gv)
                _same(i, gi)
                _same(fast.values, gv)
                rv, ri = _first_k_reference(x.numpy(), k, largest)
                np.testing.assert_array_equal(i.numpy(), ri)
                np.testing.assert_array_equal(v.numpy(), rv)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sort_small_path_gives_the_general_paths_bits(dtype, shape):
    rng = np.random.default_rng(len(shape) * 5 + shape[-1])
    x = nbtorch.from_numpy(_array(rng, shape, dtype))
    for descending in (False, True):
        with nbtorch.no_grad():
            assert sorting._small_sort(x, -1, descending) is not None
            v, i = x.sort(-1, descending=descending)
            v2, i2 = nbtorch.sort(x, len(shape) - 1, descending)
        gv, gi = _general_sort(x, -1, descending)
        for a, b in ((v, gv), (i, gi), (v2, gv), (i2, gi)):
            _same(a, b)
        rv, ri = _first_k_reference(x.numpy(), shape[-1], descending)
        np.testing.assert_array_equal(i.numpy(), ri)
        np.testing.assert_array_equal(v.numpy(), rv)


def test_topk_and_sort_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64, np.int64):
        a = _array(rng, (8, 16), dtype, ties=False)        # PyTorch's tie order is its own
        x, t = nbtorch.from_numpy(a), torch.from_numpy(a.copy())
        for largest in (True, False):
            v, i = x.topk(3, largest=largest)
            tv, ti = t.topk(3, largest=largest)
            np.testing.assert_array_equal(v.numpy(), tv.numpy())
            np.testing.assert_array_equal(i.numpy(), ti.numpy())
        v, i = x.sort(-1, descending=True)
        tv, ti = t.sort(dim=-1, descending=True, stable=True)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    a = _array(rng, (6, 10), np.float32)                   # ties and NaN, stable sort
    v, i = nbtorch.from_numpy(a).sort(dim=-1, stable=True)
    tv, ti = torch.from_numpy(a.copy()).sort(dim=-1, stable=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(v.numpy(), tv.numpy())


def test_topk_and_sort_small_paths_run_and_step_aside(monkeypatch):
    x = nbtorch.rand(8, 16)
    x.topk(2), x.sort()                                     # loads the kernels
    calls = []
    real_topk, real_sort = sorting._small_topk, sorting._small_sort
    monkeypatch.setattr(sorting, "_small_topk",
                        lambda *a: calls.append("topk") or real_topk(*a))
    monkeypatch.setattr(sorting, "_small_sort",
                        lambda *a: calls.append("sort") or real_sort(*a))
    out = x.topk(3)
    srt = x.sort(1)
    assert calls == ["topk", "sort"] and out.values.grad_fn is None
    assert srt.values.grad_fn is None
    w = nbtorch.rand(8, 16, requires_grad=True)             # recorded: the Function's node
    assert w.topk(3).values.grad_fn is not None and w.sort().values.grad_fn is not None
    assert real_topk(w, 3, -1, True) is None and real_sort(w, -1, False) is None
    with nbtorch.no_grad():
        assert real_topk(w, 3, -1, True) is not None and real_sort(w, 1, False) is not None
    for y, dim in ((x.t(), -1), (x[:, ::2], 1), (x, 0), (nbtorch.rand(1 << 15), 0)):
        assert real_topk(y, 1, dim, True) is None and real_sort(y, dim, False) is None
    assert real_topk(x, 0, -1, True) is None                # k = 0: the general path
    assert real_topk(x, 17, -1, True) is None
    assert real_topk(x, True, -1, True) is None             # a bool k: the general path
    assert real_sort(x, True, False) is None                # a bool dim: its TypeError
    for y in (nbtorch.rand(0, 4), nbtorch.rand(4, 0), nbtorch.tensor(2.0),
              nbtorch.rand(3, dtype=nbtorch.float16), nbtorch.arange(4).to(nbtorch.uint16)):
        assert real_topk(y, 0, -1, True) is None and real_sort(y, -1, False) is None
    # the general path still answers the cases stepped aside
    np.testing.assert_array_equal(x.t().topk(2).indices.numpy(),
                                  _first_k_reference(x.numpy().T, 2, True)[1])
    np.testing.assert_array_equal(x.topk(2, 0).values.numpy(),
                                  -np.sort(-x.numpy(), 0)[:2])
    assert x.topk(0).values.shape == (8, 0)
    assert nbtorch.rand(0, 4).topk(2).values.shape == (0, 2)
    assert nbtorch.rand(0, 4).sort().values.shape == (0, 4)


def test_a_profiler_or_capture_sees_the_topk_node():
    from nbtorch.autograd import function
    x = nbtorch.rand(8, 16)
    function.APPLY_WRAPPERS[0] += 1
    try:
        assert sorting._small_topk(x, 3, -1, True) is None
        assert sorting._small_sort(x, -1, False) is None
        _same(x.topk(3).values, _general_topk(x, 3)[0])
    finally:
        function.APPLY_WRAPPERS[0] -= 1


def test_a_replaced_sort_kernel_or_topk_launcher_is_called_as_usual(monkeypatch):
    from nbtorch import _registry
    from nbtorch.kernels.cpu import sort as kernels
    x = nbtorch.rand(4, 6)
    x.sort(), x.topk(1)
    seen = []
    original = _registry.get_kernel("sort", "cpu")

    def mine(a2, v2, i2, descending):
        seen.append(a2.shape)
        return original(a2, v2, i2, descending)
    monkeypatch.setitem(_registry._KERNELS, ("sort", "cpu"), mine)
    assert sorting._small_sort(x, -1, False) is None
    _same(x.sort().values, nbtorch.from_numpy(np.sort(x.numpy(), -1)))
    assert seen == [(4, 6)]
    monkeypatch.undo()

    picked = []
    launcher = kernels.topk

    def patched(a2, v2, i2, largest):
        picked.append(a2.shape)
        return launcher(a2, v2, i2, largest)
    monkeypatch.setattr(kernels, "topk", patched)
    assert sorting._small_topk(x, 1, -1, True) is None
    x.topk(2)
    assert picked == [(4, 6)]
    monkeypatch.undo()
    assert sorting._small_topk(x, 1, -1, True) is not None


def test_topk_and_sort_errors_are_unchanged():
    x = nbtorch.rand(2, 3)
    with pytest.raises(RuntimeError, match=r"selected index k out of range \(k=4, dim size 3\)"):
        x.topk(4)
    with pytest.raises(RuntimeError, match=r"k out of range \(k=-1, dim size 3\)"):
        x.topk(-1)
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        x.topk(1, 2)
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        x.topk(1, -3)
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        x.sort(2)
    with pytest.raises(TypeError, match="must be int, not bool"):
        x.sort(True)
    with pytest.raises(NotImplementedError, match="topk_cpu"):
        nbtorch.arange(3).to(nbtorch.uint16).topk(1)
    with nbtorch.no_grad():
        with pytest.raises(RuntimeError, match=r"k out of range \(k=4, dim size 3\)"):
            x.topk(4)
    t = nbtorch.tensor(3.0)                                 # 0-d: the general path
    assert t.topk(1).values.item() == 3.0 and t.sort().indices.item() == 0


def test_small_topk_results_are_fresh_tensors():
    x = nbtorch.rand(3, 5)
    with nbtorch.no_grad():
        v, i = x.topk(2)
        s = x.sort()
    v.fill_(7)
    s.values.fill_(7)
    assert float(x.max()) < 1.0 and v.is_contiguous() and i.dtype == nbtorch.int64
    assert v.storage_offset() == 0 and i.is_contiguous()
