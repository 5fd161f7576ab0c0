"""The small unrecorded CPU paths of clamp/clamp_ (`pointwise_select._unrecorded_clamp`),
copy_, fill_/zero_ and dtype casts (`copy._unrecorded_copy`, `_unrecorded_fill`,
`_unrecorded_cast`) and 2-D max/avg pooling (`pooling._small_pool`): the general path's
bits, dtype, shape, strides, aliasing, version bumps and errors; PyTorch's values; and
everything else (grad, captures, tracers, layouts, a user's kernel) left to the general
path."""
import contextlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtorch
import nbtorch.nn.functional as F
from harness import awkward_floats, tensor_bits as _bits
from nbtorch.autograd import function
from nbtorch.ops import copy as cp, pointwise_select as ps, pooling as pl

FLOATS = [nbtorch.float32, nbtorch.float64]
INTS = [nbtorch.int64, nbtorch.int32, nbtorch.uint8]


def _values(shape, dtype, seed=0):
    n = int(np.prod(shape))
    if dtype.is_floating_point:
        a = awkward_floats(n, dtype.np.type, seed, specials=min(n, 5))
    elif dtype is nbtorch.bool:
        a = np.random.default_rng(seed).random(n) > 0.5
    else:
        a = np.random.default_rng(seed).integers(-100, 100, n) % (
            256 if dtype is nbtorch.uint8 else 1 << 30)
    return nbtorch.tensor(np.asarray(a, dtype.np).reshape(shape))


@contextlib.contextmanager
def _general(monkeypatch):
    """Every fast path of this file stepped aside."""
    with monkeypatch.context() as m:
        m.setattr(ps, "_unrecorded_clamp", lambda *a: None)
        m.setattr(cp, "_unrecorded_copy", lambda *a: False)
        m.setattr(cp, "_unrecorded_fill", lambda *a: False)
        m.setattr(cp, "_unrecorded_cast", lambda *a: None)
        m.setattr(pl, "_small_pool", lambda *a: None)
        yield


def _outcome(fn, *args, **kwargs):
    try:
        out = fn(*args, **kwargs)
    except (RuntimeError, TypeError, ValueError, OverflowError) as e:
        return type(e), str(e)
    return [_bits(o) for o in out] if isinstance(out, tuple) else _bits(out)


def _both(monkeypatch, fn, *args, **kwargs):
    fast = _outcome(fn, *args, **kwargs)
    with _general(monkeypatch):
        general = _outcome(fn, *args, **kwargs)
    return fast, general


def _warm():
    """Resolve the kernels and compile the loops the fast paths look for."""
    for d in FLOATS + INTS:
        x = nbtorch.ones(2, 3, dtype=d)
        for _ in range(2):
            x.clamp(0, 1), x.clamp(min=0), x.clamp(max=1), x.clone().clamp_(0, 1)
            x.clone().fill_(1), x.clone().copy_(x)
    F.max_pool2d(nbtorch.ones(1, 1, 2, 2), 2), F.avg_pool2d(nbtorch.ones(1, 1, 2, 2), 2)


@pytest.fixture
def fast_only(monkeypatch):
    """The general paths raise: a call that passes took the fast path."""
    def boom(*a, **k):
        raise AssertionError("general path taken")
    _warm()
    monkeypatch.setattr(ps, "_clamp_bounds", boom)
    monkeypatch.setattr(cp, "inplace_guard", boom)
    monkeypatch.setattr(cp, "fill_values", boom)
    monkeypatch.setattr(cp, "_parse_to", boom)
    monkeypatch.setattr(pl, "as_batched", boom)
    monkeypatch.setattr(nbtorch.Tensor, "is_quantized", property(boom))


