"""The small unrecorded where/masked_fill paths (`pointwise_select._unrecorded_where`,
`indexing_gather._fill_value`): the general path's bits, dtype, shape and strides for
every dtype, broadcast, number side, 0-d and empty operand; the general path's errors;
everything else (grad, captures, layouts, a user's kernel) left to the general path."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import nbtorch
from harness import awkward_floats, tensor_bits as _bits
from nbtorch.ops import indexing_gather as ig, pointwise_select as ps

DTYPES = [nbtorch.float32, nbtorch.float64, nbtorch.int32, nbtorch.int64, nbtorch.uint8,
          nbtorch.int8]
FLOATS = [nbtorch.float32, nbtorch.float64]


def _values(shape, dtype, seed=0):
    n = int(np.prod(shape))
    if dtype.is_floating_point:
        a = awkward_floats(n, dtype.np.type, seed, specials=min(n, 5))
    else:
        info = np.iinfo(dtype.np)
        a = np.random.default_rng(seed).integers(info.min, info.max, n, endpoint=True)
    return nbtorch.tensor(np.asarray(a, dtype.np).reshape(shape))


def _mask(shape, seed=1):
    return nbtorch.tensor(np.random.default_rng(seed).random(shape) > 0.5)


def _general_where(c, x, y):
    return ps.Where.apply(c, x, y)


def _general_fill(x, m, v):
    return ig.MaskedFill.apply(x, m, v)


@pytest.fixture
def fast_only(monkeypatch):
    """The general paths raise: a call that passes took the fast path."""
    def boom(*a, **k):
        raise AssertionError("general path taken")
    monkeypatch.setattr(ps.Where, "apply", boom)
    monkeypatch.setattr(ig.MaskedFill, "apply", boom)
    monkeypatch.setattr(ig, "inplace_guard", boom)


def _warm():
    """Resolve the kernels the fast paths compare against (a first call resolves them)."""
    for d in DTYPES:
        x = nbtorch.zeros(2, 3, dtype=d)
        m = nbtorch.ones(2, 3, dtype=nbtorch.bool)
        nbtorch.where(m, x, x), x.masked_fill(m, 1), x.clone().masked_fill_(m, 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((8, 16), (8, 16), (8, 16)), ((8, 16), (16,), ()),
                                    ((8, 1), (1, 16), (8, 16)), ((), (), ()),
                                    ((3, 1, 4), (2, 4), (1,)), ((0, 4), (4,), (0, 4))])
def test_where_tensors_and_numbers_give_the_general_bits(dtype, shapes):
    _warm()
    c = _mask(shapes[0])
    x, y = _values(shapes[1], dtype, 2), _values(shapes[2], dtype, 3)
    nums = [0, 7, -1] + ([0.0, -0.0, 0.5, 1e30, float("nan"), float("-inf")]
                         if dtype.is_floating_point else [])
    cases = [(x, y)] + [(x, v) for v in nums] + [(v, y) for v in nums]
    for a, b in cases:
        fast = nbtorch.where(c, a, b)
        assert _bits(fast) == _bits(_general_where(c, a, b)), (a, b)
        ref = np.where(c.numpy(), a.numpy() if isinstance(a, nbtorch.Tensor) else a,
                       b.numpy() if isinstance(b, nbtorch.Tensor) else b)
        np.testing.assert_array_equal(fast.numpy(), ref.astype(fast.dtype.np))


def _outcome_any(fn, *args):
    try:
        return _bits(fn(*args))
    except (RuntimeError, OverflowError, TypeError) as e:
        return type(e).__name__, str(e)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numbers_at_and_past_the_dtypes_range(dtype):
    """Numbers a dtype holds go in directly, others through the general conversions
    (wrapping, inf, or the general path's errors)."""
    _warm()
    x = _values((4, 5), dtype, 6)
    c = _mask((4, 5), 7)
    ints = [127, 128, -128, -129, 255, 256, -1, 2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1,
            2 ** 63 - 1, 2 ** 63, -2 ** 63, -2 ** 63 - 1, 2 ** 64 - 1, 2 ** 64, 10 ** 30]
    floats = [3.4028234663852886e38, 3.4028235677973366e38, 3.5e38, -3.5e38, 1e308,
              float("inf"), float("nan"), 2.5, 1e-46, -1e-46]
    for v in ints + floats:
        assert _outcome_any(nbtorch.where, c, x, v) == _outcome_any(_general_where, c, x, v)
        assert _outcome_any(nbtorch.where, c, v, x) == _outcome_any(_general_where, c, v, x)
        assert _outcome_any(x.masked_fill, c, v) == _outcome_any(_general_fill, x, c, v), v
        inplace = x.clone()
        assert _outcome_any(inplace.masked_fill_, c, v) == \
            _outcome_any(_general_fill, x, c, v), v


def test_the_fast_paths_run(fast_only):
    """Guard against a fast path silently stepping aside in the common cases."""
    _warm()
    x = nbtorch.randn(8, 16)
    c = x > 0
    for d in DTYPES:
        t = x.to(d)
        assert nbtorch.where(c, t, 0).dtype is d
        assert nbtorch.where(c, 1, t).dtype is d
        assert nbtorch.where(c, t, t).dtype is d
        assert t.where(c, t[0]).dtype is d
        assert t.masked_fill(c, 3).dtype is d
        assert t.masked_fill(c[0], 3).dtype is d
        assert t.clone().masked_fill_(c, 3).dtype is d
    for d in FLOATS:
        t = x.to(d)
        assert nbtorch.where(c, t, 0.5).dtype is d and nbtorch.where(c, -1.5, t).dtype is d
        assert t.masked_fill(c, 0.25).dtype is d and t.masked_fill_(c, 0.25) is t
    with nbtorch.no_grad():
        w = nbtorch.randn(8, 16, requires_grad=True)
        assert nbtorch.where(c, w, 0.0).grad_fn is None
        w.masked_fill_(c, 0.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((8, 16), (8, 16)), ((8, 16), (16,)), ((8, 16), (8, 1)),
                                    ((), ()), ((2, 3, 4), (1, 4)), ((0, 5), (5,)),
                                    ((4,), ())])
