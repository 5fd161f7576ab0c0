"""F.pad's reflect/replicate/circular modes on the CPU run as one Function
(ops/resampling_index.py: one row-copy kernel forward, one exact scatter backward): the
same bits as the chain of per-axis gathers they replace (GatherAxisFn, built here
directly), PyTorch's values, gradients and errors."""
import numpy as np
import pytest

import nbtorch as nt
from nbtorch.ops.resampling import GatherAxisFn, _pad_index
from nbtorch.ops.resampling_index import IndexResampleFn

F = nt.nn.functional
MODES = ["reflect", "replicate", "circular"]
CASES = [((2, 3, 5), (1, 2)), ((3, 5), (4, 4)), ((2, 3, 5), (-1, 2)), ((0, 3, 5), (1, 1)),
         ((2, 3, 4, 5), (1, 1, 2, 2)), ((3, 4, 5), (0, 3, 3, 0)), ((2, 3, 4, 5), (-1, 3, 2, -2)),
         ((2, 2, 3, 4, 5), (1, 1, 1, 1, 1, 1)), ((2, 3, 4, 5, 6), (3, 3, 0, 0, 3, 1)),
         ((2, 3, 4, 5), (0, 0, 0, 0))]


def _chain(x, pad, mode):
    """The per-axis gathers pad ran before (and still runs off the CPU)."""
    out = x
    for i in range(len(pad) // 2):
        dim = x.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo or hi:
            out = GatherAxisFn.apply(out, dim, _pad_index(x.shape[dim], lo, hi, mode), 0.0)
    return out if out is not x else x.clone()


def _ok(mode, shape, pad):
    return mode != "reflect" or all(max(pad[2 * i:2 * i + 2]) < shape[-1 - i]
                                    for i in range(len(pad) // 2))


def _same(a, b):
    a, b = a.numpy(), b.numpy()
    return a.shape == b.shape and np.array_equal(a, b) and \
        np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,pad", CASES)
def test_bits_of_the_chain(dt, mode, shape, pad):
    if not _ok(mode, shape, pad):
        pytest.skip("reflect pad as large as the input")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dt)
    a.flat[::3] = -0.0                                   # signed zeros survive as before
    x = nt.tensor(a, requires_grad=True)
    y, y0 = F.pad(x, pad, mode=mode), _chain(x, pad, mode)
    assert _same(y.detach(), y0.detach())
    g = nt.tensor(rng.standard_normal(tuple(y.shape)).astype(dt))
    g.numpy().flat[::4] = -0.0
    (gx,), (gx0,) = nt.autograd.grad(y, x, g), nt.autograd.grad(y0, x, g)
    assert _same(gx, gx0)


@pytest.mark.parametrize("mode", MODES)
def test_layouts_and_threads(mode):
    """Non-contiguous and channels_last inputs; a size the helper threads split."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6, 7, 9)).astype(np.float32)
    for x in (nt.tensor(a).transpose(0, 1), nt.tensor(a)[:, :, ::2],
              nt.tensor(a).contiguous(memory_format=nt.channels_last)):
        assert _same(F.pad(x, (2, 1, 1, 3), mode=mode), _chain(x, (2, 1, 1, 3), mode))
    x = nt.tensor(rng.standard_normal((8, 16, 64, 64)).astype(np.float32), requires_grad=True)
    y, y0 = F.pad(x, (3, 2, 1, 2), mode=mode), _chain(x, (3, 2, 1, 2), mode)
    assert _same(y.detach(), y0.detach())
    g = nt.randn(*y.shape)
    assert _same(nt.autograd.grad(y, x, g)[0], nt.autograd.grad(y0, x, g)[0])


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "int64", "uint8", "bool", "complex64",
                                "complex128"])
def test_other_dtypes_forward(dt):
    a = (np.random.default_rng(2).standard_normal((2, 3, 4, 5)) * 4)
    x = nt.tensor(a).to(getattr(nt, dt))
    for mode, np_mode in [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]:
        y = F.pad(x, (2, 1, 1, 3), mode=mode)
        assert y.dtype is x.dtype
        plain = dt.startswith("complex")
        want = np.pad(x.numpy() if plain else x.to(nt.float64).numpy(),
                      [(0, 0), (0, 0), (1, 3), (2, 1)], mode=np_mode)
        got = y.numpy() if plain else y.to(nt.float64).numpy()
        assert np.array_equal(got, want)


def test_half_gradient_keeps_the_chain():
    x = nt.randn(2, 3, 6, dtype=nt.float16, requires_grad=True)
    y, y0 = F.pad(x, (2, 3), mode="replicate"), _chain(x, (2, 3), "replicate")
    g = nt.randn(*y.shape, dtype=nt.float16)
    assert _same(nt.autograd.grad(y, x, g)[0].float(), nt.autograd.grad(y0, x, g)[0].float())


@pytest.mark.parametrize("mode", MODES)
def test_gradcheck_and_double_backward(mode):
    x = nt.randn(2, 2, 3, 4, dtype=nt.float64, requires_grad=True)
    assert nt.autograd.gradcheck(lambda t: F.pad(t, (2, 1, 1, 2), mode=mode), (x,))
    assert nt.autograd.gradgradcheck(lambda t: F.pad(t, (2, 1, -1, 2), mode=mode), (x,))
    x3 = nt.randn(1, 2, 3, 3, 4, dtype=nt.float64, requires_grad=True)
    assert nt.autograd.gradcheck(lambda t: F.pad(t, (1, 2, 2, 0, 1, 1), mode=mode), (x3,))


def test_index_fn_direct():
    """IndexResampleFn with an arbitrary (non-monotone, repeating) table on one axis."""
    x = nt.randn(3, 4, 5, dtype=nt.float64, requires_grad=True)
    idx = np.array([4, 0, 0, 2, 4, 4, 1, 3], np.int64)
    y = IndexResampleFn.apply(x, ((2, idx),))
    assert np.array_equal(y.detach().numpy(), x.detach().numpy()[:, :, idx])
    g = nt.randn(*y.shape, dtype=nt.float64)
    want = np.zeros((3, 4, 5))
    np.add.at(want, (slice(None), slice(None), idx), g.numpy())
    assert np.allclose(nt.autograd.grad(y, x, g)[0].numpy(), want, rtol=0, atol=1e-15)


def test_errors():
    x = nt.randn(2, 3, 4, 5)
    with pytest.raises(RuntimeError, match=r"Argument #6: Padding size should be less than"):
        F.pad(x, (1, 1, 4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match=r"Argument #4: .* padding \(5, 1\) at dimension 3"):
        F.pad(x, (5, 1, 0, 0), mode="reflect")
    with pytest.raises(RuntimeError, match=r"Expected 3D or 4D \(batch mode\) tensor"):
        F.pad(nt.randn(2, 0, 4, 5), (1, 1, 1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match=r"input \(W: 5\) is too small. Calculated output W: 0"):
        F.pad(nt.randn(2, 3, 5), (-6, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="resulting in an empty dimension"):
        F.pad(nt.randn(2, 3, 5), (-3, -3), mode="circular")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        F.pad(nt.randn(2, 3, 5), (6, 1), mode="circular")
    for mode, pad in [("reflect", (0, 0, -2, -2)), ("circular", (0, -5, 0, 0))]:
        x = nt.randn(2, 3, 4, 5, requires_grad=True)
        y = F.pad(x, pad, mode=mode)                    # an empty result, a zero gradient
        assert y.numel() == 0
        y.sum().backward()
        assert np.array_equal(x.grad.numpy(), np.zeros((2, 3, 4, 5), np.float32))


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for mode in MODES:
        for shape, pad in CASES + [((3, 0, 5), (1, 1)), ((2, 3, 5), (-3, -3)),
                                   ((2, 3, 4, 5), (-5, -1, -4, 0)), ((5, 0), (1, 1))]:
            a = rng.standard_normal(shape)
            res = []
            for lib in (nt, torch):
                x = lib.tensor(a, requires_grad=True)
                try:
                    y = lib.nn.functional.pad(x, pad, mode=mode)
                except (RuntimeError, NotImplementedError) as e:
                    res.append((type(e).__name__, str(e)))
                    continue
                g = lib.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)))
                y.backward(g)
                res.append((y.detach().numpy(), x.grad.numpy()))
            if isinstance(res[0][0], str):
                assert res[0] == res[1], (mode, shape, pad)
            else:
                assert np.array_equal(res[0][0], res[1][0]), (mode, shape, pad)
                assert np.allclose(res[0][1], res[1][1], rtol=1e-12, atol=1e-12)