def test_the_fast_paths_run(fast_only):
    """Guard against a fast path silently stepping aside in the common cases."""
    x, y = nbtorch.randn(8, 16), nbtorch.randn(8, 16)
    a = np.arange(128).reshape(8, 16) % 7
    for t in (x, x.double(), nbtorch.tensor(a), nbtorch.tensor(a.astype(np.uint8))):
        assert t.clamp(0, 1).dtype is t.dtype and nbtorch.clamp(t, 0, 1).dtype is t.dtype
        assert t.clamp(min=0).dtype is t.dtype and t.clamp(max=1).dtype is t.dtype
        assert t.clamp_(-5, 5) is t and t.clamp_min_(-6) is t
        assert t.fill_(2) is t and t.zero_() is t and t.copy_(t.clone()) is t
    assert x.double().copy_(y) is not None and x.fill_(0.5) is x
    assert x.to(nbtorch.float64).dtype is nbtorch.float64 and x.float() is x
    img = nbtorch.randn(2, 3, 8, 8)
    assert F.max_pool2d(img, 2).shape == (2, 3, 4, 4)
    assert F.max_pool2d(img, (3, 2), stride=1, return_indices=True)[1].dtype is nbtorch.int64
    assert F.avg_pool2d(img.double(), 2, 1).shape == (2, 3, 7, 7)
    with nbtorch.no_grad():
        w = nbtorch.randn(8, 16, requires_grad=True)
        assert w.clamp(0, 1).grad_fn is None and w.double().grad_fn is None
        w.clamp_(0, 1), w.fill_(0), w.copy_(y)


# ---- clamp -------------------------------------------------------------------------------

BOUNDS = [(0, 1), (0.25, 0.75), (None, 1), (0, None), (None, -0.5), (1, 0), (-3, 3.5),
          (float("nan"), 1), (0, float("nan")), (float("-inf"), float("inf")),
          (1e300, None), (None, -1e300), (2 ** 60, None), (None, 2 ** 24 + 1),
          (-2, 300), (True, None), (None, None), (1, 2 ** 70), (0.0, 1.0), (-0.0, 1.0),
          (0, 1.0), (None, 0.0), (None, -0.0), (None, 0), ([0], 1),
          (nbtorch.tensor(0), nbtorch.tensor(5)), (None, nbtorch.tensor([1.5]))]


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_clamp_gives_the_general_bits(monkeypatch, dtype):
    _warm()
    for shape in ((8, 16), (), (5,), (0, 3)):
        x = _values(shape, dtype)
        for lo, hi in BOUNDS:
            fast, general = _both(monkeypatch, nbtorch.clamp, x, lo, hi)
            assert fast == general, (shape, lo, hi)
            fast, general = _both(monkeypatch, lambda t: t.clamp_(lo, hi), x.clone())
            assert fast == general, (shape, lo, hi)


@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.int64, nbtorch.uint8])
def test_clamp_in_place_writes_and_bumps_as_the_general_path(monkeypatch, dtype):
    _warm()
    for make in (lambda: _values((8, 16), dtype),
                 lambda: _values((16, 8), dtype).t()):          # general: not contiguous
        x = make()
        view = x[1]
        v, ptr = x._version, x.data_ptr()
        assert x.clamp_(0, 5) is x and x.data_ptr() == ptr
        bumped = x._version - v
        assert view.numpy().max() <= 5 and view._version == x._version
        with _general(monkeypatch):
            y = make()
            v = y._version
            y.clamp_(0, 5)
        assert y._version - v == bumped and _bits(y) == _bits(x)


def test_clamp_steps_aside_for_grad_tensors_and_layouts():
    _warm()
    w = nbtorch.randn(8, 16, requires_grad=True)
    r = w.clamp(0, 1)
    assert r.grad_fn is not None and r.grad_fn.name() == "ClampBackward1"
    r.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(),
                                  ((w.detach().numpy() >= 0) & (w.detach().numpy() <= 1)))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.clamp_(0, 1)
    with nbtorch.no_grad():
        assert w.clamp_(0, 1) is w
    v = nbtorch.randn(8, 16, requires_grad=True).clone()[1:3]
    v.clamp_(0, 1)                                      # a view of a recorded base
    assert v.grad_fn is not None
    x = nbtorch.randn(16, 8)
    t = x.t().clamp(0, 1)                               # strided: the layout is kept
    assert t.stride() == (1, 8)
    lo, hi = nbtorch.zeros(16), nbtorch.ones(16)
    np.testing.assert_array_equal(nbtorch.clamp(x.t(), lo, hi).numpy(),
                                  np.clip(x.t().numpy(), 0, 1))
    big = nbtorch.randn(70, 70)
    np.testing.assert_array_equal(big.clamp(0, 1).numpy(), np.clip(big.numpy(), 0, 1))
    i = nbtorch.arange(10)
    assert i.clamp(0.5, 3).dtype is nbtorch.float32             # a float bound promotes
    with pytest.raises(RuntimeError, match="result type Float"):
        i.clamp_(0.5, 3)


