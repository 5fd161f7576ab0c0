"""torch.stft/istft: values against a NumPy framing reference and PyTorch (when importable),
the inverse's round trip, PyTorch's errors, and gradients (finite differences, PyTorch)."""
import numpy as np
import pytest

import nbtorch

RNG = np.random.default_rng(0)
pytestmark = pytest.mark.filterwarnings("ignore:A window was not provided",
                                        "ignore:stft with return_complex=False")


def _np_stft(x, n_fft, hop, window, center, onesided=True, pad_mode="reflect"):
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode=pad_mode)
    n = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., t * hop:t * hop + n_fft] * window for t in range(n)], -2)
    spec = np.fft.rfft(frames) if onesided else np.fft.fft(frames)
    return np.swapaxes(spec, -1, -2)


def test_stft_values_against_numpy(device):
    x = RNG.standard_normal((2, 20))
    w = np.hanning(10)[1:-1]                                   # any window of n_fft = 8
    s = nbtorch.stft(nbtorch.tensor(x, device=device), 8, hop_length=3,
                     window=nbtorch.tensor(w, device=device), return_complex=True)
    np.testing.assert_allclose(s.cpu().numpy(), _np_stft(x, 8, 3, w, True), atol=1e-12)
    s = nbtorch.tensor(x[0], device=device).stft(8, window=nbtorch.ones(8, dtype=nbtorch.float64,
                                                                         device=device),
                                                 center=False, onesided=False,
                                                 return_complex=True)
    np.testing.assert_allclose(s.cpu().numpy(), _np_stft(x[0], 8, 2, np.ones(8), False, False),
                               atol=1e-12)


def test_istft_round_trip(device):
    x = RNG.standard_normal((2, 30))
    w = nbtorch.hann_window(8, dtype=nbtorch.float64, device=device)
    t = nbtorch.tensor(x, device=device)
    s = nbtorch.stft(t, 8, hop_length=2, window=w, return_complex=True)
    y = nbtorch.istft(s, 8, hop_length=2, window=w, length=30)
    np.testing.assert_allclose(y.cpu().numpy(), x, atol=1e-12)
    z = nbtorch.tensor(x[0] + 1j * x[1], device=device)
    s = z.stft(8, hop_length=2, window=w, return_complex=True)
    assert tuple(s.shape) == (8, 16)
    y = s.istft(8, hop_length=2, window=w, length=30, return_complex=True)
    np.testing.assert_allclose(y.cpu().numpy(), x[0] + 1j * x[1], atol=1e-12)


def test_shapes_dtypes_and_options():
    x = nbtorch.randn(40)
    assert nbtorch.stft(x, 8, return_complex=True).dtype is nbtorch.complex64
    r = nbtorch.stft(x, 8, return_complex=False)
    assert tuple(r.shape) == (5, 21, 2) and r.dtype is nbtorch.float32
    a = nbtorch.stft(x, 8, win_length=6, window=nbtorch.hann_window(6), center=False,
                     align_to_window=True, return_complex=True)
    assert tuple(a.shape) == (5, 18)
    with pytest.warns(UserWarning, match="padded with zeros"):
        y = nbtorch.istft(nbtorch.stft(x, 8, return_complex=True), 8, length=45)
    assert tuple(y.shape) == (45,)
    with pytest.warns(UserWarning, match="A window was not provided"):
        nbtorch.stft(x, 8, return_complex=True)


