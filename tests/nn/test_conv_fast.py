"""The fast convolution paths: conv_gemm.py's per-image products in blocks of output rows
(conv.py's _block_rows), against a float64 NumPy convolution and conv.py's batch path, in
every mode (dense, padded, pointwise; groups, strides, dilation, 1-3 spatial dims, both
dtypes); the op layer's gradient made contiguous once for its readers; the survey's
layers against PyTorch; float64 gradcheck through the blocked kernels."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck
from nbtorch.kernels.cpu import cblas, conv, conv_gemm

pytestmark = pytest.mark.skipif(not cblas.gemm_address(np.float32),
                                reason="no OpenBLAS cblas_sgemm64_ to call by address")


def _windows(x, k, s, p, d, out_size):
    """x (N, C, *S) -> (N, C, *k, *OS) windows of the zero-padded input (float64)."""
    dims = len(k)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(q, q) for q in p])
    out = np.empty(x.shape[:2] + tuple(k) + tuple(out_size))
    for tap in np.ndindex(*k):
        index = tuple(slice(t * dd, t * dd + (o - 1) * ss + 1, ss)
                      for t, dd, o, ss in zip(tap, d, out_size, s))
        out[(slice(None), slice(None)) + tap] = xp[(slice(None), slice(None)) + index]
    assert out.ndim == 2 + 2 * dims
    return out


def _reference(x, w, b, g, s, p, d, groups):
    """Forward, input and weight gradients of a grouped convolution in float64."""
    dims = w.ndim - 2
    out_size = g.shape[2:]
    win = _windows(x, w.shape[2:], s, p, d, out_size)
    n, c = x.shape[:2]
    cg, og = c // groups, w.shape[0] // groups
    kk = int(np.prod(w.shape[2:]))
    cols = win.reshape(n, groups, cg * kk, -1)                     # (N, g, C/g*kk, L)
    w3 = w.astype(np.float64).reshape(groups, og, cg * kk)
    g4 = g.astype(np.float64).reshape(n, groups, og, -1)
    y = np.einsum("gok,ngkl->ngol", w3, cols).reshape(g.shape) + \
        b.astype(np.float64).reshape((1, -1) + (1,) * dims)
    gw = np.einsum("ngol,ngkl->gok", g4, cols).reshape(w.shape)
    gcols = np.einsum("gok,ngol->ngkl", w3, g4).reshape(win.shape)
    xp = np.zeros((n, c) + tuple(sz + 2 * q for sz, q in zip(x.shape[2:], p)))
    for tap in np.ndindex(*w.shape[2:]):
        index = tuple(slice(t * dd, t * dd + (o - 1) * ss + 1, ss)
                      for t, dd, o, ss in zip(tap, d, out_size, s))
        xp[(slice(None), slice(None)) + index] += gcols[(slice(None), slice(None)) + tap]
    gx = xp[(slice(None), slice(None)) + tuple(slice(q, q + sz)
                                              for q, sz in zip(p, x.shape[2:]))]
    return y, gx, gw


def _out_len(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


# (N, C, O, groups, spatial in, kernel, stride, padding, dilation, mode)
CASES = [
    (3, 4, 6, 1, (13, 11), (3, 3), (1, 1), (1, 1), (1, 1), conv_gemm.PADDED),
    (2, 4, 6, 2, (12, 10), (3, 2), (1, 1), (0, 0), (1, 2), conv_gemm.DENSE),
    (2, 3, 5, 1, (15, 13), (3, 3), (2, 2), (1, 1), (1, 1), conv_gemm.PADDED),    # strided
    (3, 6, 4, 2, (9, 7), (1, 1), (1, 1), (0, 0), (1, 1), conv_gemm.POINTWISE),
    (2, 4, 12, 1, (6, 9), (1, 1), (1, 1), (0, 0), (1, 1), conv_gemm.POINTWISE),  # og > rows
    (2, 2, 9, 1, (5, 8), (1, 2), (1, 1), (0, 0), (1, 1), conv_gemm.DENSE),       # og > rows
    (2, 3, 4, 1, (1, 40), (1, 3), (1, 1), (0, 1), (1, 1), conv_gemm.PADDED),     # conv1d
    (2, 2, 4, 2, (5, 6, 7), (2, 3, 2), (1, 2, 1), (1, 1, 0), (2, 1, 1),
     conv_gemm.PADDED),                                                           # 3-D
]


def _arrays(case, dtype):
    n, c, o, groups, size, k, s, p, d, _ = case
    out_size = tuple(_out_len(*a) for a in zip(size, k, s, p, d))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, c) + size).astype(dtype)
    w = rng.standard_normal((o, c // groups) + k).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    g = rng.standard_normal((n, o) + out_size).astype(dtype)
    return x, w, b, g, (s, p, d, groups)


def _kernels(x, w, b, g, geo):
    s, p, d, groups = geo
    out = np.full(g.shape, np.nan, x.dtype)
    conv.conv2d_forward(x, w, b, out, s, p, d, groups)
    gx = np.full(x.shape, np.nan, x.dtype)
    conv.conv2d_grad_input(g, w, gx, s, p, d, groups)
    gw = np.full(w.shape, np.nan, x.dtype)
    conv.conv2d_grad_weight(x, g, gw, s, p, d, groups)
    return out, gx, gw


def _small_blocks(m):
    """Blocks of one or two output rows for every mode (the limits are read per call)."""
    m.setattr(conv, "COLUMN_BLOCK_BYTES", 64)
    m.setattr(conv, "SMALL_GEMM_MACS", 1)
    m.setattr(conv, "MIN_POINTWISE_BLOCK", 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[5]}-s{c[6]}-g{c[3]}-m{c[9]}")
def test_blocked_kernels_match_numpy_and_whole_images(case, dtype, monkeypatch):
    x, w, b, g, geo = _arrays(case, dtype)
    s, p, d, groups = geo
    plan = conv._gemm_plan(x, w, g, groups, w.shape[2:], s, p, d, g.shape[2:])
    assert plan is not None and plan[1] == case[-1]
    whole = _kernels(x, w, b, g, geo)
    with monkeypatch.context() as m:
        _small_blocks(m)
        plan = conv._gemm_plan(x, w, g, groups, w.shape[2:], s, p, d, g.shape[2:])
        assert plan[3] <= 2
        blocked = _kernels(x, w, b, g, geo)
    ref = _reference(x, w, b, g, s, p, d, groups)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for got, same, want in zip(blocked, whole, ref):
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
        np.testing.assert_allclose(got, same, rtol=tol, atol=tol * np.abs(want).max())


def test_block_rows_rule():
    # 16x32x32x32 3x3 (1.15 MB of columns an image): blocks of 11 rows of 32
    assert conv._block_rows(False, 288, 1, 32, 1024, 32, 4) == 11
    # 32x16x28x28 3x3 (0.44 MB) and a conv1d of one row stay whole
    assert conv._block_rows(False, 144, 1, 32, 784, 28, 4) == 28
    assert conv._block_rows(False, 192, 1, 64, 128, 128, 4) == 1
    # 1x1 32 -> 64 over 32x32: 3 blocks within OpenBLAS's small-matrix size; wide ones whole
    assert conv._block_rows(True, 32, 1, 64, 1024, 32, 4) == 11
    assert conv._block_rows(True, 512, 1, 512, 1024, 32, 4) == 32


def _torch():
    return pytest.importorskip("torch")


SURVEY = [    # the layers timed against PyTorch (smaller batches), module kwargs
    ("conv2d", (4, 8, 12, 12), dict(in_channels=8, out_channels=16, kernel_size=1)),
    ("conv2d", (4, 8, 12, 12), dict(in_channels=8, out_channels=8, kernel_size=3, stride=2,
                                    padding=1)),
    ("conv1d", (4, 16, 40), dict(in_channels=16, out_channels=16, kernel_size=3, padding=1)),
    ("conv2d", (4, 8, 12, 12), dict(in_channels=8, out_channels=8, kernel_size=3, padding=1)),
]


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kind,shape,kwargs", SURVEY, ids=["1x1", "stride2", "conv1d", "3x3"])
def test_layers_match_torch(kind, shape, kwargs, channels_last, monkeypatch):
    torch = _torch()
    monkeypatch.setattr(conv, "COLUMN_BLOCK_BYTES", 4096)    # several blocks per image
    monkeypatch.setattr(conv, "MIN_POINTWISE_BLOCK", 16)
    monkeypatch.setattr(conv, "SMALL_GEMM_MACS", 4096)
    cls = {"conv1d": (nbtorch.nn.Conv1d, torch.nn.Conv1d),
           "conv2d": (nbtorch.nn.Conv2d, torch.nn.Conv2d)}[kind]
    ours, theirs = cls[0](**kwargs), cls[1](**kwargs)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weight.detach().numpy()))
        theirs.bias.copy_(torch.from_numpy(ours.bias.detach().numpy()))
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    a, t = nbtorch.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a_in, t_in = a, t
    if channels_last and len(shape) == 4:
        a_in = a.contiguous(memory_format=nbtorch.channels_last)
        t_in = t.contiguous(memory_format=torch.channels_last)
    ya, yt = ours(a_in), theirs(t_in)
    np.testing.assert_allclose(ya.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-4)
    # one expanded gradient (.sum()'s) and one transposed, non-contiguous
    ya.sum().backward()
    yt.sum().backward()
    gy = np.random.default_rng(3).standard_normal(ya.shape[::-1]).astype(np.float32)
    ga = nbtorch.tensor(gy).permute(*range(ya.dim() - 1, -1, -1))
    ya2 = ours(a_in)
    ya2.backward(ga)
    yt2 = theirs(t_in)
    yt2.backward(torch.tensor(gy).permute(*range(yt2.dim() - 1, -1, -1)))
    for mine, ref in ((a.grad, t.grad), (ours.weight.grad, theirs.weight.grad),
                      (ours.bias.grad, theirs.bias.grad)):
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("kwargs", [dict(stride=2, padding=1), dict(padding=1, groups=2),
                                    dict(kernel_size=1), dict(padding=(0, 1), dilation=2)],
                         ids=["stride2", "groups", "1x1", "dilated"])
def test_gradcheck_float64_blocked(kwargs, monkeypatch):
    _small_blocks(monkeypatch)
    kwargs = dict(kwargs)
    k = kwargs.pop("kernel_size", 3)
    rng = np.random.default_rng(4)
    x = nbtorch.tensor(rng.standard_normal((2, 4, 6, 7)), requires_grad=True)
    w = nbtorch.tensor(rng.standard_normal((6, 4 // kwargs.get("groups", 1), k, k)),
                       requires_grad=True)
    b = nbtorch.tensor(rng.standard_normal(6), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, **kwargs), (x, w, b))
    assert gradcheck(lambda x, w: F.conv2d(x, w, None, **kwargs), (x, w))


def test_conv1d_runs_without_views():
    # conv1d and conv_transpose1d go to the kernels over one spatial dim (no unsqueeze /
    # squeeze nodes): PyTorch's grad_fn, float64 gradients
    rng = np.random.default_rng(5)
    x = nbtorch.tensor(rng.standard_normal((2, 4, 9)), requires_grad=True)
    w = nbtorch.tensor(rng.standard_normal((6, 2, 3)), requires_grad=True)
    b = nbtorch.tensor(rng.standard_normal(6), requires_grad=True)
    y = F.conv1d(x, w, b, stride=2, padding=1, groups=2)
    assert type(y.grad_fn).__name__ == "ConvolutionBackward0" and y.shape == (2, 6, 5)
    assert gradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2),
                     (x, w, b))
    wt = nbtorch.tensor(rng.standard_normal((4, 3, 3)), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose1d(x, w, stride=2, output_padding=1),
                     (x, wt))
    x0 = nbtorch.tensor(rng.standard_normal((4, 9)), requires_grad=True)     # unbatched
    w0 = nbtorch.tensor(rng.standard_normal((3, 4, 2)), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv1d(x, w, dilation=3), (x0, w0))


def test_backward_takes_both_gradients_in_one_kernel_call_unless_recorded(monkeypatch):
    """x.grad and w.grad from one conv2d_grad_both call (the same bits as the two
    Functions), but create_graph keeps the Functions (second derivatives), and a swapped
    grad_input kernel is called, not bypassed."""
    import numpy as np
    import nbtorch
    from nbtorch.kernels.cpu import conv as kconv
    from nbtorch.ops import conv as opconv
    rng = np.random.default_rng(0)
    x = nbtorch.tensor(rng.standard_normal((4, 3, 9, 9)), requires_grad=True)
    w = nbtorch.tensor(rng.standard_normal((5, 3, 3, 3)), requires_grad=True)
    g = nbtorch.tensor(rng.standard_normal((4, 5, 9, 9)))
    calls = []
    both = kconv.conv2d_grad_both
    monkeypatch.setattr(kconv, "conv2d_grad_both", lambda *a: calls.append(1) or both(*a))
    nbtorch.nn.functional.conv2d(x, w, padding=1).backward(g)
    fused = (x.grad.numpy().copy(), w.grad.numpy().copy())
    assert calls == [1]
    monkeypatch.setattr(opconv, "_both_grads", lambda *a: None)
    x.grad = w.grad = None
    nbtorch.nn.functional.conv2d(x, w, padding=1).backward(g)
    assert np.array_equal(fused[0], x.grad.numpy()) and np.array_equal(fused[1], w.grad.numpy())
    monkeypatch.undo()
    monkeypatch.setattr(kconv, "conv2d_grad_both", lambda *a: calls.append(2) or both(*a))
    gx, gw = nbtorch.autograd.grad(nbtorch.nn.functional.conv2d(x, w, padding=1), (x, w), g,
                                   create_graph=True)
    assert calls == [1] and gx.grad_fn is not None
    np.testing.assert_allclose(gx.detach().numpy(), fused[0], rtol=1e-12)
    from nbtorch import _registry
    real = _registry.get_kernel("conv2d_grad_input", "cpu")
    seen = []
    _registry.register_kernel("conv2d_grad_input", "cpu",
                              lambda *a: seen.append(1) or real(*a), override=True)
    try:
        x.grad = w.grad = None
        nbtorch.nn.functional.conv2d(x, w, padding=1).backward(g)
    finally:
        _registry.unregister_kernel("conv2d_grad_input", "cpu")
    assert seen == [1] and calls == [1]
    assert np.array_equal(fused[0], x.grad.numpy())