def test_clamp_errors_are_the_general_paths(monkeypatch):
    _warm()
    u = nbtorch.arange(5, dtype=nbtorch.uint8)
    for lo, hi in ((300, None), (None, 256), (None, None), (0, "1")):
        for fn in (lambda: u.clamp(lo, hi), lambda: u.clone().clamp_(lo, hi)):
            fast = _outcome(fn)
            with _general(monkeypatch):
                assert fast == _outcome(fn)
            assert isinstance(fast[0], type)


# ---- copy_, fill_, zero_ -------------------------------------------------------------------

PAIRS = [(nbtorch.float32, nbtorch.float32), (nbtorch.float32, nbtorch.float64),
         (nbtorch.int32, nbtorch.float64), (nbtorch.uint8, nbtorch.int16),
         (nbtorch.bool, nbtorch.float32), (nbtorch.int64, nbtorch.int64),
         (nbtorch.float64, nbtorch.float32), (nbtorch.float32, nbtorch.int32),
         (nbtorch.int64, nbtorch.float32)]


@pytest.mark.parametrize("src_dtype, dst_dtype", PAIRS)
def test_copy_gives_the_general_bits(monkeypatch, src_dtype, dst_dtype):
    _warm()
    for shape, src_shape in (((8, 16), (8, 16)), ((), ()), ((3,), (3,)), ((0, 2), (0, 2)),
                             ((8, 16), (16,)), ((4, 5), (4, 1))):
        src = _values(src_shape, src_dtype)
        if src_dtype.is_floating_point and not dst_dtype.is_floating_point:
            src = src.nan_to_num(0, 0, 0)           # (out-of-range casts: undefined)
        fast, general = _both(monkeypatch, lambda: nbtorch.zeros(shape, dtype=dst_dtype)
                              .copy_(src))
        assert fast == general, shape


def test_copy_writes_into_its_own_storage_and_bumps_once(monkeypatch):
    _warm()
    for make in (lambda: nbtorch.zeros(8, 16), lambda: nbtorch.zeros(16, 8).t()):
        base = make()
        x = base[:]
        y = nbtorch.randn(*x.shape)
        v, ptr = x._version, x.data_ptr()
        assert x.copy_(y) is x and x.data_ptr() == ptr and x._version == v + 1
        np.testing.assert_array_equal(base.numpy(), y.numpy())
        x.fill_(3)
        assert x._version == v + 2 and base.numpy().max() == 3
        x.zero_()
        assert x._version == v + 3 and not base.numpy().any()


def test_copy_steps_aside_for_shared_memory_grad_and_errors(monkeypatch):
    _warm()
    x = nbtorch.arange(10.)
    x.copy_(x)                                          # the same memory: allowed
    with pytest.raises(RuntimeError, match="single memory location"):
        x[1:].copy_(x[:-1])
    np.testing.assert_array_equal(x.numpy(), np.arange(10.))
    a = np.arange(12, dtype=np.float32)
    d, s = nbtorch.from_numpy(a[2:8]), nbtorch.from_numpy(a[0:6])    # two storages, one
    fast = _outcome(d.copy_, s)                                         # buffer
    a[:] = np.arange(12)
    with _general(monkeypatch):
        assert _outcome(d.copy_, s) == fast
    with pytest.raises(RuntimeError, match="must match the size"):
        nbtorch.zeros(3).copy_(nbtorch.zeros(4))
    with pytest.raises(TypeError, match="must be Tensor"):
        nbtorch.zeros(3).copy_([1, 2, 3])
    w = nbtorch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.copy_(nbtorch.ones(3))
    src = nbtorch.ones(3, requires_grad=True)
    out = nbtorch.zeros(3).copy_(src)
    out.sum().backward()
    assert out.grad_fn is not None and src.grad.tolist() == [1, 1, 1]


