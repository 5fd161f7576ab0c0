"""The small unrecorded CPU paths of indexing and padding: ``x[idx]`` and `index_select`
(`ops/indexing_rows.small_rows`, `small_index_select`), `gather`
(`ops/indexing_dim.small_gather`), ``x[:, 1:5]`` / ``x[0, 0]``
(`ops/indexing_basic._plain_view`),
``Tensor.item`` and constant `F.pad` (`ops/resampling._small_constant_pad`): the general
path's bits, dtype, shape and strides (views: the same storage, offset and `_base`),
NumPy's and PyTorch's results, the cases each leaves to the general path, and the general
path's errors."""
import contextlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtorch
import nbtorch.nn.functional as F
from nbtorch.autograd import function
from nbtorch.ops import (indexing, indexing_basic, indexing_dim, indexing_gather,
                         indexing_rows, resampling)

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.int8, np.uint8, np.bool_,
          np.float16, np.complex64]


def _bits(t):
    return t.numpy().tobytes(), tuple(t.shape), t.stride(), t.dtype


def _same(a, b):
    assert _bits(a) == _bits(b)


def _tensor(rng, shape, dtype):
    a = rng.standard_normal(shape) * 4
    if dtype == np.bool_:
        return nbtorch.from_numpy(a > 0)
    if dtype == np.complex64:
        a = a + 1j * rng.standard_normal(shape)
    return nbtorch.from_numpy(np.asarray(a, dtype))


