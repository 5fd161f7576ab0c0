"""The small unrecorded CPU paths of topk / sort (`ops/sorting._small_topk`, `_small_sort`)
and of cat / stack (`ops/joining._unrecorded_cat`, `_joined`): the general path's bits
(values, indices, dtype, shape, strides), NumPy's and PyTorch's results, the order of
ties, and every case they leave to the general path, errors included."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtorch
from nbtorch.ops import joining, sorting

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.int8, np.uint8, np.bool_]


def _bits(t):
    return t.numpy().tobytes(), tuple(t.shape), t.stride(), t.dtype


def _same(a, b):
    assert _bits(a) == _bits(b)


def _array(rng, shape, dtype, ties=True):
    """Random values with many ties (and NaNs for floats) where `ties`."""
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if ties:
        a = rng.integers(-3, 4, shape)
        a = a.astype(dtype) if np.issubdtype(dtype, np.signedinteger) or \
            np.issubdtype(dtype, np.floating) else (a + 3).astype(dtype)
        if np.issubdtype(dtype, np.floating):
            a[rng.random(shape) < 0.15] = np.nan
        return a
    if np.issubdtype(dtype, np.floating):
        return np.asarray(rng.standard_normal(shape), dtype)
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
    """topk through its recorded path (TopK.apply), detached; integers (no grad) through
    the unrecorded path the small one replaced (`_topk_cpu`)."""
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


# ---- cat / stack ----------------------------------------------------------------------

def _general_cat(tensors, dim=0):
    """cat through its recorded path (Cat.apply), detached."""
    if tensors[0].dtype.is_floating_point:
        leaf = tensors[0].detach().requires_grad_()
        return nbtorch.cat([leaf] + list(tensors[1:]), dim).detach()
    return joining.Cat.apply(dim % tensors[0].dim(), tensors[0].dtype, *tensors)


def _general_stack(tensors, dim=0):
    if tensors[0].dtype.is_floating_point:
        leaf = tensors[0].detach().requires_grad_()
        return nbtorch.stack([leaf] + list(tensors[1:]), dim).detach()
    d = dim % (tensors[0].dim() + 1)
    return joining._Stack.apply(d, tensors[0].dtype, *[t.unsqueeze(d) for t in tensors])


def _pieces(rng, shapes, dtype, layout="contiguous"):
    out = []
    for s in shapes:
        a = _array(rng, s, dtype, ties=False)
        if layout == "transposed" and len(s) >= 2:       # same shape, strides reversed
            t = nbtorch.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
            t = t.transpose(-1, -2)
        elif layout == "sliced":                          # every other element of a row
            t = nbtorch.from_numpy(np.repeat(a, 2, -1))[..., ::2]
        elif layout == "offset":                          # a view past a storage's start
            t = nbtorch.from_numpy(np.concatenate([a.reshape(-1)[:1], a.reshape(-1)]))
            t = t[1:].view(s)
        else:
            t = nbtorch.from_numpy(a)
        np.testing.assert_array_equal(t.numpy(), a)
        out.append(t)
    return out


CAT_CASES = [([(8, 16), (8, 16)], 0), ([(8, 16), (8, 16)], 1), ([(8, 16), (3, 16)], -2),
             ([(2, 3, 4), (2, 5, 4), (2, 1, 4)], 1), ([(2, 3, 4)] * 3, -1),
             ([(1, 3, 4), (1, 3, 4)], 1), ([(7,), (0,), (5,)], 0), ([(4, 0), (4, 2)], 1),
             ([(0, 3), (0, 3)], 0), ([(5,)], -1), ([(1, 2, 3)], 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "offset"])
@pytest.mark.parametrize("shapes,dim", CAT_CASES)
def test_cat_small_path_gives_the_general_paths_bits(shapes, dim, layout, dtype):
    rng = np.random.default_rng(len(shapes) + 10 * abs(dim))
    pieces = _pieces(rng, shapes, dtype, layout)
    with nbtorch.no_grad():
        fast = joining._unrecorded_cat(pieces, dim)
        got = nbtorch.cat(pieces, dim)
        got_tuple = nbtorch.cat(tuple(pieces), dim=dim)
    assert fast is not None
    general = _general_cat(pieces, dim)
    _same(got, general)
    _same(fast, general)
    _same(got_tuple, general)
    _same(nbtorch.cat(pieces, dim), general)                # grad mode on, none requires it
    np.testing.assert_array_equal(got.numpy(), np.concatenate([p.numpy() for p in pieces],
                                                              dim))


STACK_CASES = [((1, 28, 28), 64, 0), ((1, 28, 28), 8, 1), ((8, 16), 2, -1), ((8, 16), 3, 1),
               ((5,), 4, 0), ((5,), 4, -1), ((), 6, 0), ((2, 0), 3, 0), ((1, 1, 3), 2, 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape,n,dim", STACK_CASES)
def test_stack_small_path_gives_the_general_paths_bits(shape, n, dim, layout, dtype):
    rng = np.random.default_rng(n + 3 * abs(dim))
    pieces = _pieces(rng, [shape] * n, dtype, layout if shape else "contiguous")
    with nbtorch.no_grad():
        got = nbtorch.stack(pieces, dim)
    general = _general_stack(pieces, dim)
    _same(got, general)
    _same(nbtorch.stack(pieces, dim), general)
    np.testing.assert_array_equal(got.numpy(), np.stack([p.numpy() for p in pieces], dim))


def test_cat_and_stack_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64, np.int64, np.bool_):
        arrays = [_array(rng, (8, 16), dtype) for _ in range(3)]
        ours = [nbtorch.from_numpy(a) for a in arrays]
        theirs = [torch.from_numpy(a.copy()) for a in arrays]
        for dim in (0, 1, -1):
            for a, b in ((nbtorch.cat(ours, dim), torch.cat(theirs, dim)),
                         (nbtorch.stack(ours, dim), torch.stack(theirs, dim))):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
                assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()
                assert str(a.dtype) == str(b.dtype)
    mixed = [np.arange(6, dtype=np.int64).reshape(2, 3), np.ones((2, 3), np.float32),
             np.zeros((1, 3), np.bool_)]
    a = nbtorch.cat([nbtorch.from_numpy(m) for m in mixed])
    b = torch.cat([torch.from_numpy(m) for m in mixed])
    assert str(a.dtype) == str(b.dtype)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_cat_promotes_mixed_dtypes_through_the_general_path():
    i = nbtorch.arange(6).view(2, 3)
    f = nbtorch.ones(2, 3)
    b = nbtorch.ones(1, 3, dtype=nbtorch.bool)
    with nbtorch.no_grad():
        assert joining._unrecorded_cat([i, f], 0) is None
        assert nbtorch.cat([i, f]).dtype == nbtorch.float32
        assert nbtorch.cat([i, b]).dtype == nbtorch.int64
        assert nbtorch.cat([b, b]).dtype == nbtorch.bool
        assert nbtorch.cat([f, f.double()], 1).dtype == nbtorch.float64
    np.testing.assert_array_equal(nbtorch.cat([i, f]).numpy(),
                                  np.concatenate([i.numpy(), f.numpy()]).astype(np.float32))


def test_cat_and_stack_small_paths_run_and_step_aside(monkeypatch):
    x = nbtorch.rand(8, 16)
    calls = []
    real = joining._joined
    monkeypatch.setattr(joining, "_joined", lambda *a: calls.append(a[2]) or real(*a))
    nbtorch.cat([x, x])
    nbtorch.stack([x, x])
    assert calls == [(16, 16), (2, 8, 16)]
    w = nbtorch.rand(8, 16, requires_grad=True)             # recorded: the Function's node
    assert nbtorch.cat([x, w]).grad_fn is not None
    assert nbtorch.stack([x, w]).grad_fn is not None
    assert joining._unrecorded_cat([x, w], 0) is None
    with nbtorch.no_grad():
        assert joining._unrecorded_cat([x, w], 0) is not None
        assert nbtorch.cat([x, w]).grad_fn is None
    q = nbtorch.rand(3, dtype=nbtorch.float16)
    for pieces, dim in (([x, x], True), ([x, x], np.int64(0)), ([x, x.double()], 0),
                        ([x, x.to("meta")], 0), ([q, q], 0), ([nbtorch.rand(0), x], 0),
                        ([nbtorch.rand(0), nbtorch.rand(3)], 0), ([x, x], 2), ([x, 3], 0),
                        ([], 0), ([x, nbtorch.nn.Parameter(x)], 0), ([x.t(), x], 0)):
        assert joining._unrecorded_cat(pieces, dim) is None, (dim,)
    assert joining._unrecorded_cat((x for x in [x, x]), 0) is None      # _cat's own path
    np.testing.assert_array_equal(nbtorch.cat((t for t in [x, x])).numpy(),
                                  np.concatenate([x.numpy()] * 2))
    # 1-D empty pieces are skipped (the legacy rule) by the general path
    assert nbtorch.cat([nbtorch.rand(0), x]).shape == (8, 16)
    assert nbtorch.cat([nbtorch.rand(0), nbtorch.rand(0)]).shape == (0,)


def test_a_capture_or_profiler_sees_the_cat_node():
    from nbtorch.autograd import function
    x = nbtorch.rand(2, 3)
    seen = []
    real = joining.Cat.forward
    function.APPLY_WRAPPERS[0] += 1
    try:
        joining.Cat.forward = staticmethod(lambda ctx, *a: seen.append(a[0]) or real(ctx, *a))
        _same(nbtorch.cat([x, x]), nbtorch.from_numpy(np.concatenate([x.numpy()] * 2)))
        nbtorch.stack([x, x], 1)
    finally:
        joining.Cat.forward = staticmethod(real)
        function.APPLY_WRAPPERS[0] -= 1
    assert seen == [0, 1]


def test_joined_results_own_their_memory():
    pieces = [nbtorch.rand(1, 4) for _ in range(3)]
    with nbtorch.no_grad():
        c = nbtorch.cat(pieces)
        s = nbtorch.stack(pieces)
    before = [p.numpy().copy() for p in pieces]
    c.fill_(5)
    s.add_(1)
    for p, b in zip(pieces, before):
        np.testing.assert_array_equal(p.numpy(), b)
    pieces[0].fill_(9)
    assert float(c.max()) == 5 and float(s.max()) < 9
    assert c.is_contiguous() and c.storage_offset() == 0 and c.numpy().flags.writeable
    assert c._storage.data.ndim == 1 and c._storage.data.size == 12


def test_large_joins_take_the_allocators_buffer():
    """Past _JOIN_BYTES the result is `empty`'s buffer (the caching allocator), copied by
    NumPy; the same bits."""
    n = joining._JOIN_BYTES // (4 * 784) + 2
    pieces = [nbtorch.rand(1, 28, 28) for _ in range(n)]
    with nbtorch.no_grad():
        got = nbtorch.stack(pieces)
        cat = nbtorch.cat(pieces)
    _same(got, _general_stack(pieces))
    _same(cat, _general_cat(pieces))
    assert type(got._storage.data.base) is not bytearray


def test_cat_and_stack_errors_are_unchanged():
    a, b = nbtorch.zeros(2, 3), nbtorch.zeros(2, 4)
    cases = [
        (lambda: nbtorch.cat([]), RuntimeError,
         "torch.cat(): expected a non-empty list of Tensors"),
        (lambda: nbtorch.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
        (lambda: nbtorch.cat([a, b]), RuntimeError,
         "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 "
         "for tensor number 1 in the list."),
        (lambda: nbtorch.cat([a, nbtorch.zeros(2)]), RuntimeError,
         "Tensors must have same number of dimensions: got 2 and 1"),
        (lambda: nbtorch.cat([nbtorch.tensor(1.0), nbtorch.tensor(2.0)]), RuntimeError,
         "zero-dimensional tensor (at position 0) cannot be concatenated"),
        (lambda: nbtorch.cat([a, 3]), TypeError,
         "expected Tensor as element 1 in argument 0, but got int"),
        (lambda: nbtorch.stack([a, nbtorch.zeros(3, 2)]), RuntimeError,
         "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] "
         "at entry 1"),
        (lambda: nbtorch.cat([a, a], 2), IndexError,
         "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
        (lambda: nbtorch.stack([a, a], -4), IndexError,
         "Dimension out of range (expected to be in range of [-3, 2], but got -4)"),
        (lambda: nbtorch.cat([a, a.to("meta")]), RuntimeError,
         "Expected all tensors to be on the same device, but found at least two devices, "
         "cpu and meta! (when checking argument for cat)"),
        (lambda: nbtorch.stack([a, a.to("meta")]), RuntimeError,
         "Expected all tensors to be on the same device, but found at least two devices, "
         "cpu and meta! (when checking argument for cat)"),
    ]
    for grad in (True, False):
        with nbtorch.set_grad_enabled(grad):
            for fn, kind, message in cases:
                with pytest.raises(kind) as info:
                    fn()
                assert str(info.value) == message


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), st.integers(1, 5),
       st.integers(-4, 3), st.sampled_from([np.float32, np.int64, np.bool_]),
       st.integers(0, 2 ** 16))
def test_cat_stack_topk_agree_with_numpy(shape, count, dim, dtype, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    nd = len(shape)
    arrays = [_array(rng, shape, dtype) for _ in range(count)]
    pieces = [nbtorch.from_numpy(a) for a in arrays]
    with nbtorch.no_grad():
        if -nd - 1 <= dim <= nd:
            s = nbtorch.stack(pieces, dim)
            np.testing.assert_array_equal(s.numpy(), np.stack(arrays, dim))
            _same(s, _general_stack(pieces, dim))
        if -nd <= dim < nd and not (nd == 1 and shape[0] == 0):
            c = nbtorch.cat(pieces, dim)
            np.testing.assert_array_equal(c.numpy(), np.concatenate(arrays, dim))
            _same(c, _general_cat(pieces, dim))
        if shape[-1] and dtype is not np.bool_:
            k = int(rng.integers(1, shape[-1] + 1))
            largest = bool(seed % 2)
            v, i = pieces[0].topk(k, largest=largest)
            rv, ri = _first_k_reference(arrays[0], k, largest)
            np.testing.assert_array_equal(i.numpy(), ri)
            np.testing.assert_array_equal(v.numpy(), rv)
            gv, gi = _general_topk(pieces[0], k, -1, largest)
            _same(v, gv)
            _same(i, gi)
