"""The small CPU paths of the factories (`ops/creation.py`: `_small_fill`, `_filled`,
`_plain_like`, `_plain_filled`, `_int_range`, `_number_tensor`, eye's; `ops/random.py`:
`_shape`, `_plain_like`): the general path's bits, dtype, shape and strides (forced by
a user's fill_ kernel, a `size=` keyword, NumPy integers or a device argument), NumPy's
and PyTorch's results, the random streams of `manual_seed` and of a `Generator`, the
default dtype and device, the cases that step aside, and the errors."""
import contextlib

import numpy as np
import pytest

import nbtorch
from nbtorch import _registry


def _bits(t):
    return t.detach()._array.tobytes(), tuple(t.shape), t.stride(), t.dtype


def _same(a, b):
    assert _bits(a) == _bits(b)


@contextlib.contextmanager
def user_fill():
    """A user's CPU fill_ kernel (nbtorch's own, counted): every fill fast path must step
    aside and let it run, which gives the general path's results to compare with."""
    own = _registry.get_kernel("fill_", "cpu")
    calls = []

    def mine(*args):
        calls.append(1)
        return own(*args)
    _registry.register_kernel("fill_", "cpu", mine, override=True)
    try:
        yield calls
    finally:
        _registry.unregister_kernel("fill_", "cpu")
    assert _registry.get_kernel("fill_", "cpu") is own


FILL_CASES = [
    ("zeros", lambda: nbtorch.zeros(8, 16)),
    ("zeros int32", lambda: nbtorch.zeros((3, 0, 2), dtype=nbtorch.int32)),
    ("ones bool", lambda: nbtorch.ones([4], dtype=nbtorch.bool)),
    ("full float", lambda: nbtorch.full((8, 16), 0.1)),
    ("full 0-d", lambda: nbtorch.full((), -2.5)),
    ("full int", lambda: nbtorch.full(3, 2 ** 62)),
    ("full bool", lambda: nbtorch.full((2, 2), True)),
    ("full int->f32", lambda: nbtorch.full((5,), 2 ** 24 + 1, dtype=nbtorch.float32)),
    ("full f64", lambda: nbtorch.full((5,), 0.1, dtype=nbtorch.float64)),
    ("full nan", lambda: nbtorch.full((3,), float("nan"))),
    ("full f32 max", lambda: nbtorch.full((1,), 3.4028234663852886e38)),
    ("eye", lambda: nbtorch.eye(16)),
    ("eye tall", lambda: nbtorch.eye(5, 3)),
    ("eye wide", lambda: nbtorch.eye(2, 6, dtype=nbtorch.int64)),
    ("eye empty", lambda: nbtorch.eye(0, 4)),
    ("eye bool", lambda: nbtorch.eye(3, dtype=nbtorch.bool)),
    ("eye complex", lambda: nbtorch.eye(3, dtype=nbtorch.complex64)),
]


def test_fill_paths_match_the_fill_kernel():
    fast = [make() for _, make in FILL_CASES]
    with user_fill() as calls:
        for (name, make), f in zip(FILL_CASES, fast):
            del calls[:]
            g = make()
            assert _bits(f) == _bits(g), name
            assert f._version == g._version == 0, name       # PyTorch's: a fresh tensor
            assert calls or not g.numel(), f"{name}: a user's fill_ kernel must run"


def test_like_paths_match_the_general_path():
    x = nbtorch.randn(8, 16)
    xi = nbtorch.arange(6).reshape(2, 3)
    makes = [lambda: nbtorch.zeros_like(x), lambda: nbtorch.ones_like(xi),
             lambda: nbtorch.ones_like(x, dtype=nbtorch.float64),
             lambda: nbtorch.full_like(x, 0.1), lambda: nbtorch.full_like(xi, 7),
             lambda: nbtorch.full_like(x, True, dtype=nbtorch.bool),
             lambda: nbtorch.zeros_like(x, requires_grad=True)]
    fast = [m() for m in makes]
    with user_fill() as calls:
        for f, m in zip(fast, makes):
            del calls[:]
            g = m()
            _same(f, g)
            assert calls and f.requires_grad == g.requires_grad and f.is_leaf
            assert f._version == g._version == 0