@contextlib.contextmanager
def _general():
    """Every small path of this file off: the calls take the general path."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(indexing, "small_rows", lambda *a: None)
        mp.setattr(indexing_gather, "small_index_select", lambda *a: None)
        mp.setattr(indexing_gather, "_small_gather", lambda *a: None)
        mp.setattr(indexing_basic, "_plain", lambda x: False)
        mp.setattr(resampling, "_small_constant_pad", lambda *a: None)
        yield


def _both(fn):
    """(fast, general) results of fn(), or their error messages."""
    out = []
    for ctx in (contextlib.nullcontext(), _general()):
        with ctx:
            try:
                out.append(fn())
            except (IndexError, RuntimeError, ValueError) as e:
                out.append((type(e), str(e)))
    return out


# ---- x[idx] and index_select ---------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_index_tensor_gives_the_general_paths_bits(dtype):
    rng = np.random.default_rng(1)
    x = _tensor(rng, (8, 6), dtype)
    for idx in ([0, 3, 5], [-1, 2, -8, 7], [[1, 2], [0, -3]], []):
        for it in (np.int64, np.int32, np.int16, np.int8):
            i = nbtorch.tensor(np.asarray(idx, it).reshape(np.shape(idx)))
            fast, general = _both(lambda: x[i])
            _same(fast, general)
            want = x.numpy()[np.asarray(idx, np.int64)]
            np.testing.assert_array_equal(fast.numpy(), want)
        for xv in (x.t(), x[:, ::2], x[1:]):            # strided and offset inputs
            i = nbtorch.tensor([0, -1, 1])
            fast, general = _both(lambda: xv[i])
            _same(fast, general)
    assert nbtorch.rand(0, 3)[nbtorch.tensor([], dtype=nbtorch.int64)].shape == (0, 3)


def test_index_tensor_errors_and_the_cases_stepped_aside():
    x = nbtorch.arange(24.).reshape(6, 4)
    for bad in ([6], [0, -7], [2, 10]):
        fast, general = _both(lambda: x[nbtorch.tensor(bad)])
        assert fast == general and fast[0] is IndexError
    assert _both(lambda: nbtorch.rand(0, 2)[nbtorch.tensor([0])])[0][0] is IndexError
    # a 0-d integer index is a view, a bool tensor a mask, a float one an error; a uint8
    # tensor takes the general path as before
    v = x[nbtorch.tensor(2)]
    assert v._storage is x._storage and v.storage_offset() == 8
    m = x > 10
    np.testing.assert_array_equal(x[m].numpy(), x.numpy()[x.numpy() > 10])
    u = nbtorch.tensor([1, 0, 1, 0, 0, 1], dtype=nbtorch.uint8)
    assert indexing_rows.small_rows(x, 0, u) is None
    _same(*_both(lambda: x[u]))
    with pytest.raises(IndexError, match="tensors used as indices"):
        x[nbtorch.tensor([0.0])]
    # recorded, subclassed, watched and large calls take the general path
    i = nbtorch.tensor([1, 4])
    r = x.clone().requires_grad_()[i]
    assert r.grad_fn.name() == "IndexBackward0"
    p = nbtorch.nn.Parameter(x.clone())
    assert indexing_rows.small_rows(x, 0, i) is not None
    np.testing.assert_array_equal(p[i].detach().numpy(), x.numpy()[[1, 4]])
    function.APPLY_WRAPPERS[0] += 1
    try:
        assert indexing_rows.small_rows(x, 0, i) is None
        _same(x[i], indexing.IndexGet.apply(x, i))
    finally:
        function.APPLY_WRAPPERS[0] -= 1
    big = nbtorch.rand(300, 64)
    j = nbtorch.tensor([299, 0, 5])
    assert indexing_rows.small_rows(big, 0, j) is not None
    assert indexing_rows.small_rows(big, 0, nbtorch.zeros(300, dtype=nbtorch.int64)) is None
    _same(big[nbtorch.zeros(300, dtype=nbtorch.int64)], _both(
        lambda: big[nbtorch.zeros(300, dtype=nbtorch.int64)])[1])
    lim = nbtorch.arange(12).to(nbtorch.uint16).reshape(4, 3)
    np.testing.assert_array_equal(lim[i[:1]].to(nbtorch.int64).numpy(), [[3, 4, 5]])


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_index_select_gives_the_general_paths_bits_and_errors(dim):
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.int64, np.bool_, np.float16):
        x = _tensor(rng, (5, 4, 3), dtype)
        for idx in ([0, 2, 1, 2], [], [2]):
            for it in (nbtorch.int64, nbtorch.int32):
                i = nbtorch.tensor(idx, dtype=it)
                fast, general = _both(lambda: x.index_select(dim, i))
                _same(fast, general)
                np.testing.assert_array_equal(
                    fast.numpy(), np.take(x.numpy(), np.asarray(idx, np.int64), dim))
        _same(*_both(lambda: x.permute(2, 0, 1).index_select(dim, nbtorch.tensor([1, 0]))))
    x = nbtorch.rand(5, 4, 3)
    for idx in ([-1], [0, 5], [3, 7]):         # index_select takes no negative index
        fast, general = _both(lambda: x.index_select(dim, nbtorch.tensor(idx)))
        assert fast == general and isinstance(fast, tuple)
    for i in (nbtorch.tensor(1), nbtorch.tensor([[1]]),
              nbtorch.tensor([1], dtype=nbtorch.int16)):
        fast, general = _both(lambda: x.index_select(dim, i))
        assert (_bits(fast) == _bits(general)) if isinstance(fast, nbtorch.Tensor) \
            else fast == general


def test_index_select_and_index_tensor_against_pytorch():
    torch = pytest.importorskip("torch")
    a = np.arange(40, dtype=np.float32).reshape(8, 5)
    x, t = nbtorch.from_numpy(a), torch.from_numpy(a)
    for idx in ([0, 3, 5], [-1, -8]):
        np.testing.assert_array_equal(x[nbtorch.tensor(idx)].numpy(), t[torch.tensor(idx)])
    for d, idx in ((0, [7, 0]), (1, [4, 4, 1]), (-1, [])):
        i = nbtorch.tensor(idx, dtype=nbtorch.int64)
        want = t.index_select(d, torch.tensor(idx, dtype=torch.long))
        np.testing.assert_array_equal(x.index_select(d, i).numpy(), want)
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, nbtorch.tensor([-1]))
    with pytest.raises(IndexError, match="index out of range in self"):
        t.index_select(0, torch.tensor([-1]))
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0"):
        x[nbtorch.tensor([9])]


# ---- gather ------------------------------------------------------------------------

def test_gather_gives_the_general_paths_bits():
    rng = np.random.default_rng(3)
    for dtype in DTYPES + [np.complex128]:
        x = _tensor(rng, (4, 6, 5), dtype)
        for dim in (0, 1, 2, -1):
            n = x.shape[dim]
            for ishape in ((4, 6, 5), (2, 3, 2), (1, 1, 1), (4, 0, 5)):
                ishape = list(ishape)
                ishape[dim] = 7 if ishape[1] == 3 else ishape[dim]  # longer along dim
                i = nbtorch.from_numpy(rng.integers(0, n, ishape))
                for index in (i, i.to(nbtorch.int32)):
                    fast, general = _both(lambda: x.gather(dim, index))
                    _same(fast, general)
        _same(*_both(lambda: x.transpose(0, 2).gather(1, nbtorch.tensor([[[0, 5]]]))))
    x = nbtorch.arange(128.).reshape(8, 16)
    gi = nbtorch.tensor([0, 3, 5]).view(1, 3).expand(8, 3)
    fast, general = _both(lambda: x.gather(1, gi))
    _same(fast, general)
    np.testing.assert_array_equal(fast.numpy(),
                                  np.take_along_axis(x.numpy(), gi.numpy(), 1))
    _same(*_both(lambda: nbtorch.arange(5.).gather(0, nbtorch.tensor([4, 0]))))


def test_gather_errors_and_the_cases_stepped_aside():
    x = nbtorch.rand(4, 6)
    for dim, index in ((1, [[0, 6]]), (1, [[-1]]), (0, [[4]]), (1, nbtorch.zeros(5, 1)),
                       (1, [[[0]]]), (2, [[0]]), (1, [[0] * 3] * 5)):
        i = index if isinstance(index, nbtorch.Tensor) else nbtorch.tensor(index)
        fast, general = _both(lambda: x.gather(dim, i))
        assert fast == general and isinstance(fast, tuple), (dim, index)
    fast, general = _both(lambda: x.gather(1, nbtorch.tensor([[0]], dtype=nbtorch.int16)))
    assert fast == general and "Expected dtype int64 for index" in fast[1]
    # a 0-d index of a 1-d tensor, recorded and watched calls: the general path
    _same(*_both(lambda: nbtorch.arange(3.).gather(0, nbtorch.tensor(2))))
    i = nbtorch.tensor([[1, 0]])
    assert x.clone().requires_grad_().gather(1, i).grad_fn.name() == "GatherBackward0"
    assert indexing_dim.small_gather(x, 1, i) is not None
    function.APPLY_WRAPPERS[0] += 1
    try:
        assert indexing_dim.small_gather(x, 1, i) is None
    finally:
        function.APPLY_WRAPPERS[0] -= 1
    big = nbtorch.zeros(200, 100, dtype=nbtorch.int64)
    assert indexing_dim.small_gather(nbtorch.rand(200, 100), 1, big) is None


def test_gather_against_pytorch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(4).standard_normal((8, 16)).astype(np.float32)
    i = np.array([[0, 3, 5]] * 8)
    got = nbtorch.from_numpy(a).gather(1, nbtorch.from_numpy(i)).numpy()
    np.testing.assert_array_equal(got, torch.from_numpy(a).gather(1, torch.from_numpy(i)))
    np.testing.assert_array_equal(
        nbtorch.from_numpy(a).gather(0, nbtorch.tensor([[7, 0]])).numpy(),
        torch.from_numpy(a).gather(0, torch.tensor([[7, 0]])))


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), seed=st.integers(0, 999),
       data=st.data())
def test_index_and_gather_match_numpy(shape, seed, data):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    x = nbtorch.from_numpy(a)
    dim = data.draw(st.integers(0, len(shape) - 1))
    n = shape[dim]
    rows = rng.integers(-shape[0], shape[0], data.draw(st.integers(0, 4)))
    np.testing.assert_array_equal(x[nbtorch.from_numpy(rows)].numpy(), a[rows])
    idx = rng.integers(0, n, data.draw(st.integers(0, 4)))
    ishape = [rng.integers(1, s + 1) for s in shape]
    ishape[dim] = rng.integers(0, 4)
    gi = rng.integers(0, n, ishape)
    sub = a[tuple(slice(0, s) if k != dim else slice(None) for k, s in enumerate(ishape))]
    np.testing.assert_array_equal(x.gather(dim, nbtorch.from_numpy(gi)).numpy(),
                                  np.take_along_axis(sub, gi, dim))
    np.testing.assert_array_equal(x.index_select(dim, nbtorch.from_numpy(idx)).numpy(),
                                  np.take(a, idx, dim))


# ---- basic slicing and item ----------------------------------------------------------

def _view_meta(v):
    return (v._storage, v.storage_offset(), tuple(v.shape), v.stride(), v._base, v.dtype)


def test_slices_and_ints_make_the_general_paths_view():
    root = nbtorch.arange(120.).reshape(6, 20)
    for x in (root, root[1:, 2:], root.t(), root.view(2, 3, 20)):
        for index in ((slice(None), slice(1, 5)), (0, 0), (-1,), (slice(None, None, 2), -3),
                      (slice(-3, 100), slice(4, 2)), (1, slice(0, 1)), (slice(5, 9),),
                      (slice(np.int64(1), None),)):
            if len(index) > x.dim():
                continue
            fast, general = _both(lambda: x[index])
            if isinstance(fast, tuple):
                assert fast == general
                continue
            assert _view_meta(fast) == _view_meta(general), index
            assert fast._base is root._base is not None
            np.testing.assert_array_equal(fast.numpy(), x.numpy()[index])
            if fast._arr is not None:       # NumPy's view of the parent: the same memory
                assert fast._arr.__array_interface__ == general._array.__array_interface__
    for bad in ((6, 0), (0, -21), (slice(None, None, -1), 0), (0, 0, 0)):
        assert _both(lambda: root[bad])[0] == _both(lambda: root[bad])[1]
    v = root[:, 1:5]
    root.add_(1)                            # a view sees in-place writes and their versions
    assert v[0, 0].item() == 2.0 and v._version == root._version
    r = root.clone().requires_grad_()
    assert r[:, 1:5].grad_fn.name() == "SliceBackward0"
    assert r[0, 0].grad_fn.name() == "SelectBackward0"
    p = nbtorch.nn.Parameter(root.clone())
    assert p[:, 1:3].grad_fn is not None and p[0:1, 0:1].shape == (1, 1)


def test_unit_step_slices_clip_as_slice_indices():
    for n in (0, 1, 3, 5):
        x = nbtorch.arange(float(2 * n)).reshape(2, n)
        for lo in (None, -7, -5, -1, 0, 1, 3, 5, 7):
            for hi in (None, -7, -3, -1, 0, 2, 5, 8):
                fast, general = _both(lambda: x[:, lo:hi])
                assert _view_meta(fast) == _view_meta(general), (n, lo, hi)
                np.testing.assert_array_equal(fast.numpy(), x.numpy()[:, lo:hi])


def test_item_reads_the_element_as_before():
    rng = np.random.default_rng(5)
    for dtype in DTYPES + [np.complex128]:
        x = _tensor(rng, (3, 4), dtype)
        for t in (x[1, 2], x[2:3, 3], x.t()[3, 1], x.reshape(-1)[5:6], x[1:2, 2:3]):
            got = t.item()
            want = t._host().reshape(()).item()
            assert type(got) is type(want) and (got == want or got != got)
    for t in (nbtorch.tensor([2.5], dtype=nbtorch.bfloat16),
              nbtorch.tensor(7).to(nbtorch.uint16),
              nbtorch.tensor([1.0]).view(nbtorch.int32), nbtorch.tensor(3.0),
              nbtorch.from_numpy(np.arange(6.).reshape(2, 3))[1, 2]):
        want = t._host().reshape(()).item()
        assert type(t.item()) is type(want) and t.item() == want
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
        nbtorch.tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError, match="cannot be called on meta tensors"):
        nbtorch.empty(1, device="meta").item()
    assert nbtorch.nn.Parameter(nbtorch.tensor([1.5])).item() == 1.5


def test_slice_and_item_against_pytorch():
    torch = pytest.importorskip("torch")
    a = np.arange(128, dtype=np.float32).reshape(8, 16)
    x, t = nbtorch.from_numpy(a), torch.from_numpy(a)
    for index in ((slice(None), slice(1, 5)), (slice(2, None, 3), 0), (0,)):
        assert x[index].stride() == t[index].stride()
        assert x[index].storage_offset() == t[index].storage_offset()
    assert x[3, 7].item() == t[3, 7].item() and type(x[3, 7].item()) is float


# ---- constant pad --------------------------------------------------------------------

PADS = [(1, 1), (0, 2), (2, 0, 1, 3), (1, 0, 0, 1, 2, 1), (0, 0, 1, 0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.int8,
                                   np.uint8, np.bool_])
def test_constant_pad_gives_the_general_paths_bits(dtype):
    rng = np.random.default_rng(6)
    x = _tensor(rng, (2, 3, 4), dtype)
    for pad in PADS:
        for value in (None, 2.5, -0.0, 3, 1):
            for xv in (x, x.transpose(1, 2), x[:, 1:]):
                fast, general = _both(lambda: F.pad(xv, pad, value=value))
                _same(fast, general)
                assert fast.is_contiguous()
    f = nbtorch.from_numpy(np.array([0x7f800001, 0xffc00005], np.uint32).view(np.float32))
    _same(*_both(lambda: F.pad(f, [1, 2], value=float("nan"))))    # NaN payloads kept
    _same(*_both(lambda: F.pad(nbtorch.rand(0, 3), (1, 1))))


def test_constant_pad_errors_and_the_cases_stepped_aside():
    x = nbtorch.rand(3, 4)
    for pad, value in (((1,), None), ((1, 1, 1, 1, 1, 1), None), ((-1, 1), None),
                       ((-5, 0), None), ((0, 0), None), ((1, 1), 1e40)):
        fast, general = _both(lambda: F.pad(x, pad, value=value))
        if isinstance(fast, tuple):
            assert fast == general
        else:
            _same(fast, general)
    i8 = nbtorch.tensor([[1, 2]], dtype=nbtorch.int8)
    assert _both(lambda: F.pad(i8, (1, 1), value=300)) == _both(
        lambda: F.pad(i8, (1, 1), value=300))[::-1]
    assert resampling._small_constant_pad(x, (1, 1), None) is not None
    for args in ((x.half(), (1, 1), None), (x.to(nbtorch.complex64), (1, 1), None),
                 (x, (1, 1), nbtorch.tensor(1.0)), (x, nbtorch.tensor([1, 1]), None),
                 (x, (1, 1, 1, 1, 1, 1, 1, 1), None),
                 (nbtorch.rand(200, 100), (1, 1), None)):
        assert resampling._small_constant_pad(*args) is None
    _same(*_both(lambda: F.pad(x.half(), (1, 2), value=0.1)))
    r = x.clone().requires_grad_()
    assert F.pad(r, (1, 1)).grad_fn is not None
    function.APPLY_WRAPPERS[0] += 1
    try:
        assert resampling._small_constant_pad(x, (1, 1), None) is None
    finally:
        function.APPLY_WRAPPERS[0] -= 1


def test_constant_pad_against_pytorch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(7).standard_normal((2, 8, 16)).astype(np.float32)
    for pad, value in (((1, 1), None), ((2, 0, 1, 3), 1.5), ((1, 1, 1, 1, 1, 1), -2)):
        kw = {} if value is None else {"value": value}
        want = torch.nn.functional.pad(torch.from_numpy(a), pad, **kw)
        np.testing.assert_array_equal(F.pad(nbtorch.from_numpy(a), pad, **kw).numpy(), want)
