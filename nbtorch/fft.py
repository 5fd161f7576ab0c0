"""`nbtorch.fft`: PyTorch's torch.fft namespace (discrete Fourier transforms).

The transforms are composed from three primitives with gradients (`ops/fft.py`:
complex-to-complex, real-to-complex, complex-to-real), as aten composes them, so
values, dtypes (real float input gives the complex dtype of its precision; integers
and bool go to the default float; float16/bfloat16 raise "Unsupported dtype", as on
PyTorch's CPU), errors and gradients follow PyTorch 2.13 (`ops/fft_functions.py`).
Engines: NumPy's pocketfft on the CPU (`kernels/cpu/fft.py`), a Numba kernel on CUDA
(`kernels/cuda/fft.py`: radix-2 for powers of two, Bluestein otherwise).

Example:
    >>> import nbtorch
    >>> nbtorch.fft.rfft(nbtorch.tensor([1., 2., 3., 4.]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j])
"""
import sys as _sys

from .ops.fft_functions import (fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2,
                                irfft2, rfftn, irfftn, hfft, ihfft, hfft2, ihfft2, hfftn,
                                ihfftn, fftfreq, rfftfreq, fftshift, ifftshift)
from .ops.fft_functions import __all__  # noqa: F401
from ._tensor import Tensor  # noqa: F401  (torch.fft.Tensor, as PyTorch's module has)


def _install_axis():
    """axis= wherever dim= is, as PyTorch's argument parser accepts it."""
    from ._conventions import _install_on
    _install_on(_sys.modules[__name__], __all__, False, {})


_install_axis()