def test_values_against_numpy_and_torch():
    torch = pytest.importorskip("torch")
    for dtype in (nbtorch.float32, nbtorch.float64, nbtorch.int64, nbtorch.bool):
        tdt = getattr(torch, str(dtype).split(".")[1])
        for n, m in ((16, None), (3, 5), (5, 3), (0, 2)):
            e = nbtorch.eye(n, m, dtype=dtype)
            assert np.array_equal(e.numpy(), torch.eye(n, m if m is not None else n,
                                                       dtype=tdt).numpy())
    for args in ((64,), (2, 10, 3), (10, 2, -3), (-5, 5), (0,), (7, 7)):
        a = nbtorch.arange(*args)
        assert a.dtype is nbtorch.int64 and a.stride() == (1,)
        assert np.array_equal(a.numpy(), torch.arange(*args).numpy())
    for v in (3.5, 0.1, -7, True, 2 ** 62, float("inf")):
        t, r = nbtorch.tensor(v), torch.tensor(v)
        assert t.shape == () and t.stride() == () and str(t.dtype) == str(r.dtype)
        assert t.numpy().tobytes() == r.numpy().tobytes()
    for v in (2.0, 0.1, 5, False):
        t, r = nbtorch.full((2, 3), v), torch.full((2, 3), v)
        assert str(t.dtype) == str(r.dtype) and t.numpy().tobytes() == r.numpy().tobytes()
    x = nbtorch.randn(2, 3)
    for f in ("zeros_like", "ones_like", "empty_like"):
        assert getattr(nbtorch, f)(x).stride() == (3, 1)
        assert getattr(nbtorch, f)(x.t()).stride() == (1, 3)        # preserve_format
    assert nbtorch.full_like(x.t(), 0.5).stride() == (1, 3)