def test_masked_fill_gives_the_general_bits(dtype, shapes):
    _warm()
    x, m = _values(shapes[0], dtype, 4), _mask(shapes[1], 5)
    values = [0, 5, -1, 127] + ([0.0, -0.0, 0.1, 3e38, float("nan"), float("inf")]
                                if dtype.is_floating_point else [])
    for v in values:
        ref = _general_fill(x, m, v)
        assert _bits(x.masked_fill(m, v)) == _bits(ref), v
        inplace = x.clone()
        version = inplace._version
        assert inplace.masked_fill_(m, v) is inplace and inplace._version == version + 1
        assert _bits(inplace) == _bits(ref), v
        np.testing.assert_array_equal(
            ref.numpy(), np.where(m.numpy(), np.asarray(v).astype(dtype.np), x.numpy()))


def test_non_contiguous_and_large_operands_take_the_general_path():
    _warm()
    a = nbtorch.randn(16, 8)
    c = a.t() > 0
    for x, m in [(a.t(), c), (a.t().contiguous(), c), (a.t(), c.contiguous()),
                 (a[:, ::2], a[:, 1::2] > 0), (a[0].expand(16, 8), a > 0)]:
        assert _bits(nbtorch.where(m, x, 0.0)) == _bits(_general_where(m, x, 0.0))
        assert _bits(x.masked_fill(m, 1.5)) == _bits(_general_fill(x, m, 1.5))
    big = nbtorch.randn(64, 64)
    assert _bits(nbtorch.where(big > 0, big, 0.0)) == _bits(_general_where(big > 0, big, 0.0))
    assert _bits(big.masked_fill(big > 0, 2)) == _bits(_general_fill(big, big > 0, 2))
    s = a.t().contiguous()
    ref = _general_fill(s, c, -2.0)
    assert _bits(a.t().masked_fill_(c, -2.0)) == _bits(ref.t().contiguous().t())
    with pytest.raises(RuntimeError, match="single memory location"):
        a[0].expand(4, 8).masked_fill_(nbtorch.ones(4, 8, dtype=nbtorch.bool), 0.0)