ERRORS = [
    (lambda x: nbtorch.stft(x, 8), "stft requires the return_complex parameter be given"),
    (lambda x: nbtorch.stft(x.reshape(1, 1, 40), 8, return_complex=True),
     "expected a 1D or 2D tensor"),
    (lambda x: nbtorch.stft(x, 0, return_complex=True), "expected 0 < n_fft < 40, but got n_fft=0"),
    (lambda x: nbtorch.stft(x, 8, hop_length=0, return_complex=True),
     "expected hop_length > 0, but got hop_length=0"),
    (lambda x: nbtorch.stft(x, 8, win_length=9, return_complex=True),
     "expected 0 < win_length <= n_fft, but got win_length=9"),
    (lambda x: nbtorch.stft(x, 8, win_length=6, window=nbtorch.ones(5), return_complex=True),
     r"expected a 1D window tensor of size equal to win_length=6, but got window with size \[5\]"),
    (lambda x: nbtorch.stft(x, 8, return_complex=True, align_to_window=True),
     "stft align_to_window should only be set when center = false"),
    (lambda x: nbtorch.stft(x.to(nbtorch.complex64), 8, return_complex=True, onesided=True),
     "Cannot have onesided output if window or input is complex"),
    (lambda x: nbtorch.stft(x.long(), 8, return_complex=True),
     "expected a tensor of floating point or complex values"),
    (lambda x: nbtorch.istft(x, 8), "istft requires a complex-valued input tensor"),
    (lambda x: nbtorch.istft(nbtorch.ones(5, 3, dtype=nbtorch.complex64), 8, hop_length=9),
     "expected 0 < hop_length <= win_length"),
    (lambda x: nbtorch.istft(nbtorch.ones(5, 3, dtype=nbtorch.complex64), 8,
                             window=nbtorch.ones(7)), "Invalid window shape"),
    (lambda x: nbtorch.istft(nbtorch.ones(4, 3, dtype=nbtorch.complex64), 8),
     "to match n_fft / 2 \\+ 1 when onesided=True, but got 4"),
    (lambda x: nbtorch.istft(nbtorch.ones(5, 3, dtype=nbtorch.complex64), 8, onesided=False),
     "to match n_fft when onesided=False, but got 5"),
    (lambda x: nbtorch.istft(nbtorch.ones(5, 0, dtype=nbtorch.complex64), 8),
     "input tensor cannot be empty"),
    (lambda x: nbtorch.istft(nbtorch.stft(x, 8, window=nbtorch.hann_window(8), center=False,
                                          return_complex=True), 8,
                             window=nbtorch.hann_window(8), center=False),
     "window overlap add min"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    call, match = ERRORS[i]
    with pytest.raises(RuntimeError, match=match):
        call(nbtorch.randn(40))


def test_gradients_finite_differences():
    x = RNG.standard_normal(12)
    w = np.hanning(6)
    tw = nbtorch.tensor(w)

    def fn(t):
        s = nbtorch.stft(t, 6, hop_length=2, window=tw, return_complex=True)
        return nbtorch.istft(s * s.abs(), 6, hop_length=2, window=tw, length=12)

    t = nbtorch.tensor(x, requires_grad=True)
    g = RNG.standard_normal(12)
    fn(t).backward(nbtorch.tensor(g))
    eps, num = 1e-6, np.zeros(12)
    for i in range(12):
        p, m = x.copy(), x.copy()
        p[i] += eps
        m[i] -= eps
        num[i] = (fn(nbtorch.tensor(p)).numpy() - fn(nbtorch.tensor(m)).numpy()) @ g / (2 * eps)
    np.testing.assert_allclose(t.grad.numpy(), num, atol=1e-6)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 24))
    for kw in (dict(hop_length=3), dict(win_length=6), dict(center=False),
               dict(normalized=True, onesided=False, pad_mode="constant")):
        win = 6 if "win_length" in kw else 8
        tx = torch.tensor(x, requires_grad=True)
        nx = nbtorch.tensor(x, requires_grad=True)
        tw = torch.hann_window(win, dtype=torch.float64) + 0.5     # NOLA holds everywhere
        ts = torch.stft(tx, 8, window=tw, return_complex=True, **kw)
        nw = nbtorch.tensor(tw.numpy())
        ns = nbtorch.stft(nx, 8, window=nw, return_complex=True, **kw)
        np.testing.assert_allclose(ns.detach().numpy(), ts.detach().numpy(), atol=1e-12)
        ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
        ty = torch.istft(ts * 1.5, 8, window=tw, **ikw)
        ny = nbtorch.istft(ns * 1.5, 8, window=nw, **ikw)
        np.testing.assert_allclose(ny.detach().numpy(), ty.detach().numpy(), atol=1e-12)
        g = RNG.standard_normal(tuple(ty.shape))
        ty.backward(torch.tensor(g))
        ny.backward(nbtorch.tensor(g))
        np.testing.assert_allclose(nx.grad.numpy(), tx.grad.numpy(), atol=1e-10)