FILLS = [0, 1, -1, 2.5, -0.0, float("nan"), float("inf"), 255, 256, 300, -129, 2 ** 60,
         1e39, 2 ** 70, True, "1"]


@pytest.mark.parametrize("dtype", FLOATS + INTS + [nbtorch.bool])
def test_fill_gives_the_general_bits_and_errors(monkeypatch, dtype):
    _warm()
    for make in (lambda: nbtorch.ones(8, 16, dtype=dtype), lambda: nbtorch.ones((), dtype=dtype),
                 lambda: nbtorch.ones(0, 4, dtype=dtype),
                 lambda: nbtorch.ones(16, 8, dtype=dtype).t(),
                 lambda: nbtorch.ones(1, 4, dtype=dtype).expand(3, 4)):
        for value in FILLS:
            fast, general = _both(monkeypatch, lambda: make().fill_(value))
            assert fast == general, value
        fast, general = _both(monkeypatch, lambda: make().zero_())
        assert fast == general


def test_fill_steps_aside_for_grad():
    _warm()
    w = nbtorch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.fill_(2)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.zero_()
    h = w * 2
    h.fill_(5)                                          # recorded: the gradient stops
    h.sum().backward()
    assert w.grad.tolist() == [0, 0, 0] and h.tolist() == [5, 5, 5]
    with nbtorch.no_grad():
        assert w.zero_() is w and w.tolist() == [0, 0, 0]


# ---- to(dtype), double(), float() ----------------------------------------------------------

@pytest.mark.parametrize("src_dtype, dst_dtype", PAIRS)
def test_casts_give_the_general_bits(monkeypatch, src_dtype, dst_dtype):
    _warm()
    for shape in ((8, 16), (), (3,), (0, 2)):
        x = _values(shape, src_dtype)
        if src_dtype.is_floating_point and not dst_dtype.is_floating_point:
            x = x.nan_to_num(0, 0, 0)
        fast, general = _both(monkeypatch, x.to, dst_dtype)
        assert fast == general
    fast, general = _both(monkeypatch, _values((16, 8), src_dtype).t().to, dst_dtype)
    assert fast == general and fast[3] == (1, 8)            # strided: layout preserved


def test_casts_step_aside_for_grad_and_return_self():
    _warm()
    x = nbtorch.randn(8, 16)
    assert x.float() is x and x.to(nbtorch.float32) is x
    d = x.double()
    assert d.double() is d and d.data_ptr() != x.data_ptr()
    w = nbtorch.randn(3, requires_grad=True)
    r = w.double()
    assert r.grad_fn.name() == "ToCopyBackward0"
    r.sum().backward()
    assert w.grad.dtype is nbtorch.float32


def test_a_capture_or_tracer_sees_the_call(monkeypatch):
    _warm()
    x, img = nbtorch.randn(8, 16), nbtorch.randn(1, 2, 4, 4)
    seen = []
    monkeypatch.setattr(function, "TRACE_HOOK",
                        [lambda cls, args, kwargs: seen.append(cls.__name__) or NotImplemented])
    x.double(), x.to(nbtorch.float64), nbtorch.arange(5).clamp(0, 1)
    F.max_pool2d(img, 2), F.avg_pool2d(img, 2)
    assert seen[:2] == ["ToDtype", "ToDtype"] and len(seen) == 5
    for fast in _fast_calls(x, img):
        assert fast() is None or fast() is False
    monkeypatch.setattr(function, "TRACE_HOOK", [None])
    function.APPLY_WRAPPERS[0] += 1             # a capture or the profiler installed
    try:
        for fast in _fast_calls(x, img):
            assert fast() is None or fast() is False
    finally:
        function.APPLY_WRAPPERS[0] -= 1
    for fast in _fast_calls(x, img):
        assert fast() is not None and fast() is not False


