"""CUDA tests: run on Numba's CUDA simulator (own process) or on a real GPU.

The simulator must be switched on before Numba is imported, so these tests run
in a separate pytest process::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda -q     (scripts/run_cuda_tests.sh)

In an ordinary run (no simulator, no GPU) every test here is skipped except
the pure-Python allocator logic and the compile-only type check. Guards:
Numba's implicit host->device copy warning is an error, and on the simulator
(which never warns) a kernel launched with a host NumPy array fails the test.
"""
import os
import warnings

import numpy as np
import pytest

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
_ALWAYS = {"test_allocator_logic.py", "test_typecheck.py"}


def _real_gpu():
    if SIM:
        return False
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:
        return False


HAVE_GPU = _real_gpu()
RUN_CUDA = SIM or HAVE_GPU


def pytest_ignore_collect(collection_path, config):
    if not RUN_CUDA and collection_path.name.startswith("test_") and \
            collection_path.name not in _ALWAYS:
        return True
    return None


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a real NVIDIA GPU (the simulator has no EMM "
                                       "plugin, real streams or timing)")
    for item in items:
        if "gpu" in item.keywords and not HAVE_GPU:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _no_host_arrays_in_kernels(monkeypatch):
    """No op may hand a host array to a CUDA kernel (Numba would copy it implicitly)."""
    from numba.core.errors import NumbaPerformanceWarning
    warnings.simplefilter("error", NumbaPerformanceWarning)
    if SIM:
        from numba.cuda.simulator.kernel import FakeCUDAKernel
        call = FakeCUDAKernel.__call__

        def checked(self, *args):
            if not self._device:
                for a in args:
                    if isinstance(a, np.ndarray) and a.ndim > 0:
                        raise AssertionError(
                            f"host NumPy array {a.dtype}{list(a.shape)} passed to CUDA kernel "
                            f"{self.fn.__name__}: it would be copied implicitly")
            return call(self, *args)
        monkeypatch.setattr(FakeCUDAKernel, "__call__", checked)
    yield


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """Run one test body on both devices."""
    return request.param
