"""F.interpolate's nearest modes on the CPU run as one Function (ops/resampling_index.py):
the same bits as the per-axis gathers they replace (built here directly), PyTorch's
values and gradients; integer upscaling takes the kernel's strided column sums."""
import numpy as np
import pytest

import nbtorch as nt
from nbtorch.ops.resampling import GatherAxisFn, _nearest_steps, _output_sizes

F = nt.nn.functional
CASES = [((2, 3, 8, 8), dict(scale_factor=2)), ((2, 3, 5, 7), dict(size=(11, 3))),
         ((2, 3, 7), dict(scale_factor=1.7)), ((2, 3, 4, 5, 6), dict(scale_factor=2)),
         ((2, 2, 4, 5, 6), dict(size=(3, 9, 6))), ((2, 3, 6, 6), dict(scale_factor=3)),
         ((2, 3, 9, 9), dict(scale_factor=0.5)), ((1, 2, 5), dict(size=15)),
         ((2, 3, 5, 7), dict(size=(11, 3), mode="nearest-exact")),
         ((2, 3, 4, 4), dict(scale_factor=(1, 2))), ((0, 3, 4, 4), dict(scale_factor=2))]


def _chain(x, kw):
    mode = kw.get("mode", "nearest")
    sizes, scales = _output_sizes(x, kw.get("size"), kw.get("scale_factor"), x.dim() - 2)
    out = x
    for dim, index in _nearest_steps(x, sizes, scales, mode):
        out = GatherAxisFn.apply(out, dim, index, 0.0)
    return out if out is not x else x.clone()


def _same(a, b):
    a, b = a.numpy(), b.numpy()
    return a.shape == b.shape and np.array_equal(a, b) and \
        np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("shape,kw", CASES)
def test_bits_of_the_chain(dt, shape, kw):
    rng = np.random.default_rng(0)
    x = nt.tensor(rng.standard_normal(shape).astype(dt), requires_grad=True)
    y, y0 = F.interpolate(x, **kw), _chain(x, kw)
    assert _same(y.detach(), y0.detach())
    g = nt.tensor(rng.standard_normal(tuple(y.shape)).astype(dt))
    g.numpy().flat[::3] = -0.0
    assert _same(nt.autograd.grad(y, x, g)[0], nt.autograd.grad(y0, x, g)[0])


def test_layouts_module_and_threads():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6, 7, 9)).astype(np.float32)
    for x in (nt.tensor(a).transpose(0, 1), nt.tensor(a)[:, :, ::2],
              nt.tensor(a).contiguous(memory_format=nt.channels_last)):
        assert _same(F.interpolate(x, scale_factor=2), _chain(x, dict(scale_factor=2)))
    x = nt.tensor(rng.standard_normal((8, 16, 32, 32)).astype(np.float32), requires_grad=True)
    y = nt.nn.Upsample(scale_factor=2)(x)
    y0 = _chain(x, dict(scale_factor=2))
    assert _same(y.detach(), y0.detach())
    g = nt.randn(*y.shape)
    assert _same(nt.autograd.grad(y, x, g)[0], nt.autograd.grad(y0, x, g)[0])
    y.sum().backward()                       # an expanded gradient
    assert np.array_equal(x.grad.numpy(), np.full(x.shape, 4, np.float32))


@pytest.mark.parametrize("dt", ["float16", "int64", "uint8", "bool"])
def test_other_dtypes(dt):
    a = np.random.default_rng(2).standard_normal((2, 3, 4, 5)) * 4
    x = nt.tensor(a).to(getattr(nt, dt))
    y = F.interpolate(x, size=(7, 10))
    assert y.dtype is x.dtype
    assert np.array_equal(y.to(nt.float64).numpy(),
                          _chain(x, dict(size=(7, 10))).to(nt.float64).numpy())