def test_grad_mixed_dtypes_and_halves_take_the_general_path():
    _warm()
    x = nbtorch.randn(8, 16, requires_grad=True)
    c = x > 0
    y = nbtorch.where(c, x, 0.0)
    assert y.grad_fn is not None
    z = x.masked_fill(c, 1.0)
    assert z.grad_fn is not None
    (y + z).sum().backward()                 # one of the two passes each gradient
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((8, 16), np.float32))
    i = nbtorch.arange(128, dtype=nbtorch.int32).reshape(8, 16)
    assert nbtorch.where(c, i, 0.5).dtype is nbtorch.float32        # the default dtype
    assert nbtorch.where(c, i, i.long()).dtype is nbtorch.int64
    assert nbtorch.where(c, x.detach(), x.detach().double()).dtype is nbtorch.float64
    assert nbtorch.where(c, x.detach(), nbtorch.tensor(1.0, dtype=nbtorch.float64)).dtype \
        is nbtorch.float32
    assert nbtorch.where(c, 1.0, 0.0).dtype is nbtorch.float32
    assert nbtorch.where(c, True, i.bool()).dtype is nbtorch.bool
    h = x.detach().half()
    assert nbtorch.where(c, h, 0.0).dtype is nbtorch.float16
    assert h.masked_fill(c, 2.0).dtype is nbtorch.float16
    assert i.masked_fill(c, 2.7).tolist() == i.masked_fill(c, 2).tolist()
    assert i.masked_fill(c, nbtorch.tensor(2)).tolist() == i.masked_fill(c, 2).tolist()


def test_errors_are_the_general_paths():
    _warm()
    x = nbtorch.randn(8, 16)
    c = x > 0
    with pytest.raises(RuntimeError, match="condition to be a boolean tensor"):
        nbtorch.where(x, x, 0.0)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(16\) must match"):
        nbtorch.where(c, nbtorch.randn(3), 0.0)
    with pytest.raises(RuntimeError, match="same device"):
        nbtorch.where(c, x.to("meta"), 0.0)
    with pytest.raises(TypeError, match="must be Tensor or Number"):
        nbtorch.where(c, x, "0")
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.masked_fill(x, 0.0)
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.clone().masked_fill_(c.int(), 0.0)
    with pytest.raises(RuntimeError, match="does not broadcast"):
        x.masked_fill(nbtorch.ones(2, 8, 16, dtype=nbtorch.bool), 0.0)
    with pytest.raises(RuntimeError, match="must match"):
        x.masked_fill(nbtorch.ones(3, dtype=nbtorch.bool), 0.0)
    with pytest.raises(RuntimeError, match="without overflow"):
        x.masked_fill(c, 1e40)
    with pytest.raises(RuntimeError, match="without overflow"):
        x.clone().masked_fill_(c, -1e40)
    with pytest.raises(RuntimeError, match="without overflow"):
        x.to(nbtorch.uint8).masked_fill(c, 300)
    with pytest.raises(RuntimeError, match="without overflow"):
        x.to(nbtorch.int8).clone().masked_fill_(c, -129)
    assert x.to(nbtorch.uint8).masked_fill(c, -1).max().item() == 255
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.masked_fill(c, nbtorch.zeros(2))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        nbtorch.randn(8, 16, requires_grad=True).masked_fill_(c, 0.0)


def test_a_users_kernel_still_runs():
    _warm()
    x = nbtorch.randn(8, 16)
    c = x > 0
    for op in ("where", "copy_", "fill_", "put"):
        original = nbtorch._registry.get_kernel(op, "cpu")
        calls = []

        def mine(*args, _original=original, **kwargs):
            calls.append(1)
            return _original(*args, **kwargs)
        nbtorch.register_kernel(op, "cpu", mine, override=True)
        try:
            if op == "where":
                ref = np.where(c.numpy(), x.numpy(), np.float32(0))
                np.testing.assert_array_equal(nbtorch.where(c, x, 0.0).numpy(), ref)
                assert len(calls) == 1
                x.masked_fill(c, 0.0)
                x.clone().masked_fill_(c, 0.0)
                assert len(calls) == 3
            elif op == "copy_":
                x.clone().masked_fill_(c, 0.0)
                assert calls
            i = x.to(nbtorch.int32)
            n = len(calls)
            np.testing.assert_array_equal(i.masked_fill(c, 4).numpy(),
                                          np.where(c.numpy(), 4, i.numpy()))
            i.masked_fill_(c, 4)
            assert len(calls) > n or op == "where"
        finally:
            nbtorch.register_kernel(op, "cpu", original, override=True)