def _fast_calls(x, img):
    return (lambda: ps._unrecorded_clamp(x, 0, 1, False),
            lambda: ps._unrecorded_clamp(x.clone(), 0, 1, True),
            lambda: cp._unrecorded_cast(x, nbtorch.float64),
            lambda: cp._unrecorded_copy(x.clone(), x),
            lambda: cp._unrecorded_fill(x.clone(), 1),
            lambda: pl._small_pool(pl._MAX_CPU, img, 2, None, False, False),
            lambda: pl._small_pool(pl._AVG_CPU, img, 2, None, True))


def test_a_users_kernel_still_runs():
    _warm()
    x, img = nbtorch.randn(8, 16), nbtorch.randn(1, 2, 4, 4)
    calls = {"clamp": lambda: x.clamp(0, 1), "clamp_min": lambda: x.clamp(min=0),
             "copy_": lambda: x.double(), "fill_": lambda: x.clone().zero_(),
             "max_pool2d": lambda: F.max_pool2d(img, 2),
             "avg_pool2d": lambda: F.avg_pool2d(img, 2)}
    for op, call in calls.items():
        original = nbtorch._registry.get_kernel(op, "cpu")
        seen = []

        def mine(*args, _original=original, **kwargs):
            seen.append(1)
            return _original(*args, **kwargs)
        nbtorch.register_kernel(op, "cpu", mine, override=True)
        try:
            call()
            call()
            assert len(seen) == 2, op
        finally:
            nbtorch.register_kernel(op, "cpu", original, override=True)
    x.clone().copy_(x)
    x.clamp(0, 1)


# ---- pooling -------------------------------------------------------------------------------

POOLS = [dict(kernel_size=2), dict(kernel_size=3), dict(kernel_size=(2, 3), stride=1),
         dict(kernel_size=2, stride=(1, 2)), dict(kernel_size=2, padding=1),
         dict(kernel_size=3, ceil_mode=True), dict(kernel_size=9), dict(kernel_size=0),
         dict(kernel_size=2, stride=0), dict(kernel_size=[2, 2])]


@pytest.mark.parametrize("dtype", FLOATS + [nbtorch.float16, nbtorch.int64])
def test_pooling_gives_the_general_bits_and_errors(monkeypatch, dtype):
    _warm()
    for shape in ((2, 3, 8, 8), (1, 1, 5, 7), (3, 8, 8), (0, 2, 4, 4), (1, 2, 0, 4)):
        x = _values(shape, dtype)
        for kw in POOLS:
            fast, general = _both(monkeypatch, F.max_pool2d, x, **kw)
            assert fast == general, (shape, kw)
            fast, general = _both(monkeypatch, F.max_pool2d, x, return_indices=True, **kw)
            assert fast == general, (shape, kw)
            avg = {k: v for k, v in kw.items()}
            fast, general = _both(monkeypatch, F.avg_pool2d, x, **avg)
            assert fast == general, (shape, kw)
    x = _values((1, 1, 128, 128), nbtorch.float32)       # taps past SPLIT_MIN_WORK: the
    for fn in (F.max_pool2d, F.avg_pool2d):                # launcher's own split or loop
        fast, general = _both(monkeypatch, fn, x, 32, 1)
        assert fast == general
    x = _values((2, 3, 8, 8), nbtorch.float32)
    for kw in (dict(count_include_pad=False), dict(divisor_override=3)):
        fast, general = _both(monkeypatch, F.avg_pool2d, x, 2, **kw)
        assert fast == general