def test_gradcheck_and_double_backward():
    x = nt.randn(2, 2, 3, 4, dtype=nt.float64, requires_grad=True)
    assert nt.autograd.gradcheck(lambda t: F.interpolate(t, scale_factor=2), (x,))
    assert nt.autograd.gradgradcheck(lambda t: F.interpolate(t, size=(5, 3)), (x,))
    x3 = nt.randn(1, 2, 2, 3, 3, dtype=nt.float64, requires_grad=True)
    assert nt.autograd.gradcheck(
        lambda t: F.interpolate(t, size=(3, 5, 2), mode="nearest-exact"), (x3,))


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for shape, kw in CASES:
        a = rng.standard_normal(shape)
        res = []
        for lib in (nt, torch):
            x = lib.tensor(a, requires_grad=True)
            y = lib.nn.functional.interpolate(x, **kw)
            y.backward(lib.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))))
            res.append((y.detach().numpy(), x.grad.numpy()))
        assert np.array_equal(res[0][0], res[1][0]), (shape, kw)
        assert np.allclose(res[0][1], res[1][1], rtol=1e-12, atol=1e-12), (shape, kw)


# ---------------------------------------------------------------- grid_sample (CPU)

def _grid_case(dt, nd=2, n=3):
    rng = np.random.default_rng(4)
    shape = (n, 4, 7, 9) if nd == 2 else (n, 3, 4, 5, 6)
    gshape = (n, 5, 6, 2) if nd == 2 else (n, 3, 4, 5, 3)
    x = nt.tensor(rng.standard_normal(shape).astype(dt), requires_grad=True)
    g = nt.tensor((rng.random(gshape) * 2.4 - 1.2).astype(dt), requires_grad=True)
    return x, g


def _grid_run(x, g, **kw):
    x.grad = g.grad = None
    y = F.grid_sample(x, g, align_corners=False, **kw)
    y.backward(nt.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))).to(y.dtype))
    return y.detach().numpy(), x.grad.numpy(), g.grad.numpy()


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_grid_sample_kept_tables_and_threads(dt, monkeypatch):
    """The backward reading the forward's tap tables gives the bits of tabulating again;
    batch ranges on the helper threads give the bits of one serial call."""
    from nbtorch.kernels.cpu import grid_sample as kernels
    for nd, modes in ((2, ("bilinear", "nearest", "bicubic")), (3, ("bilinear", "nearest"))):
        x, g = _grid_case(dt, nd)
        for mode in modes:
            for padding in ("zeros", "border", "reflection"):
                kept = _grid_run(x, g, mode=mode, padding_mode=padding)
                monkeypatch.setattr(kernels, "KEEP_MAX_BYTES", 0)
                again = _grid_run(x, g, mode=mode, padding_mode=padding)
                monkeypatch.undo()
                for a, b in zip(kept, again):
                    assert np.array_equal(a, b), (nd, mode, padding)
    x, _ = _grid_case(dt, 2, n=16)
    x = x.detach().repeat(1, 8, 1, 1).requires_grad_()     # 16x32 planes, 16x24x24 points:
    g = (nt.rand(16, 24, 24, 2, dtype=getattr(nt, dt)) * 2.4 - 1.2).requires_grad_()
    assert kernels.batch_threads.ranges(16, 16 * 32 * 576 * 4, kernels.SPLIT_MIN_WORK) \
        or kernels.batch_threads.threads() == 1                # split over the threads
    split = _grid_run(x, g)
    monkeypatch.setattr(kernels, "SPLIT_MIN_WORK", 1 << 60)
    serial = _grid_run(x, g)
    for a, b in zip(split, serial):
        assert np.array_equal(a, b)


def test_grid_sample_input_grad_only():
    x, g = _grid_case("float64")
    g = g.detach()
    y = F.grid_sample(x, g, align_corners=True)
    y.sum().backward()
    assert x.grad is not None and g.grad is None
    assert nt.autograd.gradcheck(lambda t: F.grid_sample(t, g, align_corners=True), (x,))
