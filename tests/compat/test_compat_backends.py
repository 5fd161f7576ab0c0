"""torch.backends, deterministic algorithms and the float32 matmul precision."""
import warnings

import numpy as np
import pytest

import nbtorch


@pytest.fixture(autouse=True)
def _restore():
    yield
    nbtorch.use_deterministic_algorithms(False)
    nbtorch.set_float32_matmul_precision("highest")


def test_backend_flags_settable_and_answers():
    import nbtorch.backends.cudnn as cudnn
    assert cudnn is nbtorch.backends.cudnn
    old = cudnn.benchmark
    cudnn.benchmark, cudnn.deterministic = True, True
    assert nbtorch.backends.cudnn.benchmark and nbtorch.backends.cudnn.deterministic
    cudnn.benchmark, cudnn.deterministic = old, False
    with cudnn.flags(enabled=False, benchmark=True):
        assert not cudnn.enabled and cudnn.benchmark
    assert cudnn.enabled and not cudnn.benchmark
    assert not cudnn.is_available() and cudnn.version() is None
    assert not nbtorch.backends.mps.is_available() and not nbtorch.backends.mps.is_built()
    assert not nbtorch.backends.mkldnn.is_available() and not nbtorch.backends.mkl.is_available()
    assert nbtorch.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    assert isinstance(nbtorch.backends.openmp.is_available(), bool)
    assert nbtorch.backends.cuda.is_built()
    with nbtorch.backends.cuda.sdp_kernel(enable_flash=False):
        assert not nbtorch.backends.cuda.flash_sdp_enabled()
    assert nbtorch.backends.cuda.flash_sdp_enabled()


def test_matmul_precision_and_tf32_are_one_setting():
    m = nbtorch.backends.cuda.matmul
    assert nbtorch.get_float32_matmul_precision() == "highest" and not m.allow_tf32
    nbtorch.set_float32_matmul_precision("high")
    assert m.allow_tf32
    nbtorch.set_float32_matmul_precision("medium")
    assert m.allow_tf32 and nbtorch.get_float32_matmul_precision() == "medium"
    m.allow_tf32 = False
    assert nbtorch.get_float32_matmul_precision() == "highest"
    m.allow_tf32 = True
    assert nbtorch.get_float32_matmul_precision() == "high"
    with pytest.warns(UserWarning, match="has no effect"):
        nbtorch.set_float32_matmul_precision("foo")
    assert nbtorch.get_float32_matmul_precision() == "high"
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        m.foo
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        m.foo = 1
    assert m.allow_fp16_reduced_precision_reduction


def test_deterministic_switches():
    assert not nbtorch.are_deterministic_algorithms_enabled()
    nbtorch.use_deterministic_algorithms(True, warn_only=True)
    assert nbtorch.are_deterministic_algorithms_enabled()
    assert nbtorch.is_deterministic_algorithms_warn_only_enabled()
    assert nbtorch.get_deterministic_debug_mode() == 1
    nbtorch.set_deterministic_debug_mode("error")
    assert nbtorch.get_deterministic_debug_mode() == 2
    assert not nbtorch.is_deterministic_algorithms_warn_only_enabled()
    nbtorch.set_deterministic_debug_mode(0)
    assert not nbtorch.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        nbtorch.set_deterministic_debug_mode("x")
    with pytest.raises(TypeError, match="must be bool, not int"):
        nbtorch.use_deterministic_algorithms(1)


def test_alert_raises_or_warns():
    from nbtorch._settings import alert_not_deterministic
    alert_not_deterministic("op_cuda")                  # off: nothing
    nbtorch.use_deterministic_algorithms(True)
    with pytest.raises(RuntimeError, match="op_cuda does not have a deterministic"):
        alert_not_deterministic("op_cuda")
    nbtorch.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="op_cuda does not have a deterministic"):
        alert_not_deterministic("op_cuda")


def test_cpu_ops_run_under_deterministic_mode():
    nbtorch.use_deterministic_algorithms(True)
    x = nbtorch.randn(1, 1, 4, 4, requires_grad=True)
    nbtorch.nn.functional.max_pool2d(x, 2).sum().backward()     # CPU kernels: no alert
    w = nbtorch.nn.Embedding(5, 2)
    w(nbtorch.tensor([1, 1, 2])).sum().backward()


def test_same_answers_as_pytorch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.get_float32_matmul_precision() == nbtorch.get_float32_matmul_precision()
        for name in ("benchmark", "deterministic", "enabled", "allow_tf32"):
            assert getattr(torch.backends.cudnn, name) == getattr(nbtorch.backends.cudnn, name)
        assert (torch.backends.cuda.matmul.allow_tf32
                == nbtorch.backends.cuda.matmul.allow_tf32)
        assert torch.backends.mps.is_available() == nbtorch.backends.mps.is_available()


def test_accelerator_without_a_gpu():
    acc = nbtorch.accelerator
    if nbtorch.cuda.is_available():
        assert acc.current_accelerator() == nbtorch.device("cuda")
        return
    assert not acc.is_available() and acc.current_accelerator() is None
    assert acc.device_count() == 0
    with pytest.raises(RuntimeError, match="none is available"):
        acc.current_accelerator(check_available=True)
    with pytest.raises(RuntimeError, match="none is available"):
        acc.current_device_index()
    torch = pytest.importorskip("torch")
    assert torch.accelerator.is_available() == acc.is_available()


def test_deterministic_mode_fills_uninitialized_memory():
    """As PyTorch: with deterministic algorithms on, empty() and friends are NaN-filled
    (largest value for integers) unless torch.utils.deterministic says not to."""
    import nbtorch.utils.deterministic as det
    nbtorch.use_deterministic_algorithms(True)
    try:
        assert np.isnan(nbtorch.empty(3).numpy()).all()
        assert np.isnan(nbtorch.empty_like(nbtorch.ones(2)).numpy()).all()
        assert np.isnan(nbtorch.ones(2).new_empty(4).numpy()).all()
        assert nbtorch.empty(2, dtype=nbtorch.int16).tolist() == [32767, 32767]
        det.fill_uninitialized_memory = False
        assert nbtorch.empty(3).shape == (3,)
    finally:
        det.fill_uninitialized_memory = True
        nbtorch.use_deterministic_algorithms(False)