def test_pooling_against_pytorch():
    torch = pytest.importorskip("torch")
    _warm()
    for shape, kw in (((2, 3, 8, 8), dict(kernel_size=2)), ((1, 2, 7, 9), dict(kernel_size=3,
                      stride=2)), ((2, 1, 6, 6), dict(kernel_size=(2, 3), stride=1))):
        a = awkward_floats(int(np.prod(shape)), np.float32, 3, specials=3).reshape(shape)
        x, t = nbtorch.tensor(a), torch.tensor(a)
        out, idx = F.max_pool2d(x, return_indices=True, **kw)
        ref, ridx = torch.nn.functional.max_pool2d(t, return_indices=True, **kw)
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
        np.testing.assert_array_equal(idx.numpy(), ridx.numpy())
        np.testing.assert_allclose(F.avg_pool2d(x, **kw).numpy(),
                                   torch.nn.functional.avg_pool2d(t, **kw).numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_pooling_steps_aside_for_grad_and_layouts():
    _warm()
    x = nbtorch.randn(2, 3, 8, 8, requires_grad=True)
    out = F.max_pool2d(x, 2)
    assert out.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    out.sum().backward()
    assert x.grad.sum().item() == 2 * 3 * 16
    assert F.avg_pool2d(x, 2).grad_fn.name() == "AvgPool2DBackward0"
    cl = nbtorch.randn(2, 8, 8, 3).permute(0, 3, 1, 2)         # channels-last input
    np.testing.assert_array_equal(F.max_pool2d(cl, 2).numpy(),
                                  F.max_pool2d(cl.contiguous(), 2).numpy())


# ---- against PyTorch, and a property ----------------------------------------------------------

def test_against_pytorch():
    torch = pytest.importorskip("torch")
    _warm()
    a = awkward_floats(128, np.float32, 5, specials=6).reshape(8, 16)
    x, t = nbtorch.tensor(a), torch.tensor(a)
    for lo, hi in ((0, 1), (None, 0.5), (-1, None), (1, 0), (float("nan"), 1)):
        np.testing.assert_array_equal(x.clamp(lo, hi).numpy(), t.clamp(lo, hi).numpy())
        np.testing.assert_array_equal(x.clone().clamp_(lo, hi).numpy(),
                                      t.clone().clamp_(lo, hi).numpy())
    i = np.arange(-5, 5)
    for d, td in ((nbtorch.int64, torch.int64), (nbtorch.uint8, torch.uint8)):
        xi, ti = nbtorch.tensor(i).to(d), torch.tensor(i).to(td)
        np.testing.assert_array_equal(xi.clamp(2, 200).numpy(), ti.clamp(2, 200).numpy())
        np.testing.assert_array_equal(xi.clamp(0.5, 3).numpy(), ti.clamp(0.5, 3).numpy())
        np.testing.assert_array_equal(xi.clone().fill_(-1).numpy(),
                                      ti.clone().fill_(-1).numpy())
    np.testing.assert_array_equal(x.double().numpy(), t.double().numpy())
    np.testing.assert_array_equal(x.clone().zero_().numpy(), t.clone().zero_().numpy())
    y = nbtorch.zeros(8, 16, dtype=nbtorch.float64)
    np.testing.assert_array_equal(y.copy_(x).numpy(),
                                  torch.zeros(8, 16, dtype=torch.float64).copy_(t).numpy())


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 5), max_size=3), seed=st.integers(0, 100),
       dtype=st.sampled_from(FLOATS + INTS),
       lo=st.sampled_from([None, 0, -1, 0.5, 3]), hi=st.sampled_from([None, 1, 2.5, -2]))
def test_property_clamp_fill_copy_match_the_general_path(shape, seed, dtype, lo, hi):
    _warm()
    x = _values(tuple(shape), dtype, seed)
    mp = pytest.MonkeyPatch()
    try:
        for fn in (lambda: nbtorch.clamp(x, lo, hi), lambda: x.clone().clamp_(lo, hi),
                   lambda: x.clone().fill_(lo if lo is not None else 7),
                   lambda: nbtorch.empty_like(x).copy_(x), lambda: x.to(nbtorch.float64)):
            fast, general = _both(mp, fn)
            assert fast == general
    finally:
        mp.undo()
