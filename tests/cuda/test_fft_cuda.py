"""The CUDA FFT kernel (kernels/cuda/fft.py) against NumPy on tiny shapes: radix-2 lengths,
Bluestein lengths, lines along inner and outer dims, real input and Hermitian output,
float32 accuracy, and gradients equal to the CPU's."""
import numpy as np
import pytest

import nbtorch
import nbtorch.fft as F

pytestmark = pytest.mark.cuda
RNG = np.random.default_rng(1)


def _c(shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("n", [1, 2, 8, 3, 5, 6])
def test_c2c_lengths_and_axes(n):
    a = _c((2, n, 3))
    t = nbtorch.tensor(a, device="cuda")
    for dim in (0, 1, 2):
        got = F.fft(t, dim=dim).cpu().numpy()
        np.testing.assert_allclose(got, np.fft.fft(a, axis=dim), atol=1e-12)
    np.testing.assert_allclose(F.ifft(t, dim=1, norm="ortho").cpu().numpy(),
                               np.fft.ifft(a, axis=1, norm="ortho"), atol=1e-12)


def test_float32_accuracy():
    a = _c((2, 64), np.complex64)
    for n in (64, 37):
        got = F.fft(nbtorch.tensor(a, device="cuda"), n=n)
        assert got.dtype is nbtorch.complex64
        ref = np.fft.fft(a.astype(np.complex128), n=n)
        np.testing.assert_allclose(got.cpu().numpy(), ref, atol=2e-5 * np.abs(ref).max())


@pytest.mark.parametrize("last", [4, 5])
def test_real_transforms(last):
    x = RNG.standard_normal((3, 2, last))
    t = nbtorch.tensor(x, device="cuda")
    np.testing.assert_allclose(F.rfftn(t).cpu().numpy(), np.fft.rfftn(x), atol=1e-12)
    np.testing.assert_allclose(F.fft(t, dim=0).cpu().numpy(), np.fft.fft(x, axis=0),
                               atol=1e-12)
    h = _c((3, 2, last // 2 + 1))
    got = F.irfftn(nbtorch.tensor(h, device="cuda"), s=(2, last), dim=(1, 2))
    np.testing.assert_allclose(got.cpu().numpy(), np.fft.irfftn(h, s=(2, last), axes=(1, 2)),
                               atol=1e-12)
    got = F.hfft(nbtorch.tensor(h, device="cuda"), n=last)
    np.testing.assert_allclose(got.cpu().numpy(), np.fft.hfft(h, n=last), atol=1e-12)


def test_gradients_equal_the_cpu():
    x = RNG.standard_normal((2, 5))
    for fn in (lambda t: F.rfft(t, n=6), lambda t: F.hfft(F.ifft(t), n=7),
               lambda t: F.irfft2(F.fft2(t))):
        grads = []
        for dev in ("cpu", "cuda"):
            t = nbtorch.tensor(x, device=dev, requires_grad=True)
            y = fn(t)
            w = np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))
            y.backward(nbtorch.tensor(w * (1 - 0.5j) if y.dtype.is_complex else w,
                                      dtype=y.dtype, device=dev))
            grads.append(t.grad.cpu().numpy())
        np.testing.assert_allclose(grads[1], grads[0], atol=1e-12)