def test_arange_and_tensor_against_their_general_paths():
    for args in ((64,), (2, 10, 3), (10, 2, -3), (0,), (-(2 ** 33), 5, 2 ** 28)):
        fast = nbtorch.arange(*args)
        general = nbtorch.arange(*[np.int64(a) for a in args])     # NumPy ints: general
        _same(fast, general)
    _same(nbtorch.arange(5, dtype=nbtorch.int64), nbtorch.arange(np.int64(5)))
    for v, d in ((3.5, nbtorch.float32), (0.1, nbtorch.float32), (-3, nbtorch.int64),
                 (True, nbtorch.bool), (-(2 ** 63), nbtorch.int64)):
        _same(nbtorch.tensor(v), nbtorch.tensor(v, dtype=d))       # a dtype: general
    t = nbtorch.tensor(3.5, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t._version == 0
    assert nbtorch.tensor(3.5, device="meta").device.type == "meta"


def test_default_dtype_and_device():
    nbtorch.set_default_dtype(nbtorch.float64)
    try:
        for t in (nbtorch.tensor(0.1), nbtorch.full((2,), 0.1), nbtorch.eye(2),
                  nbtorch.zeros(2), nbtorch.empty(2), nbtorch.randn(2), nbtorch.rand(2)):
            assert t.dtype is nbtorch.float64
        assert nbtorch.tensor(0.1).item() == 0.1
        assert nbtorch.full((1,), 1e39).item() == 1e39          # fits float64
        assert nbtorch.tensor(3).dtype is nbtorch.int64
    finally:
        nbtorch.set_default_dtype(nbtorch.float32)
    nbtorch.set_default_device("meta")
    try:
        for t in (nbtorch.tensor(0.1), nbtorch.full((2,), 0.1), nbtorch.eye(2),
                  nbtorch.arange(3), nbtorch.empty(2), nbtorch.zeros(2), nbtorch.randn(2)):
            assert t.device.type == "meta"
    finally:
        nbtorch.set_default_device(None)


def _draws(fn, gen):
    """Two calls of `fn(generator=...)` after seeding: the stream as it continues."""
    if gen:
        g = nbtorch.Generator().manual_seed(11)
        return [fn(generator=g) for _ in range(2)]
    nbtorch.manual_seed(11)
    return [fn(generator=None) for _ in range(2)]


x16 = nbtorch.zeros(8, 16)
RANDOM_CASES = [       # (fast, general): the same numbers, in the same order
    (lambda **k: nbtorch.randn(8, 16, **k), lambda **k: nbtorch.randn(size=(8, 16), **k)),
    (lambda **k: nbtorch.randn(5, **k), lambda **k: nbtorch.randn(size=(5,), **k)),
    (lambda **k: nbtorch.randn((), **k), lambda **k: nbtorch.randn(size=(), **k)),
    (lambda **k: nbtorch.rand(3, 4, dtype=nbtorch.float64, **k),
     lambda **k: nbtorch.rand(size=[3, 4], dtype=nbtorch.float64, **k)),
    (lambda **k: nbtorch.randint(0, 10, (8, 16), **k),
     lambda **k: nbtorch.randint(0, 10, (np.int64(8), np.int64(16)), **k)),
    (lambda **k: nbtorch.randint(7, (0, 3), **k),
     lambda **k: nbtorch.randint(7, (np.int64(0), 3), **k)),
    (lambda **k: nbtorch.randn_like(x16, **k),
     lambda **k: nbtorch.randn_like(x16, device="cpu", **k)),
    (lambda **k: nbtorch.rand_like(x16, dtype=nbtorch.float64, **k),
     lambda **k: nbtorch.rand_like(x16, dtype=nbtorch.float64, device="cpu", **k)),
]


@pytest.mark.parametrize("gen", [False, True], ids=["manual_seed", "generator"])
@pytest.mark.parametrize("case", range(len(RANDOM_CASES)))
def test_random_streams_unchanged(case, gen):
    fast, general = RANDOM_CASES[case]
    for a, b in zip(_draws(fast, gen), _draws(general, gen)):
        _same(a, b)


def test_random_against_torch():
    torch = pytest.importorskip("torch")
    x = torch.zeros(8, 16)
    for f in (lambda m, **k: m.randn(8, 16, **k), lambda m, **k: m.rand(8, 16, **k),
              lambda m, **k: m.randint(0, 10, (8, 16), **k)):
        nbtorch.manual_seed(3)
        torch.manual_seed(3)
        assert np.array_equal(f(nbtorch).numpy(), f(torch).numpy())
        g, h = nbtorch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        assert np.array_equal(f(nbtorch, generator=g).numpy(),
                              f(torch, generator=h).numpy())
    nbtorch.manual_seed(3)
    torch.manual_seed(3)
    assert np.array_equal(nbtorch.randn_like(nbtorch.zeros(8, 16)).numpy(),
                          torch.randn_like(x).numpy())


def test_steps_aside():
    x = nbtorch.randn(4, 6)
    p = nbtorch.nn.Parameter(nbtorch.ones(2, 3))
    assert nbtorch.zeros_like(p).__class__ is nbtorch.Tensor
    assert not nbtorch.ones_like(p).requires_grad
    assert nbtorch.randn_like(x[:, ::2]).stride() == (3, 1)
    assert nbtorch.zeros_like(x.t()).stride() == (1, 6)
    assert nbtorch.randn_like(x.t()).stride() == (1, 6)
    assert nbtorch.zeros_like(x, memory_format=nbtorch.contiguous_format).stride() == (6, 1)
    big = nbtorch.full((200, 200), 0.5)                         # the fill kernel's size
    assert big._version == 0 and bool((big == 0.5).all())
    h = nbtorch.full((3,), 0.1, dtype=nbtorch.float16)
    assert h.dtype is nbtorch.float16 and h[0].item() == np.float16(0.1)
    assert nbtorch.full((2,), 2.5, dtype=nbtorch.int64).tolist() == [2, 2]
    assert nbtorch.full((2,), -1, dtype=nbtorch.uint8).tolist() == [255, 255]
    assert nbtorch.full_like(x.to(nbtorch.int64), 2.5).tolist()[0][0] == 2
    assert nbtorch.tensor(2 ** 63 - 1).item() == 2 ** 63 - 1
    with pytest.warns(UserWarning):
        assert nbtorch.tensor(nbtorch.tensor(1.5)).item() == 1.5
    nbtorch.use_deterministic_algorithms(True)
    try:                             # uninitialised memory filled (NaN) as before
        assert bool(nbtorch.empty(3).isnan().all())
        assert bool(nbtorch.empty_like(x).isnan().all())
    finally:
        nbtorch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("call,err", [
    (lambda: nbtorch.full((2,), 1e39), RuntimeError),            # beyond float32
    (lambda: nbtorch.full((-1,), 2.0), RuntimeError),
    (lambda: nbtorch.full(True, 2.0), TypeError),
    (lambda: nbtorch.full((2,), 300, dtype=nbtorch.int8), RuntimeError),
    (lambda: nbtorch.empty(-1), RuntimeError),
    (lambda: nbtorch.empty(2.0), TypeError),
    (lambda: nbtorch.zeros(2, size=(3,)), TypeError),
    (lambda: nbtorch.eye(-1), RuntimeError),
    (lambda: nbtorch.arange(0, 10, 0), RuntimeError),
    (lambda: nbtorch.arange(10, 0), RuntimeError),
    (lambda: nbtorch.arange(5, requires_grad=True), RuntimeError),
    (lambda: nbtorch.tensor(2 ** 64), (ValueError, OverflowError, RuntimeError)),
    (lambda: nbtorch.tensor(3, requires_grad=True), RuntimeError),
    (lambda: nbtorch.randn(-1), RuntimeError),
    (lambda: nbtorch.randn(2, size=(2,)), TypeError),
    (lambda: nbtorch.randint(5, 3, (2,)), RuntimeError),
    (lambda: nbtorch.rand_like(nbtorch.zeros(2, dtype=nbtorch.uint16)), RuntimeError),
])
def test_errors(call, err):
    with pytest.raises(err):
        call()