def test_a_capture_or_tracer_sees_the_call(monkeypatch):
    _warm()
    from nbtorch.autograd import function
    x = nbtorch.randn(8, 16)
    c = x > 0
    seen = []
    monkeypatch.setattr(function, "TRACE_HOOK",
                        [lambda cls, args, kwargs: seen.append(cls) or NotImplemented])
    nbtorch.where(c, x, 0.0)
    x.masked_fill(c, 0.0)
    assert ps.Where in seen and ig.MaskedFill in seen
    monkeypatch.setattr(function, "TRACE_HOOK", [None])
    calls = []
    monkeypatch.setattr(ps, "small_where", lambda *a: calls.append(1))
    monkeypatch.setattr(ig, "small_where", lambda *a: calls.append(1))
    function.APPLY_WRAPPERS[0] += 1             # a capture or the profiler installed
    try:
        nbtorch.where(c, x, 0.0)
        x.masked_fill(c, 0.0)
        x.clone().masked_fill_(c, 0.0)
    finally:
        function.APPLY_WRAPPERS[0] -= 1
    assert len(calls) == 3


def _outcome(fn, *args):
    try:
        return _bits(fn(*args))
    except RuntimeError as e:
        return str(e)


@settings(max_examples=50, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, min_side=0,
                                                max_side=4),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 1000),
       sides=st.sampled_from(["tt", "tn", "nt"]), number=st.sampled_from([0, 3, -2, 0.5]),
       data=st.data())
def test_property_matches_the_general_path_and_numpy(shapes, dtype, seed, sides, number,
                                                     data):
    _warm()
    cs, xs, ys = shapes.input_shapes
    c = _mask(cs, seed)
    x, y = _values(xs, dtype, seed + 1), _values(ys, dtype, seed + 2)
    a = x if sides[0] == "t" else number
    b = y if sides[1] == "t" else number
    fast = nbtorch.where(c, a, b)
    assert _bits(fast) == _bits(_general_where(c, a, b))
    used = [cs] + [s for s, side in zip((xs, ys), sides) if side == "t"]
    assert fast.shape == np.broadcast_shapes(*used)
    np.testing.assert_array_equal(fast.numpy(), np.where(
        c.numpy(), a.numpy() if sides[0] == "t" else a,
        b.numpy() if sides[1] == "t" else b).astype(fast.dtype.np))
    ms = data.draw(hnp.broadcastable_shapes(xs, min_dims=0, max_dims=len(xs), min_side=0,
                                            max_side=4))
    m = _mask(ms, seed + 3)
    assert _outcome(x.masked_fill, m, number) == _outcome(_general_fill, x, m, number)
    inplace = x.clone()
    assert _outcome(inplace.masked_fill_, m, number) == _outcome(_general_fill, x, m, number)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    cm = rng.random((8, 16)) > 0.5
    row = rng.random(16) > 0.5
    for name in ("float32", "float64", "int32", "int64", "uint8"):
        arr = (a * 10).astype(name)
        pairs = []
        for lib in (nbtorch, torch):
            x = lib.tensor(arr)
            c, r = lib.tensor(cm), lib.tensor(row)
            outs = [lib.where(c, x, 0), lib.where(c, 3, x), lib.where(c, x, x.flip(0)),
                    lib.where(c, x, 0.5), x.masked_fill(c, 2), x.masked_fill(r, -1),
                    x.clone().masked_fill_(r, 5)]
            if name.startswith("float"):
                outs += [lib.where(c, -0.0, x), x.masked_fill(c, 0.1)]
            pairs.append(outs)
        for mine, theirs in zip(*pairs):
            assert str(mine.dtype) == str(theirs.dtype)
            assert tuple(mine.shape) == tuple(theirs.shape)
            assert mine.stride() == theirs.stride()
            assert mine.numpy().tobytes() == theirs.numpy().tobytes()
